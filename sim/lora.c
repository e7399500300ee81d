/*
 * lora.c: LoRA adapters (cluster.lora, docs/lora.md) -- the keys, which
 * adapter a request is for, each replica's GPU slots and CPU cache, the
 * loads, and the LoRA kernels' share of a step.
 *
 * As vLLM serves them (v0.11; vllm/lora/models.py LoRAModelManager and
 * LRUCacheLoRAModelManager, vllm/lora/worker_manager.py
 * LRUCacheWorkerLoRAManager, vllm/lora/layers/ for the stacked weights,
 * vllm/v1/core/sched/scheduler.py for the max_loras check): a replica
 * keeps max_loras adapters in GPU slots and max_cpu_loras in host memory,
 * each least recently used first.  A request whose adapter is not among
 * the adapters of the running batch is admitted only while fewer than
 * max_loras distinct adapters run (the queue waits at it otherwise, FCFS);
 * admitted, its adapter is copied into a slot -- evicting the least
 * recently used adapter no running request uses -- from the CPU cache, or
 * first read from disk into it.  The worker loads adapters in
 * set_active_loras before the step's forward pass, so the step that
 * admits the request waits for the load: bytes / bandwidth + latency,
 * added to that step.
 *
 * Memory: every slot is allocated at max_lora_rank for every adapted
 * matrix (lora_a_stacked [max_loras, 1, max_lora_rank, in], lora_b_stacked
 * [max_loras, 1, out, max_lora_rank] in create_lora_weights), and vLLM's
 * memory profile runs with those buffers, so max_loras x max_lora_rank x
 * (in + out) x layers x 2 bytes come out of the KV cache.
 *
 * The kernels: each step that runs adapters' tokens adds the roofline of
 * vLLM's shrink and expand kernels over them (models/lora.c), for the
 * step's distinct adapters at max_lora_rank, and a fixed time for each of
 * their launches (kernel_launches a layer, kernel_floor_s each); a step
 * with adapters' prompt tokens pays prefill_step_s more (vLLM V0 ran such
 * steps without CUDA graphs, the LoRA layers' launches from Python).
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the keys ---- */

static const util_field adapter_fields[] = {
    {.key = "name", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "the adapter's name, as a class's adapter names it"},
    {.key = "rank", .type = UTIL_T_INTEGER, .min = 1, .max = 512, .flags = UTIL_REQUIRED,
     .doc = "its rank r (at most max_lora_rank)"},
    {0},
};

