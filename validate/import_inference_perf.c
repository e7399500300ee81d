/*
 * import_inference_perf.c: an inference-perf report folder, or one of its
 * files, read as kubernetes-sigs/inference-perf writes them
 * (inference_perf/reportgen/base.py at commit
 * 010d12fb62cc3157b6bd228ef93dd865c7a05194, its records from
 * inference_perf/apis/base.py at 03e89d4a5badf37093c96dab524801ab420a0b18).
 * Every time is in seconds of the client's monotonic clock.
 *
 * stage_N_lifecycle_metrics.json summarises one stage, sent at one rate:
 * `load_summary` {count, requested_rate, achieved_rate, send_duration,
 * concurrency (a `concurrent` load)} and `successes.latency`
 * {time_to_first_token, time_per_output_token, inter_token_latency (every
 * gap between token times, pooled), request_latency}, each {mean, median,
 * p90, p99, ...}, `successes.throughput.output_tokens_per_sec`, and the
 * lengths `successes.prompt_len` (or, newer, `prompt_tokens`) and
 * `output_len`.  Each stage file is a run of aggregates with the generator
 * that sent it: a `constant` or `poisson` load is Poisson arrivals at the
 * stage's achieved rate (count / send_duration: what reached the server;
 * inference_perf/loadgen/load_timer.py at 0949afc8626eba1157277ce189497ac39dc39f74
 * draws a constant load's gaps as exponentials scaled to the stage's
 * duration, and a poisson load as Poisson counts per second, each spread
 * the same way), a `concurrent` load a closed loop of its concurrency, for
 * `count` requests; prompt and output lengths are lognormal from the median
 * and p90 (sigma = ln(p90 / median) / 1.2816, the p90 of a standard normal),
 * clamped to the stage's min and max -- a fit of two numbers, which the
 * run's name does not hide.  The summary mixes the stages' rates, so it is a
 * run only where a folder has no stage files.
 *
 * per_request_lifecycle_metrics.json is a list of {start_time, end_time,
 * info: {input_tokens (or request_metrics.text.input_tokens),
 * response_metrics: {output_tokens, server_usage, output_token_times,
 * chunk_times}}, error}: a run with every request, all stages together (its
 * entries carry no stage), the summary's aggregates its tool's own.  The
 * output tokens are the server's usage.completion_tokens where it gave
 * them, else inference-perf's count; TTFT is the first token time (a reply
 * not streamed comes whole: its first token is its last).
 *
 * config.yaml, beside them, gives server.model_name (else the tokenizer's)
 * and server.type `vllm` (servesim's vllm-v1) and load.type; it is read a
 * line at a time for those few keys, not as YAML.
 */
#include "val_int.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PER_REQUEST "per_request_lifecycle_metrics.json"
#define SUMMARY     "summary_lifecycle_metrics.json"

/* What config.yaml says, each NULL where it says nothing. */
typedef struct config {
    char *model, *tokenizer, *server, *load;
} config;

static void config_fini(config *c)
{
    free(c->model);
    free(c->tokenizer);
    free(c->server);
    free(c->load);
}

/* ---- config.yaml ---- */

/* A scalar as YAML writes it: trimmed, its comment and quotes dropped. */
static char *scalar(char *v)
{
    char *hash = strstr(v, " #");
    if (hash) *hash = 0;
    v += strspn(v, " \t");
    size_t n = strlen(v);
    while (n && strchr(" \t\r", v[n - 1])) v[--n] = 0;
    if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
        v[n - 1] = 0;
        v++;
    }
    return *v && strcmp(v, "null") ? util_xstrdup(v) : NULL;
}

/* One line: a top-level "name:" opens section sec; a member of it is a
 * line at the first indentation the section has. */
static void config_line(config *c, char *line, char *sec, int *indent)
{
    int at = (int)strspn(line, " ");
    char *colon = strchr(line, ':');
    if (!colon || line[at] == '#' || line[at] == '-') return;
    *colon = 0;
    if (at == 0) {
        snprintf(sec, 32, "%s", line);
        *indent = -1;
        return;
    }
    if (*indent < 0) *indent = at;
    if (at != *indent) return;
    static const struct {
        const char *sec, *key;
        size_t off;
    } keys[] = {
        {"server", "model_name", offsetof(config, model)},
        {"server", "type", offsetof(config, server)},
        {"tokenizer", "pretrained_model_name_or_path", offsetof(config, tokenizer)},
        {"load", "type", offsetof(config, load)},
    };
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        char **slot = (char **)((char *)c + keys[k].off);
        if (!strcmp(sec, keys[k].sec) && !strcmp(line + at, keys[k].key) && !*slot)
            *slot = scalar(colon + 1);
    }
}

