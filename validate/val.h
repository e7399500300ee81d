/*
 * val: servesim against measured serving runs.  A validation folder (today
 * data/validation/llmservingsim) holds vLLM runs of one workload on several
 * GPUs: each run's meta.json (the engine's settings), its measured
 * requests.jsonl, and the workload CSV they all served.  Each case replays
 * one run: its scenario is built from the folder, run through rec_run (the
 * one run path), and the prediction is read back from the run's database.
 * The measured requests go into a servesim database of their own, in
 * memory, so that both sides' TTFT, TPOT and E2E come from the same
 * definitions (the `request_metrics` view) and the same statistics
 * (an_report_compute, an_definitions): nothing here defines a metric.
 *
 * The library prints nothing; the folder and the catalog are the caller's,
 * the results plain structs the caller owns.
 */
#ifndef VAL_H
#define VAL_H

#include <stdbool.h>

#include "an.h"
#include "mdl.h"
#include "util.h"

/* The validation folder under a data directory. */
#define VAL_DATA "validation/llmservingsim"

enum { VAL_TTFT, VAL_TPOT, VAL_E2E, VAL_N_METRICS };
/* rtx4090/roofline, rtxpro6000/roofline, rtxpro6000/table. */
enum { VAL_N_CASES = 3 };
/* The engine preset's terms, added one at a time: the GPU's steps alone;
 * the host's time per step, added to it as a synchronous engine does; the
 * asynchronous scheduler's pipeline (the host hidden behind the GPU, each
 * step planned while the one before runs) -- the model as it runs. */
enum { VAL_GPU, VAL_HOST, VAL_PIPELINE, VAL_N_TERMS };
extern const char *const val_term_names[VAL_N_TERMS];

/* One replayed run: a GPU's measured run, predicted with one cost model,
 * each side read on the clock the run was measured with ("engine": vLLM's
 * engine-core stamps, queued in the engine to the token out; "client": sent
 * to the streamed token). */
typedef struct val_case {
    const char *name;  /* e.g. "rtx4090/roofline"; static */
    const char *clock; /* static */
    an_stats measured[VAL_N_METRICS];
    an_stats predicted[VAL_N_TERMS][VAL_N_METRICS]; /* [VAL_PIPELINE]: the model */
} val_case;

/* Whether dir looks like a validation folder (its workload file is there). */
bool val_has_data(const char *dir);
/* Replays every case of the folder dir: out[i] is case i.  A file that is
 * missing or malformed is UTIL_EINPUT naming it (file:line); a replay that
 * did not complete (overloaded) is UTIL_EFAIL, its figures being no
 * comparison. */
int val_replay(const char *dir, const mdl_catalog *cat, val_case out[VAL_N_CASES], util_diag *d);

#endif /* VAL_H */