const util_field sim__lora_fields[] = {
    {.key = "max_loras", .type = UTIL_T_INTEGER, .min = 1, .max = 1024,
     .doc = "GPU adapter slots a replica, and the most distinct adapters one batch runs "
            "(vLLM --max-loras; default 1, vLLM's)"},
    {.key = "max_lora_rank", .type = UTIL_T_INTEGER, .min = 1, .max = 512,
     .doc = "the rank every slot is allocated at and the kernels compute at (vLLM "
            "--max-lora-rank; default 16, vLLM's)"},
    {.key = "max_cpu_loras", .type = UTIL_T_INTEGER, .min = 1, .max = 1e6,
     .doc = "adapters a replica keeps in host memory, at least max_loras (vLLM --max-cpu-loras, "
            "default max_loras)"},
    {.key = "adapters", .type = UTIL_T_LIST, .sub = adapter_fields, .min = 1, .max = 100000,
     .doc = "the adapters, each {name, rank}; or adapter_count"},
    {.key = "adapter_count", .type = UTIL_T_INTEGER, .min = 1, .max = 100000,
     .doc = "instead of adapters: this many, named lora-0, lora-1, ..., of rank adapter_rank"},
    {.key = "adapter_rank", .type = UTIL_T_INTEGER, .min = 1, .max = 512,
     .doc = "adapter_count's rank (default max_lora_rank)"},
    {.key = "zipf_s", .type = UTIL_T_NUMBER, .min = 0, .max = 10,
     .doc = "popularity of the adapters a class draws (adapter \"*\"): the k-th adapter of the "
            "list is drawn with weight 1 / k^zipf_s (default 0: all alike)"},
    {.key = "disk_gbs", .type = UTIL_T_NUMBER, .unit = "GB/s", .min = 0.001, .max = 1e4,
     .doc = "disk -> host memory bandwidth of an adapter load (default 7.45: a PCIe 4.0 NVMe "
            "SSD's sequential read, Samsung 990 PRO datasheet)"},
    {.key = "disk_latency_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 100,
     .doc = "fixed time of a load from disk, opening and parsing the checkpoint (default 0)"},
    {.key = "cpu_latency_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 100,
     .doc = "fixed time of a copy from host memory into a GPU slot (default 0)"},
    {.key = "kernel_launches", .type = UTIL_T_INTEGER, .min = 0, .max = 1000,
     .doc = "LoRA kernel launches a layer in a step that runs adapters' tokens (default 8: "
            "vLLM v0.11's lora_shrink and lora_expand for each of qkv_proj, o_proj, "
            "gate_up_proj and down_proj)"},
    {.key = "kernel_floor_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 1,
     .doc = "fixed time of each launch, beside its roofline (default 1e-5: vLLM PR #32425's "
            "profile of _lora_expand_kernel at small batches, 10-14 us)"},
    {.key = "prefill_step_s", .type = UTIL_T_NUMBER, .unit = "s", .min = 0, .max = 10,
     .doc = "fixed time the LoRA layers add to each step that runs adapters' prompt tokens, "
            "for an engine that runs such steps without CUDA graphs (vLLM V0: ~0.08, vLLM "
            "issue #11436; default 0: none measured for vLLM V1)"},
    {0},
};

/* The adapters' ranks: the list, or adapter_count of one rank. */
static int read_adapters(sim_lora *lr, const cJSON *o, const char *path, util_diag *d)
{
    const cJSON *list = util_json_member(o, "adapters");
    const cJSON *count = util_json_member(o, "adapter_count");
    if (!list == !count)
        return util_diag_add(d, "%s.lora: give adapters (a list of {name, rank}) or "
                                "adapter_count, %s", path, list ? "not both" : "one of them");
    lr->n_adapters = list ? cJSON_GetArraySize(list) : (int)count->valuedouble;
    lr->rank = util_xcalloc((size_t)lr->n_adapters, sizeof *lr->rank);
    int rc = UTIL_OK;
    for (int i = 0; i < lr->n_adapters; i++) {
        const cJSON *a = list ? cJSON_GetArrayItem(list, i) : NULL;
        lr->rank[i] = a ? (int32_t)util_json_member(a, "rank")->valuedouble
                        : (int32_t)util_json_number(o, "adapter_rank", lr->max_rank);
        if (lr->rank[i] > lr->max_rank)
            rc = util_diag_add(d, "%s.lora.%s: rank %d is above max_lora_rank %d (vLLM refuses "
                                  "such an adapter)", path, a ? "adapters[]" : "adapter_rank",
                               lr->rank[i], lr->max_rank);
        for (int j = 0; a && j < i; j++)
            if (!strcmp(util_json_member(a, "name")->valuestring,
                        util_json_member(cJSON_GetArrayItem(list, j), "name")->valuestring))
                rc = util_diag_add(d, "%s.lora.adapters[%d].name: '%s' is used twice", path, i,
                                   util_json_member(a, "name")->valuestring);
        if (rc) break;
    }
    return rc;
}

/* Zipf over the list's order: weight 1 / k^s for the k-th. */
static void popularity(sim_lora *lr, double s)
{
    lr->cdf = util_xcalloc((size_t)lr->n_adapters, sizeof *lr->cdf);
    double sum = 0;
    for (int i = 0; i < lr->n_adapters; i++) lr->cdf[i] = sum += pow(i + 1.0, -s);
    for (int i = 0; i < lr->n_adapters; i++) lr->cdf[i] /= sum;
}

