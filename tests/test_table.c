/*
 * test_table.c: the measured-table cost model against the CSV files it reads.
 * argv[1] is a profile folder of LLMServingSim's layout (dense.csv,
 * per_sequence.csv, attention.csv; the RTX PRO 6000 Llama-3.1-8B tp1 bundle in
 * data/validation/llmservingsim).  Expected values are read from the files
 * here, independently of the loader, and interpolated by hand; the lookups
 * themselves are reached through the models' private header.  Broken files
 * are written to a temporary folder to check the FILE:LINE messages.
 */
#include <stdlib.h>
#include <unistd.h>

#include "mdl_int.h"
#include "tap.h"

static const char *dir;
static mdl_catalog *cat;

/* time_us of "layer,x,..." in dense.csv or per_sequence.csv; -1 if absent. */
static double csv_layer(const char *file, const char *layer, int x)
{
    char *path = util_xasprintf("%s/%s", dir, file), line[256], name[64];
    FILE *f = fopen(path, "r");
    double us = -1, t;
    int at;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%63[^,],%d,%lf", name, &at, &t) == 3 && !strcmp(name, layer) && at == x)
            us = t;
    if (f) fclose(f);
    free(path);
    return us;
}

/* time_us of one attention.csv row; -1 if absent. */
static double csv_attn(int pc, int kp, int nd, int kd)
{
    char *path = util_xasprintf("%s/attention.csv", dir), line[256];
    FILE *f = fopen(path, "r");
    double us = -1, t;
    int a, b, c, e;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%d,%d,%d,%lf", &a, &b, &c, &e, &t) == 5 && a == pc && b == kp &&
            c == nd && e == kd)
            us = t;
    if (f) fclose(f);
    free(path);
    return us;
}

/* Attention at (pc, kp, nd) and kv_decode kd, interpolated by hand between
 * the rows measured just below and just above kd. */
static double csv_attn_kd(int pc, int kp, int nd, double kd)
{
    char *path = util_xasprintf("%s/attention.csv", dir), line[256];
    FILE *f = fopen(path, "r");
    double lo = -1, hi = 1e18, tlo = 0, thi = 0, t;
    int a, b, c, e;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%d,%d,%d,%lf", &a, &b, &c, &e, &t) == 5 && a == pc && b == kp &&
            c == nd) {
            if (e <= kd && e > lo) lo = e, tlo = t;
            if (e >= kd && e < hi) hi = e, thi = t;
        }
    if (f) fclose(f);
    free(path);
    return hi == lo ? tlo : tlo + (kd - lo) / (hi - lo) * (thi - tlo);
}

/* Everything but attention at `tokens` tokens and `seqs` sequences, us,
 * when both are measured points. */
static double csv_rest(int tokens, int seqs)
{
    static const char *per_layer[] = {"qkv_proj", "rotary_emb", "o_proj", "gate_up_proj",
                                      "act_fn", "down_proj"};
    double layer = 2 * csv_layer("dense.csv", "layernorm", tokens);
    for (int i = 0; i < 6; i++) layer += csv_layer("dense.csv", per_layer[i], tokens);
    return csv_layer("dense.csv", "embedding", tokens) + 32 * layer +
           csv_layer("dense.csv", "final_layernorm", tokens) +
           csv_layer("per_sequence.csv", "lm_head", seqs) +
           csv_layer("per_sequence.csv", "sampler", seqs);
}

/* RTX PRO 6000 Blackwell Server Edition, for the datasheet floor only:
 * 96 GB GDDR7 at 1.792 TB/s; dense BF16 about 500 TFLOP/s (a quarter of
 * NVIDIA's 4,000 sparse FP4 TOPS). */
static mdl_gpu rtx_pro_6000(void)
{
    mdl_gpu g = {.id = "rtx-pro-6000", .name = "RTX PRO 6000 Blackwell Server Edition",
                 .flops = 500e12, .mem_bytes = 96e9, .mem_bw = 1.792e12, .mfu = 0.5,
                 .mbu = 0.75};
    return g;
}

/* A table cost model from JSON text; messages go to d. */
static int table_model(const char *json, const mdl_gpu *gpu, const char *base, mdl_cost *cm,
                       cJSON **obj, util_diag *d)
{
    memset(cm, 0, sizeof *cm); /* so that mdl_cost_fini is safe whatever fails */
    *obj = cJSON_Parse(json);
    int rc = util_schema_apply_union(&mdl_cost_schema, *obj, "cluster.cost_model", NULL, d);
    if (!rc)
        rc = mdl_cost_init(cm, *obj, gpu, mdl_catalog_find_model(cat, "llama-3.1-8b"),
                           "cluster.cost_model", base, d);
    return rc;
}

