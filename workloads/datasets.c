/*
 * datasets.c: the built-in length datasets -- the (prompt, output) token
 * pairs of public benchmark workloads, so that a scenario can name one
 * (`"dataset": "sharegpt"`) as `vllm bench serve --dataset-name` does.
 *
 * Each dataset is a file data/datasets/NAME.csv (input_tokens,output_tokens),
 * derived by data/datasets/derive.py from a source file in data/ and built
 * into the program by models/embed.c, so an installed servesim needs no data
 * folder.  The pairs are kept, not two marginal tables: a source's long
 * prompts and its short replies (summaries, code completions) go together,
 * and a joint draw keeps that.  The embedded text is the program's own, so
 * a malformed line is a broken invariant (assert), not an input error;
 * tests/test_workloads.c checks every pair against its source.
 */
#include "wl.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

extern const char wl__ds_sharegpt[], wl__ds_arxiv_summarization[], wl__ds_azure_code[],
    wl__ds_azure_conv[];

const char *const wl_dataset_names[] = {"sharegpt", "arxiv-summarization", "azure-code",
                                        "azure-conv", NULL};

const char *const wl_dataset_sources[] = {
    "DistServe's ShareGPT sample for OPT-13B (OPT's tokenizer), Apache-2.0",
    "Vidur's arXiv summarisation trace (Llama-2's tokenizer), MIT",
    "Azure LLM inference trace 2023, code, CC-BY-4.0",
    "Azure LLM inference trace 2023, conversation, CC-BY-4.0",
};

/* In wl_dataset_names' order. */
static const char *const dataset_text[] = {wl__ds_sharegpt, wl__ds_arxiv_summarization,
                                           wl__ds_azure_code, wl__ds_azure_conv};

struct wl_dataset {
    int32_t *prompt, *output;
    int64_t n;
};

static int32_t read_count(const char **p, char end)
{
    char *stop;
    long v = strtol(*p, &stop, 10);
    assert(stop != *p && *stop == end && v >= 1 && v <= INT32_MAX);
    *p = stop + 1;
    return (int32_t)v;
}

static int64_t count_lines(const char *text)
{
    int64_t n = 0;
    for (const char *c = text; *c; c++) n += *c == '\n';
    return n;
}

wl_dataset *wl_dataset_create(const char *name)
{
    int k = 0;
    while (wl_dataset_names[k] && strcmp(wl_dataset_names[k], name)) k++;
    if (!wl_dataset_names[k]) return NULL;
    const char *p = strchr(dataset_text[k], '\n'); /* past the header */
    assert(p);
    p++;
    wl_dataset *ds = util_xcalloc(1, sizeof *ds);
    int64_t cap = count_lines(p);
    ds->prompt = util_xmalloc((size_t)cap * sizeof *ds->prompt);
    ds->output = util_xmalloc((size_t)cap * sizeof *ds->output);
    while (*p) {
        ds->prompt[ds->n] = read_count(&p, ',');
        ds->output[ds->n] = read_count(&p, '\n');
        ds->n++;
    }
    assert(ds->n == cap && ds->n > 0);
    return ds;
}

void wl_dataset_destroy(wl_dataset *ds)
{
    if (!ds) return;
    free(ds->prompt);
    free(ds->output);
    free(ds);
}

int64_t wl_dataset_size(const wl_dataset *ds)
{
    return ds->n;
}

void wl_dataset_pair(const wl_dataset *ds, int64_t i, int32_t *prompt, int32_t *output)
{
    assert(i >= 0 && i < ds->n);
    *prompt = ds->prompt[i];
    *output = ds->output[i];
}

void wl_dataset_draw(const wl_dataset *ds, gsl_rng *r, int32_t *prompt, int32_t *output)
{
    wl_dataset_pair(ds, (int64_t)gsl_rng_uniform_int(r, (unsigned long)ds->n), prompt, output);
}
