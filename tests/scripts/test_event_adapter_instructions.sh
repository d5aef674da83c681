#!/usr/bin/env bash
# The libevent adapter's hot path, counted: the instructions of its own code per dispatched
# callback on the loop's thread (the trampoline libevent calls: finding the application's
# callback, its argument and task, opening and closing the poll), by callgrind, against a bound
# written here. Counts do not move with the machine's load, so a regression fails anywhere.
#
# event_callbacks_counted dispatches one persistent read event N times while recording; with
# "bufferevent", the read callback of a socket bufferevent N times (its trampoline counted).
# callgrind collects only inside the trampoline (--toggle-collect=event_trampoline); the
# recorder's hooks it calls (d9__poll_begin, d9__poll_end, d9__poll_end_begin: bounded by
# test_poll_instructions.sh) and the application's callback toggle collection off again, so
# what is counted is the adapter's. Two runs of N1 and N2 callbacks; the difference /
# (N2 - N1) is one callback. The trace must hold N polls: a callback that recorded nothing
# would be cheap for no merit. Labelled nosan: valgrind refuses a sanitizer's runtime.
set -euo pipefail
build=${D9_BUILD_DIR:?}
prog="$build/src/adapters/event/event_callbacks_counted"
[ -x "$prog" ] || { echo "SKIP: $prog is not built (libevent-dev missing)"; exit 0; }
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 0; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$prog" 2>/dev/null)"; then
  echo "SKIP: built with a sanitizer (valgrind refuses its runtime)"; exit 0
fi

# Measured (gcc 12, RelWithDebInfo), instructions per callback: 180.0 when the trampoline
# found the callback, its argument and task in the side table (a hash, a sequence-checked probe
# and an out-of-line call: ~100), 89.0 with them in a block of the event's own that libevent
# hands the trampoline as its argument, 75.0 with the poll's exit inlined (out of line: a call,
# four saved registers, the frame tested twice); 74.0 with the frame zeroed when nothing records
# (MinSizeRel: 82.0). The bound leaves room for another compiler's choices, not for the table
# lookup or the out-of-line exit.
BOUND=85
# A bufferevent's read callback, the same way: 134.0 with the callbacks looked up in the
# side table (d9a_table_callback, inline), 72.0 with them in a cell libevent hands the
# trampoline as the callback's argument (event_bufferevent.c). The same room in the bound.
BEV_BOUND=85

dir=$(mktemp -d "${TMPDIR:-/tmp}/event-instructions.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

count() { # callbacks [bufferevent] -> instructions inside the trampoline, hooks and callback left out
  local n=$1 mode=${2:-} out="$dir/cg.$1${2:-}"
  mkdir -p "$dir/trace.$n$mode"
  valgrind --tool=callgrind --quiet --separate-threads=yes --callgrind-out-file="$out" \
    --toggle-collect=event_trampoline --toggle-collect=d9e_counted_callback \
    --toggle-collect=bev_read_trampoline --toggle-collect=bev_read_cell_trampoline \
    --toggle-collect=d9e_counted_read \
    --toggle-collect=d9__poll_begin --toggle-collect=d9__poll_end \
    --toggle-collect=d9__poll_end_begin \
    "$prog" "$n" "$dir/trace.$n$mode" $mode >"$out.stdout" 2>"$out.stderr" || {
      echo "FAIL: event_callbacks_counted $n under callgrind failed" >&2
      cat "$out.stdout" "$out.stderr" >&2; exit 1; }
  grep -q "^callbacks $n\$" "$out.stdout" || { echo "FAIL: $(cat "$out.stdout")" >&2; exit 1; }
  local run polls
  run=$(sed -n 2p "$out.stdout")
  "$build/dial9" stats "$run" >"$out.stats" 2>&1 || { echo "FAIL: dial9 stats: $(cat "$out.stats")" >&2; exit 1; }
  polls=$(awk '$2 == "PollStartEvent" { print $1 }' "$out.stats")
  [ "${polls:-0}" -ge "$n" ] || { echo "FAIL: $n callbacks recorded ${polls:-0} polls: $(cat "$out.stats")" >&2; exit 1; }
  # the loop's thread is the program's first (-01)
  awk '/^(summary|totals):/ {print $2; exit}' "$out-01"
}

n1=200 n2=1200
check() { # mode bound what
  local a b per
  a=$(count $n1 "$1")
  b=$(count $n2 "$1")
  [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || { echo "FAIL: no instructions counted in the trampoline ($a, $b)"; exit 1; }
  per=$(awk -v a="$a" -v b="$b" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
  if awk -v p="$per" -v bound="$2" 'BEGIN { exit !(p <= bound) }'; then
    echo "ok    the libevent adapter's own instructions per $3: $per (bound $2)"
  else
    echo "FAIL  the libevent adapter's own instructions per $3: $per > $2"
    { callgrind_annotate "$dir/cg.$n2$1-01" 2>/dev/null | sed -n '/file:function/,$p' | head -12; } || true
    exit 1
  fi
}
check "" $BOUND "dispatched callback"
check bufferevent $BEV_BOUND "bufferevent read callback"
echo "PASS"
