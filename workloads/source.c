/*
 * source.c: the source of requests -- arrivals of every stream, classes,
 * lengths, think and tool times, and the delays before the router.
 *
 * Every kind of draw has its own random stream derived from the master seed
 * (common random numbers): changing the cluster, or one distribution, leaves
 * every other draw as it was.  Stream ids of the first arrival stream and the
 * first class are those of a workload without classes, so adding classes to
 * a scenario does not disturb its first class's requests.
 *
 * A trace stream is read a line at a time; its options rescale and slice the
 * times, and `loop` starts it over, shifted by its span plus one mean gap.
 *
 * Segments (what a prompt shares) cost nothing where nothing is shared:
 * the record's pointer is NULL.  A trace's are its own buffer's; a
 * shared-prefix prompt's two live in the stream's state (wl_source_next) or
 * the source's (wl_source_draw), so that one stream's pending arrival keeps
 * its segments while other streams and draws go on.  Every shared-prefix
 * prompt, arrival or draw, comes from one sequence (prefix.c), whose
 * shuffle has a random stream of its own.
 *
 * A trace row's tenant is handed on as the spec's copy (wl_arrival.tenants,
 * every tenant found when the trace was checked), not the source's: a
 * request's row is written after the engine, and this source, are gone
 * (the recorder's id ring, the writer thread's buffers).
 */
#include "wl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

/* Random stream ids: stream and class 0 keep the ids of a one-class workload. */
static uint64_t id_of(uint64_t kind, int index, uint64_t first)
{
    return index == 0 ? first : kind * 1000 + (uint64_t)index;
}

enum { GAPS = 1, PROMPT = 2, OUTPUT = 3, THINK = 4, PICK = 5, TOOL_TOKENS = 6, TOOL_S = 7, TURNS = 10 };

/* The shuffle of workload.shared_prefix's prompts (ids up to 8002 are taken). */
#define SHARED_PREFIX_STREAM 9000

typedef struct stream_state {
    gsl_rng *gaps, *pick, *think;
    double next_s;  /* generated processes: time of the next arrival (with a rate_profile:
                     * in expected arrivals, its time wl_profile_time's) */
    double gamma_shape, gamma_scale;
    double total_weight;
    /* traces */
    wl_trace *trace;
    double scale, offset; /* replay time = (trace time - start_s) x scale + offset */
    double last_s;        /* last replayed trace time, for the loop's shift */
    int64_t sent;         /* records replayed in this pass */
    wl_segment seg[2];    /* a shared-prefix arrival's segments, kept until the next */
} stream_state;

typedef struct class_state {
    gsl_rng *prompt, *output, *tool_tokens, *tool_s, *turns;
} class_state;

struct wl_source {
    const wl_spec *spec;
    stream_state *streams;
    class_state *classes;
    gsl_rng *pre_model, *slow, *slow_extra;
    int64_t slow_seen, slow_chosen; /* of the current block of spec->slow_of calls */
    wl__prefix *prefix;    /* workload.shared_prefix's prompts, or NULL */
    wl_segment draw_seg[2]; /* wl_source_draw's segments, kept until its next call */
};

static void stream_init(wl_source *src, int i, uint64_t seed)
{
    const wl_arrival *a = &src->spec->streams[i];
    stream_state *s = &src->streams[i];
    s->gaps = util_rng_stream(seed, id_of(GAPS, i, 1));
    s->pick = util_rng_stream(seed, id_of(PICK, i, 5000));
    s->think = util_rng_stream(seed, id_of(THINK, i, 4));
    /* Gamma gaps with mean 1/rate and CV c: shape 1/c^2, scale 1/(rate x
     * shape) (vLLM's --burstiness is this shape). */
    if (a->process == WL_GAMMA) {
        s->gamma_shape = 1.0 / (a->cv * a->cv);
        s->gamma_scale = 1.0 / (a->rate_per_s * s->gamma_shape);
    }
    for (int c = 0; c < src->spec->n_classes; c++)
        if (src->spec->classes[c].stream == i) s->total_weight += src->spec->classes[c].weight;
    if (a->process != WL_TRACE) return;
    s->scale = a->scale; /* from the slice a pass replays (spec.c) */
}

