/*
 * import.c: which tool measured a file, told from its name and content,
 * and the helpers every format's reader shares.
 *
 * A folder is LLMServingSim's (meta.json and requests.jsonl) or an
 * inference-perf report (its *_lifecycle_metrics.json files).  A file is
 * one JSON document whose top-level keys say whose it is: vLLM's bench
 * result (`input_lens`, `ttfts`), GenAI-Perf's export (`experiments`),
 * inference-perf's lifecycle report (`load_summary`, `successes`), or
 * servesim's measured-run JSON (`scenario`, `metrics`, `requests`) -- or
 * LLMServingSim's requests.jsonl, one object a line.  GenAI-Perf's reader
 * also reads its aggregates (`time_to_first_token`) and AIPerf's, its
 * successor's: a folder or .jsonl of records ({metadata, metrics} a line),
 * their aggregates (`records`).  Keys of two tools in
 * one file are an error, not a guess.
 */
#include "val_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- names ---- */

/* Lowercase words of s (letters and digits), one space between. */
static char *words(const char *s)
{
    char *w = util_xmalloc(strlen(s) + 2), *o = w;
    bool gap = true;
    for (; *s; s++) {
        if (isalnum((unsigned char)*s)) {
            *o++ = (char)tolower((unsigned char)*s);
            gap = false;
        } else if (!gap) {
            *o++ = ' ';
            gap = true;
        }
    }
    if (o > w && o[-1] == ' ') o--;
    *o = 0;
    return w;
}

/* Whether every word of id is a word of name (both from words()). */
static int words_in(const char *id, const char *name)
{
    int n = 0;
    char *copy = util_xstrdup(id), *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save), n++) {
        size_t len = strlen(t);
        const char *p = name;
        bool found = false;
        while (!found && (p = strstr(p, t))) {
            found = (p == name || p[-1] == ' ') && (p[len] == ' ' || p[len] == 0);
            p += len;
        }
        if (!found) n = -1000;
    }
    free(copy);
    return n;
}

const char *val__gpu_of_device(const mdl_catalog *cat, const char *device)
{
    char *name = words(device);
    /* PyTorch names the SXM H100 by its memory ("NVIDIA H100 80GB HBM3"); the
     * PCIe card has HBM2e and says "PCIe" */
    if (strstr(name, "h100") && strstr(name, "hbm3")) {
        char *more = util_xasprintf("%s sxm", name);
        free(name);
        name = more;
    }
    const char *best = NULL;
    int best_n = 0;
    for (int i = 0; i < mdl_catalog_gpu_count(cat); i++) {
        const mdl_gpu *g = mdl_catalog_gpu_at(cat, i);
        char *id = words(g->id);
        int n = words_in(id, name);
        if (n > best_n) {
            best = g->id;
            best_n = n;
        }
        free(id);
    }
    free(name);
    return best;
}

const char *val__model_of_repo(const mdl_catalog *cat, const char *repo)
{
    const char *slash = strrchr(repo, '/');
    char *base = words(slash ? slash + 1 : repo);
    const char *found = NULL;
    for (int i = 0; !found && i < mdl_catalog_model_count(cat); i++) {
        const cJSON *hf = util_json_member(mdl_catalog_model_json(cat, i), "hf");
        const mdl_model *m = mdl_catalog_model_at(cat, i);
        char *id = words(m->id);
        if ((cJSON_IsString(hf) && !strcasecmp(hf->valuestring, repo)) || !strcmp(id, base))
            found = m->id;
        free(id);
    }
    free(base);
    return found;
}

/* ---- recording ---- */

/* The parent of a recorded setting, its old value gone. */
static cJSON *recorded(val_run *m, const char *path, const char **leaf)
{
    cJSON *p = val__parent(m->scenario, path, leaf);
    cJSON_DeleteItemFromObjectCaseSensitive(p, *leaf);
    return p;
}

