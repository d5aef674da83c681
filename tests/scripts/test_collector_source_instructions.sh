#!/usr/bin/env bash
# The collector's cost per context-switch record, counted: the instructions the collector
# spends in a drain (d9_col_merge and all it calls: the sources' batch, its sort, the merge, the
# encoding) for each SchedSwitchEvent a source hands it, by callgrind, against a bound written
# here. Counts do not move with the machine's load, so a regression fails anywhere.
#
# bench/collector/d9_bench_collector_sources records N memcached-like requests (five events on
# a worker: an unpark with its ready wake, a poll, its end with the park) and drains by hand;
# in mode `switches` its source also hands over the switch-out after each park and the
# switch-in before each unpark (what the perf source reads for a worker sleeping in its poller
# between requests), on CPU 0 and 1 by turns, each CPU's in time order. callgrind collects inside d9_col_merge only, in runs of N1 and N2 requests
# of each mode: ((switches N2 - N1) - (plain N2 - N1)) / 2 (N2 - N1) is one switch record's cost
# to the collector, the thread's run it cuts included (the perf ring's parsing is the source's,
# not counted here).
# Labelled nosan: a sanitizer's instrumentation is not the hot path (and valgrind refuses it).
set -euo pipefail
build=${D9_BUILD_DIR:?}
bench="$build/bench/collector/d9_bench_collector_sources"
[ -x "$bench" ] || { echo "SKIP: $bench is not built"; exit 0; }
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 0; }
nm "$bench" 2>/dev/null | grep ' d9_col_merge$' >/dev/null || {
  echo "FAIL: $bench has no d9_col_merge symbol (inlined? the count would be 0)"; exit 1; }

# Measured (gcc 12, RelWithDebInfo, this 2-vCPU kvm guest, CLOCK_MONOTONIC), instructions per
# switch record, the switches on one CPU (one sorted run): 548.9 through an out_event and the
# generic encoder (its calls per field: ~240), the thread looked up by a scan twice (~60), the
# batch's copy through the stack (~60), and the thread's run it cut (its re-entry: ~80); 292.3
# with the bytes stored straight into the output and the thread found once (fast_switch), 275.3
# with the batch storing in place; 179.8 once a thread's run writes the switches due inside it
# itself (run_switch: no run cut, no re-entry).
# On two CPUs by turns (the bench since; each CPU's ring a sorted run, as the perf source hands
# them over): 396.5 with the steps above but run_switch (the sort's merge pass and its copy
# back, ~120), 205.1 with run_switch, the sort's buffers trading places instead of the copy
# back and the sources' next time kept in the collector; 185.1 with the batch's add storing a
# switch without a stack frame (the arena's copies out of line). Each bound fails on the code
# before (main: 670.0).
BOUND_SWITCH=195

dir=$(mktemp -d "${TMPDIR:-/tmp}/collector-source-instructions.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

count() { # mode requests -> instructions inside d9_col_merge
  local out="$dir/cg.$1.$2"
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='d9_col_merge' \
    "$bench" "$1" "$2" >"$out.stdout" 2>"$out.stderr" || {
      echo "FAIL: d9_bench_collector_sources $1 $2 under callgrind failed" >&2
      cat "$out.stdout" "$out.stderr" >&2; exit 1; }
  grep -q " dropped 0$" "$out.stdout" || { echo "FAIL: events were dropped: $(cat "$out.stdout")" >&2; exit 1; }
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

n1=1024 n2=9216
p1=$(count plain $n1); p2=$(count plain $n2)
s1=$(count switches $n1); s2=$(count switches $n2)
per_request=$(awk -v a="$p1" -v b="$p2" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
per_switch=$(awk -v p1="$p1" -v p2="$p2" -v s1="$s1" -v s2="$s2" -v n=$((2 * (n2 - n1))) \
  'BEGIN { printf "%.1f", ((s2 - s1) - (p2 - p1)) / n }')
echo "the collector's merge: a request's five events $per_request instructions; a context-switch record $per_switch"
if awk -v p="$per_switch" -v bound="$BOUND_SWITCH" 'BEGIN { exit !(p <= bound) }'; then
  echo "ok    a context-switch record: $per_switch instructions (bound $BOUND_SWITCH)"
  echo "PASS"
else
  echo "FAIL  a context-switch record: $per_switch instructions > $BOUND_SWITCH"
  { callgrind_annotate --inclusive=yes "$dir/cg.switches.$n2" 2>/dev/null | sed -n '/file:function/,$p' | head -24; } || true
  exit 1
fi
