/* import_vllm_bench.c: placeholder until its reader lands (issue 25). */
#include "val_int.h"

int val__read_vllm_bench(const char *path, const cJSON *root, const mdl_catalog *cat, val_runs *out,
                 util_diag *d)
{
    (void)root;
    (void)cat;
    (void)out;
    util_clip_buf b;
    return util_diag_add(d, "%s: this format is not read yet", util_clip_path(path, &b));
}
