#!/bin/sh
# The KV offload tier against published figures (docs/validation.md, "KV
# offload").  Usage, from the repository root:
#
#   examples/validation/kv-offload/run.sh [SERVESIM]   # default build/cli/servesim
#
# 1. vLLM PR #27743: one 10001-token prompt of Llama-3.2-1B, cold, again
#    (a GPU hit), and after the GPU cache lost it (a CPU hit).
# 2. The vLLM blog of 2025-12-29 on the offloading connector (Llama-3.1-8B,
#    one H100): a single request's TTFT cold and from the CPU tier, by
#    prompt length; the throughput of 10000 prompts of 512 tokens, all from
#    the tier against all computed.
# 3. llm-d's guides/tiered-prefix-cache/cpu (Qwen3-32B, 8 x TP2 H100, 45
#    users): a memory-bound and a compute-bound case with and without the
#    tier.
# 4. llm-d's gpt-oss-120B results (16 x TP1 H100): eight Poisson stages of
#    5 to 40 QPS, 60 s each, with and without the tier.  gptoss-stages.csv
#    holds the arrival times, drawn once by
#      awk 'BEGIN { srand(1); print "arrival_time_s,input_tokens,output_tokens"
#                   for (s = 1; s <= 8; s++) { t = 60 * (s - 1)
#                       while ((t += -log(1 - rand()) / (5 * s)) < 60 * s)
#                           printf "%.3f,16256,256\n", t } }'
#    (the scenario's shared_prefix gives the prompts).
# Every scenario takes the setup as published and the catalog's datasheet
# figures (the H100's PCIe 5.0 x16 link, 64 GB/s a direction); nothing is
# fitted to the published timings.  Needs python3 to read request rows.
set -eu

bin=${1:-build/cli/servesim}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

metric() { awk -F, -v k="$1" '$1 == k { print $2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# ttfts SCENARIO [args...]  ->  every request's TTFT in ms, in request order
ttfts() {
    f=$1
    shift
    rm -f "$tmp/t.db" "$tmp/t.json"
    "$bin" run "$f" -o "$tmp/t.db" --quiet "$@" >/dev/null
    "$bin" export "$tmp/t.db" --format vllm-bench -o "$tmp/t.json" >/dev/null
    python3 -c 'import json, sys
print(" ".join("%.2f" % (1e3 * t) for t in json.load(open(sys.argv[1]))["ttfts"]))' "$tmp/t.json"
}

# ---- 1. vLLM PR #27743 ----
# Rows: A cold, A again (GPU hit), B and C (they evict A), A (CPU hit).
set -- $(ttfts "$dir/pr27743.json")
echo "vLLM PR #27743: Llama-3.2-1B, one 10001-token prompt, 1 output token (ms)"
printf '%-10s %10s %10s %6s\n' "" published servesim ratio
printf '%-10s %10s %10s %6s\n' cold 145.48 "$1" "$(ratio "$1" 145.48)"
printf '%-10s %10s %10s %6s\n' "GPU hit" 9.03 "$2" "$(ratio "$2" 9.03)"
printf '%-10s %10s %10s %6s\n' "CPU hit" 43.14 "$5" "$(ratio "$5" 43.14)"
printf '%-10s %10s %10s %6s\n' "cold/CPU" "$(ratio 145.48 43.14)" "$(ratio "$1" "$5")" \
    "$(ratio "$(ratio "$1" "$5")" "$(ratio 145.48 43.14)")"
echo

# ---- 2a. the blog's figure 1: TTFT by prompt length ----
# trace S  ->  the same four-prompt sequence with S-token prompts, block ids of 16 tokens
trace() {
    awk -v s="$1" 'function ids(base,  i, out) {
            for (i = 1; i <= int(s / 16); i++) out = out (i > 1 ? " " : "") base + i
            return out }
        BEGIN { print "arrival_time_s,input_tokens,output_tokens,hash_ids"
                printf "0,%d,1,%s\n60,%d,1,%s\n", s, ids(0), s, ids(0)
                printf "120,%d,1,%s\n180,%d,1,%s\n", s, ids(1e6), s, ids(2e6)
                printf "240,%d,1,%s\n", s, ids(0) }' >"$tmp/trace.csv"
}
echo "vLLM blog 2025-12-29, figure 1: Llama-3.1-8B, one request, TTFT cold / from the CPU tier"
printf '%-8s %10s %10s %8s %10s\n' prompt "cold ms" "CPU ms" speedup published
for s in 512 1024 2048 4096 8192 16384 32768 65536 90000; do
    trace "$s"
    set -- $(ttfts "$dir/blog-ttft.json" --set "workload.arrival.path=\"$tmp/trace.csv\"" \
        --set "cluster.scheduler.kv_blocks=$((s / 16 + 8))")
    pub=-
    [ "$s" = 512 ] && pub=2
    printf '%-8s %10s %10s %8s %10s\n' "$s" "$1" "$5" "$(ratio "$1" "$5")" "$pub"
