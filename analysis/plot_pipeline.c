/*
 * plot_pipeline.c: `servesim plot FILE.db pipeline` -- one replica's engine
 * steps over a short window, from the iterations table: a lane for the
 * scheduler planning each step, one for the GPU running it, one for its
 * tokens reaching the client, and, for --request, that request's life
 * across them with its TTFT.  Side by side the lanes show what
 * asynchronous scheduling (vLLM V1's) changes: step n+1 is planned while
 * step n runs, so a plan's tick sits a whole step before its bar, where a
 * synchronous engine's sits at its bar's start and the GPU waits for it.
 */
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The default window: enough steps to see the pattern repeat, few enough
 * for each bar to be wide enough for its label. */
#define DEFAULT_STEPS 12
/* Beyond this, bars are thinner than a pixel: the first ones are drawn. */
#define MAX_STEPS 2000

enum { SCHEDULER, GPU, CLIENT };
enum { DECODE_COLOUR = 1, PREFILL_COLOUR = 3, REQUEST_COLOUR = 4 };

typedef struct step {
    int64_t index; /* among the replica's steps, from 0 */
    double start, end, scheduled, gpu_start, gpu_end, client;
    int64_t prefill_tokens, decode_seqs;
} step;

/* A request's events, in the order they happen. */
enum { ARRIVAL, ENQUEUE, SCHEDULED, ENGINE_FIRST_TOKEN, FIRST_TOKEN, N_EVENTS };

static const struct {
    const char *mark, *label, *words;
    int lane;
    char glyph;
} events[N_EVENTS] = {
    {"arrival", "sent", "sent", SCHEDULER, 'a'},
    {"enqueue", "queued", "queued", SCHEDULER, 'q'},
    {"scheduled", "scheduled", "scheduled", SCHEDULER, 's'},
    {"engine-first-token", "first token out", "first token left the engine", GPU, 'e'},
    {"first-token", "first token seen", "first token seen", CLIENT, 'f'},
};

typedef struct life {
    int64_t id;
    double at[N_EVENTS]; /* NAN: it never got there */
} life;

/* What every query of one figure shares. */
typedef struct ctx {
    sqlite3 *db;
    const an_plot_request *req;
    int64_t run;
    util_diag *d;
} ctx;

typedef struct window {
    double lo, hi;
    step *steps;
    size_t n;
    int64_t held;  /* the steps the window holds: more than n when cut at MAX_STEPS */
    int64_t total; /* the replica's steps */
} window;

/* ---- reading ---------------------------------------------------------------- */

/* sql with ?1 the run, ?2 the replica and ?3 t; NULL after saying why. */
static sqlite3_stmt *prepare(const ctx *c, const char *sql, double t)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
        an__db_fail(c->db, c->d, "cannot read iterations");
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_int64(st, 1, c->run);
    sqlite3_bind_int(st, 2, c->req->replica);
    sqlite3_bind_double(st, 3, t);
    return st;
}

