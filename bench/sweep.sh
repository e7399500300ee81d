#!/usr/bin/env bash
# bench/sweep.sh: how a 32-point sweep scales with worker processes.  Runs
# the same sweep of examples/quickstart.json (arrival rate 1..32 req/s) with
# -j 1 and -j N (default: the number of cores), at two point sizes, checks
# that both give the same points, and prints the wall times and their ratio.
# Uses the release build of bench/run.sh (build-bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-$(nproc)}
if [[ ! -f build-bench/build.ninja ]]; then
    meson setup build-bench --buildtype=release -Dbench=true
fi
ninja -C build-bench cli/servesim >/dev/null
servesim=build-bench/cli/servesim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=bench/lib.sh
source bench/lib.sh

printf '%-22s %10s %10s %8s  %s\n' "requests per point" "-j 1 (s)" "-j $jobs (s)" "ratio" "same points"
for n in 2000 20000; do
    args=(sweep examples/quickstart.json --vary workload.arrival.rate_per_s=1:32:1
          --set stop.requests=$n --quiet --json)
    t1=$(wall "$servesim" "${args[@]}" -j 1 -o "$tmp/one-$n.db")
    tn=$(wall "$servesim" "${args[@]}" -j "$jobs" -o "$tmp/many-$n.db")
    "$servesim" "${args[@]}" -j 1 -o "$tmp/one-$n.db" --resume > "$tmp/one.json"
    "$servesim" "${args[@]}" -j 1 -o "$tmp/many-$n.db" --resume > "$tmp/many.json"
    same=$(cmp -s "$tmp/one.json" "$tmp/many.json" && echo yes || echo NO)
    printf '%-22s %10.2f %10.2f %7.2fx  %s\n' "$n" "$t1" "$tn" "$(awk -v a="$t1" -v b="$tn" 'BEGIN { print a / b }')" "$same"
done
