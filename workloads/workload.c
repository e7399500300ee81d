/*
 * workload.c: the `workload` section and the source that draws requests from
 * it.  Arrival gaps, prompt lengths, output lengths and think times each come
 * from their own random stream (common random numbers: two scenarios that
 * differ only in the cluster see the same requests at the same times).
 */
#include "wl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

enum { STREAM_ARRIVAL = 1, STREAM_PROMPT = 2, STREAM_OUTPUT = 3, STREAM_THINK = 4 };

static const util_field rate_fields[] = {
    {.key = "rate_per_s", .type = UTIL_T_NUMBER, .unit = "1/s", .min = 0, .max = 1e9,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE, .doc = "mean arrival rate"},
    {0},
};

static const util_field gamma_fields[] = {
    {.key = "rate_per_s", .type = UTIL_T_NUMBER, .unit = "1/s", .min = 0, .max = 1e9,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE, .doc = "mean arrival rate"},
    {.key = "cv", .type = UTIL_T_NUMBER, .min = 0, .max = 100,
     .flags = UTIL_REQUIRED | UTIL_MIN_EXCLUSIVE,
     .doc = "coefficient of variation of the gaps (1: Poisson; > 1 bursty)"},
    {0},
};

static const util_field closed_fields[] = {
    {.key = "users", .type = UTIL_T_INTEGER, .min = 1, .max = 1e7, .flags = UTIL_REQUIRED,
     .doc = "concurrent clients, each with one request in flight"},
    {.key = "think_s", .type = UTIL_T_UNION, .unit = "s", .un = &wl_dist_schema,
     .def = "{\"dist\": \"fixed\", \"value\": 0}",
     .doc = "pause between a reply and the user's next request"},
    {0},
};

static const char *const trace_formats[] = {"csv", NULL};

static const util_field trace_fields[] = {
    {.key = "path", .type = UTIL_T_STRING, .flags = UTIL_REQUIRED,
     .doc = "trace file; relative to the scenario file's folder"},
    {.key = "format", .type = UTIL_T_STRING, .def = "\"csv\"", .choices = trace_formats,
     .doc = "csv: arrival_time_s,input_tokens,output_tokens"},
    {0},
};

static const util_variant arrival_variants[] = {
    {"poisson", rate_fields, "open loop, exponential gaps"},
    {"constant", rate_fields, "open loop, equal gaps"},
    {"gamma", gamma_fields, "open loop, gamma gaps (burstiness)"},
    {"closed", closed_fields, "closed loop: fixed concurrency"},
    {"trace", trace_fields, "open loop, times and lengths replayed from a file"},
    {0},
};

static const util_union arrival_schema = {.tag = "process", .def = "poisson",
                                          .variants = arrival_variants};

const util_field wl_workload_fields[] = {
    {.key = "arrival", .type = UTIL_T_UNION, .un = &arrival_schema, .flags = UTIL_REQUIRED,
     .doc = "how requests arrive"},
    {.key = "prompt_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .doc = "prompt length (required unless a trace gives the lengths)"},
    {.key = "output_tokens", .type = UTIL_T_UNION, .unit = "tokens", .un = &wl_dist_schema,
     .doc = "reply length, first token included (required unless a trace gives it)"},
    {0},
};

static int arrival_from_json(const cJSON *a, const char *path, const char *base_dir,
                             wl_arrival *out, util_diag *d)
{
    static const char *const names[] = {"poisson", "constant", "gamma", "closed", "trace", NULL};
    const char *p = cJSON_GetObjectItemCaseSensitive(a, "process")->valuestring;
    int k = 0;
    while (names[k] && strcmp(names[k], p)) k++;
    out->process = (wl_process)k;
    out->rate_per_s = util_json_number(a, "rate_per_s", 0);
    out->cv = util_json_number(a, "cv", 1);
    out->users = (int)util_json_number(a, "users", 0);
    int rc = UTIL_OK;
    if (out->process == WL_CLOSED) {
        char *tp = util_xasprintf("%s.think_s", path);
        rc = wl_dist_from_json(cJSON_GetObjectItemCaseSensitive(a, "think_s"), tp, false,
                               &out->think_s, d);
        free(tp);
    } else if (out->process == WL_TRACE) {
        out->trace_path = util_path_join(
            base_dir, cJSON_GetObjectItemCaseSensitive(a, "path")->valuestring);
        rc = wl_trace_check(out->trace_path, NULL, d);
    }
    return rc;
}

/* A length distribution, required unless a trace gives the lengths. */
static int lengths_from_json(const cJSON *w, const char *path, const char *key, bool needed,
                             wl_dist *out, util_diag *d)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(w, key);
    if (!o && !needed) return UTIL_OK;
    if (!o) return util_diag_add(d, "%s.%s: missing (expected an object)", path, key);
    char *p = util_xasprintf("%s.%s", path, key);
    int rc = wl_dist_from_json(o, p, true, out, d);
    free(p);
    return rc;
}