void val__record_number(val_run *m, const char *path, double v)
{
    const char *leaf;
    cJSON *p = recorded(m, path, &leaf);
    cJSON_AddNumberToObject(p, leaf, v);
}

void val__record_string(val_run *m, const char *path, const char *v)
{
    const char *leaf;
    cJSON *p = recorded(m, path, &leaf);
    cJSON_AddStringToObject(p, leaf, v);
}

void val__record_bool(val_run *m, const char *path, bool v)
{
    const char *leaf;
    cJSON *p = recorded(m, path, &leaf);
    cJSON_AddBoolToObject(p, leaf, v);
}

void val__set_metric(val_run *m, int metric, const cJSON *v, double unit)
{
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0)
        m->metrics[metric] = v->valuedouble * unit;
}

static int by_arrival(const void *a, const void *b)
{
    const val_request *x = a, *y = b;
    return (x->arrival_s > y->arrival_s) - (x->arrival_s < y->arrival_s);
}

void val__sort_requests(val_run *m, bool shift)
{
    if (m->n == 0) return;
    /* arrivals tie rarely and a tie's order changes nothing measured */
    qsort(m->req, m->n, sizeof *m->req, by_arrival);
    double t0 = m->req[0].arrival_s;
    if (shift)
        for (size_t i = 0; i < m->n; i++) m->req[i].arrival_s -= t0;
}

bool val__usable(const val_run *m)
{
    for (int k = 0; k < VAL_N_AGG; k++)
        if (!isnan(m->metrics[k])) return true;
    for (size_t i = 0; i < m->n; i++)
        if (!m->req[i].failed && !isnan(m->req[i].ttft_s)) return true;
    return false;
}

/* ---- telling the format ---- */

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool has_file(const char *dir, const char *name)
{
    char *p = util_path_join(dir, name);
    struct stat st;
    bool found = stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return found;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* The keys that mark each JSON format, in val_formats' order (LLMServingSim
 * is told by its file names). */
static const char *const marks[][4] = {
    {"input_lens", "ttfts", "itls", NULL},
    {"load_summary", "successes", NULL},
    {"experiments", "time_to_first_token", "records", NULL},
    {NULL},
    {"scenario", "metrics", "requests", NULL},
};
static val__reader *const readers[] = {
    val__read_vllm_bench, val__read_inference_perf, val__read_genai_perf,
    val__read_llmservingsim, val__read_servesim,
};

static int format_of_json(const char *path, const cJSON *root, util_diag *d)
{
    util_clip_buf b;
    int found = -1;
    for (int f = 0; val_formats[f]; f++) {
        bool hit = false;
        for (int k = 0; marks[f][k]; k++) hit |= util_json_member(root, marks[f][k]) != NULL;
        if (!hit) continue;
        if (found >= 0)
            return util_diag_add(d, "%s: a mixed format: it has keys of both %s and %s",
                                 util_clip_path(path, &b), val_formats[found], val_formats[f]),
                   -1;
        found = f;
    }
    if (found < 0)
        util_diag_add(d, "%s: an unknown format: expected vLLM's bench result (input_lens, ttfts), "
                         "GenAI-Perf's export (experiments), an inference-perf report "
                         "(load_summary, successes) or servesim's measured-run JSON "
                         "(scenario, metrics)", util_clip_path(path, &b));
    return found;
}

/* Whether a .jsonl is AIPerf's records ({metadata, metrics, error} a line),
 * not LLMServingSim's requests: its first line says. */
static bool aiperf_records(const char *path)
{
    util_diag quiet;
    util_diag_init(&quiet);
    util_lines *l = NULL;
    char *line;
    size_t len;
    bool found = false;
    if (util_lines_open(path, &l, &quiet) == UTIL_OK && util_lines_next(l, &line, &len, &quiet) == 1) {
        cJSON *o = cJSON_Parse(line);
        found = cJSON_IsObject(util_json_member(o, "metadata")) &&
                cJSON_IsObject(util_json_member(o, "metrics"));
        cJSON_Delete(o);
    }
    util_lines_close(l);
    util_diag_fini(&quiet);
    return found;
}