/* The replica's steps where cond holds (of ?3 = t). */
static int count_steps(const ctx *c, const char *cond, double t, int64_t *n)
{
    char *sql = util_xasprintf("SELECT count(*) FROM iterations WHERE run_id = ?1 AND replica = ?2"
                               " AND %s",
                               cond);
    sqlite3_stmt *st = prepare(c, sql, t);
    free(sql);
    if (!st) return UTIL_EFAIL;
    int rc =
        sqlite3_step(st) == SQLITE_ROW ? UTIL_OK : an__db_fail(c->db, c->d, "cannot count steps");
    *n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

/* Whether the database and the run hold what the lanes are drawn from:
 * the pipeline's columns, and iterations of this replica. */
static int check_recorded(const ctx *c)
{
    const char *file = c->req->file;
    long long run = (long long)c->run;
    int schema = an__schema(c->db);
    if (schema < AN__SCHEMA_PIPELINE)
        return util_diag_add(c->d,
                             "%s: schema %d records no step's planning and delivery times "
                             "(iterations.scheduled_s .. client_s came with schema %d): run it "
                             "again with this servesim and --record-iterations",
                             file, schema, AN__SCHEMA_PIPELINE);
    sqlite3_stmt *st = prepare(c,
                               "SELECT count(*), total(replica = ?2), "
                               "total(replica = ?2 AND scheduled_s IS NULL) "
                               "FROM iterations WHERE run_id = ?1",
                               0);
    if (!st) return UTIL_EFAIL;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return an__db_fail(c->db, c->d, "cannot count steps");
    }
    int64_t all = sqlite3_column_int64(st, 0);
    double here = sqlite3_column_double(st, 1), old = sqlite3_column_double(st, 2);
    sqlite3_finalize(st);
    if (all == 0)
        return util_diag_add(c->d,
                             "%s: run %lld has no iterations: run it again with "
                             "--record-iterations",
                             file, run);
    if (here == 0)
        return util_diag_add(c->d, "%s: run %lld: replica %d ran no steps", file, run,
                             c->req->replica);
    if (old > 0) /* an older database upgraded: its rows have the columns, empty */
        return util_diag_add(c->d,
                             "%s: run %lld's iterations were recorded before schema %d, without "
                             "when each step was planned and delivered: run it again with "
                             "--record-iterations",
                             file, run, AN__SCHEMA_PIPELINE);
    return UTIL_OK;
}

