/*
 * import_servesim.c: servesim's measured-run JSON, for any tool servesim
 * has no reader of (docs/calibration.md):
 *
 *   {"name": "...", "clock": "client" | "engine",
 *    "scenario": "path/to/scenario.json" | {scenario object},
 *    "metrics": {"ttft_mean_s": ..., ..., "output_tokens_per_s": ...},
 *    "requests": "optional/path/to/requests.csv"}
 *
 * Paths are relative to the JSON file, and so are the files the scenario
 * names (a trace): they are made absolute here, so that the stored
 * scenario replays from wherever the database is read.  requests.csv has
 * a header naming its columns: arrival_s, prompt_tokens, output_tokens,
 * ttft_s and e2e_s (or itl_s, the mean gap between tokens), and optionally
 * failed (0 or 1); times in seconds, arrivals from the run's start.
 */
#include "val_int.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const top_keys[] = {"name", "clock", "scenario", "metrics", "requests", NULL};
static const char *const clocks[] = {"client", "engine", NULL};

/* ---- paths ---- */

/* The members that name files, in a scenario (docs/scenario.md). */
static bool names_file(const char *key)
{
    return !strcmp(key, "path") || !strcmp(key, "dir") || !strcmp(key, "hf_config");
}

void val_absolute_paths(cJSON *item, const char *dir)
{
    cJSON *c;
    cJSON_ArrayForEach(c, item) {
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            val_absolute_paths(c, dir);
        } else if (c->string && names_file(c->string) && cJSON_IsString(c) &&
                   c->valuestring[0] != '/') {
            char *joined = util_path_join(dir, c->valuestring), cwd[PATH_MAX];
            if (joined[0] != '/' && getcwd(cwd, sizeof cwd)) {
                char *abs = util_path_join(cwd, joined);
                free(joined);
                joined = abs;
            }
            cJSON_SetValuestring(c, joined);
            free(joined);
        }
    }
}

/* ---- the members ---- */

static int read_scenario(val_run *m, const cJSON *v, const char *path, const char *dir,
                         util_diag *d)
{
    util_clip_buf b;
    cJSON *sc = NULL;
    int rc = UTIL_OK;
    char *base = NULL;
    if (cJSON_IsString(v)) {
        char *file = util_path_join(dir, v->valuestring);
        rc = util_json_read_file(file, &sc, d);
        base = util_dirname(file);
        free(file);
    } else if (cJSON_IsObject(v)) {
        sc = cJSON_Duplicate(v, true);
        base = util_xstrdup(dir);
    } else if (v) {
        rc = util_diag_add(d, "%s: scenario: expected a file name or a scenario object",
                           util_clip_path(path, &b));
    }
    if (!rc && sc) {
        val_absolute_paths(sc, base);
        cJSON_Delete(m->scenario);
        m->scenario = sc;
    }
    free(base);
    return rc;
}

static int read_metrics(val_run *m, const cJSON *v, const char *path, util_diag *d)
{
    util_clip_buf b;
    if (!v) return UTIL_OK;
    if (!cJSON_IsObject(v))
        return util_diag_add(d, "%s: metrics: expected an object", util_clip_path(path, &b));
    int rc = UTIL_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, v) {
        char *where = util_xasprintf("%s: metrics.%s", util_clip_path(path, &b), c->string);
        int k = 0;
        while (k < VAL_N_AGG && strcmp(val_agg_names[k], c->string)) k++;
        if (k == VAL_N_AGG)
            rc = util_diag_unknown(d, where, "metric", c->string, val_agg_names);
        else if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble < 0)
            rc = util_diag_add(d, "%s: expected a number >= 0 (seconds or tokens/s)", where);
        else
            m->metrics[k] = c->valuedouble;
        free(where);
    }
    return rc;
}

/* ---- requests.csv ---- */

enum { C_ARRIVAL, C_PROMPT, C_OUTPUT, C_TTFT, C_E2E, C_ITL, C_FAILED, N_COLS };
static const char *const columns[N_COLS + 1] = {"arrival_s", "prompt_tokens", "output_tokens",
                                                "ttft_s",    "e2e_s",         "itl_s",
                                                "failed",    NULL};

static int header(char *line, int at[N_COLS], const char *file, util_diag *d)
{
    char *f[64];
    int n = util_split(line, ',', f, 64);
    for (int k = 0; k < N_COLS; k++) at[k] = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < N_COLS; k++)
            if (!strcmp(f[i], columns[k])) at[k] = i;
    for (int k = 0; k <= C_TTFT; k++)
        if (at[k] < 0)
            return util_diag_add(d, "%s:1: the header has no column %s (expected arrival_s, "
                                    "prompt_tokens, output_tokens, ttft_s and e2e_s or itl_s)",
                                 file, columns[k]);
    if (at[C_E2E] < 0 && at[C_ITL] < 0)
        return util_diag_add(d, "%s:1: the header has neither e2e_s nor itl_s", file);
    return UTIL_OK;
}

