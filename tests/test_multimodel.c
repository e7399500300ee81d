/*
 * test_multimodel.c: several base models in one fleet (issue 28) -- a
 * class's requests go only to the pools of its model, under every router;
 * report --by model's sections count what SQL counts; one model is as
 * before; and a class whose model no pool serves, or that names none in a
 * fleet of several, is refused naming its path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "tap.h"

/* Two pools of two models, three replicas, a class each (chat's model and
 * code's as JSON members, or ""); with a third class of extra (JSON text,
 * or ""), or with classes none at all. */
static char *scenario_of(const char *router, const char *chat_model, const char *code_model,
                         const char *extra, bool classes)
{
    char *list = classes ? util_xasprintf(", \"classes\": [{\"name\": \"chat\", \"weight\": 2%s}, "
                                          "{\"name\": \"code\", \"weight\": 1%s, \"slo\": "
                                          "{\"ttft_s\": 0.05}}%s]",
                                          chat_model, code_model, extra)
                         : util_xstrdup("");
    char *json = util_xasprintf(
        "{\"seed\": 5, \"stop\": {\"requests\": 900}, \"warmup_s\": 1, \"cluster\": {\"router\": "
        "\"%s\", \"pools\": [{\"name\": \"llama\", \"gpu\": \"h100-sxm\", \"model\": "
        "\"llama-3.1-8b\", \"replicas\": 2}, {\"name\": \"qwen\", \"gpu\": \"h100-sxm\", "
        "\"model\": \"qwen3-8b\", \"replicas\": 1}]}, \"workload\": {\"arrival\": {\"process\": "
        "\"poisson\", \"rate_per_s\": 30}, \"prompt_tokens\": {\"dist\": \"lognormal\", "
        "\"median\": 400, \"sigma\": 0.5, \"max\": 4096}, \"output_tokens\": 60%s}, \"slo\": "
        "{\"ttft_s\": 0.1}}",
        router, list);
    free(list);
    return json;
}

static char *scenario(const char *router, const char *chat_model, const char *extra)
{
    return scenario_of(router, chat_model, ", \"model\": \"qwen3-8b\"", extra, true);
}

/* Rows served by a replica of another model than their class's. */
static const char off_model[] =
    "SELECT count(*) FROM requests r JOIN replicas p ON p.run_id = r.run_id AND p.replica = "
    "r.replica WHERE p.model <> CASE r.class WHEN 'code' THEN 'qwen3-8b' ELSE 'llama-3.1-8b' END";

static void test_routing(void)
{
    for (int i = 0; sim_router_names[i]; i++) {
        char *json = scenario(sim_router_names[i], ", \"model\": \"llama-3.1-8b\"", "");
        sqlite3 *db = support_run_json(json, NULL, false);
        ok(db != NULL, "%s: runs", sim_router_names[i]);
        if (db) {
            ok(support_q1(db, off_model) == 0, "%s: no request on another model's replica",
               sim_router_names[i]);
            double qwen = support_q1(db, "SELECT count(*) FROM requests r JOIN replicas p ON "
                                         "p.replica = r.replica WHERE p.model = 'qwen3-8b'");
            double code = support_q1(db, "SELECT count(*) FROM requests WHERE class = 'code' "
                                         "AND replica IS NOT NULL");
            ok(qwen == code && code > 200, "%s: qwen3-8b served every code request (%g of %g)",
               sim_router_names[i], qwen, code);
            sqlite3_close(db);
        }
        free(json);
    }
}

static double q_model(sqlite3 *db, const char *what, const char *model)
{
    char *sql = util_xasprintf("SELECT %s FROM requests WHERE CASE class WHEN 'code' THEN "
                               "'qwen3-8b' ELSE 'llama-3.1-8b' END = '%s'",
                               what, model);
    double v = support_q1(db, sql);
    free(sql);
    return v;
}