int sim__lr_read(sim_pool *p, const cJSON *obj, const char *path, util_diag *d)
{
    sim_lora *lr = &p->lora;
    const cJSON *o = util_json_member(obj, "lora");
    if (!o) return UTIL_OK;
    lr->on = true;
    lr->max_loras = (int)util_json_number(o, "max_loras", 1);
    lr->max_rank = (int)util_json_number(o, "max_lora_rank", 16);
    lr->max_cpu = (int)util_json_number(o, "max_cpu_loras", lr->max_loras);
    lr->disk_bw = util_json_number(o, "disk_gbs", SIM_LORA_DISK_BW / 1e9) * 1e9;
    lr->disk_latency_s = util_json_number(o, "disk_latency_s", 0);
    lr->cpu_latency_s = util_json_number(o, "cpu_latency_s", 0);
    lr->launches = (int)util_json_number(o, "kernel_launches", SIM_LORA_LAUNCHES);
    lr->floor_s = util_json_number(o, "kernel_floor_s", SIM_LORA_KERNEL_FLOOR_S);
    lr->prefill_step_s = util_json_number(o, "prefill_step_s", 0);
    if (lr->max_cpu < lr->max_loras)
        return util_diag_add(d, "%s.lora.max_cpu_loras: %d is below max_loras %d (the CPU cache "
                                "holds every adapter in a GPU slot, as vLLM requires)",
                             path, lr->max_cpu, lr->max_loras);
    if (p->cost.model.experts > 1)
        return util_diag_add(d, "%s.lora: %s is a mixture of experts; LoRA on experts is not "
                                "modelled", path, p->cost.model.id);
    if (p->preemption == SIM_PREEMPT_SWAP)
        return util_diag_add(d, "%s.lora: swap preemption is not modelled with adapters (a "
                                "swapped sequence's adapter may have left its slot); use "
                                "recompute", path);
    if (read_adapters(lr, o, path, d)) return UTIL_EINPUT;
    popularity(lr, util_json_number(o, "zipf_s", 0));
    lr->bytes_per_rank = mdl_lora_bytes_per_rank(&p->cost.model);
    lr->gpu_bytes = (double)lr->max_loras * lr->max_rank * lr->bytes_per_rank;
    return UTIL_OK;
}

void sim__lr_fini(sim_lora *lr)
{
    free(lr->rank);
    free(lr->cdf);
    free(lr->by_class);
}

/* A class's adapter by name in pool p's list (or the count's lora-K). */
static int32_t find_adapter(const sim_pool *p, const cJSON *pool_obj, const char *name)
{
    const cJSON *list = util_json_member(util_json_member(pool_obj, "lora"), "adapters");
    for (int i = 0; list && i < p->lora.n_adapters; i++)
        if (!strcmp(util_json_member(cJSON_GetArrayItem(list, i), "name")->valuestring, name))
            return i + 1;
    int k, n = -1;
    if (!list && sscanf(name, "lora-%d%n", &k, &n) == 1 && n == (int)strlen(name) && k >= 0 &&
        k < p->lora.n_adapters)
        return k + 1;
    return 0;
}

static bool same_adapters(const sim_lora *a, const sim_lora *b)
{
    if (a->n_adapters != b->n_adapters) return false;
    for (int i = 0; i < a->n_adapters; i++)
        if (a->rank[i] != b->rank[i] || a->cdf[i] != b->cdf[i]) return false;
    return true;
}

