/*
 * client.c: the clients -- arrivals on every stream, closed-loop users,
 * model calls and what happens to them before and after the cluster, and
 * agent tasks made of several calls.
 *
 * A call is sent (arrival_s, the client's clock), waits the pre-model delay
 * (network, retrieval) and, if it is a straggler, its extra, then reaches
 * the router: everything before the first token counts in its TTFT.  A
 * client that set a time-out gives up on a call not finished by then: the
 * call is recorded as timed out at that instant and dropped wherever it is
 * (queue, GPU, link), its KV blocks freed.
 *
 * An agent task is a user-visible job: `sequential` calls in a chain (each
 * prompt holding the previous outputs and tool results, a tool's time
 * between calls), `parallel` calls joined when the last finishes, or
 * `map_reduce` (a parallel fan-out, then one call aggregating its outputs).
 * With a history (agent.history; sequential agents and sessions always),
 * the prompts carry the task's content: a chain grows by each reply and
 * tool result, a fan-out's calls share the task's prompt.  A task fails
 * when one of its calls is rejected or times out.
 *
 * A stream with max_concurrency is vLLM bench serve's --max-concurrency
 * (vllm/benchmarks/serve.py, vllm-project/vllm at 009e6d4a1cd6): requests
 * are due on the rate's schedule, and one due while the cap is reached
 * waits for a slot, sent when a call (a task) of the stream ends.  vLLM
 * takes a request's start_time, from which its TTFT counts, at that send,
 * and so does servesim: the row's arrival_s is the send; the due time is
 * not kept.  The waiting requests are in schedule order, so the stream
 * holds only the first (e->next) and draws no further until it is sent:
 * the wait costs no memory however far the sends fall behind.
 */
#include "sim_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool arrivals_open(const sim_engine *e, int64_t t_ns)
{
    const sim_scenario *sc = e->sc;
    return (sc->stop_requests == 0 || e->arrived < sc->stop_requests) && t_ns < e->stop_ns;
}

/* ---- shared content (prefix caching) ---- */

/* Ids that name an agent's own content in the key chain (wl_chain). */
#define TASK_CONTENT UINT64_C(0x5441534b00000000) /* its first prompt's own tokens, ^ task id */
#define REPLY_CONTENT UINT64_C(1)                 /* a call's reply, after its prompt */
#define TOOL_CONTENT UINT64_C(2)                  /* a tool's result, after the reply */
#define USER_CONTENT UINT64_C(3)                  /* a session's next user message */
#define CUT_CONTENT UINT64_C(0x4355540000000000)  /* a session's history cut at its front, ^ id */

/* Appends segment (key, tokens) to a chain ending at *end. */
static void chain_push(sim__seg **segs, int32_t *n, int32_t *cap, uint64_t key, int64_t tokens)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *segs = util_xrealloc(*segs, (size_t)*cap * sizeof **segs);
    }
    int64_t end = *n ? (*segs)[*n - 1].end : 0;
    (*segs)[(*n)++] = (sim__seg){.key = key, .end = end + tokens};
}

/* r's shared content, copied: the request may outlive its task (a call
 * timed out, still in a batch, after its task ended). */
static void give_content(sim__request *r, const sim__seg *segs, int32_t n)
{
    if (n <= 0) return;
    r->segs = util_xmalloc((size_t)n * sizeof *segs);
    memcpy(r->segs, segs, (size_t)n * sizeof *segs);
    r->n_segs = n;
}

/* A record's segments as a chain of ends, into r. */
static void give_record_content(sim_engine *e, sim__request *r, const wl_record *rec)
{
    if (!e->prefix_caching || rec->n_segments <= 0) return;
    r->segs = util_xmalloc((size_t)rec->n_segments * sizeof *r->segs);
    int64_t end = 0;
    for (int32_t i = 0; i < rec->n_segments; i++) {
        end += rec->segments[i].tokens;
        r->segs[i] = (sim__seg){.key = rec->segments[i].key, .end = end};
    }
    r->n_segs = rec->n_segments;
}

/* ---- calls ---- */

/* A call reaches the gateway (the router, without one) and waits in a
 * queue from then on: whoever cancels it must know it is there, not still
 * on its way (its replica counts it as outstanding). */
