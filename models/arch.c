/*
 * arch.c: what a model's dimensions imply -- its parameters, counted matrix
 * by matrix, and the KV cache one token leaves in each layer.
 *
 * The count follows the Hugging Face implementations of the architectures
 * the config reader knows (hf.c): per layer the attention projections
 * (grouped-query, or MLA's compressions and expansions), a dense or MoE
 * feed-forward (routed experts, shared experts, the router), and the
 * embedding and output head once.  Norms and biases are left out: under
 * 0.1% of any model in the catalog.  docs/cost-models.md ("Architectures")
 * has the formulas and tests/test_arch.c holds them to published totals.
 */
#include "mdl.h"

#include <math.h>

const char *const mdl_attentions[] = {"gqa", "mla", NULL};

static double attention_params(const mdl_model *m)
{
    double h = m->hidden, heads = m->heads;
    if (m->attention == MDL_ATTN_GQA)
        return h * heads * m->head_dim * 2 + h * (double)m->kv_heads * m->head_dim * 2;
    double qk = (double)m->qk_nope_head_dim + m->qk_rope_head_dim;
    double q = m->q_lora_rank ? h * m->q_lora_rank + (double)m->q_lora_rank * heads * qk
                              : h * heads * qk;
    double kv_down = h * ((double)m->kv_lora_rank + m->qk_rope_head_dim);
    double kv_up = (double)m->kv_lora_rank * heads * ((double)m->qk_nope_head_dim + m->v_head_dim);
    return q + kv_down + kv_up + heads * m->v_head_dim * h;
}

/* One feed-forward block of intermediate size ffn. */
static double ffn_params(const mdl_model *m, int ffn)
{
    return (m->gated_ffn ? 3.0 : 2.0) * m->hidden * ffn;
}

void mdl_model_count_params(const mdl_model *m, mdl_params *p)
{
    int moe = m->experts > 1 ? m->moe_layers : 0;
    p->embedding = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
    p->attention = attention_params(m) * m->layers;
    p->dense_ffn = ffn_params(m, m->ffn) * (m->layers - moe);
    p->experts = ffn_params(m, m->moe_ffn) * m->experts * moe;
    p->shared = ffn_params(m, m->shared_ffn) * m->shared_experts * moe;
    p->router = (double)m->hidden * m->experts * moe;
    p->total = p->embedding + p->attention + p->dense_ffn + p->experts + p->shared + p->router;
    p->active = p->total - p->experts * (1.0 - (double)m->experts_active / m->experts);
}

double mdl_model_params_error(const mdl_model *m)
{
    mdl_params p;
    mdl_model_count_params(m, &p);
    double total = fabs(m->params / p.total - 1), active = fabs(m->active_params / p.active - 1);
    return total > active ? total : active;
}

double mdl_model_weight_bytes(const mdl_model *m)
{
    return m->params * m->weight_bytes_per_param;
}

double mdl_model_kv_bytes_per_layer_token(const mdl_model *m)
{
    if (m->attention == MDL_ATTN_MLA)
        return ((double)m->kv_lora_rank + m->qk_rope_head_dim) * m->kv_bytes_per_elem;
    return 2.0 * m->kv_heads * m->head_dim * m->kv_bytes_per_elem;
}

double mdl_model_kv_bytes_per_token(const mdl_model *m)
{
    return mdl_model_kv_bytes_per_layer_token(m) * m->layers;
}

int mdl_model_kv_shards(const mdl_model *m, int tp)
{
    if (m->attention == MDL_ATTN_MLA) return 1;
    return m->kv_heads < tp ? m->kv_heads : tp;
}