/* config.yaml in dir, if there is one. */
static int config_read(const char *dir, config *c, util_diag *d)
{
    char *path = util_path_join(dir, "config.yaml"), *line, sec[32] = "";
    struct stat st;
    util_lines *l = NULL;
    int rc = stat(path, &st) == 0 ? util_lines_open(path, &l, d) : UTIL_OK, more = 0, indent = -1;
    size_t len;
    while (l && !rc && (more = util_lines_next(l, &line, &len, d)) == 1)
        config_line(c, line, sec, &indent);
    if (!rc && more < 0) rc = more;
    util_lines_close(l);
    free(path);
    return rc;
}

static void settings(val_run *m, const config *c, const mdl_catalog *cat)
{
    const char *repo = c->model ? c->model : c->tokenizer;
    const char *model = repo ? val__model_of_repo(cat, repo) : NULL;
    if (model) val__record_string(m, "cluster.model", model);
    if (c->server && !strcmp(c->server, "vllm")) val__record_string(m, "cluster.engine", "vllm-v1");
}

/* ---- a lifecycle report: stage or summary ---- */

typedef struct report {
    const char *path; /* for messages */
    const cJSON *root;
    util_diag *d;
} report;

/* The number at a dotted path: absent or null is NAN; anything but a
 * number >= 0 is an error naming the path. */
static int stat_at(const report *r, const char *at, double *out)
{
    util_clip_buf b;
    const cJSON *v = util_json_get(r->root, at);
    *out = NAN;
    if (!v || cJSON_IsNull(v)) return UTIL_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
        return util_diag_add(r->d, "%s: %s: expected a number >= 0", util_clip_path(r->path, &b),
                             at);
    *out = v->valuedouble;
    return UTIL_OK;
}

static int aggregates(val_run *m, const report *r)
{
    static const struct {
        const char *at;
        int metric[4]; /* mean, median, p90, p99; -1: none */
    } ls[] = {
        {"successes.latency.time_to_first_token",
         {VAL_TTFT_MEAN, VAL_TTFT_P50, VAL_TTFT_P90, VAL_TTFT_P99}},
        {"successes.latency.time_per_output_token",
         {VAL_TPOT_MEAN, VAL_TPOT_P50, VAL_TPOT_P90, VAL_TPOT_P99}},
        {"successes.latency.inter_token_latency", {VAL_ITL_MEAN, -1, -1, -1}},
        {"successes.latency.request_latency", {VAL_E2E_MEAN, VAL_E2E_P50, VAL_E2E_P90, VAL_E2E_P99}},
    };
    static const char *const stats[4] = {"mean", "median", "p90", "p99"};
    int rc = UTIL_OK;
    for (size_t k = 0; k < sizeof ls / sizeof *ls; k++)
        for (int s = 0; s < 4; s++) {
            char *at = util_xasprintf("%s.%s", ls[k].at, stats[s]);
            double v;
            rc |= stat_at(r, at, &v);
            if (ls[k].metric[s] >= 0 && !isnan(v)) m->metrics[ls[k].metric[s]] = v;
            free(at);
        }
    double tps;
    rc |= stat_at(r, "successes.throughput.output_tokens_per_sec", &tps);
    if (!isnan(tps)) m->metrics[VAL_OUTPUT_TPS] = tps;
    /* inference-perf writes 0 throughput when nothing succeeded */
    if (util_json_number(r->root, "successes.count", 1) < 1) m->metrics[VAL_OUTPUT_TPS] = NAN;
    return rc ? UTIL_EINPUT : UTIL_OK;
}

/* Lengths as a lognormal through the median and p90, clamped to min..max;
 * nothing recorded when the report has no median. */
