#!/usr/bin/env bash
# bench/heap/run.sh BUILD_DIR: what heap profiling costs a churny malloc+free workload
# (d9_bench_heap_churn), 1 and 2 threads: ns per pair (thread CPU time, best of RUNS runs) for
# glibc alone, under libdial9-preload.so with heap profiling off (the allocator not interposed) and
# on (with its heap library, libdial9-preload-heap.so, as `dial9 run -m` preloads it; default
# rate, 512 KiB),
# jemalloc without and with its sampling profiler (prof:true, lg_prof_sample:19 = 512 KiB) and
# gperftools' tcmalloc without and with sampling (TCMALLOC_SAMPLE_PARAMETER=524288), where
# installed; then instructions per pair counted by callgrind (the difference between two runs
# of different lengths, so start-up and exit cancel out), for glibc alone and the shim off and
# on, inside the workload's loop only. Prints numbers; nothing is pass/fail.
set -euo pipefail
build=${1:?usage: bench/heap/run.sh BUILD_DIR}
bench="$build/bench/heap/d9_bench_heap_churn"
shim="$build/libdial9-preload.so"
heap="$shim:$build/libdial9-preload-heap.so"
[ -x "$bench" ] && [ -f "$shim" ] && [ -f "$build/libdial9-preload-heap.so" ] ||
    { echo "run.sh: build d9_bench_heap_churn, dial9_preload and dial9_preload_heap first" >&2; exit 1; }
pairs=${PAIRS:-5000000}
runs=${RUNS:-5}
out=$(mktemp -d "${TMPDIR:-/tmp}/d9-heap-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
lib=/usr/lib/x86_64-linux-gnu
export DIAL9_TRACE_DIR="$out/traces"

# best THREADS ENV...: the lowest ns/pair of $runs runs with ENV set
best() {
    local threads=$1 i v b=
    shift
    for ((i = 0; i < runs; i++)); do
        v=$(env "$@" "$bench" "$threads" "$pairs" | awk '{ print $6 }')
        if [ -z "$b" ] || awk -v v="$v" -v b="$b" 'BEGIN { exit !(v < b) }'; then b=$v; fi
    done
    echo "$b"
}

printf '%-44s %10s %10s\n' "ns per malloc+free pair (thread CPU time)" "1 thread" "2 threads"
row() {
    local name=$1
    shift
    printf '%-44s %10s %10s\n' "$name" "$(best 1 "$@")" "$(best 2 "$@")"
}
row "glibc" D9_NONE=1
row "shim, heap profiling off" LD_PRELOAD="$shim"
row "shim, heap profiling on (512 KiB)" LD_PRELOAD="$heap" DIAL9_MEMORY_PROFILE_ENABLED=1
if [ -f "$lib/libjemalloc.so.2" ]; then
    row "jemalloc" LD_PRELOAD="$lib/libjemalloc.so.2"
    row "jemalloc, prof sampling (512 KiB)" LD_PRELOAD="$lib/libjemalloc.so.2" MALLOC_CONF=prof:true,lg_prof_sample:19
fi
if [ -f "$lib/libtcmalloc.so.4" ]; then
    row "tcmalloc" LD_PRELOAD="$lib/libtcmalloc.so.4" TCMALLOC_SAMPLE_PARAMETER=0
    row "tcmalloc, sampling (512 KiB)" LD_PRELOAD="$lib/libtcmalloc.so.4" TCMALLOC_SAMPLE_PARAMETER=524288
fi

command -v valgrind >/dev/null || { echo "(valgrind not installed: no instruction counts)"; exit 0; }
small=${SMALL_PAIRS:-200000}
large=${LARGE_PAIRS:-1200000}
# instructions inside the workload's loop (worker() and what it calls: malloc, free, the shim,
# the sampler; not the recorder's own threads) for N pairs on one thread
ir() {
    local n=$1
    shift
    env "$@" valgrind --tool=callgrind --toggle-collect=worker --callgrind-out-file="$out/cg.$n" "$bench" 1 "$n" >/dev/null 2>"$out/err.$n" || {
        cat "$out/err.$n" >&2
        exit 1
    }
    awk '/^summary:/ { print $2 }' "$out/cg.$n"
}
per_pair() {
    local a b
    a=$(ir "$small" "$@")
    b=$(ir "$large" "$@")
    awk -v a="$a" -v b="$b" -v n=$((large - small)) 'BEGIN { printf "%.1f", (b - a) / n }'
}
printf '\n%-44s %10s\n' "instructions per pair (callgrind, 1 thread)" "Ir/pair"
plain=$(per_pair D9_NONE=1)
off=$(per_pair LD_PRELOAD="$shim")
on=$(per_pair LD_PRELOAD="$heap" DIAL9_MEMORY_PROFILE_ENABLED=1)
printf '%-44s %10s\n' "glibc" "$plain" "shim, heap profiling off" "$off" "shim, heap profiling on (512 KiB)" "$on"
awk -v p="$plain" -v o="$off" -v n="$on" 'BEGIN { printf "%-44s %+10.1f\n%-44s %+10.1f\n", "added by the shim, off", o - p, "added by the shim, on", n - p }'