/* One class's adapter, for every pool that serves adapters. */
static int class_adapter(sim_scenario *sc, const cJSON *cls, int i, const cJSON *pools,
                         util_diag *d)
{
    const char *name = cJSON_GetStringValue(util_json_member(cls, "adapter"));
    for (int p = 0; p < sc->n_pools; p++) {
        sim_lora *lr = &sc->pools[p].lora;
        if (!lr->on) continue;
        if (!lr->by_class)
            lr->by_class = util_xcalloc((size_t)sc->workload.n_classes, sizeof *lr->by_class);
        if (!name) continue;
        if (!strcmp(name, "*")) {
            lr->by_class[i] = SIM_LORA_DRAW;
            continue;
        }
        const cJSON *obj =
            pools ? cJSON_GetArrayItem(pools, p) : util_json_member(sc->json, "cluster");
        lr->by_class[i] = find_adapter(&sc->pools[p], obj, name);
        if (!lr->by_class[i])
            return util_diag_add(d, "workload.classes[%d].adapter: no adapter named '%s' in "
                                    "%s.lora", i, name, pools ? "cluster.pools[]" : "cluster");
    }
    return UTIL_OK;
}

int sim__lr_read_classes(sim_scenario *sc, util_diag *d)
{
    const cJSON *cluster = util_json_member(sc->json, "cluster");
    const cJSON *pools = util_json_member(cluster, "pools");
    const cJSON *classes = util_json_member(util_json_member(sc->json, "workload"), "classes");
    sc->lora_pool = -1;
    for (int p = 0; p < sc->n_pools; p++) {
        if (!sc->pools[p].lora.on) continue;
        if (sc->lora_pool < 0) sc->lora_pool = p;
        else if (!same_adapters(&sc->pools[sc->lora_pool].lora, &sc->pools[p].lora))
            return util_diag_add(d, "cluster.pools[%d].lora: every pool serves the same adapters "
                                    "(list, ranks and zipf_s) as cluster.pools[%d]'s",
                                 p, sc->lora_pool);
    }
    const cJSON *cls;
    int i = 0;
    cJSON_ArrayForEach(cls, classes)
    {
        if (util_json_member(cls, "adapter") && sc->lora_pool < 0)
            return util_diag_add(d, "workload.classes[%d].adapter: no pool serves adapters (set "
                                    "cluster.lora)", i);
        if (class_adapter(sc, cls, i, pools, d)) return UTIL_EINPUT;
        i++;
    }
    if (!classes && sc->lora_pool >= 0) class_adapter(sc, NULL, 0, pools, d);
    return UTIL_OK;
}

/* ---- which adapter ---- */

/* A uniform in [0, 1) from a request's id and the seed: the request draws
 * the same adapter whatever else the run does (splitmix64's finaliser). */
static double uniform_for(uint64_t seed, int64_t id)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t)id + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

int32_t sim_lora_draw(const sim_lora *lr, uint64_t seed, int64_t id)
{
    double u = uniform_for(seed, id);
    int lo = 0, hi = lr->n_adapters - 1;
    while (lo < hi) { /* the first adapter whose cumulative share exceeds u */
        int mid = (lo + hi) / 2;
        if (lr->cdf[mid] > u) hi = mid;
        else lo = mid + 1;
    }
    return lo + 1;
}

int32_t sim__lr_choose(const sim_engine *e, int32_t cls, int64_t id)
{
    if (e->sc->lora_pool < 0) return 0;
    const sim_lora *lr = &e->sc->pools[e->sc->lora_pool].lora;
    int32_t a = lr->by_class[cls];
    return a == SIM_LORA_DRAW ? sim_lora_draw(lr, e->sc->seed, id) : a;
}

/* A request for an adapter shares KV only with requests for the same
 * adapter: vLLM's block hashes take the adapter's id as an extra key
 * (vllm/v1/core/kv_cache_utils.py, _gen_lora_extra_hash_keys).  Its
 * segments' keys, and its reply's, are chained once more with it. */
