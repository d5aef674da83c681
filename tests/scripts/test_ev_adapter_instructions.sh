#!/usr/bin/env bash
# The libev adapter's hot path, counted: the instructions of its own code per dispatched
# watcher callback on the loop's thread (its ev_feed_event wrapper, where libev hands it a
# ready io watcher: the readiness wake; the trampoline libev calls: finding the application's
# callback and task, opening and closing the poll), by callgrind, against a bound written here.
# Counts do not move with the machine's load, so a regression fails anywhere.
#
# ev_callbacks_counted dispatches one io watcher N times while recording. callgrind collects
# only inside the trampoline and the ev_feed_event wrapper (libev's own ev_feed_event, of the
# same name, toggles collection off again); the recorder's hooks (bounded by
# test_poll_instructions.sh) and the application's callback toggle it off too, so what is
# counted is the adapter's. Two runs of N1 and N2 callbacks; the difference / (N2 - N1) is one
# callback. The trace must hold N polls and N readiness wakes: a callback that recorded nothing
# would be cheap for no merit. Labelled nosan: valgrind refuses a sanitizer's runtime.
set -euo pipefail
build=${D9_BUILD_DIR:?}
prog="$build/src/adapters/ev/ev_callbacks_counted"
[ -x "$prog" ] || { echo "SKIP: $prog is not built (libev-dev missing)"; exit 0; }
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 0; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$prog" 2>/dev/null)"; then
  echo "SKIP: built with a sanitizer (valgrind refuses its runtime)"; exit 0
fi

# Measured (gcc 12, RelWithDebInfo), instructions per callback: 298.0 when the trampoline and
# the readiness wake each looked the watcher up in the side table (a hash, a sequence-checked
# probe and a call: ~85 and ~50); 180.0 with the watcher's callback, location and task in a
# cell beside it (ev_watcher_cell.h: a multiply and a few loads each). Of those 180: the
# ev_feed_event wrapper ~73 (its frame, libev's code range for the caller, the cell), the
# trampoline ~107 (its frame, the cell, the poll opened and closed). The bound leaves room for
# another compiler's choices, not for a table lookup per callback.
BOUND=210

dir=$(mktemp -d "${TMPDIR:-/tmp}/ev-instructions.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT # KEEP=1: leave the callgrind files
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

count() { # callbacks -> instructions inside the adapter, hooks and callback left out
  local n=$1 out="$dir/cg.$1"
  mkdir -p "$dir/trace.$n"
  local toggles=()
  for f in watcher_trampoline ev_feed_event d9v_counted_callback \
           d9__poll_begin d9__poll_end d9__poll_end_begin d9__wake_ready; do
    toggles+=("--toggle-collect=$f")
  done
  valgrind --tool=callgrind --quiet --separate-threads=yes --callgrind-out-file="$out" \
    "${toggles[@]}" "$prog" "$n" "$dir/trace.$n" >"$out.stdout" 2>"$out.stderr" || {
      echo "FAIL: ev_callbacks_counted $n under callgrind failed" >&2
      cat "$out.stdout" "$out.stderr" >&2; exit 1; }
  grep -q "^callbacks $n\$" "$out.stdout" || { echo "FAIL: $(cat "$out.stdout")" >&2; exit 1; }
  local run polls wakes
  run=$(sed -n 2p "$out.stdout")
  "$build/dial9" stats "$run" >"$out.stats" 2>&1 || { echo "FAIL: dial9 stats: $(cat "$out.stats")" >&2; exit 1; }
  polls=$(awk '$2 == "PollStartEvent" { print $1 }' "$out.stats")
  wakes=$(awk '$2 == "WakeEventEvent" { print $1 }' "$out.stats")
  [ "${polls:-0}" -ge "$n" ] && [ "${wakes:-0}" -ge "$n" ] || {
    echo "FAIL: $n callbacks recorded ${polls:-0} polls, ${wakes:-0} wakes: $(cat "$out.stats")" >&2; exit 1; }
  # the loop's thread is the program's first (-01)
  awk '/^(summary|totals):/ {print $2; exit}' "$out-01"
}

n1=200 n2=1200
a=$(count $n1)
b=$(count $n2)
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || { echo "FAIL: no instructions counted in the adapter ($a, $b)"; exit 1; }
per=$(awk -v a="$a" -v b="$b" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
if awk -v p="$per" -v bound=$BOUND 'BEGIN { exit !(p <= bound) }'; then
  echo "ok    the libev adapter's own instructions per dispatched callback: $per (bound $BOUND)"
else
  echo "FAIL  the libev adapter's own instructions per dispatched callback: $per > $BOUND"
  { callgrind_annotate "$dir/cg.$n2-01" 2>/dev/null | sed -n '/file:function/,$p' | head -16; } || true
  exit 1
fi
echo "PASS"