int val_import(const char *path, const mdl_catalog *cat, val_runs *out, util_diag *d)
{
    util_clip_buf b;
    int first = out->n, rc;
    if (is_dir(path)) {
        if (has_file(path, "requests.jsonl") && has_file(path, "meta.json"))
            rc = val__read_llmservingsim(path, NULL, cat, out, d);
        else if (has_file(path, "profile_export.jsonl")) /* AIPerf's artifacts */
            rc = val__read_genai_perf(path, NULL, cat, out, d);
        else if (has_file(path, "summary_lifecycle_metrics.json") ||
                 has_file(path, "per_request_lifecycle_metrics.json") ||
                 has_file(path, "stage_0_lifecycle_metrics.json"))
            rc = val__read_inference_perf(path, NULL, cat, out, d);
        else
            return util_diag_add(d, "%s: an unknown format: a folder of LLMServingSim's "
                                    "(meta.json, requests.jsonl), an inference-perf report "
                                    "(*_lifecycle_metrics.json) or AIPerf's artifacts "
                                    "(profile_export.jsonl) was expected",
                                 util_clip_path(path, &b));
    } else if (ends_with(path, ".jsonl")) {
        rc = aiperf_records(path) ? val__read_genai_perf(path, NULL, cat, out, d)
                                  : val__read_llmservingsim(path, NULL, cat, out, d);
    } else {
        cJSON *root = NULL;
        rc = util_json_read_data(path, &root, d);
        if (rc) return rc;
        /* inference-perf's per-request report is a JSON array */
        int f = cJSON_IsArray(root) ? 1 : format_of_json(path, root, d);
        rc = f < 0 ? UTIL_EINPUT : readers[f](path, root, cat, out, d);
        cJSON_Delete(root);
    }
    for (int i = first; !rc && i < out->n; i++) {
        val_run *m = &out->v[i];
        if (!m->source) m->source = util_xstrdup(path);
        if (!val__usable(m))
            rc = util_diag_add(d, "%s: %s has no usable metric: no completed request and no "
                                  "aggregate", util_clip_path(path, &b), m->name ? m->name : "a run");
    }
    return rc;
}

/* ---- LLMServingSim: meta.json and requests.jsonl ----
 *
 * bench/core/runner.py at the data/validation commit: meta.json holds the
 * engine's arguments (engine_kwargs), the KV cache vLLM resolved (kv_cache,
 * in newer runs) and the device (hardware); requests.jsonl one request a
 * line, stamped by vLLM's engine core (RequestStateStats: queued_ts,
 * scheduled_ts, first_token_ts, last_token_ts, monotonic seconds). */

