/*
 * wl_int.h: what workloads/ files share among themselves and with their
 * tests, beyond the public wl.h.  Nothing here is part of the library's
 * interface; names carry the wl__ prefix.
 */
#ifndef WL_INT_H
#define WL_INT_H

#include "wl.h"

/* Distinct values in an empirical table: its memory is proportional to this,
 * not to the trace's rows (tests check the streaming promise with it). */
int64_t wl__empirical_distinct(const wl_empirical *e);

/* The sequence of workload.shared_prefix's prompts (prefix.c), shuffled
 * once from r when its order asks (r is not kept). */
typedef struct wl__prefix wl__prefix;
wl__prefix *wl__prefix_create(const wl_shared_prefix *sp, gsl_rng *r);
void wl__prefix_destroy(wl__prefix *p);
/* Tokens of every prompt: system_prompt_len + question_len. */
int32_t wl__prefix_length(const wl__prefix *p);
/* The next prompt's two segments (system prompt, question) into seg; its
 * number, group * num_prompts_per_group + question (tests read it). */
int64_t wl__prefix_next(wl__prefix *p, wl_segment seg[2]);

/* Mooncake lines (trace.c): whether its scanner may read them (true once
 * open; false sends every line through cJSON, the reference reading the
 * tests compare the scanner with), and how many lines it has read. */
void wl__trace_set_scanner(wl_trace *t, bool on);
int64_t wl__trace_scanned(const wl_trace *t);

#endif /* WL_INT_H */