static void route_call(sim_engine *e, sim__request *r)
{
    sim__gw_admit(e, r);
}

static void reach_router(sim_engine *e, void *subject, int64_t id)
{
    sim__request *r = subject;
    if (r->dead) { /* its client gave up before it got here */
        sim__rq_free(e, r);
        return;
    }
    route_call(e, r);
}

/* The client gives up: the call is recorded as timed out now, and dropped
 * wherever it is (at once, or by whoever holds it at their next step). */
static void timeout(sim_engine *e, void *subject, int64_t id)
{
    sim__request *r = subject;
    assert(r->id == id && !r->dead); /* a request that ends removes its time-out */
    e->done++;
    sim__gw_left(e, r);
    bool again = sim__cl_retry(e, r, SIM_TIMED_OUT);
    sim__rq_record(e, r, SIM_TIMED_OUT, -1);
    sim__task *t = r->task;
    int32_t user = r->user;
    sim__rq_cancel(e, r);
    if (!again) sim__cl_notify(e, t, user, false, 0, false);
}

/* Its class's model, priority and deadline, which the router and an
 * ordered queue read. */
static void take_class_sched(const sim_engine *e, sim__request *r)
{
    const sim_class_sched *cs = e->sc->class_sched;
    if (!cs) return;
    r->model = cs[r->cls].model;
    r->priority = cs[r->cls].priority;
    r->tenant = cs[r->cls].tenant;
    if (cs[r->cls].deadline_s > 0) r->deadline_ns = r->arrival_ns + sim__ns(cs[r->cls].deadline_s);
}

static sim__own own_of(const wl_record *rec)
{
    return (sim__own){.has_priority = rec->has_priority, .priority = rec->priority,
                      .deadline_s = rec->deadline_s, .tenant = rec->tenant};
}

/* A trace row's own priority, deadline and tenant, over its class's. */
static void take_own(sim__request *r, const sim__own *own)
{
    if (own->has_priority) r->priority = own->priority;
    if (own->deadline_s > 0) r->deadline_ns = r->arrival_ns + sim__ns(own->deadline_s);
    if (own->tenant) r->tenant = own->tenant;
}

/* A new call: its content (prefix caching) set by the caller, then sent. */
static sim__request *new_call(sim_engine *e, sim__task *t, int32_t index, int32_t cls,
                              int32_t user, int32_t prompt, int32_t output)
{
    sim__request *r = sim__rq_new(e);
    r->id = e->next_request_id++;
    r->task = t;
    r->call_index = t ? index : -1;
    r->cls = cls;
    r->lora = sim__lr_choose(e, cls, r->id);
    r->user = user;
    r->arrival_ns = e->now;
    r->prompt = prompt;
    r->output = output;
    r->prefill_target = prompt;
    take_class_sched(e, r);
    if (t) take_own(r, &t->own);
    return r;
}

/* A call (or a retry, its content its own already) leaves its client. */
static void send_now(sim_engine *e, sim__request *r)
{
    bool slow;
    int64_t delay = sim__ns(wl_source_delay(e->src, &slow));
    r->slow = slow;
    if (r->task) r->task->slow_calls += slow;
    if (e->sc->workload.timeout_s > 0)
        sim__heap_push_tracked(&e->events, e->now + sim__ns(e->sc->workload.timeout_s), timeout,
                               r, r->id, &r->timeout_slot);
    if (delay > 0) {
        r->state = SIM__SENDING;
        sim__heap_push(&e->events, e->now + delay, reach_router, r, r->id);
    } else {
        route_call(e, r);
    }
}

static void send_call(sim_engine *e, sim__request *r)
{
    sim__lr_own_content(r); /* an adapter's KV is its own (lora.c) */
    send_now(e, r);
}

/* ---- retries (workload.retry) ---- */

