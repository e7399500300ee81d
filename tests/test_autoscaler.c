/*
 * test_autoscaler.c: cluster.autoscaler and cluster.lifecycle (sim/autoscaler.c).
 *
 * A step in load -- a trace of equal gaps, 2 requests a second until 300 s
 * and 8 after, short requests on a linear cost model -- makes the rps
 * metric exact: every interval holds a known number of arrivals.  Each
 * decision's replica count is then the HPA formula's, worked by hand below
 * (target 1.5: 2/s on 1 replica gives ceil(1.33 x 1) = 2; 8/s on 2 gives
 * ceil(2.67 x 2) = 6), at the instants interval_s, scrape_delay_s and the
 * windows make it; the replica rows say when each replica was made, ready
 * and retired.  A new replica is ready provision_s + load + warm_up_s after
 * the decision, to the nanosecond.  Bad keys are refused naming their path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_int.h"
#include "support.h"
#include "tap.h"

/* One replica, linear costs, the trace at PATH, rps on a 1.5 target. */
#define STEP                                                                                       \
    "{\"seed\": 1, \"cluster\": {\"engine\": \"ideal\", \"gpu\": \"h100-sxm\", \"model\": "      \
    "\"llama-3.1-8b\", \"replicas\": %d, \"cost_model\": {\"kind\": \"linear\", "                  \
    "\"iteration_s\": 0.01, \"prefill_s_per_token\": 0.0001, \"decode_step_s\": 0.01, "            \
    "\"decode_s_per_seq\": 0.0001}, \"autoscaler\": {\"metric\": \"rps\", \"target\": 1.5, "       \
    "\"max_replicas\": 10, \"scale_down_window_s\": 60}, \"lifecycle\": {\"load_s\": 20}}, "      \
    "\"workload\": {\"arrival\": {\"process\": \"trace\", \"path\": \"%s\"}}}"

static char *up_trace, *down_trace, *burst_trace;

/* A csv trace: rate r1 from 0.05 s to step_s, then r2 to end_s (the 0.05 s
 * keeps arrivals off the sample instants). */
static char *step_trace(double r1, double r2, double step_s, double end_s)
{
    size_t cap = 1 << 16, len = 0;
    char *rows = util_xmalloc(cap);
    rows[0] = 0;
    for (int phase = 0; phase < 2; phase++) {
        double gap = 1 / (phase ? r2 : r1), from = phase ? step_s + 0.05 : 0.05;
        double to = phase ? end_s : step_s;
        for (int k = 0; from + k * gap < to; k++) {
            if (cap - len < 64) rows = util_xrealloc(rows, cap *= 2);
            len += (size_t)snprintf(rows + len, cap - len, "%.6f,100,20\n", from + k * gap);
        }
    }
    char *path = support_write_trace(rows);
    free(rows);
    return path;
}

typedef struct made {
    double at[64]; /* created_s of each replica the autoscaler added, in id order */
    int n;
} made;

/* Runs the step scenario with sets; the replicas' rows into rows. */
static int run_step(const char *trace, int replicas, const char *const *sets, support_rows *rows)
{
    char *json = util_xasprintf(STEP, replicas, trace);
    int rc = support_run(json, sets, rows, NULL);
    free(json);
    return rc;
}

static made added(const support_rows *rows, int initial)
{
    made m = {0};
    for (int i = 0; i < rows->n_rep; i++)
        if (rows->rep[i].replica >= initial) m.at[m.n++] = rows->rep[i].created_s;
    return m;
}

/* The autoscaler added replicas at exactly the instants want[] (n of them). */
static void check_added(const char *what, const char *const *sets, const double *want, int n)
{
    support_rows rows;
    int rc = run_step(up_trace, 1, sets, &rows);
    is_int(rc, 0, "%s: runs", what);
    made m = added(&rows, 1);
    is_int(m.n, n, "%s: %d replicas added", what, n);
    int wrong = 0;
    for (int i = 0; i < n && i < m.n; i++)
        if (m.at[i] != want[i]) {
            tap_diag("%s: replica %d made at %.9g s, not %.9g s", what, i + 1, m.at[i], want[i]);
            wrong++;
        }
    is_int(wrong, 0, "%s: each at its decision", what);
    support_rows_fini(&rows);
}

