/*
 * mdl_int.h: what the files of models/ share and nothing else sees.
 *
 * The measured-table cost model (table.c) keeps its data behind the opaque
 * mdl_table that mdl_cost owns; cost.c composes an iteration from the lookups
 * below and applies the datasheet floor, as it does for every model.  All
 * times are seconds.  A lookup sets *clamped to true (and never back to
 * false) when some coordinate lay outside what was measured and the nearest
 * measured value stood in for it, so one flag can collect a whole iteration.
 * The per-layer and per-point lookups exist for tests/test_table.c, which
 * checks them against the CSV files directly.
 */
#ifndef MDL_INT_H
#define MDL_INT_H

#include <stdbool.h>

#include "mdl.h"

/* Loads dense.csv, per_sequence.csv and attention.csv from dir (already
 * resolved against the scenario's folder); `layers` decoder layers per
 * iteration.  path is the JSON path of the "dir" key, for messages about
 * files that cannot be opened; malformed lines are reported as FILE:LINE. */
int mdl__table_load(mdl_table **out, const char *dir, int layers, const char *path,
                    util_diag *d);
void mdl__table_destroy(mdl_table *t);

/* Everything in an iteration but attention: embedding, the dense layers of
 * every decoder layer, the final norm (all by `tokens`), and lm_head and the
 * sampler (by `seqs`). */
double mdl__table_rest_s(const mdl_table *t, double tokens, double seqs, bool *clamped);
/* Attention of every decoder layer for the batch's prefill chunks and
 * decoding sequences. */
double mdl__table_attention_s(const mdl_table *t, const mdl_batch *b, bool *clamped);

/* One layer of dense.csv or per_sequence.csv at x tokens or sequences; a
 * negative value when the tables have no such layer. */
double mdl__table_layer_s(const mdl_table *t, const char *layer, double x, bool *clamped);
/* One attention kernel (one decoder layer) at a point of attention.csv's
 * axes. */
double mdl__table_attention_point_s(const mdl_table *t, double prefill_chunk, double kv_prefill,
                                    double n_decode, double kv_decode, bool *clamped);

#endif /* MDL_INT_H */