/* Whether the client retries a call that ended as status (reason). */
static bool retries(const wl_retry *rt, const char *status, const char *reason)
{
    if (!strcmp(status, SIM_TIMED_OUT)) return rt->on & WL_RETRY_TIMED_OUT;
    if (!strcmp(status, SIM_FAILED)) return rt->on & WL_RETRY_FAILED;
    if (strcmp(status, SIM_REJECTED)) return false;
    if (rt->on & WL_RETRY_REJECTED) return true;
    static const struct { const char *reason; unsigned bit; } gw[] = {
        {SIM_SHED, WL_RETRY_SHED}, {SIM_QUEUE_FULL, WL_RETRY_QUEUE_FULL},
        {SIM_TTL, WL_RETRY_TTL}, {SIM_BUDGET, WL_RETRY_BUDGET}};
    for (size_t i = 0; reason && i < sizeof gw / sizeof gw[0]; i++)
        if (!strcmp(reason, gw[i].reason)) return rt->on & gw[i].bit;
    return false;
}

/* The wait before attempt k + 1 (k >= 1 made so far): backoff_s x
 * multiplier^(k-1), at most max_backoff_s, less up to jitter of it, the
 * draw a hash of the seed and the attempt's id (a call waits the same
 * whatever else the run does). */
static int64_t backoff_ns(const sim_engine *e, const wl_retry *rt, const sim__request *r)
{
    double wait = rt->backoff_s * pow(rt->multiplier, r->attempt - 1);
    if (wait > rt->max_backoff_s) wait = rt->max_backoff_s;
    uint64_t x = util_mix64(e->sc->seed ^ util_mix64((uint64_t)r->id ^ UINT64_C(0x7265747279)));
    double u = (double)(x >> 11) * 0x1.0p-53;
    return sim__ns(wait * (1 - rt->jitter * u));
}

static void send_retry(sim_engine *e, void *subject, int64_t id)
{
    (void)id;
    send_now(e, subject);
}

bool sim__cl_retry(sim_engine *e, sim__request *r, const char *status)
{
    const wl_retry *rt = &e->sc->workload.retry;
    if (r->attempt >= rt->attempts || !retries(rt, status, r->reason)) return false;
    r->retried = true;
    sim__request *n = sim__rq_new(e);
    n->id = e->next_request_id++;
    n->retry_of = r->id;
    n->attempt = r->attempt + 1;
    n->task = r->task;
    n->call_index = r->call_index;
    n->cls = r->cls;
    n->lora = r->lora;
    n->user = r->user;
    n->prompt = r->prompt;
    n->output = r->output;
    n->prefill_target = r->prompt;
    n->model = r->model;
    n->priority = r->priority;
    n->tenant = r->tenant;
    n->deadline_ns = r->deadline_ns; /* the user's deadline does not move */
    n->out_key = r->out_key;
    give_content(n, r->segs, r->n_segs);
    /* its send time is its arrival: were the run interrupted first, its
     * unfinished row would say when it was due */
    n->arrival_ns = e->now + backoff_ns(e, rt, r);
    n->state = SIM__BACKOFF;
    sim__heap_push(&e->events, n->arrival_ns, send_retry, n, n->id);
    return true;
}

/* ---- agent tasks ---- */

static sim__task *task_new(sim_engine *e, int32_t cls, int32_t user)
{
    sim__task *t = e->free_tasks;
    sim__seg *segs = NULL; /* a recycled task keeps its chain's memory */
    int32_t segs_cap = 0;
    if (t) {
        e->free_tasks = t->next;
        segs = t->segs;
        segs_cap = t->segs_cap;
    } else {
        t = util_xmalloc(sizeof *t);
    }
    *t = (sim__task){.id = e->next_task_id++, .cls = cls, .user = user, .start_ns = e->now,
                     .next = e->tasks, .prev = NULL, .segs = segs, .segs_cap = segs_cap};
    if (e->tasks) e->tasks->prev = t;
    e->tasks = t;
    return t;
}

static void task_unlink(sim_engine *e, sim__task *t)
{
    if (t->prev) t->prev->next = t->next;
    else e->tasks = t->next;
    if (t->next) t->next->prev = t->prev;
}

void sim__cl_task_record(sim_engine *e, const sim__task *t, const char *status, int64_t finish_ns)
{
    sim_task_row row = {
        .id = t->id,
        .cls = e->sc->workload.classes[t->cls].name,
        .status = status,
        .start_s = (double)t->start_ns / SIM__NS_PER_S,
        .finish_s = finish_ns < 0 ? NAN : (double)finish_ns / SIM__NS_PER_S,
        .calls = t->calls_sent,
        .slow_calls = t->slow_calls,
    };
    if (!e->sink_rc && e->sink.task) e->sink_rc = e->sink.task(e->sink.ctx, &row);
}