/* report --by model: a section per model whose counts are SQL's. */
static void test_report(void)
{
    char *json = scenario("least_outstanding", ", \"model\": \"llama-3.1-8b\"",
                          ", {\"name\": \"bulk\", \"weight\": 1, \"model\": \"llama-3.1-8b\"}");
    sqlite3 *db = support_run_json(json, NULL, false);
    an_options opt = {.by_model = true};
    an_report r;
    util_diag d;
    util_diag_init(&d);
    int rc = an_report_compute_with(db, 1, &opt, &r, &d);
    ok(rc == 0 && r.n_models == 2, "two model sections (%d)", r.n_models);
    for (int m = 0; rc == 0 && m < r.n_models; m++) {
        const an_model *x = &r.models[m];
        const char *id = x->id;
        is_int(x->req.arrived, (int64_t)q_model(db, "count(*)", id), "%s: arrived", id);
        is_int(x->req.completed, (int64_t)q_model(db, "total(status = 'completed')", id),
               "%s: completed", id);
        is_int(x->req.measured,
                  (int64_t)q_model(db, "total(status = 'completed' AND arrival_s >= 1)", id),
               "%s: measured", id);
        is_int(x->gpus, strcmp(id, "qwen3-8b") ? 2 : 1, "%s: GPUs", id);
        ok(x->usd > 0 && isfinite(x->usd_per_million_output_tokens), "%s: cost $%g", id, x->usd);
    }
    if (rc == 0) {
        is_int(r.models[0].req.arrived + r.models[1].req.arrived, r.req.arrived,
               "the models' requests are the run's");
        /* attainment sums the classes': chat and bulk by 0.1 s, code by 0.05 s */
        int64_t good = r.classes[0].req.good + r.classes[2].req.good;
        is_int(r.models[0].req.good, good, "llama-3.1-8b: good by chat's and bulk's SLO");
        is_int(r.models[1].req.good, r.classes[1].req.good, "qwen3-8b: good by code's SLO");
        ok(fabs(r.cost.usd - r.models[0].usd - r.models[1].usd) < 1e-9 * r.cost.usd,
           "the models' costs sum to the fleet's ($%g)", r.cost.usd);
    }
    an_report_fini(&r);
    util_diag_fini(&d);
    sqlite3_close(db);
    free(json);
}

/* One model named by its classes runs as one naming none. */
static void test_one_model_unchanged(void)
{
    static const char *const one[] = {"cluster.pools[1].model=\"llama-3.1-8b\"", NULL};
    const char *llama = ", \"model\": \"llama-3.1-8b\"";
    char *named = scenario_of("round_robin", llama, llama, "", true);
    char *none = scenario_of("round_robin", "", "", "", true);
    support_rows a = {0}, b = {0};
    int ra = support_run(named, one, &a, NULL), rb = support_run(none, one, &b, NULL);
    ok(ra == 0 && rb == 0 && a.n > 0 && support_rows_equal(&a, &b),
       "one model: naming it changes no row (%lld rows)", (long long)a.n);
    support_rows_fini(&a);
    support_rows_fini(&b);
    free(named);
    free(none);
}

static void bad(const char *chat_model, bool classes, const char *want)
{
    char *json = scenario_of("round_robin", chat_model, "", "", classes);
    char *errors = support_refusal(json, NULL);
    ok(errors && strstr(errors, want), "refused naming '%s' (%s)", want,
       errors ? errors : "accepted");
    free(errors);
    free(json);
}

static void test_bad_input(void)
{
    bad(", \"model\": \"gpt-9\"", true, "workload.classes[0].model: no pool serves 'gpt-9'");
    bad("", true, "workload.classes[0].model: missing: the pools serve several models "
                  "(llama-3.1-8b, qwen3-8b)");
    bad("", false, "workload.classes: missing: the pools serve several models");
}

int main(void)
{
    if (support_init()) return 1;
    test_routing();
    test_report();
    test_one_model_unchanged();
    test_bad_input();
    support_fini();
    return tap_done();
}
