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
source "$(dirname "${BASH_SOURCE[0]}")/lib/adapter_counted.sh"
prog="$build/src/adapters/ev/ev_callbacks_counted"
ac_require "$prog" libev-dev

# Measured (gcc 12, RelWithDebInfo), instructions per callback: 298.0 when the trampoline and
# the readiness wake each looked the watcher up in the side table (a hash, a sequence-checked
# probe and a call: ~85 and ~50); 180.0 with the watcher's callback, location and task in a
# cell beside it (ev_watcher_cell.h: a multiply and a few loads each). Of those 180: the
# ev_feed_event wrapper ~73 (its frame, libev's code range for the caller, the cell), the
# trampoline ~107 (its frame, the cell, the poll opened and closed). The bound leaves room for
# another compiler's choices, not for a table lookup per callback. 184.0 -> 187.4 when the
# unpark became owed to the first ready wake (the wrapper's and the trampoline's tests of it;
# d9__unpark_wake_ready, a hook, toggled off as the others). 187.2 -> 179 when the wrapper's
# test of libev's code range tested a flag instead of calling pthread_once (a call and a frame
# a feed). The bound fails the code before.
# 179.2 -> 170.6 when a callback outside any other saved and restored no frame and called the
# hooks without their wrappers' test of recording again (thread_state.h), 168.7 with the frame's
# state in one byte: the bound fails 179.2.
BOUND=176

dir=$(mktemp -d "${TMPDIR:-/tmp}/ev-instructions.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT # KEEP=1: leave the callgrind files

count() { # callbacks -> instructions inside the adapter, hooks and callback left out
  local n=$1 out="$dir/cg.$1"
  ac_callgrind "$out" "$n" "$dir/trace.$n" "" callbacks "$prog" -- \
    watcher_trampoline ev_feed_event d9v_counted_callback \
    d9__poll_begin d9__poll_end d9__poll_end_begin d9__wake_ready d9__unpark_wake_ready \
    d9__unpark_wake_ready_poll_begin
  local polls wakes
  polls=$(ac_events "$out" PollStartEvent)
  wakes=$(ac_events "$out" WakeEventEvent)
  [ "$polls" -ge "$n" ] && [ "$wakes" -ge "$n" ] || {
    echo "FAIL: $n callbacks recorded $polls polls, $wakes wakes: $(cat "$out.stats")" >&2; exit 1; }
  ac_loop_total "$out"
}

# All in: the adapter and the recorder's hooks it calls on the loop's thread per callback, each
# loop turn's park and unpark included (libev's release and acquire callbacks, the adapter's
# release_hook and acquire_hook), the recorder's default configuration. Per turn: a park, an unpark, the
# watcher's readiness wake and its poll, 5 events. Measured (gcc 12, RelWithDebInfo): 642.0
# with the poll's end at the callback's return and the unpark in the acquire callback, each its
# own hook call and record (5 hook calls, 4 clock reads); 582.4 with the poll's end owed to the
# park (d9__poll_end_park) and the unpark owed to the first ready wake (d9_unpark_wake_ready):
# 3 hook calls and records, 3 clock reads (of the 60, ~25 are the deferred terminates' TLS at
# each park, initial-exec since). The bound fails on the code before, which also fails the
# fused hooks' call counts (none). 580.4 -> 544-546 when the release and acquire callbacks took
# the application's own from a per-thread entry (ev_loop.c, user_hooks) instead of the loop
# registry's lookup each (~12 each), and with the flag above; 527.4 when the park's flush of the
# deferred terminates tested for none before its frame (~17). The bound fails the code before.
BOUND_ALL_IN=550
# Hook calls per loop turn, exact: 3 (d9__poll_end_park; d9__unpark_wake_ready at the first
# ready wake; d9__poll_begin) -> 2 when the unpark and that wake went with the callback's poll
# start (d9__unpark_wake_ready_poll_begin, d9a_wake_ready_owing_unpark): 537.5-539.3 -> 529.0
# instructions all in, the adapter's own 182.2 -> 179.4. The code before fails this bound.
HOOK_CALLS=2.05

count_all_in() { # callbacks -> instructions of the adapter and the hooks, the callback left out
  local n=$1 out="$dir/all.$1"
  # the slow twins left out: they run when valgrind switched the thread out since its last
  # event (the task-clock page's lock moved) or when schedstat is due, by its pace, not the code's
  ac_callgrind "$out" "$n" "$dir/trace-all.$n" "" callbacks "$prog" -- \
    watcher_trampoline ev_feed_event release_hook acquire_hook d9v_counted_callback \
    d9_thread_cpu_clock_slow d9_poll_cpu_begin_slow d9_poll_cpu_end_slow d9_schedstat_read
  local fused
  for fused in d9__poll_end_park d9__unpark_wake_ready_poll_begin; do
    # calls of the fused hook on the loop's thread (callgrind's calls= lines under its cfn=)
    local calls
    calls=$(ac_calls "$out-01" "^$fused\$")
    # one a loop turn, but the last turn's end: the callback stops the watcher, its terminate
    # follows the poll's end
    [ "$calls" -ge $((n - 1)) ] || {
      echo "FAIL: $n callbacks made $calls calls of $fused (one a loop turn expected)" >&2; exit 1; }
  done
  ac_loop_total "$out"
}

n1=200 n2=1200
ac_min_verdict count $n1 $n2 $BOUND \
  "the libev adapter's own instructions per dispatched callback" "$dir/cg.$n2"
ac_min_verdict count_all_in $n1 $n2 $BOUND_ALL_IN \
  "the libev adapter and the hooks per loop turn (park, unpark, wake, poll)" "$dir/all.$n2"
ac_hook_calls_verdict "$dir/all.$n1-01" "$dir/all.$n2-01" $((n2 - n1)) $HOOK_CALLS \
  "the recorder's hook calls per loop turn"
echo "PASS"