static int lengths(val_run *m, const report *r, const char *const *from, const char *to)
{
    const char *at = util_json_get(r->root, from[0]) ? from[0] : from[1];
    double med, p90, lo, hi;
    char *key[4];
    static const char *const stats[4] = {"median", "p90", "min", "max"};
    double *dst[4] = {&med, &p90, &lo, &hi};
    int rc = UTIL_OK;
    for (int s = 0; s < 4; s++) {
        key[s] = util_xasprintf("%s.%s", at, stats[s]);
        rc |= stat_at(r, key[s], dst[s]);
        free(key[s]);
    }
    if (rc || isnan(med) || med <= 0) return rc ? UTIL_EINPUT : UTIL_OK;
    double sigma = !isnan(p90) && p90 > med ? log(p90 / med) / 1.2816 : 0;
    char *k = util_xasprintf("workload.%s.dist", to);
    val__record_string(m, k, "lognormal");
    free(k);
    const struct {
        const char *leaf;
        double v;
    } kv[] = {{"median", med}, {"sigma", sigma}, {"min", lo}, {"max", hi}};
    for (size_t s = 0; s < 4; s++) {
        if (isnan(kv[s].v)) continue;
        k = util_xasprintf("workload.%s.%s", to, kv[s].leaf);
        val__record_number(m, k, kv[s].v);
        free(k);
    }
    return UTIL_OK;
}

/* The generator that sent a stage; what servesim cannot express goes to
 * the name. */
static int generator(val_run *m, const report *r, const config *c, char **what)
{
    util_clip_buf b;
    double count, requested, achieved, users;
    int rc = stat_at(r, "load_summary.count", &count);
    rc |= stat_at(r, "load_summary.requested_rate", &requested);
    rc |= stat_at(r, "load_summary.achieved_rate", &achieved);
    rc |= stat_at(r, "load_summary.concurrency", &users);
    if (rc) return UTIL_EINPUT;
    if (isnan(count) || count < 1 || count != floor(count))
        return util_diag_add(r->d, "%s: load_summary.count: expected a whole number >= 1",
                             util_clip_path(r->path, &b));
    const char *load = c->load ? c->load : "constant"; /* inference-perf's default */
    double rate = achieved > 0 ? achieved : requested;
    if (!isnan(users) && users >= 1) {
        val__record_string(m, "workload.arrival.process", "closed");
        val__record_number(m, "workload.arrival.users", users);
        *what = util_xasprintf("%g users", users);
    } else if ((!strcmp(load, "constant") || !strcmp(load, "poisson")) && rate > 0) {
        val__record_string(m, "workload.arrival.process", "poisson");
        val__record_number(m, "workload.arrival.rate_per_s", rate);
        *what = util_xasprintf("rate %g/s (achieved %g/s)", requested, rate);
    } else {
        *what = util_xasprintf("a %s load servesim has no generator for", load);
    }
    val__record_number(m, "stop.requests", count);
    return UTIL_OK;
}

/* A stage file (stage >= 0) or the summary (-1) as a run. */
static int read_report(const char *path, const cJSON *root, int stage, const config *c,
                       const mdl_catalog *cat, val_runs *out, util_diag *d)
{
    util_clip_buf b;
    if (!cJSON_IsObject(util_json_member(root, "successes")))
        return util_diag_add(d, "%s: successes: expected an object", util_clip_path(path, &b));
    report r = {.path = path, .root = root, .d = d};
    val_run *m = val_runs_add(out);
    m->format = "inference-perf";
    m->clock = "client";
    m->source = util_xstrdup(path);
    settings(m, c, cat);
    static const char *const prompt[] = {"successes.prompt_len", "successes.prompt_tokens"};
    static const char *const output[] = {"successes.output_len", "successes.output_tokens"};
    int rc = aggregates(m, &r);
    if (!rc) rc = lengths(m, &r, prompt, "prompt_tokens");
    if (!rc) rc = lengths(m, &r, output, "output_tokens");
    char *what = NULL;
    if (!rc && stage >= 0) rc = generator(m, &r, c, &what);
    const char *model = c->model ? c->model : "?";
    if (stage >= 0)
        m->name = util_xasprintf("inference-perf %s stage %d, %s, lengths lognormal from median "
                                 "and p90", model, stage, what ? what : "?");
    else
        m->name = util_xasprintf("inference-perf %s summary (every stage, no one rate)", model);
    free(what);
    return rc;
}

/* ---- the per-request report ---- */

