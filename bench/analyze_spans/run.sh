#!/usr/bin/env bash
# bench/analyze_spans/run.sh BUILD_DIR: what spans add to `dial9 analyze` in their worst case
# (d9_bench_span_trace: every poll inside a span, a span every 7 events) against the same
# polls and wakes without span marks. Prints the traces' sizes, analyze's user CPU time (best of
# RUNS) on each, and, with valgrind, its instructions on each (callgrind, on a trace of
# CG_SPANS spans: instructions do not depend on the machine's load). Nothing is pass/fail.
set -euo pipefail
build=${1:?usage: bench/analyze_spans/run.sh BUILD_DIR}
gen="$build/bench/analyze_spans/d9_bench_span_trace"
dial9="$build/dial9"
[ -x "$gen" ] && [ -x "$dial9" ] || { echo "run.sh: build d9_bench_span_trace and dial9 first" >&2; exit 1; }
spans=${SPANS:-1000000}
cg_spans=${CG_SPANS:-100000}
runs=${RUNS:-3}
out=$(mktemp -d "${TMPDIR:-/tmp}/d9-span-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

record() { # DIR N [nospans]
    mkdir -p "$1"
    "$gen" "$@" >/dev/null
}
size_mb() { du -sm "$1" | awk '{ print $1 }'; }
source "$(dirname "${BASH_SOURCE[0]}")/best_user.sh"
instructions() { # DIR: instructions of one analysis, counted by callgrind
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$dial9" analyze "$1" >/dev/null 2>&1
    awk '/^summary:/ { print $2 }' "$out/cg.out"
}

record "$out/spans" "$spans"
record "$out/nospans" "$spans" nospans
s=$(size_mb "$out/spans"); n=$(size_mb "$out/nospans")
echo "traces: $spans spans over $((2 * spans)) polls, $s MB; without the span marks: $n MB"
us=$(best_user "$out/spans"); un=$(best_user "$out/nospans")
awk -v a="$us" -v b="$un" -v r="$runs" 'BEGIN { printf "analyze user CPU (best of %d): %.2f s with spans, %.2f s without: %+.1f %%\n", r, a, b, (b > 0 ? 100 * (a - b) / b : 0) }'
if command -v valgrind >/dev/null; then
    record "$out/cg_spans" "$cg_spans"
    record "$out/cg_nospans" "$cg_spans" nospans
    is=$(instructions "$out/cg_spans"); in=$(instructions "$out/cg_nospans")
    awk -v a="$is" -v b="$in" -v n="$cg_spans" 'BEGIN { printf "analyze instructions (callgrind, %d spans): %.1f M with spans, %.1f M without: %+.1f %% (%.0f per span)\n", n, a / 1e6, b / 1e6, 100 * (a - b) / b, (a - b) / n }'
else
    echo "valgrind not installed: no instruction counts"
fi