static int field(char **f, int n, int col, const char *file, int64_t ln, double *out,
                 util_diag *d)
{
    if (col < 0 || col >= n) {
        *out = NAN;
        return col < 0 ? UTIL_OK
                       : util_diag_add(d, "%s:%lld: no field %d (%s)", file, (long long)ln, col + 1,
                                       columns[col]);
    }
    char *end;
    *out = strtod(f[col], &end);
    if (end == f[col] || *end || !isfinite(*out) || *out < 0)
        return util_diag_add(d, "%s:%lld: field %d: expected a number >= 0, got '%s'", file,
                             (long long)ln, col + 1, f[col]);
    return UTIL_OK;
}

static int request_line(val_run *m, char *line, const int at[N_COLS], const char *file, int64_t ln,
                        util_diag *d)
{
    char *f[64];
    int n = util_split(line, ',', f, 64), rc = UTIL_OK;
    double v[N_COLS];
    for (int k = 0; k < N_COLS; k++) rc |= field(f, n, at[k], file, ln, &v[k], d);
    if (rc) return UTIL_EINPUT;
    if (v[C_PROMPT] < 1 || v[C_OUTPUT] < 1 || v[C_PROMPT] != floor(v[C_PROMPT]) ||
        v[C_OUTPUT] != floor(v[C_OUTPUT]))
        return util_diag_add(d, "%s:%lld: prompt_tokens and output_tokens must be whole numbers "
                                ">= 1", file, (long long)ln);
    val_request *q = val_run_add_request(m);
    q->arrival_s = v[C_ARRIVAL];
    q->prompt_tokens = (int64_t)v[C_PROMPT];
    q->output_tokens = (int64_t)v[C_OUTPUT];
    q->ttft_s = v[C_TTFT];
    q->e2e_s = v[C_E2E];
    q->itl_s = v[C_ITL];
    q->failed = v[C_FAILED] > 0;
    return UTIL_OK;
}

static int read_requests(val_run *m, const cJSON *v, const char *path, const char *dir,
                         util_diag *d)
{
    util_clip_buf b;
    if (!v) return UTIL_OK;
    if (!cJSON_IsString(v))
        return util_diag_add(d, "%s: requests: expected a file name", util_clip_path(path, &b));
    char *file = util_path_join(dir, v->valuestring), *line;
    util_lines *l = NULL;
    size_t len;
    int at[N_COLS], rc = util_lines_open(file, &l, d), more = 0;
    bool first = true;
    while (!rc && (more = util_lines_next(l, &line, &len, d)) == 1) {
        if (!line[strspn(line, " \t\r")]) continue;
        rc = first ? header(line, at, file, d)
                   : request_line(m, line, at, file, util_lines_number(l), d);
        first = false;
    }
    if (!rc && more < 0) rc = more;
    util_lines_close(l);
    free(file);
    val__sort_requests(m, false);
    return rc;
}

int val__read_servesim(const char *path, const cJSON *root, const mdl_catalog *cat,
                       val_runs *out, util_diag *d)
{
    (void)cat;
    util_clip_buf b;
    int rc = UTIL_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, root) {
        int k = 0;
        while (top_keys[k] && strcmp(top_keys[k], c->string)) k++;
        if (!top_keys[k])
            rc = util_diag_unknown(d, util_clip_path(path, &b), "key", c->string, top_keys);
    }
    const cJSON *clock = util_json_member(root, "clock");
    int ck = clock ? util_json_choice(root, "clock", clocks) : 0;
    if (ck == 2) rc = util_diag_add(d, "%s: clock: expected \"client\" or \"engine\"",
                                   util_clip_path(path, &b));
    if (rc) return rc;
    val_run *m = val_runs_add(out);
    m->format = "servesim";
    m->clock = clocks[ck];
    const char *name = cJSON_GetStringValue(util_json_member(root, "name"));
    m->name = util_xstrdup(name ? name : path);
    char *dir = util_dirname(path);
    rc = read_scenario(m, util_json_member(root, "scenario"), path, dir, d);
    if (!rc) rc = read_metrics(m, util_json_member(root, "metrics"), path, d);
    if (!rc) rc = read_requests(m, util_json_member(root, "requests"), path, dir, d);
    free(dir);
    return rc;
}
