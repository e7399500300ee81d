/*
 * test_calibration_profile.c: a scenario using a calibration profile
 * (cluster.calibration) -- the profile's coefficients in the stored
 * scenario and in the iterations' times as the roofline says; explicit keys
 * winning over it; each bad profile an input error naming the file and the
 * JSON path; attn_efficiency slowing a long-context decode step by its
 * predicted amount with the bytes unchanged; the report's line; a
 * scenario without the key as it was; and `servesim catalog profile`
 * (argv[1] is the servesim binary).  The profiles are written to a
 * temporary folder.
 */
#include <stdlib.h>
#include <unistd.h>

#include "runner.h"
#include "support.h"
#include "tap.h"

static char dir[] = "/tmp/servesim-calibration-XXXXXX";

/* dir/name holding text; caller frees the path. */
static char *write_file(const char *name, const char *text)
{
    char *path = util_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* A profile of rtx-4090 with `engine` and these coefficients (JSON members). */
static char *write_profile(const char *name, const char *engine, const char *coefs)
{
    char *text = util_xasprintf(
        "{\"servesim_profile\": 1, \"gpu\": \"rtx-4090\", \"engine\": \"%s\",\n"
        " \"coefficients\": {%s},\n"
        " \"fitted_on\": [{\"source\": \"a.json\", \"name\": \"a\", \"model\": \"llama-3.1-8b\", "
        "\"requests\": 300},\n"
        "               {\"source\": \"b.json\", \"name\": \"b\", \"model\": \"qwen3-8b\", "
        "\"requests\": 200}],\n"
        " \"training_error_pct\": {\"ttft_mean_s\": 3.1}, \"cv_error_pct\": {\"ttft_mean_s\": 4.2},"
        " \"folds\": 2}\n",
        engine, coefs);
    char *path = write_file(name, text);
    free(text);
    return path;
}

/* Every coefficient, none at its default. */
static const char all_coefs[] =
    "\"mfu\": {\"value\": 0.41, \"stderr\": 0.004, \"lo\": 0.02, \"hi\": 1},"
    " \"mbu\": {\"value\": 0.6, \"stderr\": 0.01, \"lo\": 0.05, \"hi\": 1},"
    " \"overhead_s\": {\"value\": 0.003},"
    " \"step_s\": {\"value\": 0.001}, \"step_s_per_seq\": {\"value\": 1e-05},"
    " \"output_s\": {\"value\": 0.0007}, \"frontend_s\": {\"value\": 0.002},"
    " \"frontend_s_per_token\": {\"value\": 3e-06}";

/* One 2000-token prompt and one output token on an RTX 4090 running vLLM
 * V1, with calibration `profile` unless NULL. */
static char *scenario(const char *profile)
{
    char cal[512] = "";
    if (profile) snprintf(cal, sizeof cal, "\"calibration\": \"%s\", ", profile);
    return util_xasprintf(
        "{\"cluster\": {%s\"gpu\": \"rtx-4090\", \"model\": \"llama-3.1-8b\", "
        "\"engine\": \"vllm-v1\"},"
        " \"stop\": {\"requests\": 1},"
        " \"workload\": {\"arrival\": {\"process\": \"poisson\", \"rate_per_s\": 1},"
        " \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 2000},"
        " \"output_tokens\": {\"dist\": \"fixed\", \"value\": 1}}}",
        cal);
}

static double stored(const sim_scenario *sc, const char *path)
{
    return util_json_number(sc->json, path, NAN);
}

/* A prompt of `tokens` alone, as the engine describes it. */
static mdl_batch prefill(int64_t tokens, mdl_chunk *chunk)
{
    *chunk = (mdl_chunk){tokens, 0};
    return (mdl_batch){.n_prefill = 1, .prefill_tokens = tokens, .prefill_sq = (double)tokens * tokens,
                       .prefill_pairs = tokens * (tokens + 1.0) / 2, .chunks = chunk};
}

/* (a) the profile's values, in the stored scenario and in the times */
static void test_applied(const char *profile)
{
    char *with = scenario(profile), *without = scenario(NULL);
    sim_scenario sc, base;
    is_int(support_scenario(with, NULL, &sc, NULL), 0, "a scenario naming the profile loads");
    is_int(support_scenario(without, NULL, &base, NULL), 0, "the same without it");
    static const struct {
        const char *path;
        double value;
    } keys[] = {{"cluster.cost_model.mfu", 0.41},         {"cluster.cost_model.mbu", 0.6},
                {"cluster.cost_model.iteration_overhead_s", 0.003},
                {"cluster.host.step_s", 0.001},           {"cluster.host.step_s_per_seq", 1e-05},
                {"cluster.host.output_s", 0.0007},        {"cluster.host.frontend_s", 0.002},
                {"cluster.host.frontend_s_per_token", 3e-06}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        is_near(stored(&sc, keys[i].path), keys[i].value, 0, "stored %s: the profile's %g",
                keys[i].path, keys[i].value);
    is_near(stored(&sc, "cluster.cost_model.attn_efficiency"), 1, 0,
            "a coefficient the profile lacks keeps its default");
    const sim_pool *p = &sc.pools[0], *q = &base.pools[0];
    is_near(p->cost.mfu, 0.41, 0, "the pool runs at the profile's mfu");
    is_near(p->cost.host_step_s, 0.001, 0, "and its host step");
    is_near(p->frontend_s, 0.002, 0, "and its front end");
    is_near(q->cost.mfu, 0.5, 0, "without it, the GPU's catalog mfu");
    is_near(q->cost.host_step_s_per_seq, 2.1e-05, 0, "and the preset's host time");

    /* a compute-bound prefill: its GPU time less the fixed cost scales by
     * the mfus' ratio */
    mdl_chunk c;
    mdl_batch b = prefill(2000, &c);
    mdl_step s1, s0;
    mdl_cost_step(&p->cost, &b, &s1);
    mdl_cost_step(&q->cost, &b, &s0);
    double compute = s0.flops / (q->cost.gpu.flops * q->cost.mfu);
    double memory = s0.bytes / (q->cost.gpu.mem_bw * q->cost.mbu);
    cmp_ok(compute, >, memory, "a 2000-token prefill is compute-bound");
    is_near((s1.gpu_s - 0.003) / (s0.gpu_s - 0.002), 0.5 / 0.41, 1e-12,
            "its time scales by mfu_default / mfu_profile");
    is_near(s1.bytes, s0.bytes, 0, "and moves the same bytes");

    /* the engine's iteration, to the nanosecond */
    support_rows r1 = {0}, r0 = {0};
    sim_sink k1 = support_capture_steps(&r1), k0 = support_capture_steps(&r0);
    sim_engine *e1 = sim_engine_create(&sc, &k1), *e0 = sim_engine_create(&base, &k0);
    sim_engine_run(e1, NULL, NULL, NULL);
    sim_engine_run(e0, NULL, NULL, NULL);
    sim_engine_destroy(e1);
    sim_engine_destroy(e0);
    ok(r1.n_it >= 1 && r0.n_it >= 1, "both runs record their iterations");
    if (r1.n_it >= 1 && r0.n_it >= 1) {
        const sim_iteration_row *i1 = &r1.it[0], *i0 = &r0.it[0];
        is_int(i1->prefill_tokens, 2000, "the first iteration prefills the prompt");
        is_near(i1->gpu_end_s - i1->gpu_start_s, s1.gpu_s, 2e-9, "its GPU time is the step's");
        is_near(i0->gpu_end_s - i0->gpu_start_s, s0.gpu_s, 2e-9, "without the profile too");
        is_near(i1->bytes, i0->bytes, 0, "the same bytes recorded");
    }
    support_rows_fini(&r1);
    support_rows_fini(&r0);
    sim_scenario_fini(&sc);
    sim_scenario_fini(&base);
    free(with);
    free(without);
}

/* The text report of r with its wrapped lines joined again; caller frees. */
static char *report_text(const an_report *r)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    an_report_print(r, false, f);
    fclose(f);
    char *to = out;
    for (const char *from = out; *from; from++) {
        if (from[0] == '\n' && from[1] == ' ' && from[2] == ' ') {
            *to++ = ' ';
            from += 2;
        } else {
            *to++ = *from;
        }
    }
    *to = '\0';
    return out;
}

/* (a) the stored run (runs.scenario) and the report */
static void test_stored_and_reported(const char *profile)
{
    char *text = scenario(profile);
    sqlite3 *db = support_run_json(text, NULL, false);
    ok(db != NULL, "a calibrated scenario runs into a database");
    is_near(support_q1(db, "SELECT json_extract(scenario, '$.cluster.cost_model.mbu') FROM runs"),
            0.6, 0, "runs.scenario holds the profile's mbu");
    is_near(support_q1(db, "SELECT json_extract(scenario, '$.cluster.host.output_s') FROM runs"),
            0.0007, 0, "and its output_s");
    util_diag d;
    util_diag_init(&d);
    an_report r;
    is_int(an_report_compute(db, 1, &r, &d), 0, "its report");
    is_str(r.calibration_path, profile, "names the profile");
    ok(r.calibration_found, "found where it was read");
    is_str(r.calibration_gpu, "rtx-4090", "its GPU");
    is_str(r.calibration_engine, "vllm-v1", "its engine");
    is_int(r.calibration_runs, 2, "fitted on two runs");
    char *out = report_text(&r);
    char *line = util_xasprintf("calibration: %s (gpu rtx-4090, engine vllm-v1, fitted on 2 runs)",
                                profile);
    has_str(out, line, "the text report says which profile");
    free(line);
    free(out);
    cJSON *j = an_report_json(&r, false);
    const cJSON *cal = util_json_get(j, "run.calibration");
    is_str(util_json_member(cal, "path")->valuestring, profile, "run.calibration.path");
    is_int(cJSON_GetArraySize(util_json_member(cal, "fitted_on")), 2, "run.calibration.fitted_on");
    cJSON_Delete(j);
    an_report_fini(&r);

    /* the file gone: the run still reports, and says so */
    char *moved = util_xasprintf("%s.moved", profile);
    rename(profile, moved);
    an_report_compute(db, 1, &r, &d);
    out = report_text(&r);
    line = util_xasprintf("calibration: %s (file not found)", profile);
    has_str(out, line, "a profile gone since is reported as not found");
    free(line);
    free(out);
    an_report_fini(&r);
    rename(moved, profile);
    free(moved);
    util_diag_fini(&d);
    sqlite3_close(db);
    free(text);
}

/* (b) a key the scenario sets, itself or by a pool's inheritance, wins */
static void test_explicit_wins(const char *profile)
{
    char *text = scenario(profile);
    const char *sets[] = {"cluster.cost_model.mfu=0.3", "cluster.host.step_s=0.004", NULL};
    sim_scenario sc;
    is_int(support_scenario(text, sets, &sc, NULL), 0, "explicit keys beside a profile");
    is_near(stored(&sc, "cluster.cost_model.mfu"), 0.3, 0, "an explicit mfu wins");
    is_near(stored(&sc, "cluster.host.step_s"), 0.004, 0, "an explicit host.step_s wins");
    is_near(stored(&sc, "cluster.cost_model.mbu"), 0.6, 0, "the profile sets the rest");
    is_near(sc.pools[0].cost.mfu, 0.3, 0, "and the pool runs the explicit one");
    sim_scenario_fini(&sc);

    const char *pools[] = {"cluster.pools=[{\"name\": \"a\"}, {\"name\": \"b\", "
                           "\"cost_model\": {\"mbu\": 0.7}}]",
                           "cluster.cost_model={\"mfu\": 0.35}", NULL};
    is_int(support_scenario(text, pools, &sc, NULL), 0, "pools beside a profile");
    is_near(stored(&sc, "cluster.pools.0.cost_model.mfu"), 0.35, 0,
            "a pool inheriting the cluster's mfu keeps it");
    is_near(stored(&sc, "cluster.pools.0.cost_model.mbu"), 0.6, 0, "and takes the profile's mbu");
    is_near(stored(&sc, "cluster.pools.1.cost_model.mbu"), 0.7, 0, "a pool's own mbu wins");
    is_near(stored(&sc, "cluster.pools.1.cost_model.mfu"), 0.41, 0,
            "a pool with its own cost_model takes the profile's mfu");
    is_near(stored(&sc, "cluster.pools.1.host.frontend_s"), 0.002, 0,
            "every pool takes the host values");
    sim_scenario_fini(&sc);
    free(text);
}

/* The errors of the scenario with calibration `profile` and sets; caller
 * frees. */
static char *errors_of(const char *profile, const char *const *sets)
{
    char *text = scenario(profile), *errors = NULL;
    sim_scenario sc;
    int rc = support_scenario(text, sets, &sc, &errors);
    sim_scenario_fini(&sc);
    free(text);
    if (rc != UTIL_EINPUT) tap_diag("status %d, not an input error", rc);
    return rc == UTIL_EINPUT ? errors : (free(errors), util_xstrdup(""));
}

static void expect_error(const char *profile, const char *set, const char *message)
{
    const char *sets[] = {set, NULL};
    char *e = errors_of(profile, set ? sets : NULL);
    has_str(e, message, "%s", message);
    free(e);
}

/* A profile of the given coefficients, and the message loading it gives. */
static void expect_profile_error(const char *coefs, const char *message)
{
    char *path = write_profile("bad.json", "vllm-v1", coefs);
    char *want = util_xasprintf("cluster.calibration: %s: %s", path, message);
    expect_error(path, NULL, want);
    free(want);
    free(path);
}

/* (c) every way a profile does not fit, each an input error naming it */
static void test_errors(const char *profile)
{
    char *want = util_xasprintf("cluster.calibration: %s was fitted on rtx-4090 with vllm-v1; "
                                "pool 'default' is h100-sxm with vllm-v1", profile);
    expect_error(profile, "cluster.gpu=h100-sxm", want);
    free(want);
    want = util_xasprintf("cluster.calibration: %s was fitted on rtx-4090 with vllm-v1; pool "
                          "'default' is rtx-4090 with sglang", profile);
    expect_error(profile, "cluster.engine=sglang", want);
    free(want);
    want = util_xasprintf("cluster.calibration: %s fits mfu, a roofline coefficient; pool "
                          "'default' has a linear cost model", profile);
    expect_error(profile, "cluster.cost_model={\"kind\": \"linear\"}", want);
    free(want);
    expect_profile_error("\"mfx\": {\"value\": 0.4}",
                         "coefficients.mfx: unknown key (did you mean 'mfu'?");
    expect_profile_error("\"mfu\": {\"value\": \"high\"}",
                         "coefficients.mfu.value: expected a number, got a string");
    expect_profile_error("\"mbu\": {\"value\": 1.5}",
                         "coefficients.mbu.value: 1.5 is outside the range of "
                         "cluster.cost_model.mbu (> 0 and <= 1)");
    expect_profile_error("\"mfu\": {\"value\": 0.9, \"lo\": 0.1, \"hi\": 0.8}",
                         "coefficients.mfu.value: 0.9 is outside the fit's bounds [0.1, 0.8]");
    expect_profile_error("\"step_s\": {\"stderr\": 0.1}",
                         "coefficients.step_s.value: missing");
    char *missing = util_xasprintf("%s/none.json", dir);
    want = util_xasprintf("cluster.calibration: %s: cannot open", missing);
    expect_error(missing, NULL, want);
    free(want);
    free(missing);
    char *broken = write_file("broken.json", "{\"servesim_profile\": 1,\n \"gpu\": }\n");
    want = util_xasprintf("cluster.calibration: %s:2:", broken);
    expect_error(broken, NULL, want);
    free(want);
    free(broken);
    char *other = write_file("other.json", "{\"servesim_profile\": 2, \"gpu\": \"rtx-4080\", "
                                           "\"engine\": \"vllm-v1\", \"coefficients\": {}}");
    want = util_xasprintf("cluster.calibration: %s: gpu: unknown GPU 'rtx-4080'", other);
    expect_error(other, NULL, want);
    free(want);
    want = util_xasprintf("cluster.calibration: %s: servesim_profile: version 2", other);
    expect_error(other, NULL, want);
    free(want);
    free(other);
}

/* What describes the fit is the fitting's to extend: a null stderr, a
 * coefficient's start, the fit's own counts are kept, not refused. */
static void test_fit_extras(void)
{
    char *path = write_file("extras.json",
                            "{\"servesim_profile\": 1, \"gpu\": \"rtx-4090\", \"engine\": "
                            "\"vllm-v1\", \"coefficients\": {\"mfu\": {\"value\": 0.45, "
                            "\"stderr\": null, \"lo\": 0.02, \"hi\": 1, \"start\": 0.5}},"
                            " \"fitted_on\": [{\"name\": \"a\", \"clock\": \"client\"}],"
                            " \"iterations\": 12, \"replays\": 340}");
    util_diag d;
    util_diag_init(&d);
    mdl_profile p;
    is_int(mdl_profile_read(path, support_catalog, &p, &d), 0,
           "a profile with a null stderr, a start and the fit's counts");
    util_diag_print(&d, stdout, "# ");
    ok(p.coef[MDL_COEF_MFU].set && p.coef[MDL_COEF_MFU].value == 0.45, "its mfu");
    ok(isnan(p.coef[MDL_COEF_MFU].err), "its stderr unknown");
    ok(!p.coef[MDL_COEF_MBU].set, "no mbu");
    is_int(p.fitted_runs, 1, "one run");
    is_near(mdl_profile_default(&p, support_catalog, MDL_COEF_MFU), 0.5, 0,
            "it replaces the GPU's mfu");
    is_near(mdl_profile_default(&p, support_catalog, MDL_COEF_STEP_S_PER_SEQ), 2.1e-05, 0,
            "and would replace the preset's host time");
    mdl_profile_fini(&p);
    util_diag_fini(&d);
    unlink(path);
    free(path);
}

/* A relative path is the scenario folder's, as every path of a scenario. */
static void test_relative(void)
{
    char *text = scenario("good.json"), *want = util_xasprintf("%s/good.json", dir);
    util_diag d;
    util_diag_init(&d);
    cJSON *root = cJSON_Parse(text);
    sim_scenario sc;
    is_int(sim_scenario_load(root, support_catalog, dir, &sc, &d), 0,
           "a profile relative to the scenario's folder");
    util_diag_print(&d, stdout, "# ");
    is_near(sc.pools[0].cost.mfu, 0.41, 0, "is read from there");
    is_str(util_json_get(sc.json, "cluster.calibration")->valuestring, want,
           "and stored as the path read");
    sim_scenario_fini(&sc);
    util_diag_fini(&d);
    free(want);
    free(text);
}

/* (d) KV reads at half the weights' bandwidth: a long-context decode step
 * slower by exactly its KV bytes at mbu x bandwidth, the bytes unchanged,
 * in single steps and in the engine's decode runs (their closed form) */
static void test_attn_efficiency(void)
{
    char *prof = write_profile("attn.json", "ideal", "\"attn_efficiency\": {\"value\": 0.5}");
    char *with = scenario(prof), *without = scenario(NULL);
    const char *sets[] = {"cluster.engine=ideal", "workload.prompt_tokens.value=8000",
                          "workload.output_tokens.value=40", NULL};
    sim_scenario sc, base;
    is_int(support_scenario(with, sets, &sc, NULL), 0, "a profile of attn_efficiency 0.5");
    is_int(support_scenario(without, sets, &base, NULL), 0, "and the same without it");
    const mdl_cost *slow = &sc.pools[0].cost, *fast = &base.pools[0].cost;
    is_near(slow->attn_efficiency, 0.5, 0, "the pool's KV reads at half of mbu");
    is_near(fast->attn_efficiency, 1, 0, "the default: the weights' bandwidth");
    mdl_batch b = {.n_decode = 4, .decode_context = 4 * 16000}, w = {.n_decode = 4};
    mdl_step s1, s0, weights;
    mdl_cost_step(slow, &b, &s1);
    mdl_cost_step(fast, &b, &s0);
    mdl_cost_step(fast, &w, &weights);
    double kv = s0.bytes - weights.bytes, bw = fast->gpu.mem_bw * fast->mbu;
    is_near(kv, 4 * 16000 * fast->kv_bytes_per_token, 1e-6 * kv,
            "the step reads its contexts' KV");
    is_near(s1.time_s - s0.time_s, kv / bw, 1e-12 * s1.time_s,
            "4 x 16000 tokens of context: slower by their KV bytes at mbu x bandwidth");
    is_near(s1.bytes, s0.bytes, 0, "the same bytes");
    is_near(s1.flops, s0.flops, 0, "the same FLOPs");

    support_rows r1 = {0}, r0 = {0};
    sim_sink k1 = support_capture_steps(&r1), k0 = support_capture_steps(&r0);
    sim_engine *e1 = sim_engine_create(&sc, &k1), *e0 = sim_engine_create(&base, &k0);
    sim_engine_run(e1, NULL, NULL, NULL);
    sim_engine_run(e0, NULL, NULL, NULL);
    sim_engine_destroy(e1);
    sim_engine_destroy(e0);
    is_int(r1.n_it, r0.n_it, "as many iterations");
    bool bytes = r1.n_it == r0.n_it, times = bytes;
    for (size_t i = 1; bytes && i < r1.n_it; i++) { /* the decode steps, from the run */
        const sim_iteration_row *x = &r1.it[i], *y = &r0.it[i];
        bytes &= x->bytes == y->bytes;
        mdl_batch one = {.n_decode = 1, .decode_context = 8000 + (int64_t)i};
        mdl_step a, c;
        mdl_cost_step(slow, &one, &a);
        mdl_cost_step(fast, &one, &c);
        times &= fabs((x->end_s - x->start_s) - a.time_s) <= 2e-9 &&
                 fabs((y->end_s - y->start_s) - c.time_s) <= 2e-9;
    }
    ok(bytes, "every decode step records the same bytes");
    ok(times, "every decode step of the run takes its step's time, KV reads slowed or not");
    support_rows_fini(&r1);
    support_rows_fini(&r0);
    sim_scenario_fini(&sc);
    sim_scenario_fini(&base);
    free(with);
    free(without);
    unlink(prof);
    free(prof);
}

/* (e) without cluster.calibration, what it was: no key stored, the KV
 * reads at mbu, and a run with attn_efficiency 1 given the same rows */
static void test_without(void)
{
    char *text = scenario(NULL);
    sim_scenario sc;
    support_scenario(text, NULL, &sc, NULL);
    ok(!util_json_get(sc.json, "cluster.calibration"), "no calibration key appears");
    is_near(sc.pools[0].cost.attn_efficiency, 1, 0, "attn_efficiency 1");
    sim_scenario_fini(&sc);
    const char *sets[] = {"workload.output_tokens.value=60", "stop.requests=20", NULL};
    const char *one[] = {"workload.output_tokens.value=60", "stop.requests=20",
                         "cluster.cost_model.attn_efficiency=1", NULL};
    support_rows a, b;
    support_run(text, sets, &a, NULL);
    support_run(text, one, &b, NULL);
    ok(a.n == 20 && support_rows_equal(&a, &b), "attn_efficiency 1 changes no row");
    support_rows_fini(&a);
    support_rows_fini(&b);
    free(text);
}

/* `servesim catalog profile`: each coefficient against what it replaces,
 * the runs and the errors; as JSON; a profile of an unknown GPU refused. */
static void test_catalog(const char *servesim, const char *profile)
{
    result r = runner_run(servesim, dir, "catalog", "profile", profile, NULL);
    is_int(r.status, 0, "catalog profile");
    has_str(r.out, "fitted on rtx-4090 (", "names the GPU");
    has_str(r.out, "with vllm-v1", "and the engine");
    has_str(r.out, "  mfu                       0.41    +- 0.004       [0.02, 1]   0.5 (rtx-4090)",
            "mfu: value, stderr, range, the GPU's default it replaces");
    has_str(r.out, "  step_s_per_seq", "a host coefficient");
    has_str(r.out, "2.1e-05 (vllm-v1)", "against the preset's value");
    has_str(r.out, "fitted on 2 runs:\n  a (a.json): llama-3.1-8b, 300 requests", "the runs");
    has_str(r.out, "cv, 2 folds", "the cross-validated errors");
    runner_drop(&r);
    r = runner_run(servesim, dir, "catalog", "profile", profile, "--json", NULL);
    cJSON *j = cJSON_Parse(r.out);
    is_near(util_json_number(j, "coefficients.mfu.replaces", NAN), 0.5, 0, "--json: replaces");
    is_str(cJSON_GetStringValue(util_json_get(j, "coefficients.overhead_s.sets")),
           "cluster.cost_model.iteration_overhead_s", "--json: the key it sets");
    cJSON_Delete(j);
    runner_drop(&r);
    char *other = util_xasprintf("%s/other.json", dir);
    r = runner_run(servesim, dir, "catalog", "profile", other, NULL);
    is_int(r.status, 2, "a profile of an unknown GPU: exit 2");
    has_str(r.err, "gpu: unknown GPU 'rtx-4080'", "naming it");
    runner_drop(&r);
    free(other);
}

int main(int argc, char **argv)
{
    if (argc < 2 || support_init() || !mkdtemp(dir)) return 1;
    char *good = write_profile("good.json", "vllm-v1", all_coefs);
    test_applied(good);
    test_stored_and_reported(good);
    test_explicit_wins(good);
    test_errors(good);
    test_fit_extras();
    test_relative();
    test_attn_efficiency();
    test_without();
    test_catalog(argv[1], good);
    char *bad = util_xasprintf("%s/bad.json", dir), *broken = util_xasprintf("%s/broken.json", dir),
         *other = util_xasprintf("%s/other.json", dir);
    unlink(good);
    unlink(bad);
    unlink(broken);
    unlink(other);
    static const char *const outputs[] = {"stdout", "stderr"}; /* runner's */
    for (int i = 0; i < 2; i++) {
        char *p = util_xasprintf("%s/%s", dir, outputs[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
    free(good);
    free(bad);
    free(broken);
    free(other);
    support_fini();
    return tap_done();
}