static void user_next(sim_engine *e, int32_t user, bool error_reply);

static void slot_free(sim_engine *e, int stream, bool error_reply);

static void task_end(sim_engine *e, sim__task *t)
{
    sim__cl_task_record(e, t, t->failed ? SIM_FAILED : SIM_COMPLETED, t->failed ? -1 : e->now);
    int32_t user = t->user;
    bool failed = t->failed;
    task_unlink(e, t);
    t->next = e->free_tasks;
    e->free_tasks = t;
    if (user >= 0) user_next(e, user, failed);
    else if (user <= SIM__CAPPED(0)) slot_free(e, SIM__CAPPED(0) - user, failed);
}

/* A call of task t; its content from rec (NULL: none shared). */
static void task_call(sim_engine *e, sim__task *t, int32_t prompt, int32_t output,
                      const wl_record *rec)
{
    t->outstanding++;
    sim__request *r = new_call(e, t, t->calls_sent++, t->cls, t->user, prompt, output);
    if (rec) give_record_content(e, r, rec);
    send_call(e, r);
}

static const wl_agent *agent_of(const sim_engine *e, const sim__task *t)
{
    return &e->sc->workload.classes[t->cls].agent;
}

/* Whether the task keeps its history's content (t->segs) for its calls. */
static bool chains(const sim_engine *e, const sim__task *t)
{
    return e->prefix_caching && t->carried <= INT32_MAX && agent_of(e, t)->history;
}

/* A history longer than history_max is cut to its last history_max
 * tokens, new content from its first token: its front is gone, so no
 * cache holds what now starts it. */
static void cut_history(sim_engine *e, sim__task *t, bool chain)
{
    const wl_agent *a = agent_of(e, t);
    if (a->history_max <= 0 || t->carried <= a->history_max) return;
    t->carried = a->history_max;
    if (!chain) return;
    t->n_segs = 0;
    uint64_t cut = wl_chain(CUT_CONTENT ^ (uint64_t)t->id, (uint64_t)t->calls_sent);
    chain_push(&t->segs, &t->n_segs, &t->segs_cap, cut, a->history_max);
}

/* Sequential and sessions: a call whose prompt is the task's chain so
 * far, and whose reply its next call re-sends. */
static void task_chain_call(sim_engine *e, sim__task *t, int32_t output)
{
    int64_t p = t->carried > INT32_MAX ? INT32_MAX : t->carried;
    t->outstanding++;
    sim__request *r = new_call(e, t, t->calls_sent++, t->cls, t->user, (int32_t)p, output);
    if (chains(e, t)) {
        give_content(r, t->segs, t->n_segs);
        r->out_key = wl_chain(t->segs[t->n_segs - 1].key, REPLY_CONTENT);
    }
    send_call(e, r);
}

/* Ids of a fan-out call's own tokens after the shared history: call i's,
 * and map_reduce's last call's (the fan-out's replies). */
#define FANOUT_CONTENT UINT64_C(16)
#define AGGREGATE_CONTENT REPLY_CONTENT

/* A fan-out's call that carries the task's history: its prompt the
 * history, then `own` tokens of its own named own_id, cut to history_max
 * from its front.  The calls share the history's content, which stays the
 * task's: a fan-out does not grow it. */
static void history_call(sim_engine *e, sim__task *t, int64_t own, uint64_t own_id,
                         int32_t output)
{
    const wl_agent *a = agent_of(e, t);
    int64_t p = t->carried + own;
    bool cut = a->history_max > 0 && p > a->history_max;
    if (cut) p = a->history_max;
    bool chain = chains(e, t) && p <= INT32_MAX;
    t->outstanding++;
    sim__request *r = new_call(e, t, t->calls_sent++, t->cls, t->user,
                               (int32_t)(p > INT32_MAX ? INT32_MAX : p), output);
    if (chain && cut) { /* a worker's own cut: nothing shared */
        uint64_t key =
            wl_chain(CUT_CONTENT ^ (uint64_t)t->id, FANOUT_CONTENT + (uint64_t)r->call_index);
        give_content(r, &(sim__seg){.key = key, .end = p}, 1);
    } else if (chain) {
        give_content(r, t->segs, t->n_segs);
        int32_t cap = r->n_segs;
        uint64_t base = wl_chain(t->segs[t->n_segs - 1].key, TASK_CONTENT ^ (uint64_t)t->id);
        if (own > 0) chain_push(&r->segs, &r->n_segs, &cap, wl_chain(base, own_id), own);
    }
    send_call(e, r);
}