static void test_lookups(const mdl_cost *cm)
{
    const mdl_table *t = cm->table;
    bool clamped = false;
    is_near(mdl__table_layer_s(t, "qkv_proj", 512, &clamped),
            csv_layer("dense.csv", "qkv_proj", 512) * 1e-6, 0,
            "a measured point is the CSV value exactly");
    is_near(mdl__table_layer_s(t, "lm_head", 1, &clamped),
            csv_layer("per_sequence.csv", "lm_head", 1) * 1e-6, 0, "per-sequence too");
    ok(!clamped, "measured points are in range");

    double y16 = csv_layer("dense.csv", "gate_up_proj", 16);
    double y20 = csv_layer("dense.csv", "gate_up_proj", 20);
    is_near(mdl__table_layer_s(t, "gate_up_proj", 17, &clamped), (y16 + (y20 - y16) / 4) * 1e-6,
            1e-18, "between 16 and 20 tokens: linear interpolation");

    double top = csv_layer("dense.csv", "qkv_proj", 2048);
    is_near(mdl__table_layer_s(t, "qkv_proj", 4096, &clamped), top * 1e-6, 0,
            "beyond the last measured count: the last value");
    ok(clamped, "and the lookup says it was out of range");
    ok(mdl__table_layer_s(t, "qk_norm", 1, &clamped) < 0, "an op the tables lack is refused");
}

static void test_attention(const mdl_cost *cm)
{
    const mdl_table *t = cm->table;
    bool clamped = false;
    static const int pts[][4] = {{512, 0, 4, 1024}, {0, 0, 1, 1024}, {512, 0, 0, 0},
                                 {24, 768, 8, 1152}, {2048, 16384, 128, 16384}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        const int *p = pts[i];
        is_near(mdl__table_attention_point_s(t, p[0], p[1], p[2], p[3], &clamped),
                csv_attn(p[0], p[1], p[2], p[3]) * 1e-6, 0,
                "attention at measured (%d, %d, %d, %d) is its row", p[0], p[1], p[2], p[3]);
    }
    ok(!clamped, "all of them in range");

    is_near(mdl__table_attention_point_s(t, 0, 0, 1, 1000, &clamped),
            csv_attn_kd(0, 0, 1, 1000) * 1e-6, 1e-18, "decode at context 1000: between rows");
    /* Two axes at once: n_decode 3 between 2 and 4, kv_decode 1000. */
    double two = csv_attn_kd(512, 0, 2, 1000), four = csv_attn_kd(512, 0, 4, 1000);
    is_near(mdl__table_attention_point_s(t, 512, 0, 3, 1000, &clamped), (two + four) / 2 * 1e-6,
            1e-18, "bilinear in n_decode and kv_decode");
    ok(!clamped, "inside the grid is in range");

    /* Chunks below the smallest measured one are not blended with no
     * prefill at all. */
    is_near(mdl__table_attention_point_s(t, 5, 0, 0, 0, &clamped), csv_attn(16, 0, 0, 0) * 1e-6, 0,
            "a 5-token chunk costs the 16-token one");
    ok(clamped, "and counts as out of range");

    /* 200 decodes beside a chunk: the table measures mixed batches only up
     * to 128 decodes; the 72 more cost what they add to pure decode. */
    clamped = false;
    double d128 = csv_attn(0, 0, 128, 1024), d256 = csv_attn(0, 0, 256, 1024);
    double want = csv_attn(512, 0, 128, 1024) + (d128 + (d256 - d128) * 72 / 128) - d128;
    is_near(mdl__table_attention_point_s(t, 512, 0, 200, 1024, &clamped), want * 1e-6, 1e-15,
            "decodes beyond the mixed grid add their pure-decode increment");
    ok(clamped, "and count as out of range");
}

