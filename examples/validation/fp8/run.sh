#!/bin/sh
# Zero-shot fp8 comparison with published TensorRT-LLM and NIM numbers
# (docs/validation.md, "FP8, zero-shot, against published TensorRT-LLM and
# NIM numbers").  Usage, from the repository root:
#
#   examples/validation/fp8/run.sh [SERVESIM]      # default build/cli/servesim
#
# Prints one table: every row is a published figure, what servesim predicts
# for it with the catalog's defaults, and the error (predicted - measured) /
# measured.  Nothing here is fitted to the published numbers: the only
# per-row inputs are the benchmark's own settings (ISL, OSL, request count,
# and the max batch size and max num tokens that trtllm-bench derives itself,
# computed below with its heuristic).
set -eu

bin=${1:-build/cli/servesim}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# trtllm-bench's batch settings when none are given: calc_engine_setting and
# finetune_setting (tensorrt_llm/bench/build/tuning.py), then, since chunked
# prefill is off, max_num_tokens = max(that, max ISL + max_batch_size)
# (tensorrt_llm/bench/benchmark/utils/general.py; both read at commits later
# than the perf-overview page's 00f3768).  FP8 weights and an FP8 KV
# cache (1 byte each), kv_cache_free_gpu_mem_fraction 0.95, the GPU's memory
# in GiB from the catalog.
#   heur PARAMS LAYERS KV_HEADS HEAD_DIM TP MEM_GIB ISL OSL  ->  "BS TOKENS"
heur() {
    awk -v P="$1" -v L="$2" -v H="$3" -v D="$4" -v tp="$5" -v mem="$6" \
        -v isl="$7" -v osl="$8" 'function ceil(x) { return (x == int(x)) ? x : int(x) + 1 }
    BEGIN {
        gbt = 2 * L * (tp > H ? tp : H) * D / 1024 ^ 3
        cache = (mem * tp - P / 1024 ^ 3) * 0.95
        req = cache / (gbt * (isl + osl))
        bs = req < 4096 ? req : 4096
        tok = bs * (1 + isl / osl); if (tok > 32768) tok = 32768
        if (bs < 256) { b = 32 * ceil(bs / 32); if (b < 64) b = 64 }
        else if (bs < 1024) b = 128 * ceil(bs / 128)
        else b = 256 * ceil(bs / 256)
        if (tok < 4096) { t = 256 * ceil(tok / 256); if (t < 2048) t = 2048 }
        else if (tok < 8192) t = 512 * ceil(tok / 512)
        else t = 1024 * ceil(tok / 1024)
        if (t < isl + b) t = isl + b
        printf "%d %d\n", b, t
    }'
}

# trtllm-bench's request count for each ISL/OSL (perf-overview.md).
nreq() {
    case "$1/$2" in
    128/128) echo 30000 ;; 128/2048) echo 3000 ;; 128/4096) echo 1500 ;;
    500/2000) echo 3000 ;; 1000/1000) echo 3000 ;; 1000/2000) echo 1500 ;;
    2048/128) echo 3000 ;; 2048/2048) echo 1500 ;; 5000/500) echo 1500 ;;
    20000/2000) echo 1000 ;; *) echo 3000 ;;
    esac
}

# metric NAME < csv  ->  value
metric() { awk -F, -v k="$1" '$1 == k { print $2 }'; }

pct() { awk -v p="$1" -v m="$2" 'BEGIN { printf "%+.1f%%", 100 * (p - m) / m }'; }

# One trtllm-bench row: setup, model figures for the heuristic, ISL, OSL,
# measured total output tok/s.
#
# TensorRT-LLM's capacity scheduler (GUARANTEED_NO_EVICT, trtllm-bench's
# setting) admits a request only if the KV cache can hold its prompt and its
# whole output, and never preempts.  servesim has no such scheduler
# (docs/engines.md); with every request ISL + OSL long, the same rule is a cap
# on the batch: as many requests as the cache has blocks for ISL + OSL
# tokens.  A probe run of one request reads the KV capacity servesim computes
# for these settings.  The last column runs trtllm-bench's max_batch_size
# uncapped: servesim then admits on the prompt's blocks and preempts ("fault":
# the run stopped on the defect described at the end of the docs section).
run1() { # scenario-setup engine requests isl osl bs tokens  ->  csv on stdout
    rm -f "$tmp/run.db"
    "$bin" run "$dir/trtllm-$1.json" -o "$tmp/run.db" --quiet --csv \
        --set cluster.engine="$2" --set stop.requests="$3" \
        --set workload.prompt_tokens.value="$4" --set workload.output_tokens.value="$5" \
        --set cluster.scheduler.max_batch="$6" --set cluster.scheduler.max_batched_tokens="$7"
}
trt() {
    setup=$1 P=$2 L=$3 H=$4 D=$5 tp=$6 mem=$7 isl=$8 osl=$9 meas=${10}
    # shellcheck disable=SC2046 # the two words are meant to split
    set -- $(heur "$P" "$L" "$H" "$D" "$tp" "$mem" "$isl" "$osl")
    bs=$1 tok=$2 n=$(nreq "$isl" "$osl")
    kv=$(run1 "$setup" vllm-v1 1 "$isl" "$osl" "$bs" "$tok" | metric utilisation.kv_capacity_tokens)
    cap=$(awk -v kv="$kv" -v s=$((isl + osl)) -v bs="$bs" 'BEGIN {
        c = int(int(kv / 16) / int((s + 15) / 16)); print (c < bs ? c : bs) }')
    run1 "$setup" vllm-v1 "$n" "$isl" "$osl" "$cap" "$tok" >"$tmp/v1.csv"
    run1 "$setup" ideal "$n" "$isl" "$osl" "$cap" "$tok" >"$tmp/ideal.csv"
    p1=$(metric throughput.output_tokens_per_s <"$tmp/v1.csv")
    p0=$(metric throughput.output_tokens_per_s <"$tmp/ideal.csv")
    if run1 "$setup" vllm-v1 "$n" "$isl" "$osl" "$bs" "$tok" >"$tmp/unc.csv" 2>"$tmp/unc.err" &&
        [ -s "$tmp/unc.csv" ]; then
        pu=$(metric throughput.output_tokens_per_s <"$tmp/unc.csv")
        eu=$(pct "$pu" "$meas")
        pu=$(printf '%.0f' "$pu")
    else
        pu=fault eu=-   # servesim stopped with an engine fault: docs/validation.md
    fi
    printf '%-24s %-10s %5d %6d %6d %6d %9.0f %9.0f %8s %9.0f %8s %9s %8s\n' \
        "$setup" "$isl/$osl" "$n" "$bs" "$tok" "$cap" "$meas" "$p1" "$(pct "$p1" "$meas")" \
        "$p0" "$(pct "$p0" "$meas")" "$pu" "$eu"
}