/* A parallel or map_reduce task's fan-out with a history: every call
 * the task's prompt and its own tool_output_tokens (as an orchestrator
 * sends its context and a different instruction to each worker). */
static void fan_out_history(sim_engine *e, sim__task *t, int32_t first_output)
{
    const wl_agent *a = agent_of(e, t);
    for (int i = 0; i < a->calls; i++) {
        int32_t prompt, output = first_output;
        if (i > 0) wl_source_lengths(e->src, t->cls, &prompt, &output);
        history_call(e, t, wl_source_tool_tokens(e->src, t->cls), FANOUT_CONTENT + (uint64_t)i,
                     output);
    }
}

/* Calls without a history: each its own prompt, as a record drawn anew. */
static void task_own_call(sim_engine *e, sim__task *t)
{
    wl_record more = {.cls = t->cls};
    wl_source_draw(e->src, t->cls, &more);
    task_call(e, t, more.prompt, more.output, &more);
}

/* Sequential: the next call, a tool's time after the last. */
static void task_next(sim_engine *e, void *subject, int64_t arg)
{
    sim__task *t = subject;
    if (!agent_of(e, t)->history) {
        task_own_call(e, t);
        return;
    }
    int32_t prompt, output;
    wl_source_lengths(e->src, t->cls, &prompt, &output);
    task_chain_call(e, t, output);
}

/* A task's first prompt as its history: what the workload shares of it,
 * then its own tokens. */
static void chain_start(sim_engine *e, sim__task *t, const wl_record *rec)
{
    int64_t end = 0;
    uint64_t key = 0;
    for (int32_t i = 0; i < rec->n_segments; i++) {
        key = rec->segments[i].key;
        end += rec->segments[i].tokens;
        chain_push(&t->segs, &t->n_segs, &t->segs_cap, key, rec->segments[i].tokens);
    }
    if (rec->prompt > end)
        chain_push(&t->segs, &t->n_segs, &t->segs_cap,
                   wl_chain(key, TASK_CONTENT ^ (uint64_t)t->id), rec->prompt - end);
}

static void task_start(sim_engine *e, const wl_record *rec, int32_t user)
{
    int32_t cls = rec->cls;
    sim__task *t = task_new(e, cls, user);
    t->own = own_of(rec);
    const wl_agent *a = &e->sc->workload.classes[cls].agent;
    t->carried = rec->prompt;
    if (a->mode == WL_AGENT_SESSION) t->turns = wl_source_turns(e->src, cls);
    if (!a->history) {
        task_call(e, t, rec->prompt, rec->output, rec);
        if (a->mode == WL_AGENT_SEQUENTIAL) return; /* the next when this one is done */
        for (int i = 1; i < a->calls; i++) task_own_call(e, t);
        return;
    }
    bool chain = chains(e, t);
    if (chain) chain_start(e, t, rec);
    cut_history(e, t, chain); /* a first prompt longer than the history sent */
    if (a->mode == WL_AGENT_SEQUENTIAL || a->mode == WL_AGENT_SESSION)
        task_chain_call(e, t, rec->output);
    else
        fan_out_history(e, t, rec->output);
}

/* A session's turn (a sequential agent's call) has its reply: the next
 * prompt is this one, its reply and the user's new tokens (the tool's
 * result), cut to history_max. */
static void chain_grow(sim_engine *e, sim__task *t, int32_t output, int32_t added,
                       uint64_t added_id)
{
    bool chain = chains(e, t);
    if (chain) {
        uint64_t reply = wl_chain(t->segs[t->n_segs - 1].key, REPLY_CONTENT);
        chain_push(&t->segs, &t->n_segs, &t->segs_cap, reply, output);
        chain_push(&t->segs, &t->n_segs, &t->segs_cap, wl_chain(reply, added_id), added);
    }
    t->carried += output + added;
    cut_history(e, t, chain);
}

