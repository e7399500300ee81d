#!/usr/bin/env bash
# bench/run.sh: builds servesim in release mode in build-bench/ and measures
# issue 14's four targets, each as a ratio or a figure of one run on this
# machine (bench/README.md):
#   1. servesim run of bench/million.json (1M requests), end to end, within
#      1.5x of a bare SQLite insert of as many rows (journal and sync off);
#   2. servesim report of that database within 0.3x of the same insert;
#   3. peak RSS of servesim run of 10M requests, report included, under 100 MB,
#      and of a million chat-session turns with KV offload tiers under 200 MB
#      (bench/sessions-million.json, issue 29);
#   4. a sweep of 32 points of 2,000 requests at least 1.7x faster with -j 2
#      than with -j 1 (bench/sweep.sh);
#   5. a simulated week of the Azure conversation week's measured shape at the trace's
#      lengths and mean rate, an autoscaler keeping 8-64 replicas
#      (bench/week.json, issue 30), in under 60 s and 200 MB peak RSS.
# Run from anywhere; extra arguments go to bench_engine (e.g. --dir DIR).
# Takes about two minutes on 2 cores, most of it the 10M run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -f build-bench/build.ninja ]]; then
    meson setup build-bench --buildtype=release -Dbench=true
fi
ninja -C build-bench bench/bench_engine cli/servesim
servesim=build-bench/cli/servesim
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo
build-bench/bench/bench_engine bench/million.json --servesim "$servesim" "$@" | tee -a "$log"
echo
build-bench/bench/bench_engine bench/million.json --servesim "$servesim" --rss-only 10000000 "$@" |
    tee -a "$log"
echo
# issue 29: a million chat-session turns (100,000 sessions) with CPU and disk tiers
build-bench/bench/bench_engine bench/sessions-million.json --servesim "$servesim" \
    --rss-only 100000 --rss-target 200 "$@" | tee -a "$log"
echo
bench/sweep.sh 2 | tee -a "$log"
echo
# issue 30: a week; stop.requests above the week's ~3.3M, so the week's end stops it
week=$(mktemp)
trap 'rm -f "$log" "$week"' EXIT
build-bench/bench/bench_engine bench/week.json --servesim "$servesim" \
    --rss-only 100000000 --rss-target 200 "$@" | tee "$week"
cat "$week" >>"$log"

ratio=$(awk '$1 == "2000" { sub("x", "", $4); print $4 }' "$log")
echo
echo "summary:"
grep '^target:' "$log" | sed 's/^/  /'
awk '$1 == "servesim" && $2 == "run" { w = $4 } END { printf "  target: a simulated week (bench/week.json) in under 60 s: %s (%.1f s)\n", (w < 60 ? "PASS" : "MISS"), w }' "$week"
awk -v r="$ratio" 'BEGIN { printf "  target: sweep of 32 points of 2000 requests at least 1.7x faster with -j 2: %s (%.2fx)\n", (r >= 1.7 ? "PASS" : "MISS"), r }'
