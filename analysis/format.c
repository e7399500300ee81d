/*
 * format.c: any JSON report object as CSV (one row per metric: its dotted
 * path and its value) or as Markdown tables (one per section), so the report
 * drops into a spreadsheet or a pull request as it is.  Both walk the same
 * JSON the `--json` contract prints, so the three forms never disagree.
 */
#include "an.h"

#include <stdlib.h>
#include <string.h>

/* A leaf's value as text, null as empty: for CSV (quote) numbers in full
 * and strings quoted where they must be, for Markdown six digits. */
static void print_value(const cJSON *v, bool quote, FILE *out)
{
    if (cJSON_IsNumber(v)) fprintf(out, quote ? "%.10g" : "%.6g", v->valuedouble);
    else if (cJSON_IsBool(v)) fputs(cJSON_IsTrue(v) ? "true" : "false", out);
    else if (cJSON_IsString(v) && quote && strpbrk(v->valuestring, ",\"\n")) {
        fputc('"', out);
        for (const char *c = v->valuestring; *c; c++) {
            if (*c == '"') fputc('"', out); /* RFC 4180: a quote is doubled */
            fputc(*c, out);
        }
        fputc('"', out);
    } else if (cJSON_IsString(v)) fputs(v->valuestring, out);
}

static char *child_path(const char *prefix, const cJSON *item, int index)
{
    if (item->string) return *prefix ? util_xasprintf("%s.%s", prefix, item->string)
                                     : util_xstrdup(item->string);
    return util_xasprintf("%s[%d]", prefix, index);
}

typedef void (*leaf_fn)(const char *path, const cJSON *v, void *arg);

static void walk(const cJSON *node, const char *path, leaf_fn fn, void *arg)
{
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node)) {
        fn(path, node, arg);
        return;
    }
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, node) {
        char *p = child_path(path, c, i++);
        walk(c, p, fn, arg);
        free(p);
    }
}

static void csv_leaf(const char *path, const cJSON *v, void *arg)
{
    FILE *out = arg;
    fprintf(out, "%s,", path);
    print_value(v, true, out);
    fputc('\n', out);
}

void an_json_print_csv(const cJSON *report, FILE *out)
{
    fprintf(out, "metric,value\n");
    walk(report, "", csv_leaf, out);
}

/* ---- Markdown ---- */

static void md_leaf(const char *path, const cJSON *v, void *arg)
{
    FILE *out = arg;
    fprintf(out, "| %s | ", path);
    print_value(v, false, out);
    fprintf(out, " |\n");
}

/* An array of objects (replicas, targets) as one table, a row each. */
static void md_rows(const cJSON *arr, FILE *out)
{
    const cJSON *first = cJSON_GetArrayItem(arr, 0), *c, *row;
    fputc('|', out);
    cJSON_ArrayForEach(c, first) fprintf(out, " %s |", c->string);
    fputs("\n|", out);
    cJSON_ArrayForEach(c, first) fputs("---|", out);
    fputc('\n', out);
    cJSON_ArrayForEach(row, arr) {
        fputc('|', out);
        cJSON_ArrayForEach(c, first) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, c->string);
            fputc(' ', out);
            if (cJSON_IsObject(v) || cJSON_IsArray(v)) fputs("(see JSON)", out);
            else print_value(v, false, out);
            fputs(" |", out);
        }
        fputc('\n', out);
    }
}

/* A summary of one metric: {"mean", "p50", ...} and nothing nested. */
static bool is_stats(const cJSON *o)
{
    return cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "p50") &&
           !cJSON_IsObject(o->child) && !cJSON_IsArray(o->child);
}

/* A summary's key as a reader's column heading: the JSON key p999 (a
 * contract, as is the CSV metric name) is P99.9, as the text report heads it. */
static const char *column_name(const char *key)
{
    return strcmp(key, "p999") ? key : "p99.9";
}

/* The top-level metric summaries (ttft_s, tpot_s, ...) as one table, a row
 * each, as the text report prints them. */
static void md_latency(const cJSON *report, FILE *out)
{
    const cJSON *first = NULL, *section, *c;
    cJSON_ArrayForEach(section, report) if (!first && is_stats(section)) first = section;
    if (!first) return;
    fputs("## latency\n\n| metric |", out);
    cJSON_ArrayForEach(c, first) fprintf(out, " %s |", column_name(c->string));
    fputs("\n|---|", out);
    cJSON_ArrayForEach(c, first) fputs("---|", out);
    fputc('\n', out);
    cJSON_ArrayForEach(section, report) {
        if (!is_stats(section)) continue;
        fprintf(out, "| %s |", section->string);
        cJSON_ArrayForEach(c, first) {
            fputc(' ', out);
            print_value(cJSON_GetObjectItemCaseSensitive(section, c->string), false, out);
            fputs(" |", out);
        }
        fputc('\n', out);
    }
    fputc('\n', out);
}

void an_json_print_markdown(const cJSON *report, FILE *out)
{
    md_latency(report, out);
    const cJSON *section;
    cJSON_ArrayForEach(section, report) {
        if (is_stats(section)) continue;
        fprintf(out, "## %s\n\n", section->string ? section->string : "report");
        const cJSON *first = cJSON_GetArrayItem(section, 0);
        if (cJSON_IsArray(section) && cJSON_IsObject(first)) {
            md_rows(section, out);
        } else {
            fprintf(out, "| metric | value |\n|---|---|\n");
            walk(section, section->string ? section->string : "", md_leaf, out);
        }
        fputc('\n', out);
    }
}