/* The HPA's formula at the step, with the delays the keys add. */
static void test_step(void)
{
    /* 15 s: 2/s on 1 -> 2; 315 s: 8/s on 2 -> ceil(2 x 2.67) = 6; after
     * that 8/s on 6 is a ratio of 0.89 and ceil(0.89 x 6) = 6 */
    check_added("no delay", NULL, (double[]){15, 315, 315, 315, 315}, 5);
    /* the decision at 315 reads the sample of 305, (290, 305]: 4/s on 2
     * -> 3; at 330 that of 320: 8/s on the 2 ready, the one loading at 0,
     * (8/3)/1.5 = 1.78 on 3 -> 6 */
    check_added("scrape_delay_s 10", (const char *[]){"cluster.autoscaler.scrape_delay_s=10", NULL},
                (double[]){15, 315, 330, 330, 330}, 5);
    /* 315's 6 waits for the 2 of 300 to leave the up window (285, 315] */
    check_added("scale_up_window_s 30",
                (const char *[]){"cluster.autoscaler.scale_up_window_s=30", NULL},
                (double[]){15, 330, 330, 330, 330}, 5);
    /* 2 at 315; at 330 the 2 loading count 0: 8 / 4 / 1.5 on 4 -> 6 */
    check_added("max_step 2", (const char *[]){"cluster.autoscaler.max_step=2", NULL},
                (double[]){15, 315, 315, 330, 330}, 5);
    check_added("max_replicas 4", (const char *[]){"cluster.autoscaler.max_replicas=4", NULL},
                (double[]){15, 315, 315}, 3);
    check_added("min_replicas 3", (const char *[]){"cluster.autoscaler.min_replicas=3", NULL},
                (double[]){15, 15, 315, 315, 315}, 5);
    /* 2/s on 1 at a target of 1.9 is a ratio of 1.05, within the tolerance;
     * 8/s is 4.2: ceil(4.2) = 5 */
    check_added("tolerance", (const char *[]){"cluster.autoscaler.target=1.9", NULL},
                (double[]){315, 315, 315, 315}, 4);
    /* interval 20: 20 s 2/s -> 2; 320 s reads (300, 320]: 8/s on 2 -> 6 */
    check_added("interval_s 20", (const char *[]){"cluster.autoscaler.interval_s=20", NULL},
                (double[]){20, 320, 320, 320, 320}, 5);
}

/* Replicas the autoscaler made at t (rows of the step run under sets). */
static int made_at(const char *const *sets, double t)
{
    support_rows rows;
    int n = -1;
    if (run_step(up_trace, 1, sets, &rows) == 0) {
        made m = added(&rows, 1);
        n = 0;
        for (int i = 0; i < m.n; i++) n += m.at[i] == t;
    }
    support_rows_fini(&rows);
    return n;
}

/* utilisation is the busy fraction over the interval: the first decision
 * reads [0, 15), whose requests all end before 15 s, so it is the busy
 * time of the same trace stopped at 15 s over 15 s; targets at 1/1.7 and
 * 1/2.5 of it make ratios of 1.7 and 2.5: 2 and 3 replicas at 15 s. */
static void test_utilisation(void)
{
    support_rows rows;
    run_step(up_trace, 1, (const char *[]){"stop.duration_s=15", NULL}, &rows);
    double u = rows.n_rep == 1 ? rows.rep[0].busy_s / 15 : NAN;
    support_rows_fini(&rows);
    cmp_ok(u, >, 0.1, "utilisation: the replica is busy %.4f of [0, 15)", u);
    char target[64], *sets[] = {"cluster.autoscaler.metric=\"utilisation\"", target, NULL};
    snprintf(target, sizeof target, "cluster.autoscaler.target=%.17g", u / 1.7);
    is_int(made_at((const char *const *)sets, 15), 1, "utilisation: ratio 1.7 -> 2 replicas");
    snprintf(target, sizeof target, "cluster.autoscaler.target=%.17g", u / 2.5);
    is_int(made_at((const char *const *)sets, 15), 2, "utilisation: ratio 2.5 -> 3 replicas");
}

/* 8/s then 2/s on 6 replicas: 2/s on 6 recommends ceil(0.22 x 6) = 2 from
 * 315 s, but the window holds the 6 of 300 s until 360 s; the 4 newest
 * drain then. */
