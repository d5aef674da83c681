#!/usr/bin/env bash
# The libevent adapter's hot path, counted: the instructions of its own code per dispatched
# callback on the loop's thread (the trampoline libevent calls: finding the application's
# callback, its argument and task, opening and closing the poll), by callgrind, against a bound
# written here. Counts do not move with the machine's load, so a regression fails anywhere.
#
# event_callbacks_counted dispatches one persistent read event N times while recording; with
# "bufferevent", the read callback of a socket bufferevent N times (its trampoline counted).
# callgrind collects only inside the trampoline (--toggle-collect=event_trampoline); the
# recorder's hooks it calls (d9__poll_begin, d9__poll_end, d9__poll_end_begin, and
# d9__unpark_wake_ready_poll_begin at the first callback after the poller returned: bounded by
# test_poll_instructions.sh) and the application's callback toggle collection off again, so
# what is counted is the adapter's. Two runs of N1 and N2 callbacks; the difference /
# (N2 - N1) is one callback. The trace must hold N polls: a callback that recorded nothing
# would be cheap for no merit. Labelled nosan: valgrind refuses a sanitizer's runtime.
set -euo pipefail
build=${D9_BUILD_DIR:?}
source "$(dirname "${BASH_SOURCE[0]}")/lib/adapter_counted.sh"
prog="$build/src/adapters/event/event_callbacks_counted"
ac_require "$prog" libevent-dev

# Measured (gcc 12, RelWithDebInfo), instructions per callback: 180.0 when the trampoline
# found the callback, its argument and task in the side table (a hash, a sequence-checked probe
# and an out-of-line call: ~100), 89.0 with them in a block of the event's own that libevent
# hands the trampoline as its argument, 75.0 with the poll's exit inlined (out of line: a call,
# four saved registers, the frame tested twice); 74.0 with the frame zeroed when nothing records
# (MinSizeRel: 82.0). The bound leaves room for another compiler's choices, not for the table
# lookup or the out-of-line exit. 80.4 (82db9e1) -> 70.0 when a callback outside any other
# saved and restored no frame and called the hooks without their wrappers' test of recording
# again (thread_state.h), 68.0 with the frame's state in one byte; the bound fails 80.4.
BOUND=75
# A bufferevent's read callback, the same way: 134.0 with the callbacks looked up in the
# side table (d9a_table_callback, inline), 72.0 with them in a cell libevent hands the
# trampoline as the callback's argument (event_bufferevent.c); 76.0 (82db9e1) -> 67.0 with the
# frame's step above (65.0 with its one byte). The bound fails 76.0.
BEV_BOUND=72

dir=$(mktemp -d "${TMPDIR:-/tmp}/event-instructions.XXXXXX")
trap 'rm -rf "$dir"' EXIT

count() { # callbacks [bufferevent] -> instructions inside the trampoline, hooks and callback left out
  local n=$1 mode=${2:-} out="$dir/cg.$1${2:-}"
  ac_callgrind "$out" "$n" "$dir/trace.$n$mode" "$mode" callbacks "$prog" -- \
    event_trampoline d9e_counted_callback bev_read_trampoline bev_read_cell_trampoline \
    d9e_counted_read d9__poll_begin d9__poll_end d9__poll_end_begin d9__unpark_wake_ready_poll_begin
  local polls
  polls=$(ac_events "$out" PollStartEvent)
  [ "$polls" -ge "$n" ] || { echo "FAIL: $n callbacks recorded $polls polls: $(cat "$out.stats")" >&2; exit 1; }
  ac_loop_total "$out"
}

n1=200 n2=1200
check() { # mode bound what
  local a b
  a=$(count $n1 "$1")
  b=$(count $n2 "$1")
  ac_verdict "$a" "$b" $((n2 - n1)) "$2" \
    "the libevent adapter's own instructions per $3" "$dir/cg.$n2$1"
}
check "" $BOUND "dispatched callback"
check bufferevent $BEV_BOUND "bufferevent read callback"
echo "PASS"