void sim__lr_own_content(sim__request *r)
{
    if (!r->lora) return;
    uint64_t salt = UINT64_C(0x4C6F5241) << 32 | (uint32_t)r->lora; /* "LoRA", the adapter */
    for (int32_t i = 0; i < r->n_segs; i++) r->segs[i].key = wl_chain(r->segs[i].key, salt);
    if (r->out_key) r->out_key = wl_chain(r->out_key, salt);
}

/* ---- a replica's slots and cache ---- */

/* An LRU set of adapters (adapter + 1, 0 an empty place) with the time of
 * each one's last use; a linear scan, as max_loras is small and
 * max_cpu_loras is scanned only on a GPU miss. */
typedef struct lru {
    int32_t *who;
    int64_t *used;
    int n;
} lru;

struct sim__lora {
    const sim_lora *cfg;
    lru gpu, cpu;
    int32_t *running; /* [n_adapters]: running requests of each adapter */
    int active;       /* adapters with a running request */
    int64_t seqs;     /* running requests with an adapter */
    int64_t clock;    /* uses so far: the LRU's time */
    double load_s;    /* loads for the step being planned */
};

static void lru_init(lru *c, int n)
{
    c->n = n;
    c->who = util_xcalloc((size_t)n, sizeof *c->who);
    c->used = util_xcalloc((size_t)n, sizeof *c->used);
}

static int lru_find(const lru *c, int32_t a)
{
    for (int i = 0; i < c->n; i++)
        if (c->who[i] == a) return i;
    return -1;
}

/* The place to give a newcomer: an empty one, else the least recently
 * used whose adapter no running request uses (running NULL: any). */
static int lru_victim(const lru *c, const int32_t *running)
{
    int best = -1;
    for (int i = 0; i < c->n; i++) {
        if (!c->who[i]) return i;
        if (running && running[c->who[i] - 1]) continue;
        if (best < 0 || c->used[i] < c->used[best]) best = i;
    }
    assert(best >= 0); /* admission left a slot no running request uses */
    return best;
}

/* a is used now: true if it was there; else it takes the victim's place. */
static bool lru_touch(lru *c, int32_t a, int64_t now, const int32_t *running)
{
    int i = lru_find(c, a);
    bool hit = i >= 0;
    if (!hit) i = lru_victim(c, running), c->who[i] = a;
    c->used[i] = now;
    return hit;
}

void sim__lr_init(sim__replica *rp)
{
    const sim_lora *cfg = &rp->pool->lora;
    if (!cfg->on) return;
    struct sim__lora *l = util_xcalloc(1, sizeof *l);
    l->cfg = cfg;
    lru_init(&l->gpu, cfg->max_loras);
    lru_init(&l->cpu, cfg->max_cpu);
    l->running = util_xcalloc((size_t)cfg->n_adapters, sizeof *l->running);
    rp->lr = l;
}

void sim__lr_destroy(sim__replica *rp)
{
    struct sim__lora *l = rp->lr;
    if (!l) return;
    free(l->gpu.who), free(l->gpu.used), free(l->cpu.who), free(l->cpu.used);
    free(l->running);
    free(l);
    rp->lr = NULL;
}

bool sim__lr_may_admit(const sim__replica *rp, const sim__request *r)
{
    const struct sim__lora *l = rp->lr;
    if (!l || !r->lora || l->running[r->lora - 1]) return true;
    return l->active < l->cfg->max_loras;
}

bool sim__lr_holds(const sim__replica *rp, int32_t lora)
{
    return !lora || (rp->lr && lru_find(&rp->lr->gpu, lora) >= 0);
}

/* The load of adapter a into a slot: from the CPU cache over each GPU's
 * own PCIe link (each takes its tensor-parallel shard), read from disk
 * first when the cache lacks it. */
static double load_time(const sim__replica *rp, int32_t a, bool in_cpu)
{
    const sim_lora *cfg = rp->lr->cfg;
    double bytes = cfg->rank[a - 1] * cfg->bytes_per_rank;
    double t = bytes / (rp->pool->cost.gpu.pcie_bw * rp->pool->gpus) + cfg->cpu_latency_s;
    if (!in_cpu) t += bytes / cfg->disk_bw + cfg->disk_latency_s;
    return t;
}