echo "TensorRT-LLM trtllm-bench throughput, total output tok/s (perf-overview.md at 00f3768)"
printf '%-24s %-10s %5s %6s %6s %6s %9s %9s %8s %9s %8s %9s %8s\n' setup isl/osl reqs \
    max_bs max_nt no_evict measured vllm-v1 error ideal error uncapped error
rows() { # setup P L H D tp mem, then ISL OSL MEASURED triples on stdin
    while read -r isl osl meas; do
        [ -n "$isl" ] && trt "$@" "$isl" "$osl" "$meas"
    done
}
rows llama-3.1-8b-h100 8.03e9 32 8 128 1 80 <<'T'
128 128 28312
128 2048 22714
128 4096 14325
500 2000 17660
1000 1000 15220
1000 2000 13899
2048 128 3450
2048 2048 9305
5000 500 3459
20000 2000 1351
T
rows llama-3.1-8b-h200 8.03e9 32 8 128 1 141 <<'T'
128 128 27911
128 2048 26221
128 4096 18027
500 2000 20770
1000 1000 17744
1000 2000 16828
2048 128 3538
2048 2048 12194
5000 500 3902
20000 2000 1804
T
rows llama-3.3-70b-h100-tp2 70.6e9 80 8 128 2 80 <<'T'
128 128 6378
128 2048 6651
128 4096 4199
500 2000 5222
1000 1000 4205
1000 2000 4146
2048 128 762
2048 2048 3082
5000 500 898
20000 2000 437
T
rows llama-3.3-70b-h200 70.6e9 80 8 128 1 141 <<'T'
128 128 3803
128 2048 4336
128 4096 2872
500 2000 3666
1000 1000 2909
1000 2000 2994
2048 128 442
2048 2048 2003
5000 500 566
20000 2000 283
T
rows llama-3.1-405b-h100-tp8 405.9e9 126 8 128 8 80 <<'T'
128 128 3627
128 2048 4340
128 4096 3116
500 2000 3994
1000 1000 2919
1000 2000 2895
2048 128 453
2048 2048 2296
5000 500 610
20000 2000 345
T
rows llama-3.1-405b-h200-tp8 405.9e9 126 8 128 8 141 <<'T'
128 128 3814
128 2048 5348
128 4096 4741
500 2000 4724
1000 1000 3330
1000 2000 3722
2048 128 456
2048 2048 2948
5000 500 650
20000 2000 505
T

# NIM 1.8.0 rows: closed-loop concurrency c, streaming; TTFT and ITL in ms
# (GenAI-Perf's ITL excludes the first token: servesim's tpot), output tok/s.
# The first 60 s are warm-up: the c clients' simultaneous start is left out.
echo
echo "NIM 1.8.0, Llama-3.3-70B FP8, 2x H100 TP2, concurrency sweep (vllm-v1 preset as is)"
printf '%-10s %4s  %9s %9s %8s  %8s %8s %8s  %8s %8s %8s\n' isl/osl c \
    TTFT_ms pred error ITL_ms pred error tok/s pred error
while read -r isl osl c ttft itl tps; do
    [ -n "$isl" ] || continue
    n=$((c * 12)); [ "$n" -lt 100 ] && n=100
    rm -f "$tmp/run.db"
    "$bin" run "$dir/nim-llama-3.3-70b-h100-tp2.json" -o "$tmp/run.db" --quiet --csv \
        --set workload.arrival.users="$c" --set stop.requests="$n" --set warmup_s=60 \
        --set workload.prompt_tokens.value="$isl" \
        --set workload.output_tokens.value="$osl" >"$tmp/nim.csv"
    pt=$(metric ttft_s.mean <"$tmp/nim.csv" | awk '{ printf "%.2f", $1 * 1000 }')
    pi=$(metric tpot_s.mean <"$tmp/nim.csv" | awk '{ printf "%.2f", $1 * 1000 }')
    pr=$(metric throughput.output_tokens_per_s <"$tmp/nim.csv")
    printf '%-10s %4d  %9.2f %9.2f %8s  %8.2f %8.2f %8s  %8.2f %8.2f %8s\n' "$isl/$osl" "$c" \
        "$ttft" "$pt" "$(pct "$pt" "$ttft")" "$itl" "$pi" "$(pct "$pi" "$itl")" \
        "$tps" "$pr" "$(pct "$pr" "$tps")"
done <<'T'
5000 500 1 406.77 18.58 51.67
5000 500 50 834.51 59.73 814.37
5000 500 100 7996 92.91 917.26
500 2000 1 47.77 18.91 52.85
T