static int load_life(const ctx *c, int64_t id, life *out)
{
    *out = (life){.id = id};
    sqlite3_stmt *st = prepare(c,
                               "SELECT r.arrival_s, r.enqueue_s, r.first_scheduled_s, "
                               "r.enqueue_s + m.engine_ttft_s, r.first_token_s, r.replica "
                               "FROM requests r JOIN request_metrics m USING (run_id, id) "
                               "WHERE r.run_id = ?1 AND r.id = ?4",
                               0);
    if (!st) return UTIL_EFAIL;
    sqlite3_bind_int64(st, 4, id);
    int rc = UTIL_OK;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = util_diag_add(c->d, "%s: run %lld has no request %lld", c->req->file,
                           (long long)c->run, (long long)id);
    } else if (sqlite3_column_type(st, 5) != SQLITE_NULL &&
               sqlite3_column_int(st, 5) != c->req->replica) {
        rc = util_diag_add(c->d, "%s: run %lld: request %lld ran on replica %d (--replica %d)",
                           c->req->file, (long long)c->run, (long long)id,
                           sqlite3_column_int(st, 5), c->req->replica);
    } else {
        for (int e = 0; e < N_EVENTS; e++)
            out->at[e] = an__column_num(st, e);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The replica's steps first .. first + n - 1, in the order they ran. */
static int load_steps(const ctx *c, int64_t first, int64_t n, window *w)
{
    w->n = 0;
    w->held = n;
    if (n <= 0) return UTIL_OK; /* LIMIT -1 would be no limit */
    if (n > MAX_STEPS) n = MAX_STEPS;
    sqlite3_stmt *st = prepare(c,
                               "SELECT start_s, end_s, scheduled_s, gpu_start_s, gpu_end_s, "
                               "client_s, prefill_tokens, decode_seqs FROM iterations "
                               "WHERE run_id = ?1 AND replica = ?2 ORDER BY start_s, rowid "
                               "LIMIT ?4 OFFSET ?5",
                               0);
    if (!st) return UTIL_EFAIL;
    sqlite3_bind_int64(st, 4, n);
    sqlite3_bind_int64(st, 5, first);
    free(w->steps);
    w->steps = util_xcalloc((size_t)n, sizeof *w->steps);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        step *s = &w->steps[w->n];
        *s = (step){.index = first + (int64_t)w->n,
                    .start = an__column_num(st, 0),
                    .end = an__column_num(st, 1),
                    .scheduled = an__column_num(st, 2),
                    .gpu_start = an__column_num(st, 3),
                    .gpu_end = an__column_num(st, 4),
                    .client = an__column_num(st, 5),
                    .prefill_tokens = sqlite3_column_int64(st, 6),
                    .decode_seqs = sqlite3_column_int64(st, 7)};
        w->n++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? UTIL_OK : an__db_fail(c->db, c->d, "cannot read iterations");
}

/* ---- the window ---------------------------------------------------------------- */

/* The steps' own extent: the first one's planning to the last one's
 * tokens at the client. */
static void steps_extent(window *w)
{
    w->lo = fmin(w->steps[0].scheduled, w->steps[0].gpu_start);
    w->hi = w->steps[w->n - 1].client;
}

/* --from and --to: every step whose GPU work is partly inside, the first
 * MAX_STEPS; a plan or a delivery outside is left out. */
static int given_window(const ctx *c, window *w)
{
    int64_t before, upto;
    int rc = count_steps(c, "gpu_end_s <= ?3", c->req->from_s, &before);
    if (!rc) rc = count_steps(c, "gpu_start_s < ?3", c->req->to_s, &upto);
    if (!rc) rc = load_steps(c, before, upto - before, w);
    w->lo = c->req->from_s;
    w->hi = c->req->to_s;
    if (!rc && w->n && w->held > (int64_t)w->n) w->hi = w->steps[w->n - 1].client; /* cut */
    return rc;
}

/* The default: DEFAULT_STEPS steps from --from (from the replica's first
 * without it). */
static int default_window(const ctx *c, window *w)
{
    int64_t first = 0;
    int rc =
        c->req->from_s > 0 ? count_steps(c, "gpu_end_s <= ?3", c->req->from_s, &first) : UTIL_OK;
    if (!rc) rc = load_steps(c, first, DEFAULT_STEPS, w);
    if (!rc && w->n) steps_extent(w);
    if (!rc && w->n && c->req->from_s > 0) w->lo = c->req->from_s;
    return rc;
}

/* A request outside the default window gets its own: from the step
 * before the one running when it was sent to the step after its first
 * token's, and at least DEFAULT_STEPS steps. */
static int request_window(const ctx *c, const life *rq, window *w)
{
    double sent = rq->at[ARRIVAL], first = rq->at[ENGINE_FIRST_TOKEN];
    double seen = isfinite(rq->at[FIRST_TOKEN]) ? rq->at[FIRST_TOKEN] : first;
    if (!isfinite(sent) || (sent >= w->lo && (!isfinite(seen) || seen <= w->hi))) return UTIL_OK;
    int64_t running, ended = 0;
    int rc = count_steps(c, "start_s <= ?3", sent, &running);
    if (!rc && isfinite(first)) rc = count_steps(c, "end_s < ?3", first, &ended);
    if (rc) return rc;
    int64_t k0 = running >= 2 ? running - 2 : 0, k1 = ended + 1;
    if (k1 < k0 + DEFAULT_STEPS - 1) k1 = k0 + DEFAULT_STEPS - 1;
    rc = load_steps(c, k0, k1 - k0 + 1, w);
    if (!rc && w->n) {
        steps_extent(w);
        w->lo = fmin(w->lo, sent);
        if (isfinite(seen) && w->held == (int64_t)w->n) w->hi = fmax(w->hi, seen);
    }
    return rc;
}

/* A window with no step in it: where the replica's steps are. */
static int no_steps(const ctx *c)
{
    const an_plot_request *req = c->req;
    sqlite3_stmt *st = prepare(c,
                               "SELECT min(gpu_start_s), max(gpu_end_s) FROM iterations "
                               "WHERE run_id = ?1 AND replica = ?2",
                               0);
    if (!st) return UTIL_EFAIL;
    double first = NAN, last = NAN;
    if (sqlite3_step(st) == SQLITE_ROW) first = an__column_num(st, 0), last = an__column_num(st, 1);
    sqlite3_finalize(st);
    char when[64];
    if (req->to_s > 0)
        snprintf(when, sizeof when, "between %g s and %g s", req->from_s, req->to_s);
    else
        snprintf(when, sizeof when, "after %g s", req->from_s);
    return util_diag_add(
        c->d, "%s: run %lld: replica %d ran no step %s (its steps ran from %g s to %g s)",
        req->file, (long long)c->run, req->replica, when, first, last);
}

static int choose_window(const ctx *c, const life *rq, window *w)
{
    const an_plot_request *req = c->req;
    int rc = count_steps(c, "1", 0, &w->total);
    if (!rc) rc = req->to_s > 0 ? given_window(c, w) : default_window(c, w);
    if (!rc && rq && !(req->from_s > 0) && !(req->to_s > 0)) rc = request_window(c, rq, w);
    if (!rc && w->n == 0) rc = no_steps(c);
    return rc;
}

/* ---- the lanes ------------------------------------------------------------------- */

static bool inside(const window *w, double t)
{
    return isfinite(t) && t >= w->lo && t <= w->hi;
}

static void add_bar(an_plot *p, const step *s)
{
    bool prefill = s->prefill_tokens > 0;
    an__item *bar = an__lane_item(p, GPU, AN__BAR, s->gpu_start, s->gpu_end);
    bar->colour = prefill ? PREFILL_COLOUR : DECODE_COLOUR;
    bar->glyph = prefill ? '#' : '=';
    bar->label = prefill ? util_xasprintf("%lld: %lld prefill", (long long)s->index,
                                          (long long)s->prefill_tokens)
                         : util_xasprintf("%lld: %lld decode", (long long)s->index,
                                          (long long)s->decode_seqs);
    bar->short_label = util_xasprintf("%lld", (long long)s->index);
    bar->meta = util_xasprintf(
        "class=\"step\" data-step=\"%lld\" data-kind=\"%s\" data-start=\"%.17g\" "
        "data-end=\"%.17g\" data-gpu-start=\"%.17g\" data-gpu-end=\"%.17g\" "
        "data-scheduled=\"%.17g\" data-client=\"%.17g\" data-prefill-tokens=\"%lld\" "
        "data-decode-seqs=\"%lld\"",
        (long long)s->index, prefill ? "prefill" : "decode", s->start, s->end, s->gpu_start,
        s->gpu_end, s->scheduled, s->client, (long long)s->prefill_tokens,
        (long long)s->decode_seqs);
}

/* A mark of step s at `at` on a lane, joined to the GPU lane at link_at. */
static void add_link(an_plot *p, int lane, an__shape kind, char glyph, double at, double link_at,
                     const char *cls, const step *s)
{
    an__item *m = an__lane_item(p, lane, kind, at, at);
    m->glyph = glyph;
    m->link_lane = GPU;
    m->link_at = link_at;
    m->meta = util_xasprintf("class=\"%s\" data-step=\"%lld\" data-at=\"%.17g\"", cls,
                             (long long)s->index, at);
}

/* A step: its bar on the GPU, its plan's tick joined to the bar's start,
 * its tokens' mark joined to the bar's end; marks outside the window are
 * left out (a bar is cut at its edge). */
static void add_step(an_plot *p, const window *w, const step *s)
{
    add_bar(p, s);
    if (inside(w, s->scheduled))
        add_link(p, SCHEDULER, AN__TICK, 'v', s->scheduled, s->gpu_start, "plan", s);
    if (inside(w, s->client)) add_link(p, CLIENT, AN__DOT, 'o', s->client, s->gpu_end, "delivery", s);
}

/* The request's events on their lanes, in its own colour, and its TTFT
 * as a span across them. */
static void add_request(an_plot *p, const window *w, const life *rq)
{
    for (int e = 0; e < N_EVENTS; e++) {
        double at = rq->at[e];
        if (!inside(w, at)) {
            if (isfinite(at))
                an__note(p, "request %lld: %s at %.6g s, outside the window (--from, --to)",
                         (long long)rq->id, events[e].words, at);
            else
                an__note(p, "request %lld: never %s", (long long)rq->id, events[e].words);
            continue;
        }
        an__item *m = an__lane_item(p, events[e].lane, AN__DIAMOND, at, at);
        m->colour = REQUEST_COLOUR;
        m->low = true;
        m->glyph = events[e].glyph;
        m->label = util_xstrdup(events[e].label);
        m->meta = util_xasprintf(
            "class=\"request-mark\" data-request=\"%lld\" data-mark=\"%s\" data-at=\"%.17g\"",
            (long long)rq->id, events[e].mark, at);
    }
    double ttft = rq->at[FIRST_TOKEN] - rq->at[ARRIVAL];
    if (isfinite(ttft)) {
        char t[32];
        an__seconds(ttft, t, sizeof t);
        p->spans = util_xmalloc(sizeof *p->spans);
        p->spans[0] = (an_plot_span){util_xasprintf("request %lld: TTFT %s", (long long)rq->id, t),
                                     rq->at[ARRIVAL], rq->at[FIRST_TOKEN]};
        p->n_spans = 1;
    }
    char key[64];
    snprintf(key, sizeof key, "request %lld's events", (long long)rq->id);
    an__lane_key(p, AN__DIAMOND, REQUEST_COLOUR, 0, key); /* each with its letter */
}

/* Whether the engine plans ahead: a step planned before it starts. */
static int asynchronous(const ctx *c, bool *async)
{
    int64_t ahead;
    int rc = count_steps(c, "scheduled_s < start_s", 0, &ahead);
    *async = ahead > 0;
    return rc;
}

static void build(an_plot *p, const ctx *c, const window *w, const life *rq, bool async)
{
    an__new_lane(p, "scheduler");
    an__new_lane(p, "GPU");
    an__new_lane(p, "client");
    p->lanes->lo = w->lo;
    p->lanes->hi = w->hi;
    for (size_t i = 0; i < w->n; i++)
        add_step(p, w, &w->steps[i]);
    an__lane_key(p, AN__BAR, PREFILL_COLOUR, '#', "step with prefill");
    an__lane_key(p, AN__BAR, DECODE_COLOUR, '=', "decode-only step");
    an__lane_key(p, AN__TICK, 0, 'v', "step planned");
    an__lane_key(p, AN__DOT, 0, 'o', "tokens reach the client");
    if (rq) add_request(p, w, rq);
    p->x_label = util_xstrdup("time");
    p->x_unit = util_xstrdup("s");
    p->subtitle = util_xasprintf(
        "engine steps of replica %d, %s", c->req->replica,
        async ? "asynchronous scheduling: each step planned while the one before runs"
              : "synchronous scheduling: each step planned once the one before has ended");
    an__note(p, "a bar: a step's GPU work, labelled with its index (and its prefill tokens or "
                "decoding sequences where they fit); a tick: when the scheduler planned it, "
                "joined to the step; a dot: when its tokens reached the client");
    an__note(p, "steps %lld-%lld of the replica's %lld", (long long)w->steps[0].index,
             (long long)w->steps[w->n - 1].index, (long long)w->total);
    if (w->held > (int64_t)w->n)
        an__note(p, "the window holds %lld steps: the first %zu drawn", (long long)w->held, w->n);
}

int an__gather_pipeline(sqlite3 *db, const an_plot_request *req, const an__run *r, an_plot *p,
                        util_diag *d)
{
    ctx c = {db, req, r->id, d};
    window w = {0};
    life rq;
    bool async = false;
    int rc = check_recorded(&c);
    if (!rc && req->request) rc = load_life(&c, *req->request, &rq);
    if (!rc) rc = choose_window(&c, req->request ? &rq : NULL, &w);
    if (!rc) rc = asynchronous(&c, &async);
    if (!rc) build(p, &c, &w, req->request ? &rq : NULL, async);
    free(w.steps);
    return rc;
}