static void test_iterations(const mdl_cost *cm)
{
    mdl_step s;
    mdl_batch dec = {.n_decode = 1, .decode_context = 1000};
    mdl_cost_step(cm, &dec, &s);
    double want = (csv_rest(1, 1) + 32 * csv_attn_kd(0, 0, 1, 1000)) * 1e-6;
    is_near(s.time_s, want, 1e-15, "decode of 1 sequence at context 1000: the sum of its ops");
    is_int(s.out_of_range, 0, "in range");
    tap_diag("decode, batch 1, context 1000: %.2f ms (measured vLLM TPOT minimum 19.2 ms)",
             s.time_s * 1e3);
    ok(s.time_s > 0.005, "plausible: between 5 and 30 ms");
    ok(s.time_s < 0.030, "under 30 ms (%.2f ms)", s.time_s * 1e3);

    mdl_chunk one = {512, 0};
    mdl_batch pre = {.n_prefill = 1, .prefill_tokens = 512, .prefill_sq = 512.0 * 512,
                     .prefill_pairs = 512.0 * 513 / 2, .chunks = &one};
    mdl_cost_step(cm, &pre, &s);
    want = (csv_rest(512, 1) + 32 * csv_attn(512, 0, 0, 0)) * 1e-6;
    is_near(s.time_s, want, 1e-15, "prefill of 512 tokens: the sum of its ops");
    tap_diag("prefill of 512 tokens: %.2f ms", s.time_s * 1e3);

    /* The largest chunk shares its kernel with the decodes; the others are
     * looked up alone. */
    bool c = false;
    mdl_chunk two[2] = {{300, 0}, {512, 1024}};
    mdl_batch mix = {.n_prefill = 2, .prefill_tokens = 812, .prefill_sq = 300.0 * 300 + 512.0 * 512,
                     .prefill_pairs = 300.0 * 301 / 2 + 512 * (1024 + 513.0 / 2), .chunks = two,
                     .n_decode = 2, .decode_context = 4096};
    mdl_cost_step(cm, &mix, &s);
    want = mdl__table_rest_s(cm->table, 814, 4, &c) +
           32 * (mdl__table_attention_point_s(cm->table, 512, 1024, 2, 2048, &c) +
                 mdl__table_attention_point_s(cm->table, 300, 0, 0, 0, &c));
    is_near(s.time_s, want, 1e-15, "two chunks and two decodes");
    is_near(s.prefill_s + s.decode_s, s.time_s, 1e-15, "prefill and decode shares add up");
    ok(s.prefill_s > s.decode_s, "812 prompt tokens outweigh 2 decodes");

    mdl_chunk big = {3000, 0};
    mdl_batch over = {.n_prefill = 1, .prefill_tokens = 3000, .prefill_sq = 9e6,
                      .prefill_pairs = 3000.0 * 3001 / 2, .chunks = &big};
    mdl_cost_step(cm, &over, &s);
    is_int(s.out_of_range, 1, "a 3000-token prefill is beyond the 2048 measured: counted once");
}

/* k decode steps one by one against mdl_cost_decode_run. */
static void check_run(const mdl_cost *cm, int32_t n, int64_t ctx0, int64_t k, const char *what)
{
    mdl_step one, sum = {0}, run;
    for (int64_t j = 0; j < k; j++) {
        mdl_cost_step(cm, &(mdl_batch){.n_decode = n, .decode_context = ctx0 + n * j}, &one);
        sum.time_s += one.time_s;
        sum.flops += one.flops;
        sum.out_of_range += one.out_of_range;
    }
    mdl_cost_decode_run(cm, n, ctx0, k, &run);
    is_near(run.time_s / sum.time_s, 1, 1e-12, "%s: run of %lld steps = their sum", what,
            (long long)k);
    is_near(run.flops / sum.flops, 1, 1e-12, "%s: FLOPs", what);
    is_int(run.out_of_range, sum.out_of_range, "%s: out-of-range iterations", what);
}

static void test_runs(const mdl_cost *cm)
{
    check_run(cm, 4, 4 * 8000, 300, "4 sequences");
    check_run(cm, 2, 2 * 16300, 200, "2 sequences past the measured contexts");
    mdl_step run;
    mdl_cost_decode_run(cm, 2, 2 * 16300, 200, &run);
    is_int(run.out_of_range, 200 - 85, "contexts over 16384 counted, iteration by iteration");
    for (int b = 8; b <= 128; b *= 4) {
        mdl_step s;
        mdl_cost_step(cm, &(mdl_batch){.n_decode = b, .decode_context = 1000 * b}, &s);
        tap_diag("decode, batch %d, context 1000: %.2f ms", b, s.time_s * 1e3);
    }
}

static void test_floor(void)
{
    mdl_gpu slow = rtx_pro_6000();
    slow.mem_bw = 100e9; /* 16 GB of weights take 160 ms at 100 GB/s */
    util_diag d;
    util_diag_init(&d);
    cJSON *o;
    mdl_cost cm;
    char *json = util_xasprintf("{\"kind\": \"table\", \"dir\": \"%s\"}", dir);
    is_int(table_model(json, &slow, NULL, &cm, &o, &d), 0, "loads with a slow GPU");
    mdl_step s;
    mdl_cost_step(&cm, &(mdl_batch){.n_decode = 1, .decode_context = 1000}, &s);
    is_near(s.time_s, s.bytes / 100e9, 1e-15, "the table is floored at the datasheet");
    mdl_cost_fini(&cm);
    cJSON_Delete(o);
    free(json);
    util_diag_fini(&d);
}