static void llmss_settings(val_run *m, const cJSON *meta, const mdl_catalog *cat)
{
    const cJSON *kw = util_json_get(meta, "engine_kwargs");
    const char *repo = cJSON_GetStringValue(util_json_get(meta, "model"));
    const char *model = repo ? val__model_of_repo(cat, repo) : NULL;
    const char *device = cJSON_GetStringValue(util_json_get(meta, "hardware.device_name"));
    const char *gpu = device ? val__gpu_of_device(cat, device) : NULL;
    if (model) val__record_string(m, "cluster.model", model);
    if (gpu) val__record_string(m, "cluster.gpu", gpu);
    val__record_string(m, "cluster.engine", "vllm-v1"); /* vllm_version 0.19: the V1 engine */
    static const struct { const char *from, *to; } numbers[] = {
        {"engine_kwargs.tensor_parallel_size", "cluster.tensor_parallel"},
        {"engine_kwargs.max_num_seqs", "cluster.scheduler.max_batch"},
        {"engine_kwargs.max_num_batched_tokens", "cluster.scheduler.max_batched_tokens"},
        {"kv_cache.block_size", "cluster.scheduler.block_tokens"},
        {"kv_cache.num_gpu_blocks", "cluster.scheduler.kv_blocks"},
        {"kv_cache.gpu_memory_utilization", "cluster.scheduler.gpu_memory_utilization"},
    };
    for (size_t k = 0; k < sizeof numbers / sizeof *numbers; k++) {
        const cJSON *v = util_json_get(meta, numbers[k].from);
        if (cJSON_IsNumber(v)) val__record_number(m, numbers[k].to, v->valuedouble);
    }
    const cJSON *prefix = util_json_get(meta, "kv_cache.enable_prefix_caching");
    if (cJSON_IsBool(prefix)) val__record_bool(m, "cluster.scheduler.prefix_caching", cJSON_IsTrue(prefix));
    const char *kv = cJSON_GetStringValue(util_json_member(kw, "kv_cache_dtype"));
    if (kv && strcmp(kv, "auto")) val__record_string(m, "cluster.kv_cache_dtype", kv);
    char *name = device ? util_xasprintf("vLLM %s on %s", repo ? repo : "(model not recorded)", device)
                        : util_xasprintf("vLLM %s (GPU not recorded)", repo ? repo : "(model not recorded)");
    m->name = name;
}

static int llmss_line(val_run *m, const char *line, const char *path, int64_t ln, util_diag *d)
{
    cJSON *o = cJSON_Parse(line);
    double q = util_json_number(o, "queued_ts", NAN), t1 = util_json_number(o, "first_token_ts", NAN);
    double tl = util_json_number(o, "last_token_ts", NAN), s = util_json_number(o, "scheduled_ts", NAN);
    double in = util_json_number(o, "input_toks", NAN), out = util_json_number(o, "output_toks", NAN);
    cJSON_Delete(o);
    util_clip_buf b;
    if (isnan(q) || isnan(t1) || isnan(tl) || isnan(in) || isnan(out) || in < 1 || out < 1)
        return util_diag_add(d, "%s:%lld: expected queued_ts, first_token_ts, last_token_ts, "
                                "input_toks and output_toks (tokens >= 1)",
                             util_clip_path(path, &b), (long long)ln);
    val_request *r = val_run_add_request(m);
    r->arrival_s = q;
    r->ttft_s = t1 - q;
    r->e2e_s = tl - q;
    r->scheduled_s = s - q;
    r->prompt_tokens = (int64_t)in;
    r->output_tokens = (int64_t)out;
    return UTIL_OK;
}

int val__read_llmservingsim(const char *path, const cJSON *root, const mdl_catalog *cat,
                            val_runs *out, util_diag *d)
{
    (void)root;
    bool dir = is_dir(path);
    char *folder = dir ? util_xstrdup(path) : util_dirname(path);
    char *requests = dir ? util_path_join(path, "requests.jsonl") : util_xstrdup(path);
    char *meta_path = util_path_join(folder, "meta.json");
    cJSON *meta = NULL;
    int rc = util_json_read_file(meta_path, &meta, d);
    val_run *m = rc ? NULL : val_runs_add(out);
    util_lines *l = NULL;
    if (m) {
        m->format = "llmservingsim";
        m->clock = "engine";
        m->source = util_xstrdup(path);
        llmss_settings(m, meta, cat);
        rc = util_lines_open(requests, &l, d);
    }
    char *line;
    size_t len;
    int more = 0;
    while (!rc && (more = util_lines_next(l, &line, &len, d)) == 1)
        if (line[strspn(line, " \t")]) rc = llmss_line(m, line, requests, util_lines_number(l), d);
    if (!rc && more < 0) rc = more;
    if (m) val__sort_requests(m, true); /* monotonic stamps: the first queued at 0 */
    util_lines_close(l);
    cJSON_Delete(meta);
    free(meta_path);
    free(requests);
    free(folder);
    return rc;
}