done
echo "(the blog gives x2 for 512 tokens and x22 for its longest prompt, whose length it does not print)"
echo

# ---- 2b. the blog's figure 2: throughput, all hits against none ----
tput() { # [args]  ->  prompt tokens/s of the second pass (the first warms the tier)
    rm -f "$tmp/b.db" "$tmp/b.json"
    "$bin" run "$dir/blog-throughput.json" -o "$tmp/b.db" --quiet "$@" >/dev/null
    "$bin" export "$tmp/b.db" --format vllm-bench -o "$tmp/b.json" >/dev/null
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); n = len(r["ttfts"]) // 2
end = [a + e for a, e in zip(r["start_times"], r["latencies"])]
print("%.0f" % (sum(r["input_lens"][n:]) / (max(end[n:]) - max(end[:n]))))' "$tmp/b.json"
}
hit=$(tput)
miss=$(tput --unset cluster.kv_offload)
echo "vLLM blog 2025-12-29, figure 2: 10000 prompts of 512 tokens at once, prompt tokens/s"
printf '%-22s %10s\n' "every prompt computed" "$miss" "every prompt from CPU" "$hit"
printf '%-22s %10s   (published: up to x9)\n' "gain" "x$(ratio "$hit" "$miss")"
echo

# ---- 3. llm-d's tiered prefix cache guide: Qwen3-32B ----
llmd() { # LABEL PUB_TTFT PUB_E2E PUB_TPUT [args]
    label=$1 pt=$2 pe=$3 pp=$4
    shift 4
    "$bin" run "$dir/llmd-qwen3-32b.json" -o "$tmp/l.db" --quiet --csv "$@" >"$tmp/l.csv"
    rm -f "$tmp/l.db"
    t=$(metric ttft_s.mean <"$tmp/l.csv")
    e=$(metric e2e_s.mean <"$tmp/l.csv")
    p=$(awk -F, '$1 == "throughput.input_tokens_per_s" || $1 == "throughput.output_tokens_per_s" { s += $2 }
        END { printf "%.0f", s }' "$tmp/l.csv")
    printf '%-28s %6s %6.2f  %6s %6.2f  %8s %8s\n' "$label" "$pt" "$t" "$pe" "$e" "$pp" "$p"
}
echo "llm-d tiered-prefix-cache/cpu: Qwen3-32B, 8 x (2 H100, TP2), 45 users (published / servesim)"
printf '%-28s %13s  %13s  %17s\n' "" "TTFT mean s" "E2E mean s" "total tok/s"
llmd "memory-bound, HBM only" 9.0 37.8 38534.8 --unset cluster.kv_offload
llmd "memory-bound, CPU tier" 6.7 31.0 46662.5
cb="--set workload.shared_prefix.system_prompt_len=8000"
# shellcheck disable=SC2086
llmd "compute-bound, HBM only" 0.12 18.4 23389.6 $cb --unset cluster.kv_offload
# shellcheck disable=SC2086
llmd "compute-bound, CPU tier" 0.13 18.6 23032.6 $cb
echo

# ---- 4. llm-d's gpt-oss-120B results ----
gptoss() { # [args]  ->  csv of the run
    "$bin" run "$dir/llmd-gpt-oss-120b.json" -o "$tmp/g.db" --quiet --csv "$@" >"$tmp/g.csv"
    rm -f "$tmp/g.db"
}
row() { # LABEL CSV_KEY SCALE PUB_WITHOUT PUB_WITH
    a=$(metric "$2" <"$tmp/hbm.csv")
    b=$(metric "$2" <"$tmp/cpu.csv")
    awk -v l="$1" -v a="$a" -v b="$b" -v k="$3" -v pa="$4" -v pb="$5" 'BEGIN {
        printf "%-22s %9s %9s  %9.2f %9.2f\n", l, pa, pb, k * a, k * b }'
}
gptoss --set cluster.kv_offload.cpu_gib=0
mv "$tmp/g.csv" "$tmp/hbm.csv"
gptoss
mv "$tmp/g.csv" "$tmp/cpu.csv"
echo "llm-d gpt-oss-120B: 16 x (1 H100), 5-40 QPS; without / with the tier (published, servesim)"
printf '%-22s %9s %9s  %9s %9s\n' "" published "" servesim ""
row "requests/s" throughput.requests_per_s 1 9.69 11.48
row "TTFT mean, s" ttft_s.mean 1 12.5 1.2
row "TTFT median, s" ttft_s.p50 1 7.6 0.5
row "TTFT p90, s" ttft_s.p90 1 33.8 4.5
row "E2E mean, s" e2e_s.mean 1 19.2 5.3
row "TPOT mean, ms" tpot_s.mean 1000 26.1 15.7
printf '%-22s %9s %9s  %9s %9.3f\n' "CPU tier hit rate" - 0.451 - \
    "$(metric utilisation.kv_offload.cpu.hit_rate <"$tmp/cpu.csv")"