wl_source *wl_source_create(const wl_spec *spec, uint64_t seed)
{
    wl_source *s = util_xcalloc(1, sizeof *s);
    s->spec = spec;
    s->streams = util_xcalloc((size_t)spec->n_streams, sizeof *s->streams);
    for (int i = 0; i < spec->n_streams; i++) stream_init(s, i, seed);
    s->classes = util_xcalloc((size_t)spec->n_classes, sizeof *s->classes);
    for (int c = 0; c < spec->n_classes; c++) {
        class_state *k = &s->classes[c];
        k->prompt = util_rng_stream(seed, id_of(PROMPT, c, 2));
        k->output = util_rng_stream(seed, id_of(OUTPUT, c, 3));
        k->tool_tokens = util_rng_stream(seed, id_of(TOOL_TOKENS, c, 6000));
        k->tool_s = util_rng_stream(seed, id_of(TOOL_S, c, 7000));
        k->turns = util_rng_stream(seed, id_of(TURNS, c, 10000));
    }
    s->pre_model = util_rng_stream(seed, 8000);
    s->slow = util_rng_stream(seed, 8001);
    s->slow_extra = util_rng_stream(seed, 8002);
    if (spec->has_shared_prefix) {
        gsl_rng *r = util_rng_stream(seed, SHARED_PREFIX_STREAM);
        s->prefix = wl__prefix_create(&spec->shared_prefix, r);
        gsl_rng_free(r);
    }
    return s;
}

void wl_source_destroy(wl_source *s)
{
    if (!s) return;
    for (int i = 0; i < s->spec->n_streams; i++) {
        gsl_rng_free(s->streams[i].gaps);
        gsl_rng_free(s->streams[i].pick);
        gsl_rng_free(s->streams[i].think);
        wl_trace_close(s->streams[i].trace);
    }
    for (int c = 0; c < s->spec->n_classes; c++) {
        gsl_rng_free(s->classes[c].prompt);
        gsl_rng_free(s->classes[c].output);
        gsl_rng_free(s->classes[c].tool_tokens);
        gsl_rng_free(s->classes[c].tool_s);
        gsl_rng_free(s->classes[c].turns);
    }
    gsl_rng_free(s->pre_model);
    gsl_rng_free(s->slow);
    gsl_rng_free(s->slow_extra);
    wl__prefix_destroy(s->prefix);
    free(s->streams);
    free(s->classes);
    free(s);
}

static double next_gap(const wl_arrival *a, stream_state *s)
{
    if (isinf(a->rate_per_s)) return 0; /* "inf": no draw, as vLLM draws none */
    switch (a->process) {
    case WL_POISSON: return gsl_ran_exponential(s->gaps, 1.0 / a->rate_per_s);
    case WL_CONSTANT: return 1.0 / a->rate_per_s;
    case WL_GAMMA: return gsl_ran_gamma(s->gaps, s->gamma_shape, s->gamma_scale);
    case WL_CLOSED:
    case WL_TRACE: break;
    }
    return 0;
}

/* Starts a trace's next pass: shifted by the last pass's span and one mean
 * gap, so that looping keeps the trace's rate. */
static int restart_trace(const wl_arrival *a, stream_state *s, util_diag *d)
{
    if (s->trace) {
        double span = (s->last_s - a->start_s) * s->scale;
        s->offset += span + (s->sent > 1 ? span / (double)(s->sent - 1) : 0);
        wl_trace_close(s->trace);
        s->trace = NULL;
    }
    s->sent = 0;
    if (wl_trace_open(a->trace_path, a->format, &s->trace, d)) return UTIL_EFAIL;
    wl_trace_set_block_tokens(s->trace, a->hash_block_tokens);
    return UTIL_OK;
}

/* The trace's next record within the slice [start_s, limit), looping if
 * asked: 1, 0 at the end, < 0 on error. */