static void test_scale_down(void)
{
    support_rows rows;
    int rc = run_step(down_trace, 6, NULL, &rows);
    is_int(rc, 0, "scale-down: runs");
    int drained = 0, newest = 0, late = 0;
    for (int i = 0; i < rows.n_rep; i++) {
        const sim_replica_row *x = &rows.rep[i];
        if (strcmp(x->end_reason, SIM_DRAINED)) continue;
        drained++;
        newest += x->replica >= 2;
        late += !(x->retired_s >= 360 && x->retired_s < 361);
        late += x->drain_s != 360; /* began to drain at the decision */
    }
    is_int(drained, 4, "scale-down: 4 drained");
    is_int(newest, 4, "scale-down: the newest ones");
    is_int(late, 0, "scale-down: drained from 360 s, scale_down_window_s after the step's "
                    "last 6");
    support_rows_fini(&rows);
}

/* ready_s - created_s = provision_s + weight bytes / the storage's bandwidth
 * + warm_up_s; and load_s as given. */
static void test_lifecycle(void)
{
    const char *const sets[] = {"cluster.lifecycle={\"provision_s\": 30, \"storage\": "
                                "\"local_nvme\", \"warm_up_s\": 5}",
                                NULL};
    char *json = util_xasprintf(STEP, 1, up_trace);
    sim_scenario sc;
    if (support_scenario(json, sets, &sc, NULL)) {
        ok(0, "lifecycle: the scenario loads");
        free(json);
        return;
    }
    double load = mdl_model_weight_bytes(&sc.pools[0].cost.model) / SIM_STORAGE_NVME_BW;
    is_near(sc.pools[0].lifecycle.load_s, load, 1e-12, "lifecycle: load = weight bytes / 7.45 GB/s");
    is_near(load, 16.06e9 / 7.45e9, 0.01, "lifecycle: Llama-3.1-8B's 16.06 GB in 2.16 s");
    support_rows rows = {0}; /* support_run_rows reads its stop_flag and counts */
    support_run_rows(&sc, &rows, NULL);
    int wrong = 0, n = 0;
    for (int i = 0; i < rows.n_rep; i++) {
        const sim_replica_row *x = &rows.rep[i];
        if (x->replica == 0) {
            is_near(x->ready_s, 0, 0, "lifecycle: the scenario's replica is ready at 0");
            continue;
        }
        n++;
        wrong += fabs(x->ready_s - x->created_s - (35 + load)) > 1e-9;
    }
    cmp_ok(n, >, 0, "lifecycle: replicas were added");
    is_int(wrong, 0, "lifecycle: each ready provision + load + warm-up after its decision");
    support_rows_fini(&rows);
    sim_scenario_fini(&sc);
    free(json);
}

/* The timeline's replicas by state, from the rows: the step run's 4 made
 * at 315 s are loading over [315, 330) and ready 20 s later, so [330,
 * 345) has them loading a third of it. */
static void test_timeline(sqlite3 *db)
{
    an_timeline t;
    util_diag d;
    util_diag_init(&d);
    int rc = an_timeline_compute(db, 1, 15, -1, &t, &d);
    is_int(rc, 0, "timeline: computes");
    if (!rc && t.n > 23) {
        ok(t.changing, "timeline: the fleet changed");
        is_near(t.loading[0], 0, 1e-12, "timeline: [0, 15): none loading");
        is_near(t.ready[0], 1, 1e-12, "timeline: [0, 15): 1 ready");
        is_near(t.loading[1], 1, 1e-12, "timeline: [15, 30): 1 loading");
        is_near(t.ready[20], 2, 1e-12, "timeline: [300, 315): 2 ready");
        is_near(t.loading[21], 4, 1e-12, "timeline: [315, 330): 4 loading");
        is_near(t.loading[22], 4 * 5.0 / 15, 1e-9, "timeline: [330, 345): 4 loading a third");
        is_near(t.ready[22], 2 + 4 * 10.0 / 15, 1e-9, "timeline: and ready two thirds");
        is_near(t.ready[23], 6, 1e-12, "timeline: [345, 360): 6 ready");
    }
    an_timeline_fini(&t);
    util_diag_fini(&d);
}

/* The report's GPU-hours are each replica's GPUs over the part of the
 * window it lived: sum((end - max(created, start)) x GPUs), not the final
 * count x the window. */
