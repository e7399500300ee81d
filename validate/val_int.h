/*
 * val_int.h: what validate/'s importers share -- one reader per format,
 * called by val_import once it has told the format, and the helpers that
 * turn what a tool recorded into servesim's names.
 */
#ifndef VAL_INT_H
#define VAL_INT_H

#include "val.h"

/* A format's reader: path is the file (or folder) val_import was given,
 * root its JSON where it is one JSON document (else NULL).  Each adds its
 * runs to out; a malformed field is UTIL_EINPUT naming path and the field. */
typedef int val__reader(const char *path, const cJSON *root, const mdl_catalog *cat,
                        val_runs *out, util_diag *d);
val__reader val__read_vllm_bench, val__read_inference_perf, val__read_genai_perf,
    val__read_llmservingsim, val__read_servesim;

/* The most tokens a request of an imported run may count: far above any
 * context window, and far below where a whole number stops converting to
 * int64_t (val_request's counts); a count above it is malformed input. */
#define VAL__MAX_TOKENS 1e9

/* The catalog id of a GPU as PyTorch names the device ("NVIDIA GeForce
 * RTX 4090", "NVIDIA H100 80GB HBM3"), or NULL when no entry matches. */
const char *val__gpu_of_device(const mdl_catalog *cat, const char *device);
/* The catalog id of a Hugging Face repository ("meta-llama/Llama-3.1-8B"):
 * the entry whose `hf` names it, or whose id is the repository's name. */
const char *val__model_of_repo(const mdl_catalog *cat, const char *repo);

/* The object that holds the member at a dotted path of root, made on the
 * way (a member in the way that is not an object is replaced); *leaf the
 * member's own key, within path. */
cJSON *val__parent(cJSON *root, const char *path, const char **leaf);

/* m stored in a new database in memory (*db its connection, the caller's). */
int val__store_memory(const val_run *m, sqlite3 **db, int64_t *run_id, util_diag *d);

/* Sets a recorded setting of m's scenario at a dotted path. */
void val__record_number(val_run *m, const char *path, double v);
void val__record_string(val_run *m, const char *path, const char *v);
void val__record_bool(val_run *m, const char *path, bool v);

/* A metric (val_agg_names) of m in seconds from a value in unit (1e-3: ms). */
void val__set_metric(val_run *m, int metric, const cJSON *v, double unit);

/* Puts m's requests in arrival order, the first at 0 when shift is set. */
void val__sort_requests(val_run *m, bool shift);

/* Whether m has a usable metric: a completed request or an aggregate. */
bool val__usable(const val_run *m);

#endif /* VAL_INT_H */