static int next_from_trace(const wl_arrival *a, stream_state *s, wl_record *rec, util_diag *d)
{
    if (!s->trace && restart_trace(a, s, d)) return UTIL_EFAIL;
    for (;;) {
        int rc = (a->limit && s->sent >= a->limit) ? 0 : wl_trace_next(s->trace, rec, d);
        if (rc < 0) return rc;
        if (rc == 0) {
            if (!a->loop || s->sent == 0) return 0;
            if (restart_trace(a, s, d)) return UTIL_EFAIL;
            continue;
        }
        if (rec->arrival_s < a->start_s) continue;
        const char *tenant = rec->tenant ? wl_names_find(a->tenants, rec->tenant) : NULL;
        if (rec->tenant && !tenant)
            return util_diag_add(d, "%s: tenant '%s' was not in the trace when it was checked "
                                    "(has the file changed since?)",
                                 a->trace_path, rec->tenant);
        rec->tenant = tenant;
        s->last_s = rec->arrival_s;
        s->sent++;
        rec->arrival_s = (rec->arrival_s - a->start_s) * s->scale + s->offset;
        return 1;
    }
}

static int32_t tokens(double x)
{
    return x > INT32_MAX ? INT32_MAX : (int32_t)x;
}

static int32_t draw_tokens(const wl_dist *dist, gsl_rng *r)
{
    return tokens(wl_dist_sample(dist, r));
}

int wl_source_pick_class(wl_source *s, int stream)
{
    const wl_spec *spec = s->spec;
    stream_state *st = &s->streams[stream];
    int last = -1, n = 0;
    for (int c = 0; c < spec->n_classes; c++)
        if (spec->classes[c].stream == stream && (stream > 0 || spec->classes[c].weight > 0)) {
            last = c;
            n++;
        }
    if (n == 1) return last; /* no draw: a one-class workload uses no pick stream */
    double u = gsl_rng_uniform(st->pick) * st->total_weight;
    for (int c = 0; c < spec->n_classes; c++) {
        if (spec->classes[c].stream != stream || spec->classes[c].weight <= 0) continue;
        if (u < spec->classes[c].weight) return c;
        u -= spec->classes[c].weight;
    }
    return last;
}

/* The next shared-prefix prompt, its segments into seg. */
static void take_prompt(wl_source *s, wl_segment seg[2], wl_record *rec)
{
    wl__prefix_next(s->prefix, seg);
    rec->prompt = wl__prefix_length(s->prefix);
    rec->segments = seg;
    rec->n_segments = 2;
}

/* A trace's record takes the class's own lengths where it has them.  A
 * prompt drawn instead of the trace's is no longer the content its hash
 * ids name, so its segments go. */
static void class_lengths(wl_source *s, int cls, wl_segment seg[2], wl_record *rec)
{
    const wl_class *c = &s->spec->classes[cls];
    if (c->pairs) {
        wl_source_lengths(s, cls, &rec->prompt, &rec->output);
        rec->segments = NULL;
        rec->n_segments = 0;
    } else if (c->shared_prompt) {
        take_prompt(s, seg, rec);
    } else if (c->has_prompt) {
        rec->prompt = draw_tokens(&c->prompt, s->classes[cls].prompt);
        rec->segments = NULL;
        rec->n_segments = 0;
    }
    if (c->has_output && !c->pairs) rec->output = draw_tokens(&c->output, s->classes[cls].output);
}

/* A call that is not a trace's: a shared-prefix prompt, or drawn lengths. */
static void draw_call(wl_source *s, int cls, wl_segment seg[2], wl_record *rec)
{
    const wl_class *c = &s->spec->classes[cls];
    if (c->shared_prompt) {
        take_prompt(s, seg, rec);
        rec->output = draw_tokens(&c->output, s->classes[cls].output);
        return;
    }
    wl_source_lengths(s, cls, &rec->prompt, &rec->output);
    rec->segments = NULL;
    rec->n_segments = 0;
}

