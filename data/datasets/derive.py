#!/usr/bin/env python3
"""Derive servesim's built-in length datasets from the traces in data/.

Each output file holds one (prompt, output) token pair per source request,
in the source's order, as `input_tokens,output_tokens` -- nothing else of
the source (no times, no ids).  workloads/datasets.c embeds these files;
tests/test_workloads.c checks that every pair equals its source's.

Run from the repository root:  python3 data/datasets/derive.py
It prints each dataset's statistics, the figures data/datasets/README.md
quotes (percentiles by linear interpolation, as data/traces/README.md).
"""
import csv
import statistics
import sys

# name -> (source file, prompt column, output column)
SOURCES = {
    "sharegpt": ("data/validation/distserve-opt13b/workload_rate4_n400.csv",
                 "input_tokens", "output_tokens"),
    "arxiv-summarization": ("data/traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
                            "num_prefill_tokens", "num_decode_tokens"),
    "azure-code": ("data/traces/AzureLLMInferenceTrace_code.csv",
                   "ContextTokens", "GeneratedTokens"),
    "azure-conv": ("data/traces/AzureLLMInferenceTrace_conv.csv",
                   "ContextTokens", "GeneratedTokens"),
}


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def describe(xs):
    return "%.1f / %g / %g / %g / %d" % (statistics.fmean(xs), pct(xs, 50), pct(xs, 90),
                                         pct(xs, 99), max(xs))


def main():
    for name, (path, pcol, ocol) in SOURCES.items():
        with open(path, newline="") as f:
            pairs = [(int(r[pcol]), int(r[ocol])) for r in csv.DictReader(f)]
        with open("data/datasets/%s.csv" % name, "w", newline="") as f:
            f.write("input_tokens,output_tokens\n")
            for p, o in pairs:
                f.write("%d,%d\n" % (p, o))
        ins = [p for p, _ in pairs]
        outs = [o for _, o in pairs]
        tot = [p + o for p, o in pairs]
        print("%s: %d pairs; input mean/p50/p90/p99/max %s; output %s; min input %d, "
              "min output %d; max input+output %d"
              % (name, len(pairs), describe(ins), describe(outs), min(ins), min(outs), max(tot)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