/* A session's turn has its reply: the session ends after its last turn
 * (or a failed one), else its next turn is sent think time later. */
static void session_turn_done(sim_engine *e, sim__task *t, int32_t output)
{
    if (t->failed || t->calls_sent >= t->turns) {
        task_end(e, t);
        return;
    }
    chain_grow(e, t, output, wl_source_tool_tokens(e->src, t->cls), USER_CONTENT);
    int64_t at = e->now + sim__ns(wl_source_tool_s(e->src, t->cls));
    sim__heap_push(&e->events, at, task_next, t, 0);
}

static void task_call_done(sim_engine *e, sim__task *t, bool ok, int32_t output)
{
    const wl_agent *a = &e->sc->workload.classes[t->cls].agent;
    t->outstanding--;
    t->failed |= !ok;
    t->fanout_output += output;
    if (a->mode == WL_AGENT_SESSION) {
        session_turn_done(e, t, output);
        return;
    }
    if (a->mode == WL_AGENT_SEQUENTIAL) {
        if (t->failed || t->calls_sent == a->calls) {
            task_end(e, t);
            return;
        }
        /* the next prompt: this one, its reply, the tool's result */
        chain_grow(e, t, output, wl_source_tool_tokens(e->src, t->cls), TOOL_CONTENT);
        int64_t at = e->now + sim__ns(wl_source_tool_s(e->src, t->cls));
        sim__heap_push(&e->events, at, task_next, t, 0);
        return;
    }
    if (t->outstanding > 0) return; /* the fan-out joins on its last call */
    if (a->mode == WL_AGENT_MAP_REDUCE && !t->failed && t->calls_sent == a->calls) {
        int32_t prompt, output_r;
        wl_source_lengths(e->src, t->cls, &prompt, &output_r);
        if (a->history) { /* the history, then the fan-out's replies */
            history_call(e, t, t->fanout_output, AGGREGATE_CONTENT, output_r);
            return;
        }
        int64_t agg = t->fanout_output > INT32_MAX ? INT32_MAX : t->fanout_output;
        task_call(e, t, (int32_t)agg, output_r, NULL); /* its prompt holds the fan-out's outputs */
        return;
    }
    task_end(e, t);
}

/* ---- arrivals and users ---- */

static void arrive(sim_engine *e, int32_t user, const wl_record *rec)
{
    e->arrived++;
    if (e->sc->workload.classes[rec->cls].agent.mode != WL_AGENT_NONE) {
        task_start(e, rec, user);
        return;
    }
    sim__request *r = new_call(e, NULL, 0, rec->cls, user, rec->prompt, rec->output);
    sim__own own = own_of(rec);
    take_own(r, &own);
    give_record_content(e, r, rec);
    send_call(e, r);
}

static void open_arrival(sim_engine *e, void *subject, int64_t stream);

/* Open loop: a stream's next request becomes its next arrival event, if
 * the stop conditions still allow it. */
void sim__cl_schedule_arrival(sim_engine *e, int stream)
{
    wl_record *next = &e->next[stream];
    int rc = wl_source_next(e->src, stream, next, &e->error);
    if (rc < 0) { /* the trace changed since it was checked: end the run */
        e->failed = true;
        return;
    }
    int64_t t = sim__ns(next->arrival_s);
    if (t < e->now) t = e->now; /* due while a capped stream's sends lagged: due now */
    if (rc == 1 && arrivals_open(e, t)) sim__heap_push(&e->events, t, open_arrival, NULL, stream);
}

static void open_arrival(sim_engine *e, void *subject, int64_t stream)
{
    int cap = e->sc->workload.streams[stream].max_concurrency;
    if (cap > 0 && e->in_flight[stream] >= cap) { /* it waits for a slot (slot_free) */
        e->held[stream] = true;
        return;
    }
    wl_record rec = e->next[stream];
    if (cap > 0) e->in_flight[stream]++;
    arrive(e, cap > 0 ? SIM__CAPPED(stream) : -1, &rec);
    e->backlog = e->next_request_id - e->done; /* overload (b): see sim_engine_limit_in_flight */
    sim__cl_schedule_arrival(e, (int)stream);
}

