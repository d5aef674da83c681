#!/usr/bin/env bash
# The hot path, counted: the instructions one recorded poll (d9__poll_begin + d9__poll_end, on
# the recording thread) executes, by callgrind, against a bound written here. Counts do not
# move with the machine's load, so a regression of the hooks' fast path fails anywhere.
#
# d9_bench --instructions N records N poll pairs; callgrind collects only inside the two hooks
# (--toggle-collect), in two runs of N1 and N2 pairs, and the difference / (N2 - N1) is one
# poll: the thread's first event (its ring's registration) cancels. DIAL9_CLOCK=tsc, so the
# fast path is counted on every host (valgrind runs rdtsc natively); a host whose kernel does
# not vouch for the TSC reads CLOCK_MONOTONIC instead, a path of its own (bench/README.md).
# Labelled nosan: a sanitizer's instrumentation is not the hot path (and valgrind refuses it).
set -euo pipefail
build=${D9_BUILD_DIR:?}
bench="$build/bench/d9_bench"
[ -x "$bench" ] || { echo "SKIP: $bench is not built"; exit 0; }
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 0; }

# Measured at this commit (gcc 12, RelWithDebInfo): 66.1 instructions per pair (begin 33, end
# 33, with the ring's commit and the TSC read). The bound leaves room for another compiler's
# choices, not for a call more per event (~18 instructions of prologue and epilogue alone) or
# a second clock read.
BOUND=80

dir=$(mktemp -d "${TMPDIR:-/tmp}/poll-instructions.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

count() { # pairs -> instructions inside the two hooks
  DIAL9_CLOCK=tsc valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$1" \
    --toggle-collect='d9__poll_begin' --toggle-collect='d9__poll_end' \
    "$bench" --instructions "$1" >"$dir/out.$1" 2>"$dir/err.$1" || {
      echo "FAIL: d9_bench --instructions $1 under callgrind failed"; cat "$dir/out.$1" "$dir/err.$1"; exit 1; }
  grep -q " dropped 0 " "$dir/out.$1" || { echo "FAIL: events were dropped: $(cat "$dir/out.$1")"; exit 1; }
  awk '/^(summary|totals):/ {print $2; exit}' "$dir/cg.$1"
}
n1=2000 n2=22000
a=$(count $n1)
b=$(count $n2)
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || { echo "FAIL: no instructions counted in the hooks ($a, $b)"; exit 1; }
per_pair=$(awk -v a="$a" -v b="$b" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
echo "one recorded poll (begin + end) on the recording thread: $per_pair instructions (bound $BOUND)"
awk -v p="$per_pair" -v bound=$BOUND 'BEGIN { exit !(p <= bound) }' || {
  echo "FAIL: $per_pair instructions per poll > $BOUND"
  callgrind_annotate "$dir/cg.$n2" 2>/dev/null | sed -n '/file:function/,$p' | head -12
  exit 1; }
echo "PASS"