static void write_file(const char *folder, const char *name, const char *text)
{
    char *path = util_xasprintf("%s/%s", folder, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(path);
}

static void remove_file(const char *folder, const char *name)
{
    char *path = util_xasprintf("%s/%s", folder, name);
    remove(path);
    free(path);
}

static const char good_dense[] =
    "layer,tokens,time_us\n"
    "embedding,1,1\nlayernorm,1,1\nqkv_proj,1,1\nrotary_emb,1,1\no_proj,1,1\n"
    "gate_up_proj,1,1\nact_fn,1,1\ndown_proj,1,1\nfinal_layernorm,1,1\n";

/* Broken files, in a temporary folder given as a path relative to it. */
static void test_errors(void)
{
    char tmp[] = "/tmp/servesim-table-XXXXXX";
    ok(mkdtemp(tmp) != NULL, "a temporary folder");
    write_file(tmp, "dense.csv",
               "layer,tokens,time_us\r\n"
               "embedding,1,2.5\r\n"
               "qkv_proj,abc,1.0\r\n"
               "qk_norm,1,1.0\r\n"
               "layernorm,1.5,1.0\r\n");
    write_file(tmp, "per_sequence.csv", "layer,sequences,time_us\nlm_head,1,700\nsampler,1,20\n");
    write_file(tmp, "attention.csv",
               "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
               "0,0,1,16,8.3\n"
               "0,0,1,32\n"
               "0,0,1,16,8.4\n");
    util_diag d;
    util_diag_init(&d);
    cJSON *o;
    mdl_cost cm;
    char *base = util_dirname(tmp), *name = util_xasprintf("{\"kind\": \"table\", \"dir\": \"%s\"}",
                                                           strrchr(tmp, '/') + 1);
    mdl_gpu gpu = rtx_pro_6000();
    is_int(table_model(name, &gpu, base, &cm, &o, &d), UTIL_EINPUT, "broken tables are refused");
    char *all = util_diag_join(&d);
    char *want = util_xasprintf("%s/dense.csv:3: tokens: expected a number >= 0, got 'abc'", tmp);
    has_str(all, want, "a bad number: FILE:LINE, the column and the text");
    free(want);
    want = util_xasprintf("%s/dense.csv:4: unknown layer 'qk_norm'", tmp);
    has_str(all, want, "an unknown layer");
    free(want);
    want = util_xasprintf("%s/dense.csv:5: tokens: expected a whole number, got '1.5'", tmp);
    has_str(all, want, "a fractional count");
    free(want);
    want = util_xasprintf("%s/attention.csv:3: expected 5 fields", tmp);
    has_str(all, want, "a short attention row");
    free(want);
    free(all);
    mdl_cost_fini(&cm);
    cJSON_Delete(o);

    /* A good dense.csv and a duplicated attention point; then no file. */
    util_diag_clear(&d);
    write_file(tmp, "dense.csv", good_dense);
    write_file(tmp, "attention.csv",
               "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
               "0,0,1,16,8.3\n"
               "0,0,1,16,8.4\n");
    table_model(name, &gpu, base, &cm, &o, &d);
    want = util_xasprintf("%s/attention.csv:3: the same point was measured on line 2", tmp);
    has_str(d.count ? d.msgs[0] : "", want, "a point measured twice");
    free(want);
    mdl_cost_fini(&cm);
    cJSON_Delete(o);

    util_diag_clear(&d);
    remove_file(tmp, "attention.csv");
    table_model(name, &gpu, base, &cm, &o, &d);
    want = util_xasprintf("cluster.cost_model.dir: %s/attention.csv: cannot open", tmp);
    has_str(d.count ? d.msgs[0] : "", want, "a missing file names the key and the file");
    free(want);
    mdl_cost_fini(&cm);
    cJSON_Delete(o);

    remove_file(tmp, "dense.csv");
    remove_file(tmp, "per_sequence.csv");
    rmdir(tmp);
    free(base);
    free(name);
    util_diag_fini(&d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("not ok 1 - usage: test_table PROFILE_DIR (the folder of dense.csv)\n1..1\n");
        return 1;
    }
    dir = argv[1];
    util_diag d;
    util_diag_init(&d);
    if (mdl_catalog_load_default(&cat, &d)) {
        util_diag_print(&d, stdout, "# catalog");
        return 1;
    }
    mdl_gpu gpu = rtx_pro_6000();
    cJSON *o;
    mdl_cost cm;
    char *json = util_xasprintf("{\"kind\": \"table\", \"dir\": \"%s\"}", dir);
    int rc = table_model(json, &gpu, NULL, &cm, &o, &d);
    bool loaded = rc == 0;
    util_diag_print(&d, stdout, "# load");
    is_int(rc, 0, "the RTX PRO 6000 Llama-3.1-8B tp1 tables load");
    if (loaded) {
        is_near(util_json_number(o, "layers", 0), 32, 0, "layers default to the model's, stored");
        test_lookups(&cm);
        test_attention(&cm);
        test_iterations(&cm);
        test_runs(&cm);
        test_floor();
    }
    test_errors();
    mdl_cost_fini(&cm);
    cJSON_Delete(o);
    free(json);
    util_diag_fini(&d);
    mdl_catalog_destroy(cat);
    return tap_done();
}
