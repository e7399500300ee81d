#!/bin/sh
# LoRA slowdown against vLLM PR #11267 (docs/validation.md, "LoRA
# adapters").  Usage, from the repository root:
#
#   examples/validation/lora/run.sh [SERVESIM]   # default build/cli/servesim
#
# benchmark_throughput.py, Llama-2-7B on one A100, 1000 ShareGPT prompts at
# once, V0 engine (vLLM main of mid-December 2024): 2693.62 output tok/s
# without LoRA, 1787.78 with one rank-8 adapter (--max-loras 1
# --max-lora-rank 8), every request for it.  servesim runs the same with
# the vllm-v0 preset and the PR's mean lengths (246 prompt, 235 output
# tokens), once with the LoRA kernels' default launches (vLLM v0.11's 8 a
# layer) and once with V0's decode count then (14: bgmv_shrink and
# bgmv_expand_slice for each slice of qkv, gate_up, o and down), and also
# on servesim's own ShareGPT sample.  Nothing here is fitted.
set -eu

bin=${1:-build/cli/servesim}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

lora='cluster.lora={"max_loras": 1, "max_lora_rank": 8, "adapters": [{"name": "sql", "rank": 8}]}'
cls='workload.classes=[{"name": "sql", "weight": 1, "adapter": "sql"}]'

tput() { # [args...]  ->  output tokens/s
    rm -f "$tmp/r.db"
    "$bin" run "$dir/pr11267.json" -o "$tmp/r.db" --quiet --csv "$@" |
        awk -F, '$1 == "throughput.output_tokens_per_s" { printf "%.1f", $2 }'
}
slow() { awk -v b="$1" -v l="$2" 'BEGIN { printf "%.1f%%", 100 * (1 - l / b) }'; }

printf '%-38s %10s %10s %9s\n' "" "base" "rank 8" slowdown
printf '%-38s %10s %10s %9s\n' "published (vLLM PR #11267)" 2693.62 1787.78 "$(slow 2693.62 1787.78)"
for data in pr sharegpt; do
    if [ "$data" = pr ]; then set --; else
        set -- --unset workload.prompt_tokens --unset workload.output_tokens --set workload.dataset=sharegpt
    fi
    b=$(tput "$@")
    for k in 8 14; do
        l=$(tput "$@" --set "$lora" --set "$cls" --set cluster.lora.kernel_launches=$k)
        printf '%-38s %10s %10s %9s\n' "servesim, $data lengths, $k launches" "$b" "$l" "$(slow "$b" "$l")"
    done
    l=$(tput "$@" --set "$lora" --set "$cls" --set cluster.lora.kernel_floor_s=0)
    printf '%-38s %10s %10s %9s\n' "servesim, $data lengths, roofline" "$b" "$l" "$(slow "$b" "$l")"
done