/* A capped stream's slot, free again after one of its calls (tasks) ended:
 * the request held for it is sent now, if arrivals still may be.  An event
 * rather than a call, as a closed-loop user's next send is, so that the
 * send follows whatever else this instant holds. */
static void send_held(sim_engine *e, void *subject, int64_t stream)
{
    if (!e->held[stream] || !arrivals_open(e, e->now)) return;
    e->held[stream] = false;
    open_arrival(e, subject, stream);
}

static void slot_free_now(sim_engine *e, void *subject, int64_t stream)
{
    e->in_flight[stream]--;
    if (e->held[stream]) sim__heap_push(&e->events, e->now, send_held, NULL, stream);
}

/* A rejection frees its slot after the error reply's round trip, as a
 * closed-loop user sends again only then (user_next): else a stream whose
 * every request is rejected would send without end at one instant. */
static void slot_free(sim_engine *e, int stream, bool error_reply)
{
    if (error_reply) sim__heap_push(&e->events, e->now + SIM__ERROR_REPLY_NS, slot_free_now, NULL, stream);
    else slot_free_now(e, NULL, stream);
}

void sim__cl_user_send(sim_engine *e, void *subject, int64_t user)
{
    if (!arrivals_open(e, e->now)) return;
    int stream = e->user_stream[user];
    wl_record rec = {.cls = wl_source_pick_class(e->src, stream)};
    wl_source_draw(e->src, rec.cls, &rec);
    arrive(e, (int32_t)user, &rec);
}

/* A new user of stream s: its id. */
static int32_t new_user(sim_engine *e, int stream)
{
    if (e->n_users == e->cap_users) {
        e->cap_users = e->cap_users ? 2 * e->cap_users : 64;
        e->user_stream = util_xrealloc(e->user_stream, (size_t)e->cap_users *
                                                           sizeof *e->user_stream);
    }
    e->user_stream[e->n_users] = stream;
    return e->n_users++;
}

void sim__cl_users_start(sim_engine *e, void *subject, int64_t stream)
{
    (void)subject;
    /* ids are int32_t: a limit beyond them (none, or the user's own) still
     * stops at them */
    int64_t limit = e->in_flight_limit > 0 && e->in_flight_limit < INT32_MAX - 1
                        ? e->in_flight_limit
                        : INT32_MAX - 1;
    for (int64_t k = e->sc->workload.streams[stream].users; k > 0; k--) {
        if (!arrivals_open(e, e->now)) return;
        if (e->n_users >= limit) {
            e->users_over = true;
            return;
        }
        sim__cl_user_send(e, NULL, new_user(e, (int)stream));
    }
}

/* A closed-loop user's next request (or task), think time after the last. */
static void user_next(sim_engine *e, int32_t user, bool error_reply)
{
    int64_t think = sim__ns(wl_source_think(e->src, e->user_stream[user]));
    /* A rejected request ends at the instant it was sent.  Were its user to
     * send again at once, a scenario whose requests are all rejected would
     * spin without advancing time, so the error reply takes a round trip. */
    if (error_reply && think < SIM__ERROR_REPLY_NS) think = SIM__ERROR_REPLY_NS;
    int64_t t = e->now + think;
    if (arrivals_open(e, t)) sim__heap_push(&e->events, t, sim__cl_user_send, NULL, user);
}

void sim__cl_notify(sim_engine *e, sim__task *t, int32_t user, bool ok, int32_t output,
                    bool error_reply)
{
    if (t) task_call_done(e, t, ok, output);
    else if (user >= 0) user_next(e, user, error_reply);
    else if (user <= SIM__CAPPED(0)) slot_free(e, SIM__CAPPED(0) - user, error_reply);
}

void sim__cl_fini(sim_engine *e)
{
    for (int pass = 0; pass < 2; pass++)
        for (sim__task *t = pass ? e->free_tasks : e->tasks, *next; t; t = next) {
            next = t->next;
            free(t->segs);
            free(t);
        }
    e->tasks = e->free_tasks = NULL;
}