static void test_cost(void)
{
    char *json = util_xasprintf(STEP, 1, up_trace);
    sqlite3 *db = support_run_json(json, NULL, false);
    free(json);
    double start = support_q1(db, "SELECT min(arrival_s) FROM requests WHERE run_id = 1");
    double end = support_q1(db, "SELECT max(finish_s) FROM requests WHERE run_id = 1");
    double want = (end - start) + (end - 15) + 4 * (end - 315); /* one GPU each */
    util_diag d;
    util_diag_init(&d);
    an_options opt = {0};
    an_report r;
    bool ok_ = db && an_report_compute_with(db, 1, &opt, &r, &d) == UTIL_OK;
    ok(ok_, "cost: the report computes");
    if (ok_) {
        is_near(r.cost.gpu_hours * 3600, want, 1e-6, "cost: GPU-seconds over each replica's life");
        ok(r.cost.changing, "cost: the report says the fleet changed");
        is_near(r.cost.usd, want / 3600 * r.cost.usd_per_gpu_hour, 1e-9, "cost: at its price");
        /* busy over the replica-seconds lived, not over (replicas made) x the run */
        double lived = support_q1(db, "SELECT sum(coalesce(retired_s, r.sim_end_s) - created_s) "
                                      "FROM replicas, runs r WHERE run_id = 1 AND r.id = 1");
        double busy = support_q1(db, "SELECT sum(busy_s) FROM replicas WHERE run_id = 1");
        is_near(r.use.busy_fraction, busy / lived, 1e-12,
                "utilisation: busy %.4f of the %.0f replica-seconds the fleet lived",
                r.use.busy_fraction, lived);
        cmp_ok(r.use.busy_fraction, >, 1.5 * busy / (6 * r.sim_time_s),
               "utilisation: above busy over 6 replicas x the run (%.4f)",
               busy / (6 * r.sim_time_s));
        an_report_fini(&r);
    }
    util_diag_fini(&d);
    an_options_fini(&opt);
    test_timeline(db);
    sqlite3_close(db);
}

/* Per pool: a disaggregated fleet whose decode pool alone has an
 * autoscaler grows only that pool, on the requests its link brings. */
static void test_per_pool(void)
{
    const char *json =
        "{\"seed\": 5, \"stop\": {\"duration_s\": 120}, \"cluster\": {\"engine\": \"ideal\", "
        "\"model\": \"llama-3.1-8b\", \"cost_model\": {\"kind\": \"linear\", \"iteration_s\": "
        "0.01, \"prefill_s_per_token\": 0.0001, \"decode_step_s\": 0.01, \"decode_s_per_seq\": "
        "0.0001}, \"pools\": [{\"name\": \"prefill\", \"gpu\": \"h100-sxm\", \"replicas\": 1}, "
        "{\"name\": \"decode\", \"gpu\": \"h100-sxm\", \"replicas\": 1, \"autoscaler\": "
        "{\"metric\": \"rps\", \"target\": 3, \"max_replicas\": 8}}], \"disaggregated\": "
        "{\"prefill\": \"prefill\", \"decode\": \"decode\", \"link_gbs\": 10}}, \"workload\": "
        "{\"arrival\": {\"process\": \"constant\", \"rate_per_s\": 10}, \"prompt_tokens\": "
        "{\"dist\": \"fixed\", \"value\": 100}, \"output_tokens\": {\"dist\": \"fixed\", "
        "\"value\": 20}}}";
    support_rows rows;
    int rc = support_run(json, NULL, &rows, NULL);
    is_int(rc, 0, "per pool: runs");
    int prefill = 0, decode = 0;
    for (int i = 0; i < rows.n_rep; i++) {
        prefill += !strcmp(rows.rep_names[i][0], "prefill");
        decode += !strcmp(rows.rep_names[i][0], "decode");
    }
    is_int(prefill, 1, "per pool: the prefill pool keeps its one replica");
    /* 10/s on 1 decode replica at a target of 3: ceil(3.33) = 4 at 15 s */
    is_int(decode, 4, "per pool: the decode pool grows to ceil(10 / 3)");
    support_rows_fini(&rows);
}

/* The burst's replicas: how many the autoscaler made at each decision
 * (made[k]: at 15 k s) and how many it began to drain (drained[k]). */
typedef struct moves {
    int made[41], drained[41];
    int n_made, n_drained;
} moves;

static bool at_decision(double t, int *k)
{
    *k = (int)lround(t / 15);
    return *k >= 0 && *k < 41 && t == 15.0 * *k;
}