int wl_source_next(wl_source *s, int stream, wl_record *rec, util_diag *d)
{
    const wl_arrival *a = &s->spec->streams[stream];
    stream_state *st = &s->streams[stream];
    int cls = wl_source_pick_class(s, stream);
    if (a->process == WL_TRACE) {
        int rc = next_from_trace(a, st, rec, d);
        rec->cls = cls;
        if (rc == 1) class_lengths(s, cls, st->seg, rec);
        return rc;
    }
    /* Gaps accumulate in double seconds, so that rounding never drifts. */
    rec->has_priority = false; /* only a trace's rows carry their own */
    rec->priority = 0;
    rec->deadline_s = 0;
    rec->tenant = NULL;
    if (a->profile) { /* the first arrival a gap in, as a process of changing rate has it */
        st->next_s += next_gap(a, st);
        rec->arrival_s = wl_profile_time(a->profile, st->next_s);
        if (!(rec->arrival_s <= WL_HORIZON_S)) return 0; /* the rate fell to 0 for good */
    } else {
        rec->arrival_s = st->next_s;
        st->next_s += next_gap(a, st);
    }
    rec->cls = cls;
    draw_call(s, cls, st->seg, rec);
    return 1;
}

/* A dataset's pair is one draw of the prompt stream: the output stream is
 * left as it was, unused. */
void wl_source_lengths(wl_source *s, int cls, int32_t *prompt, int32_t *output)
{
    const wl_class *c = &s->spec->classes[cls];
    if (c->pairs) {
        wl_dataset_draw(c->pairs, s->classes[cls].prompt, prompt, output);
        return;
    }
    *prompt = c->shared_prompt ? wl__prefix_length(s->prefix)
                               : draw_tokens(&c->prompt, s->classes[cls].prompt);
    *output = draw_tokens(&c->output, s->classes[cls].output);
}

void wl_source_draw(wl_source *s, int cls, wl_record *rec)
{
    draw_call(s, cls, s->draw_seg, rec);
}

double wl_source_think(wl_source *s, int stream)
{
    return wl_dist_sample(&s->spec->streams[stream].think_s, s->streams[stream].think);
}

int32_t wl_source_tool_tokens(wl_source *s, int cls)
{
    const wl_dist *t = &s->spec->classes[cls].agent.tool_output_tokens;
    return tokens(floor(wl_dist_sample(t, s->classes[cls].tool_tokens) + 0.5));
}

double wl_source_tool_s(wl_source *s, int cls)
{
    return wl_dist_sample(&s->spec->classes[cls].agent.tool_s, s->classes[cls].tool_s);
}

int32_t wl_source_turns(wl_source *s, int cls)
{
    const wl_dist *t = &s->spec->classes[cls].agent.turns;
    return tokens(floor(wl_dist_sample(t, s->classes[cls].turns) + 0.5));
}

/* Selection sampling (Knuth's Algorithm S): a call is slow with the chance
 * (slow left) / (calls left) of its block, so each block has exactly slow_k,
 * every set of them as likely -- a seeded shuffle's placement without
 * holding a block of flags. */
static bool exactly(wl_source *s)
{
    const wl_spec *spec = s->spec;
    if (s->slow_seen == spec->slow_of) s->slow_seen = s->slow_chosen = 0;
    double left = (double)(spec->slow_of - s->slow_seen++);
    bool slow = gsl_rng_uniform(s->slow) * left < (double)(spec->slow_k - s->slow_chosen);
    s->slow_chosen += slow;
    return slow;
}

double wl_source_delay(wl_source *s, bool *slow)
{
    const wl_spec *spec = s->spec;
    double t = spec->has_pre_model ? wl_dist_sample(&spec->pre_model_s, s->pre_model) : 0;
    if (spec->slow_of)
        *slow = exactly(s);
    else
        *slow = spec->slow_p > 0 && gsl_rng_uniform(s->slow) < spec->slow_p;
    if (*slow) t += wl_dist_sample(&spec->slow_extra_s, s->slow_extra);
    return t;
}
