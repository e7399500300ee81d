#!/usr/bin/env bash
# bench/run.sh: builds servesim in release mode in build-bench/ and runs the
# engine benchmark: the 1M-request comparison (simulate + record, simulate
# only, bare SQLite insert) and the 3M-request peak-RSS measurement.
# Run from anywhere; extra arguments go to the 1M comparison (e.g. --dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -f build-bench/build.ninja ]]; then
    meson setup build-bench --buildtype=release -Dbench=true
fi
ninja -C build-bench bench/bench_engine

echo
build-bench/bench/bench_engine bench/million.json "$@"
echo
build-bench/bench/bench_engine bench/million.json --rss-only 3000000 "$@"
