#!/usr/bin/env bash
# The libuv adapter's hot path, counted: the instructions of its own code per exchange of the
# demo server's shape (one readiness of the loop's epoll_wait, the alloc and read callbacks of
# a stream, one uv_write tracked from submission to its completion callback) on the loop's
# thread, by callgrind, against a bound written here. Counts do not move with the machine's
# load, so a regression fails anywhere.
#
# uv_exchanges_counted makes N exchanges while recording. callgrind collects only inside the
# adapter: its trampolines, its uv_write / uv_write2 wrappers and its epoll_wait wrapper. The
# names it shares with libuv and glibc (uv_write, uv_write2, epoll_wait) toggle collection
# off again when the adapter calls the real one, as do the recorder's hooks (bounded by
# test_poll_instructions.sh and test_collector_instructions.sh) and the application's
# callbacks. Two runs of N1 and N2 exchanges; the difference / (N2 - N1) is one exchange. The
# trace must hold the exchanges' polls, spawns and terminates: an exchange that recorded
# nothing would be cheap for no merit. Labelled nosan: valgrind refuses a sanitizer's runtime.
set -euo pipefail
build=${D9_BUILD_DIR:?}
source "$(dirname "${BASH_SOURCE[0]}")/lib/adapter_counted.sh"
prog="$build/src/adapters/uv/uv_exchanges_counted"
ac_require "$prog" libuv1-dev

# Measured (gcc 12, RelWithDebInfo), instructions per exchange: 932.0 with the uv_write
# request inserted into the side table at submission and taken out at its completion (a hash,
# a shard lock, a probe and a backward-shift delete each way); 681.0 with the request's
# callback, location and task in the request itself (uv_request_cell.h); 594.9 with the
# handle's callbacks in a cell of the handle's own (uv_handle_cell.h) instead of a table lookup
# per callback; 561.1 with uv_write2 testing first for the trampoline libuv's uv_write passes
# it. Of those 561: the epoll_wait wrapper ~115, the uv_write wrappers and the request's cell
# ~120, the three trampolines (cells, polls opened and closed) ~320. The bound leaves room for
# another compiler's choices, not for a table round trip per request or a lookup per callback.
# 561.1 -> 568.8 when the poll of the loop's last callback became owed to the park (its end in
# the epoll wrapper, d9__poll_end_park, a hook toggled off as the others; back-to-back callbacks
# end and begin in one hook call): the trampolines' and the wrapper's tests of the owed end.
# 568.2 -> 576.6 with what follows an owed end in one word (end_after: the terminate owed to the
# park, the alloc callback's poll going on into the read's): the hooks it saves are counted
# below, all in.
# 593.3 -> 523.1 (2026-12-07): a callback outside any other saves and restores no frame (the
# thread's poll state is at rest there; a nested one keeps it, out of line) and calls the hooks
# without their wrappers' test of recording again; the handle's cell read word by word (a copy of
# it went through the stack); the thread's last callback's location kept (uv_write named its
# callback by the cache's hash probe each time); the request's cell written and read word by
# word; uv_write straight to libuv's uv_write2; 516.3 with the frame's state in one byte. The
# bound fails the code before (593.3).
BOUND=555

dir=$(mktemp -d "${TMPDIR:-/tmp}/uv-instructions.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT # KEEP=1: leave the callgrind files

count() { # exchanges -> instructions inside the adapter, hooks and callbacks left out
  local n=$1 out="$dir/cg.$1"
  ac_callgrind "$out" "$n" "$dir/trace.$n" "" exchanges "$prog" -- \
    alloc_trampoline read_trampoline write_trampoline uv_write uv_write2 epoll_wait \
    d9u_counted_alloc d9u_counted_read d9u_counted_written \
    d9__poll_begin d9__poll_end d9__poll_end_begin d9__park d9__unpark d9__wake_ready d9__unpark_wake_ready \
    d9__unpark_wake_ready_poll_begin d9__poll_end_park \
    d9__task_spawn_object d9__task_terminate d9__poll_end_terminate d9__poll_end_terminate_park d9_task_id_new
  local polls spawns terminates
  polls=$(ac_events "$out" PollStartEvent)
  spawns=$(ac_events "$out" TaskSpawnEvent)
  terminates=$(ac_events "$out" TaskTerminateEvent)
  # per exchange: the alloc and read callbacks are one poll, the write's callback another, of the
  # same task: the write completes before the loop parks again, so its spawn (deferred to that
  # park, thread_state.h's d9a_defer_spawn) and its terminate never come
  [ "$polls" -ge $((2 * n)) ] && [ "$spawns" -lt "$n" ] && [ "$terminates" -lt "$n" ] || {
    echo "FAIL: $n exchanges recorded $polls polls, $spawns spawns, $terminates terminates: $(cat "$out.stats")" >&2
    exit 1; }
  ac_loop_total "$out"
}

# All in: the adapter and the recorder's hooks it calls on the loop's thread per exchange, on
# CLOCK_MONOTONIC (what `auto` takes on a kvm-clock guest; under valgrind auto's cross-CPU check
# of the TSC passes or fails by chance), clock_gettime's own instructions included. Per exchange
# 9 events: park, unpark, the readiness wake, the read's poll (its alloc callback's with it),
# the write callback's poll (12 before: the write's spawn, object and terminate). Measured (gcc 12, RelWithDebInfo): 1 223.4
# with the alloc callback a poll of its own (14 events) and the write's end and terminate apart
# at its callback's return, then the park (10 hook calls, 10 clock reads); 1 091.3 with the
# alloc's poll going on into the read's and the write's end, terminate and the park one hook
# call (d9__poll_end_terminate_park: 7 hook calls, 7 clock reads). Then 9 events in 5 hook
# calls: the unpark and its wake go with the read's poll, one call with its begin
# (d9__unpark_wake_ready_poll_begin), and the write completing before the loop parks is a poll
# of the connection, its spawn (deferred to the park) and terminate never made: 1 091.3 ->
# 992.9 (the adapter's own 576.6 -> 593.8: the deferral's list and the owed unpark's tests).
# The bound fails the code before (main at a560688: 1 084.8-1 091.3).
# 981.8 -> 902.2-905.8 with the adapter's own steps above (the hooks unchanged); the bound fails the code
# before (82db9e1: 981.8).
BOUND_ALL_IN=950

count_all_in() { # exchanges -> instructions of the adapter and the hooks, the callbacks left out
  local n=$1 out="$dir/all.$1"
  # the slow twins left out: they run when valgrind switched the thread out since its last
  # event (the task-clock page's lock moved) or when schedstat is due, by its pace, not the code's
  DIAL9_CLOCK=monotonic ac_callgrind "$out" "$n" "$dir/trace-all.$n" "" exchanges "$prog" -- \
    alloc_trampoline read_trampoline write_trampoline uv_write uv_write2 epoll_wait \
    d9u_counted_alloc d9u_counted_read d9u_counted_written \
    d9_thread_cpu_clock_slow d9_poll_cpu_begin_slow d9_poll_cpu_end_slow d9_poll_cpu_end_begin_slow d9_schedstat_read
  ac_loop_total "$out"
}

n1=200 n2=1200
ac_min_verdict count $n1 $n2 $BOUND \
  "the libuv adapter's own instructions per exchange (read + write request)" "$dir/cg.$n2"
ac_min_verdict count_all_in $n1 $n2 $BOUND_ALL_IN \
  "the libuv adapter and the hooks per exchange (9 events)" "$dir/all.$n2"
echo "PASS"