int wl_spec_from_json(const cJSON *w, const char *path, const char *base_dir, wl_spec *out,
                      util_diag *d)
{
    memset(out, 0, sizeof *out);
    char *pa = util_xasprintf("%s.arrival", path);
    int rc = arrival_from_json(cJSON_GetObjectItemCaseSensitive(w, "arrival"), pa, base_dir,
                               &out->arrival, d);
    free(pa);
    bool needed = out->arrival.process != WL_TRACE;
    if (lengths_from_json(w, path, "prompt_tokens", needed, &out->prompt, d)) rc = UTIL_EINPUT;
    if (lengths_from_json(w, path, "output_tokens", needed, &out->output, d)) rc = UTIL_EINPUT;
    return rc ? UTIL_EINPUT : UTIL_OK;
}

void wl_spec_fini(wl_spec *spec)
{
    free(spec->arrival.trace_path);
    spec->arrival.trace_path = NULL;
}

/* ---- source ---- */

struct wl_source {
    wl_spec spec;
    gsl_rng *arrival, *prompt, *output, *think;
    double gamma_shape, gamma_scale;
    double next_s;   /* the generated processes: time of the next arrival */
    wl_trace *trace; /* WL_TRACE: opened at the first arrival */
};

wl_source *wl_source_create(const wl_spec *spec, uint64_t seed)
{
    wl_source *s = util_xcalloc(1, sizeof *s);
    s->spec = *spec;
    s->arrival = util_rng_stream(seed, STREAM_ARRIVAL);
    s->prompt = util_rng_stream(seed, STREAM_PROMPT);
    s->output = util_rng_stream(seed, STREAM_OUTPUT);
    s->think = util_rng_stream(seed, STREAM_THINK);
    /* Gamma gaps with mean 1/rate and CV c: shape 1/c^2, scale 1/(rate * shape)
     * (vLLM's --burstiness is this shape). */
    s->gamma_shape = 1.0 / (spec->arrival.cv * spec->arrival.cv);
    s->gamma_scale = 1.0 / (spec->arrival.rate_per_s * s->gamma_shape);
    return s;
}

void wl_source_destroy(wl_source *s)
{
    if (!s) return;
    gsl_rng_free(s->arrival);
    gsl_rng_free(s->prompt);
    gsl_rng_free(s->output);
    gsl_rng_free(s->think);
    wl_trace_close(s->trace);
    free(s);
}

double wl_source_next_gap(wl_source *s)
{
    const wl_arrival *a = &s->spec.arrival;
    switch (a->process) {
    case WL_POISSON: return gsl_ran_exponential(s->arrival, 1.0 / a->rate_per_s);
    case WL_CONSTANT: return 1.0 / a->rate_per_s;
    case WL_GAMMA: return gsl_ran_gamma(s->arrival, s->gamma_shape, s->gamma_scale);
    case WL_CLOSED:
    case WL_TRACE: break;
    }
    return 0;
}

int wl_source_next(wl_source *s, wl_record *rec, util_diag *d)
{
    if (s->spec.arrival.process == WL_TRACE) {
        if (!s->trace && wl_trace_open(s->spec.arrival.trace_path, &s->trace, d)) return UTIL_EFAIL;
        return wl_trace_next(s->trace, rec, d);
    }
    /* Gaps accumulate in double seconds, so that rounding never drifts. */
    rec->arrival_s = s->next_s;
    s->next_s += wl_source_next_gap(s);
    wl_source_lengths(s, &rec->prompt, &rec->output);
    return 1;
}

double wl_source_think(wl_source *s)
{
    return wl_dist_sample(&s->spec.arrival.think_s, s->think);
}

void wl_source_lengths(wl_source *s, int32_t *prompt, int32_t *output)
{
    double p = wl_dist_sample(&s->spec.prompt, s->prompt);
    double o = wl_dist_sample(&s->spec.output, s->output);
    *prompt = p > INT32_MAX ? INT32_MAX : (int32_t)p;
    *output = o > INT32_MAX ? INT32_MAX : (int32_t)o;
}