static moves run_burst(const char *what, const char *const *sets)
{
    moves m = {0};
    support_rows rows;
    char *json = util_xasprintf(STEP, 1, burst_trace);
    char *max = "cluster.autoscaler.max_replicas=20";
    const char *all[8] = {max};
    for (int i = 0; sets && sets[i] && i < 6; i++) all[i + 1] = sets[i];
    is_int(support_run(json, all, &rows, NULL), 0, "%s: runs", what);
    int off = 0, k;
    for (int i = 0; i < rows.n_rep; i++) {
        const sim_replica_row *x = &rows.rep[i];
        if (x->replica > 0 && at_decision(x->created_s, &k) && ++m.made[k]) m.n_made++;
        else if (x->replica > 0) off++;
        if (strcmp(x->end_reason, SIM_DRAINED)) continue;
        if (at_decision(x->drain_s, &k) && ++m.drained[k]) m.n_drained++;
        else off++;
    }
    is_int(off, 0, "%s: every move at a decision", what);
    support_rows_fini(&rows);
    free(json);
    return m;
}

/* The moves at the decisions want[] names, in pairs (instant, count), and
 * none elsewhere. */
static void check_moves(const char *what, const int *at, const int *want, int n, int total)
{
    int sum = 0;
    for (int i = 0; i < n; i++) {
        is_int(at[(int)(want[2 * i] / 15)], want[2 * i + 1], "%s: %d at %d s", what,
               want[2 * i + 1], want[2 * i]);
        sum += want[2 * i + 1];
    }
    is_int(total, sum, "%s: %d in all, none at other decisions", what, sum);
}

/* 30/s at a 1.5 target recommends 20 replicas from the first decision on,
 * whatever the pool holds (the new ones count at 0 on a scale-up, so the
 * HPA's recommendation stays ceil(30 / 1.5)); the policies pace the climb
 * from the replicas at each period's start. */
static void test_scale_up_policies(void)
{
    /* default, select max: 1 + 4 = 5 beats 2 x 1; at 30 s the 15 s event
     * is out of the period (15, 30]: 2 x 5 = 10 beats 5 + 4; then 20 */
    moves m = run_burst("default policies", NULL);
    check_moves("default policies", m.made, (int[]){15, 4, 30, 5, 45, 10}, 3, m.n_made);
    /* a generous policy: the whole jump at once, as without policies */
    m = run_burst("pods 100", (const char *[]){"cluster.autoscaler.scale_up_policies=[{\"type\": "
                                              "\"pods\", \"value\": 100, \"period_s\": 15}]",
                                              NULL});
    check_moves("pods 100", m.made, (int[]){15, 19}, 1, m.n_made);
    /* 4 within any 60 s: 1 -> 5 at 15 s; the 15 s event holds until the
     * period (15, 75] leaves it: 5 -> 9 at 75 s; at 135 s the burst is over */
    m = run_burst("pods 4 per 60 s", (const char *[]){"cluster.autoscaler.scale_up_policies=[{"
                                                     "\"type\": \"pods\", \"value\": 4, "
                                                     "\"period_s\": 60}]",
                                                     NULL});
    check_moves("pods 4 per 60 s", m.made, (int[]){15, 4, 75, 4}, 2, m.n_made);
    /* select min: the smaller of +4 and x2 each 15 s: 1 -> 2 -> 4 -> 8 ->
     * 12 -> 16 -> 20 */
    m = run_burst("select min",
                  (const char *[]){"cluster.autoscaler.scale_up_select=\"min\"", NULL});
    check_moves("select min", m.made, (int[]){15, 1, 30, 2, 45, 4, 60, 4, 75, 4, 90, 4}, 6,
                m.n_made);
    m = run_burst("scale-up disabled",
                  (const char *[]){"cluster.autoscaler.scale_up_select=\"disabled\"", NULL});
    is_int(m.n_made, 0, "scale-up disabled: none added");
}

/* After the burst, 2.25/s recommends 2 (ceil(1.5)); the 60 s window holds
 * the 20 of 120 s until 180 s, from when the policies pace the descent. */
