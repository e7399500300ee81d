# bench/lib.sh: what the benchmark scripts share (sourced, not run).

wall() { # seconds a command takes, its output dropped
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
