#!/usr/bin/env bash
# bench/analyze_spans/run_trace.sh BUILD_DIR RUN_DIR: what spans add to `dial9 analyze` on a
# recorded trace (e.g. examples/uv-server under wrk, each request a span; bench/README.md).
# RUN_DIR's uncompressed segments (trace.N.bin) are copied without their span marks
# (d9_bench_strip_spans: a mark's time goes into the next event's delta, every event keeps its time);
# prints both sizes, analyze's user CPU time on each (best of RUNS, default 3) and, with
# valgrind, its instructions on each over the first CG_SEGMENTS segments (default 1: callgrind
# is ~50 times slower). Nothing is pass/fail.
set -euo pipefail
build=${1:?usage: bench/analyze_spans/run_trace.sh BUILD_DIR RUN_DIR}
run=${2:?usage: bench/analyze_spans/run_trace.sh BUILD_DIR RUN_DIR}
strip="$build/bench/analyze_spans/d9_bench_strip_spans"
dial9="$build/dial9"
[ -x "$strip" ] && [ -x "$dial9" ] || { echo "run_trace.sh: build d9_bench_strip_spans and dial9 first" >&2; exit 1; }
runs=${RUNS:-3}
cg_segments=${CG_SEGMENTS:-1}
out=$(mktemp -d "${TMPDIR:-/tmp}/d9-span-trace.XXXXXX")
trap 'rm -rf "$out"' EXIT
mapfile -t segs < <(find "$run" -maxdepth 1 -name 'trace.*.bin' | sort -t. -k2,2n)
[ "${#segs[@]}" -gt 0 ] || { echo "run_trace.sh: no trace.N.bin in $run" >&2; exit 1; }
mkdir -p "$out/spans" "$out/nospans" "$out/cg_spans" "$out/cg_nospans"
i=0
for s in "${segs[@]}"; do
    b=$(basename "$s")
    ln -s "$(readlink -f "$s")" "$out/spans/$b"
    "$strip" "$s" "$out/nospans/$b" 2>/dev/null
    if [ "$i" -lt "$cg_segments" ]; then
        ln -s "$(readlink -f "$s")" "$out/cg_spans/$b"
        ln -s "$out/nospans/$b" "$out/cg_nospans/$b"
    fi
    i=$((i + 1))
done
size_mb() { du -cLm "$1"/* | tail -n 1 | awk '{ print $1 }'; }
source "$(dirname "${BASH_SOURCE[0]}")/best_user.sh"
echo "trace: ${#segs[@]} segments, $(size_mb "$out/spans") MB; without the span marks: $(size_mb "$out/nospans") MB"
us=$(best_user "$out/spans"); un=$(best_user "$out/nospans")
awk -v a="$us" -v b="$un" -v r="$runs" 'BEGIN { printf "analyze user CPU (best of %d): %.2f s with spans, %.2f s without: %+.1f %%\n", r, a, b, (b > 0 ? 100 * (a - b) / b : 0) }'
if command -v valgrind >/dev/null; then
    cnt() { valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$dial9" analyze "$1" >/dev/null 2>&1; awk '/^summary:/ { print $2 }' "$out/cg.out"; }
    is=$(cnt "$out/cg_spans"); in=$(cnt "$out/cg_nospans")
    awk -v a="$is" -v b="$in" -v n="$cg_segments" 'BEGIN { printf "analyze instructions (callgrind, first %d segments): %.1f M with spans, %.1f M without: %+.1f %%\n", n, a / 1e6, b / 1e6, 100 * (a - b) / b }'
else
    echo "valgrind not installed: no instruction counts"
fi