/* A whole number >= lo at a dotted path of entry i; absent is NAN. */
static int entry_number(const char *path, int i, const cJSON *e, const char *at, double lo,
                        bool whole, double *out, util_diag *d)
{
    util_clip_buf b;
    const cJSON *v = util_json_get(e, at);
    *out = NAN;
    if (!v || cJSON_IsNull(v)) return UTIL_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        (whole && (v->valuedouble != floor(v->valuedouble) || v->valuedouble > VAL__MAX_TOKENS)))
        return whole ? util_diag_add(d, "%s: [%d].%s: expected a whole number >= %g, <= %g",
                                     util_clip_path(path, &b), i, at, lo, VAL__MAX_TOKENS)
                     : util_diag_add(d, "%s: [%d].%s: expected a number >= %g",
                                     util_clip_path(path, &b), i, at, lo);
    *out = v->valuedouble;
    return UTIL_OK;
}

/* The first stamp of a list of times (token or chunk times); NAN if empty. */
static int first_time(const char *path, int i, const cJSON *e, const char *at, double *out,
                      util_diag *d)
{
    util_clip_buf b;
    const cJSON *l = util_json_get(e, at);
    *out = NAN;
    if (!l || cJSON_IsNull(l)) return UTIL_OK;
    const cJSON *t = cJSON_GetArrayItem(l, 0);
    if (!cJSON_IsArray(l) || (t && (!cJSON_IsNumber(t) || !isfinite(t->valuedouble))))
        return util_diag_add(d, "%s: [%d].%s: expected a list of times in seconds",
                             util_clip_path(path, &b), i, at);
    if (t) *out = t->valuedouble;
    return UTIL_OK;
}

static int request_entry(val_run *m, const char *path, int i, const cJSON *e, util_diag *d)
{
    util_clip_buf b;
    if (!cJSON_IsObject(e))
        return util_diag_add(d, "%s: [%d]: expected an object", util_clip_path(path, &b), i);
    double start, end, in, in_new, out, server, tok, chunk;
    int rc = entry_number(path, i, e, "start_time", -INFINITY, false, &start, d);
    rc |= entry_number(path, i, e, "end_time", -INFINITY, false, &end, d);
    rc |= entry_number(path, i, e, "info.input_tokens", 0, true, &in, d);
    rc |= entry_number(path, i, e, "info.request_metrics.text.input_tokens", 0, true, &in_new, d);
    rc |= entry_number(path, i, e, "info.response_metrics.output_tokens", 0, true, &out, d);
    rc |= entry_number(path, i, e, "info.response_metrics.server_usage.completion_tokens", 0, true,
                       &server, d);
    rc |= first_time(path, i, e, "info.response_metrics.output_token_times", &tok, d);
    rc |= first_time(path, i, e, "info.response_metrics.chunk_times", &chunk, d);
    if (rc) return UTIL_EINPUT;
    if (isnan(start) || isnan(end) || end < start)
        return util_diag_add(d, "%s: [%d]: expected start_time and end_time, end_time >= "
                                "start_time",
                             util_clip_path(path, &b), i);
    const cJSON *err = util_json_member(e, "error");
    bool failed = err && !cJSON_IsNull(err);
    if (isnan(in)) in = in_new;
    if (!isnan(server)) out = server;
    if (!failed && (isnan(in) || in < 1 || isnan(out) || out < 1))
        return util_diag_add(d, "%s: [%d].info: expected input_tokens and "
                                "response_metrics.output_tokens, each >= 1",
                             util_clip_path(path, &b), i);
    val_request *q = val_run_add_request(m);
    q->arrival_s = start;
    q->prompt_tokens = isnan(in) ? 0 : (int64_t)in;
    q->output_tokens = isnan(out) ? 0 : (int64_t)out;
    q->failed = failed;
    if (!failed) {
        double first = !isnan(tok) ? tok : !isnan(chunk) ? chunk : end;
        q->ttft_s = fmax(first - start, 0);
        q->e2e_s = end - start;
    }
    return UTIL_OK;
}

static int read_per_request(const char *path, const cJSON *root, const cJSON *summary,
                            const char *summary_path, const config *c, const mdl_catalog *cat,
                            val_runs *out, util_diag *d)
{
    util_clip_buf b;
    if (!cJSON_IsArray(root))
        return util_diag_add(d, "%s: expected a list of requests", util_clip_path(path, &b));
    val_run *m = val_runs_add(out);
    m->format = "inference-perf";
    m->clock = "client";
    m->source = util_xstrdup(path);
    settings(m, c, cat);
    int rc = UTIL_OK, i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (!rc) rc = request_entry(m, path, i, e, d);
        i++;
    }
    report r = {.path = summary_path, .root = summary, .d = d};
    if (!rc && summary) rc = aggregates(m, &r);
    m->name = util_xasprintf("inference-perf %s, every request of every stage",
                             c->model ? c->model : "?");
    val__sort_requests(m, true); /* monotonic stamps: the first sent at 0 */
    return rc;
}