static void test_scale_down_policies(void)
{
    moves m = run_burst("default scale-down", NULL);
    check_moves("default scale-down", m.drained, (int[]){180, 18}, 1, m.n_drained);
    /* 50 % within 60 s of the replicas at the period's start: 20 -> 10 at
     * 180 s; the 180 s event holds until the period (180, 240] leaves it:
     * 10 -> 5; then int(5 x 0.5) = 2 at 300 s */
    m = run_burst("percent 50 per 60 s",
                  (const char *[]){"cluster.autoscaler.scale_down_policies=[{\"type\": "
                                   "\"percent\", \"value\": 50, \"period_s\": 60}]",
                                   NULL});
    check_moves("percent 50 per 60 s", m.drained, (int[]){180, 10, 240, 5, 300, 3}, 3,
                m.n_drained);
    /* select min of 50 % and 4 pods a minute, the higher floor: 20 -> 16
     * (16 over 10) -> 12 -> 8 (8 over 6) -> 4 (both) -> 2 (int(4 x 0.5) = 2
     * over 4 - 4 = 0), a minute apart */
    m = run_burst("select min down",
                  (const char *[]){"cluster.autoscaler.scale_down_policies=[{\"type\": "
                                   "\"percent\", \"value\": 50, \"period_s\": 60}, {\"type\": "
                                   "\"pods\", \"value\": 4, \"period_s\": 60}]",
                                   "cluster.autoscaler.scale_down_select=\"min\"", NULL});
    check_moves("select min down", m.drained,
                (int[]){180, 4, 240, 4, 300, 4, 360, 4, 420, 2}, 5, m.n_drained);
    m = run_burst("scale-down disabled",
                  (const char *[]){"cluster.autoscaler.scale_down_select=\"disabled\"", NULL});
    is_int(m.n_drained, 0, "scale-down disabled: none drained");
    is_int(m.n_made, 19, "scale-down disabled: the climb as by default");
}

static void refused(const char *set, const char *path)
{
    char *json = util_xasprintf(STEP, 1, up_trace);
    char *msg = support_refusal(json, (const char *[]){set, NULL});
    ok(msg != NULL, "%s: refused", set);
    if (msg) has_str(msg, path, "%s: the message names %s", set, path);
    free(msg);
    free(json);
}

static void test_bad_input(void)
{
    refused("cluster.autoscaler.min_replicas=11", "cluster.autoscaler.max_replicas");
    refused("cluster.autoscaler.max_replicas=0", "cluster.autoscaler.max_replicas");
    refused("cluster.autoscaler.target=0", "cluster.autoscaler.target");
    refused("cluster.autoscaler.target=-1", "cluster.autoscaler.target");
    refused("cluster.autoscaler.metric=\"latency\"", "cluster.autoscaler.metric");
    refused("cluster.autoscaler.metric=\"kv\"", "cluster.autoscaler.target"); /* 1.5 > 1 */
    refused("cluster.autoscaler.interval_s=1e-6", "cluster.autoscaler.interval_s");
    refused("cluster.lifecycle.storage=\"tape\"", "cluster.lifecycle.storage");
    refused("cluster.lifecycle.storage=\"local_nvme\"", "cluster.lifecycle");   /* and load_s */
    refused("cluster.autoscaler.scale_up_policies=[]", "cluster.autoscaler.scale_up_policies");
    refused("cluster.autoscaler.scale_up_policies=[{\"type\": \"rate\", \"value\": 1, "
            "\"period_s\": 15}]",
            "cluster.autoscaler.scale_up_policies[0].type");
    refused("cluster.autoscaler.scale_down_policies=[{\"type\": \"pods\", \"value\": 0, "
            "\"period_s\": 15}]",
            "cluster.autoscaler.scale_down_policies[0].value");
    refused("cluster.autoscaler.scale_down_policies=[{\"type\": \"pods\", \"value\": 1, "
            "\"period_s\": 1801}]",
            "cluster.autoscaler.scale_down_policies[0].period_s");
    refused("cluster.autoscaler.scale_up_policies=[{\"type\": \"pods\", \"value\": 1}]",
            "cluster.autoscaler.scale_up_policies[0].period_s");
    refused("cluster.autoscaler.scale_down_select=\"most\"",
            "cluster.autoscaler.scale_down_select");
}

int main(void)
{
    if (support_init()) return 1;
    up_trace = step_trace(2, 8, 300, 600);
    down_trace = step_trace(8, 2, 300, 600);
    burst_trace = step_trace(30, 2.25, 120, 600);
    test_step();
    test_scale_down();
    test_utilisation();
    test_lifecycle();
    test_cost();
    test_per_pool();
    test_scale_up_policies();
    test_scale_down_policies();
    test_bad_input();
    unlink(up_trace);
    unlink(down_trace);
    unlink(burst_trace);
    free(up_trace);
    free(down_trace);
    free(burst_trace);
    support_fini();
    return tap_done();
}
