#!/bin/sh
# LoRA slowdown against vLLM PR #11267 (docs/validation.md, "LoRA
# adapters").  Usage, from the repository root:
#
#   examples/validation/lora/run.sh [SERVESIM]   # default build/cli/servesim
#
# benchmark_throughput.py, Llama-2-7B on one A100, 1000 ShareGPT prompts at
# once, vLLM's V0 engine of December 2024: 2693.62 output tok/s without
# LoRA, 1787.78 with one rank-8 adapter (--max-loras 1 --max-lora-rank 8),
# every request for it.  pr11267.json runs it with the vllm-v0 preset and
# servesim's ShareGPT sample, the LoRA kernels' launches counted as V0's
# decode path launched them (14 a layer) and V0's eager prefill step with
# LoRA 80 ms slower (vLLM issue #11436); the base run drops cluster.lora.
# Each row after the first changes one thing.  Nothing here is fitted to
# the PR's figures.
set -eu

bin=${1:-build/cli/servesim}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tput() { # [args...]  ->  output tokens/s
    rm -f "$tmp/r.db"
    "$bin" run "$dir/pr11267.json" -o "$tmp/r.db" --quiet --csv "$@" |
        awk -F, '$1 == "throughput.output_tokens_per_s" { printf "%.1f", $2 }'
}
slow() { awk -v b="$1" -v l="$2" 'BEGIN { printf "%.1f%%", 100 * (1 - l / b) }'; }
row() { # LABEL SHARED LORA: the base run with SHARED, the adapter's with SHARED and LORA
    # shellcheck disable=SC2086
    b=$(tput --unset cluster.lora --unset workload.classes $2)
    # shellcheck disable=SC2086
    l=$(tput $2 $3)
    printf '%-46s %8s %8s %9s\n' "$1" "$b" "$l" "$(slow "$b" "$l")"
}

printf '%-46s %8s %8s %9s\n' "" base "rank 8" slowdown
printf '%-46s %8s %8s %9s\n' "published (vLLM PR #11267)" 2693.62 1787.78 "$(slow 2693.62 1787.78)"
row "servesim, pr11267.json" "" ""
row "  every prompt 246 tokens, every reply 235" \
    "--unset workload.dataset --set workload.prompt_tokens=246 --set workload.output_tokens=235" ""
row "  no eager prefill step (prefill_step_s 0)" "" "--set cluster.lora.prefill_step_s=0"
row "  v0.11's 8 launches a layer" "" "--set cluster.lora.kernel_launches=8"
row "  roofline alone (no launches, no prefill step)" "" \
    "--set cluster.lora.kernel_floor_s=0 --set cluster.lora.prefill_step_s=0"