/* ---- the folder ---- */

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The stage numbers of dir's stage_N_lifecycle_metrics.json, ascending. */
static int *stages_of(const char *dir, int *n)
{
    DIR *dp = opendir(dir);
    int *v = NULL, cap = 0;
    *n = 0;
    for (struct dirent *de; dp && (de = readdir(dp));) {
        int k, used = 0;
        if (sscanf(de->d_name, "stage_%d_lifecycle_metrics.json%n", &k, &used) != 1 ||
            de->d_name[used] || k < 0)
            continue;
        if (*n == cap) v = util_xrealloc(v, (size_t)(cap = cap ? 2 * cap : 8) * sizeof *v);
        v[(*n)++] = k;
    }
    if (dp) closedir(dp);
    if (*n) qsort(v, (size_t)*n, sizeof *v, by_int);
    return v;
}

/* A JSON file of dir, or NULL (and no error) when it is not there. */
static int read_opt(const char *dir, const char *name, char **path, cJSON **root, util_diag *d)
{
    struct stat st;
    *path = util_path_join(dir, name);
    *root = NULL;
    return stat(*path, &st) == 0 ? util_json_read_data(*path, root, d) : UTIL_OK;
}

static int read_folder(const char *dir, const config *c, const mdl_catalog *cat, val_runs *out,
                       util_diag *d)
{
    char *preq, *spath;
    cJSON *per = NULL, *summary = NULL;
    int rc = read_opt(dir, PER_REQUEST, &preq, &per, d);
    if (!rc) rc = read_opt(dir, SUMMARY, &spath, &summary, d);
    else spath = NULL;
    int n = 0, *stages = rc || per ? NULL : stages_of(dir, &n);
    if (!rc && per) {
        /* the stages summarise the same requests: the requests are the run */
        rc = read_per_request(preq, per, summary, spath, c, cat, out, d);
    } else if (!rc && n == 0 && summary) {
        rc = read_report(spath, summary, -1, c, cat, out, d);
    }
    for (int k = 0; !rc && k < n; k++) {
        char name[64], *path;
        cJSON *root;
        snprintf(name, sizeof name, "stage_%d_lifecycle_metrics.json", stages[k]);
        rc = read_opt(dir, name, &path, &root, d);
        if (!rc) rc = read_report(path, root, stages[k], c, cat, out, d);
        cJSON_Delete(root);
        free(path);
    }
    free(stages);
    cJSON_Delete(per);
    cJSON_Delete(summary);
    free(preq);
    free(spath);
    return rc;
}

/* A per-request file given by itself, with the summary beside it. */
static int per_request_file(const char *path, const cJSON *root, const char *folder,
                            const config *c, const mdl_catalog *cat, val_runs *out, util_diag *d)
{
    char *spath;
    cJSON *summary;
    int rc = read_opt(folder, SUMMARY, &spath, &summary, d);
    if (!rc) rc = read_per_request(path, root, summary, spath, c, cat, out, d);
    cJSON_Delete(summary);
    free(spath);
    return rc;
}

/* The stage a file's name gives (stage_N_...), or -1 (the summary). */
static int stage_of(const char *path)
{
    const char *base = strrchr(path, '/');
    int k;
    return sscanf(base ? base + 1 : path, "stage_%d_", &k) == 1 && k >= 0 ? k : -1;
}

int val__read_inference_perf(const char *path, const cJSON *root, const mdl_catalog *cat,
                             val_runs *out, util_diag *d)
{
    struct stat st;
    bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    char *folder = dir ? util_xstrdup(path) : util_dirname(path);
    config c = {0};
    int rc = config_read(folder, &c, d);
    if (!rc && dir) rc = read_folder(folder, &c, cat, out, d);
    else if (!rc && cJSON_IsArray(root))
        rc = per_request_file(path, root, folder, &c, cat, out, d);
    else if (!rc)
        rc = read_report(path, root, stage_of(path), &c, cat, out, d);
    config_fini(&c);
    free(folder);
    return rc;
}
