#!/usr/bin/env bash
# bench/callgrind.sh BUILD_DIR: instructions per recorded poll event, counted by callgrind.
# D9_BENCH_PAIRS=park counts park/unpark events instead.
#
# Runs `d9_bench --instructions N` twice (N poll pairs, everything else identical) and divides
# the difference in instructions by the difference in events, so start-up, d9_stop and the
# file handling cancel out. Threads are counted separately: the recording thread (the hook
# itself, plus the loop and one d9_flush per 8192 pairs) and all threads together (adding
# the background thread that drains, encodes and writes).
#
# The recorder keeps its default clock: valgrind executes rdtsc natively (its result is the
# host's TSC), so the TSC path is what gets counted; the trace's event counts are checked.
set -euo pipefail
build=${1:?usage: bench/callgrind.sh BUILD_DIR}
bench="$build/bench/d9_bench"
[ -x "$bench" ] || { echo "callgrind.sh: $bench not found (build first)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }

small=${SMALL_PAIRS:-20000}
large=${LARGE_PAIRS:-120000}
out=$(mktemp -d "${TMPDIR:-/tmp}/d9-callgrind.XXXXXX")
trap 'rm -rf "$out"' EXIT

# "thread-number Ir" lines for one run (thread 1, the main thread, records the events).
count() {
  local pairs=$1
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/cg.$pairs" \
    "$bench" --instructions "$pairs" >"$out/stdout.$pairs" 2>"$out/stderr.$pairs" || {
      echo "callgrind.sh: the run with $pairs pairs failed:" >&2
      cat "$out/stdout.$pairs" "$out/stderr.$pairs" >&2; exit 1; }
  for f in "$out"/cg."$pairs"-*; do
    printf '%d %s\n' "$((10#${f##*-}))" "$(awk '/^(summary|totals):/ {print $2; exit}' "$f")"
  done | sort -n
}

# The function whose own instructions grew most between the two runs of a thread: what that
# thread does per event. Args: the small run's file, the large run's file.
top_growth() {
  local f
  for f in "$1" "$2"; do
    [ -f "$f" ] && callgrind_annotate --inclusive=no --threshold=100 "$f" 2>/dev/null |
      awk -v run="$f" '/file:function/ {on = 1; next}
        on && /^ *[0-9,]+ / { ir = $1; gsub(/,/, "", ir); fn = $0; sub(/ \[.*/, "", fn); sub(/.*:/, "", fn);
                              print run, fn, ir }
        on && /^--/ && seen++ {exit}'
  done | awk -v large="$2" '{ d[$2] += ($1 == large ? $3 : -$3) }
    END { best = ""; for (f in d) if (best == "" || d[f] > d[best]) best = f; print best }'
}

echo "callgrind: $small and $large ${D9_BENCH_PAIRS:-poll} pairs (2 events each), default configuration"
a=$(count "$small"); b=$(count "$large")
echo "  run with $small pairs:  $(cat "$out/stdout.$small")"
echo "  run with $large pairs: $(cat "$out/stdout.$large")"
events=$(( 2 * (large - small) ))
echo "  instructions per event (difference between the runs / $events events):"
total=0
while read -r thread ir_b; do
  ir_a=$(echo "$a" | awk -v t="$thread" '$1 == t {print $2}')
  [ -n "$ir_a" ] || ir_a=0
  file_b=$(ls "$out"/cg."$large"-* | awk -v t="$thread" -F- '{ n = $NF + 0; if (n == t) print }')
  file_a=$(ls "$out"/cg."$small"-* | awk -v t="$thread" -F- '{ n = $NF + 0; if (n == t) print }')
  role="background"
  [ "$thread" = 1 ] && role="recording thread: hook + loop + one d9_flush per 8192 pairs"
  awk -v t="$thread" -v a="$ir_a" -v b="$ir_b" -v ev="$events" -v role="$role" -v top="$(top_growth "$file_a" "$file_b")" \
    'BEGIN { printf "    thread %s %8.1f   (%s; grows most in %s)\n", t, (b - a) / ev, role, top }'
done <<<"$b"
all_a=$(echo "$a" | awk '{s+=$2} END {print s}'); all_b=$(echo "$b" | awk '{s+=$2} END {print s}')
awk -v aa="$all_a" -v ab="$all_b" -v ev="$events" \
  'BEGIN { printf "    all      %8.1f   (everything the recorder does per event)\n", (ab - aa) / ev }'