#if SIM_CHECKS
/* SIM_CHECKS: `active` counts the adapters with a running request, at most
 * max_loras, and each of them is in a GPU slot (O(adapters x slots)). */
static void check_slots(const struct sim__lora *l)
{
    int active = 0;
    for (int a = 0; a < l->cfg->n_adapters; a++) {
        if (!l->running[a]) continue;
        active++;
        SIM__CHECK(lru_find(&l->gpu, a + 1) >= 0);
    }
    SIM__CHECK(active == l->active && active <= l->cfg->max_loras);
}
#endif

void sim__lr_join(sim__replica *rp, const sim__request *r)
{
    struct sim__lora *l = rp->lr;
    if (!l || !r->lora) return;
    int64_t now = ++l->clock;
    rp->lora_lookups++;
    bool in_cpu = lru_touch(&l->cpu, r->lora, now, NULL);
    if (lru_touch(&l->gpu, r->lora, now, l->running)) {
        rp->lora_gpu_hits++;
    } else {
        rp->lora_cpu_hits += in_cpu;
        double t = load_time(rp, r->lora, in_cpu);
        l->load_s += t;
        rp->lora_load_s += t;
    }
    if (!l->running[r->lora - 1]++) l->active++;
    l->seqs++;
    SIM__CHECKED(check_slots(l));
}

void sim__lr_leave(sim__replica *rp, const sim__request *r)
{
    struct sim__lora *l = rp->lr;
    if (!l || !r->lora) return;
    assert(l->running[r->lora - 1] > 0);
    if (!--l->running[r->lora - 1]) l->active--;
    l->seqs--;
    SIM__CHECKED(check_slots(l));
}

bool sim__lr_single(const sim__replica *rp)
{
    return rp->lr && (rp->lr->seqs > 0 || rp->lr->load_s > 0);
}

/* ---- the step ---- */

/* Tokens of this step that belong to requests with adapters: their
 * prompt chunks, and a decoding width for each running one not in a chunk
 * (a partly prefilled prompt without a chunk this step is counted as a
 * decoder: rare, and a token's worth). */
static double adapter_tokens(const sim__replica *rp, const mdl_batch *b, int64_t *prompts)
{
    double t = 0;
    int64_t chunked = 0;
    for (int i = 0; i < rp->n_chunks; i++)
        if (rp->chunks[i]->lora) t += (double)rp->chunk_cost[i].tokens, chunked++;
    if (b->n_decode > 0 && rp->lr->seqs > chunked)
        t += (double)(rp->lr->seqs - chunked) * (b->decode_width > 0 ? b->decode_width : 1);
    *prompts = chunked;
    return t;
}

void sim__lr_step_cost(sim__replica *rp, const mdl_batch *b, mdl_step *step)
{
    struct sim__lora *l = rp->lr;
    if (!l) return;
    int64_t prompts;
    double f = 0, by = 0, k = 0, tokens = adapter_tokens(rp, b, &prompts);
    if (tokens > 0) {
        mdl_lora_kernels(&rp->pool->cost.model, l->cfg->max_rank, tokens, l->active, &f, &by);
        k = mdl_lora_kernel_s(&rp->pool->cost, f, by) +
            mdl_lora_launch_s(&rp->pool->cost.model, l->cfg->launches, l->cfg->floor_s);
        if (prompts > 0) k += l->cfg->prefill_step_s;
    }
    double add = k + l->load_s;
    step->time_s += add;
    step->gpu_s += add;
    if (rp->n_chunks) step->prefill_s += add;
    else step->decode_s += add;
    step->flops += f;
    step->bytes += by;
    rp->lora_kernel_s += k;
    l->load_s = 0;
}
