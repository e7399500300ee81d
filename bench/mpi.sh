#!/usr/bin/env bash
# bench/mpi.sh: issue 17's measurements (bench/README.md, docs/planning.md).
#   1. A 128-point sweep (32 rates x 4 seeds) of 20,000 requests a point
#      under `mpirun -np 3 --oversubscribe` (one writer, two simulating
#      ranks) against `-j 2` on the same grid: the same engine, another
#      transport; the goal is within 10%.  MPI's own start (MPI_Init, the
#      launcher) is timed apart, on a one-point sweep.
#   2. The serial share: rows a second the one writer merges (bench_merge),
#      and a point's cost alone, the inputs of docs/planning.md's model.
# Uses the release build of bench/run.sh (build-bench/), which finds MPI when
# openmpi-bin and libopenmpi-dev are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build-bench/build.ninja ]]; then
    meson setup build-bench --buildtype=release -Dbench=true
fi
ninja -C build-bench cli/servesim bench/bench_merge >/dev/null
servesim=build-bench/cli/servesim
"$servesim" --version | grep -q MPI || { echo "bench/mpi.sh: servesim was built without MPI"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(mpirun -np 3 --oversubscribe --bind-to none)
[[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)

# shellcheck source=bench/lib.sh
source bench/lib.sh

n=${REQUESTS:-20000}
args=(sweep examples/quickstart.json --vary workload.arrival.rate_per_s=1:32:1 --seeds 4
      --set stop.requests=$n --quiet)
tj=$(wall "$servesim" "${args[@]}" -j 2 -o "$tmp/j2.db")
tm=$(wall "${mpirun[@]}" "$servesim" "${args[@]}" -o "$tmp/mpi.db")
t1=$(wall "$servesim" "${args[@]}" -j 1 -o "$tmp/j1.db")
ratio=$(awk -v a="$tm" -v b="$tj" 'BEGIN { print a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.10) ? "PASS" : "MISS" }')
start=$(wall "${mpirun[@]}" "$servesim" sweep examples/quickstart.json --quiet -o "$tmp/start.db" \
    --vary workload.arrival.rate_per_s=1 --set stop.requests=100)
printf '128 points of %d requests: -j 1 %.2f s, -j 2 %.2f s, mpirun -np 3 %.2f s\n' "$n" "$t1" "$tj" "$tm"
printf 'mpirun -np 3 / -j 2 = %.3f (goal <= 1.10): %s\n' "$ratio" "$verdict"
printf "MPI's start (mpirun of a one-point sweep of 100 requests): %.2f s\n" "$start"
printf 'a point in the -j 1 sweep: %.1f ms (its simulation, summary and merge)\n' \
    "$(awk -v t="$t1" 'BEGIN { print 1e3 * t / 128 }')"
build-bench/bench/bench_merge "$servesim" examples/quickstart.json "$n" 20 "$tmp"
