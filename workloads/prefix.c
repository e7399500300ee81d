/*
 * prefix.c: what prompts share -- wl_chain, the hash chain that names a
 * prompt's leading content, and the sequence of workload.shared_prefix's
 * prompts.
 *
 * workload.shared_prefix makes num_groups x num_prompts_per_group prompts,
 * numbered group by group: prompt p is question p % num_prompts_per_group
 * of group p / num_prompts_per_group.  They are sent in one fixed order and
 * the order starts over after its last prompt, as inference-perf's
 * shared_prefix generator does (its request i sends prompt i mod N of one
 * seeded permutation): `shuffled` is such a permutation (Fisher-Yates, from
 * the stream the source hands in, once), `ordered` is the numbering itself
 * (SGLang's --gsp-ordered, vLLM's prefix_repetition with --disable-shuffle).
 * A permutation costs 4 bytes a prompt, which is why spec.c caps N.
 *
 * Keys: a group's system prompt is wl_chain(wl_chain(0, NAMESPACE), group),
 * its question q is wl_chain(that, q).  NAMESPACE is above 2^53, the largest
 * id a Mooncake trace can state exactly, so a trace's first block never
 * takes a system prompt's key.
 */
#include "wl_int.h"

#include <stdlib.h>

#include <gsl/gsl_randist.h>

#define NAMESPACE UINT64_C(0x5348415245445046) /* "SHAREDPF" */

uint64_t wl_chain(uint64_t prev, uint64_t id)
{
    /* For one prev, id -> key is a bijection (an odd multiplier, then a
     * 64-bit finaliser), so ids following the same content never collide;
     * across prevs the keys are as good as random.  prev is mixed first so
     * that (a, b) and (b, a) differ. */
    uint64_t h = util_mix64(util_mix64(prev ^ UINT64_C(0x9e3779b97f4a7c15)) +
                            id * UINT64_C(0xbf58476d1ce4e5b9));
    return h ? h : 1; /* 0 is the prompt's start */
}

struct wl__prefix {
    wl_shared_prefix sp;
    int32_t *order;  /* shuffled: prompt numbers in sending order; NULL: in numbering order */
    int64_t n, next; /* prompts; the next one's place in the order */
    uint64_t root;   /* wl_chain(0, NAMESPACE) */
};

wl__prefix *wl__prefix_create(const wl_shared_prefix *sp, gsl_rng *r)
{
    wl__prefix *p = util_xcalloc(1, sizeof *p);
    p->sp = *sp;
    p->n = (int64_t)sp->num_groups * sp->num_prompts_per_group;
    p->root = wl_chain(0, NAMESPACE);
    if (sp->order == WL_PREFIX_SHUFFLED) {
        p->order = util_xmalloc((size_t)p->n * sizeof *p->order);
        for (int64_t i = 0; i < p->n; i++) p->order[i] = (int32_t)i;
        gsl_ran_shuffle(r, p->order, (size_t)p->n, sizeof *p->order);
    }
    return p;
}

void wl__prefix_destroy(wl__prefix *p)
{
    if (!p) return;
    free(p->order);
    free(p);
}

int32_t wl__prefix_length(const wl__prefix *p)
{
    return p->sp.system_prompt_len + p->sp.question_len;
}

int64_t wl__prefix_next(wl__prefix *p, wl_segment seg[2])
{
    int64_t at = p->next;
    p->next = at + 1 == p->n ? 0 : at + 1;
    int64_t prompt = p->order ? p->order[at] : at;
    int64_t per = p->sp.num_prompts_per_group;
    uint64_t system = wl_chain(p->root, (uint64_t)(prompt / per));
    seg[0] = (wl_segment){.key = system, .tokens = p->sp.system_prompt_len};
    seg[1] = (wl_segment){.key = wl_chain(system, (uint64_t)(prompt % per)),
                          .tokens = p->sp.question_len};
    return prompt;
}
