#!/bin/bash
# A home-grown loop whose wait is io_uring (liburing, shared) recorded zero-code: its
# iterations are polls, one per connection, as an epoll loop's (test_preload_home_loop.sh).
# tests/preload/d9p_uring_server accepts and receives through its ring and answers with
# write(); one request of connection B sleeps 200 ms in its handler. Under `dial9 run`, in
# each mode (batch: io_uring_submit_and_wait and every completion posted; wait_cqe:
# io_uring_submit, then io_uring_wait_cqe, one completion at a time; timeout: the same with
# io_uring_wait_cqe_timeout, which liburing implements by calling its own exported waits;
# enter: io_uring_submit, then liburing's io_uring_enter wrapper and an inline peek, a wait
# the shim sees without a ring to read):
#   - parks and unparks alternate, and so do poll starts and ends: a wait of liburing's inside
#     another is one wait;
#   - all of them are the loop's one worker's: A's connection and first request are there
#     before the loop starts, so its first waits find their completions posted and do not park
#     (every run), and the polls that follow are still that worker's (they were on no worker,
#     ended on the one the first park took: a poll left open, 1 run in 40 at load 4 before);
#   - the loop is named (LoopEvent: run_loop, poller io_uring, polls per connection), its one
#     worker's runtime is the loop's name (analyze --json);
#   - each connection is a task spawned at "accept on 127.0.0.1:<port>" (the completion of
#     an IORING_OP_ACCEPT the shim saw submitted), and each of its requests is one readiness
#     wake of that task (the completion of its IORING_OP_RECV) and, in mode batch, exactly one
#     poll of it. In mode wait_cqe, liburing's io_uring_wait_cqe first peeks inline: a
#     completion already posted when the loop comes back (the client's next request, sent
#     while the loop was still in the handler) is handled without any call the shim sees, in
#     the poll in progress (or before the loop's first wait, when it is no loop yet); so there
#     a connection's requests are at most n polls. In
#     mode enter each iteration starts as the loop's own poll and the handler's write() on a
#     connection starts that connection's (io_uring_submit reads the ring: accepts and wakes;
#     a completion the loop peeks after its last io_uring_submit is not read);
#   - the longest poll is B's slow request, its 200 ms sleep inside (in mode enter, where the
#     handler sleeps before its first I/O, the loop's own iteration poll that precedes it): the
#     client sends it once the loop's thread is blocked in its wait (/proc/<tid>/syscall), so
#     that it is never found by an inline peek before the loop's first wait (no poll at all:
#     "the longest poll (0.2 ms)" once under load before) or inside the poll in progress;
#   - every connection's task ends: A's and B's at close(), C's at the completion of its
#     IORING_OP_CLOSE.
# Skips, saying so, when liburing is missing or the kernel refuses io_uring. Counted, never
# timed: the only duration compared is the slow handler's 200 ms sleep against handlers that
# do nothing.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"

SERVER="$HELPERS/d9p_uring_server"
[ -x "$SERVER" ] || skip "$SERVER not built (liburing-dev missing at build time)"
disabled=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)
[ "$disabled" = 0 ] || skip "io_uring is disabled on this kernel (kernel.io_uring_disabled=$disabled)"

# uring_loop MODE
uring_loop() {
    local mode=$1
    local dir="$WORK/$mode"
    mkdir -p "$dir"
    timeout 120 "$D9" run -d "$dir/traces" -- "$SERVER" "$mode" >"$dir/out" 2>"$dir/err"
    local rc=$?
    if [ $rc -eq 3 ] && grep -q "^no io_uring" "$dir/out"; then
        skip "the kernel refuses io_uring: $(grep "^no io_uring" "$dir/out")"
    fi
    [ $rc -eq 0 ] || fail "$mode: exit status $rc under dial9 run: $(cat "$dir/out" "$dir/err")"
    python3 - "$D9" "$dir/traces" "$mode" <<'PY' || exit 1
import json, os, subprocess, sys
sys.path.insert(0, os.environ["D9_SOURCE_DIR"] + "/tests/preload")
from trace_facts import Trace, check
d9, traces, mode = sys.argv[1:]
runs = [r for r in sorted(os.listdir(traces)) if not r.startswith(".")]
check(len(runs) == 1, "%s: one run (%d)" % (mode, len(runs)))
path = os.path.join(traces, runs[0])
t = Trace(d9, path)

loops = [e["fields"] for e in t.of("LoopEvent")]
check(loops and loops[-1]["function"] == "run_loop" and loops[-1]["poller"] == "io_uring"
      and loops[-1]["polls"] == "connection",
      "%s: the loop is named run_loop, waits in io_uring, polls per connection: %s"
      % (mode, loops[-1:] or "no LoopEvent"))
report = json.loads(subprocess.run([d9, "analyze", "--json", path], check=True,
                                   capture_output=True, text=True).stdout)
runtimes = [w.get("runtime") for w in report["workers"]]
check(runtimes == ["run_loop (d9p_uring_server)"],
      "%s: one worker, its runtime the loop's name: %s" % (mode, runtimes))

# every poll, park and unpark is the loop's one worker's (its first waits, which find their
# completions posted and do not park, included)
on = sorted({e["fields"]["worker_id"] for e in t.events if e["event"] in
             ("PollStartEvent", "PollEndEvent", "WorkerParkEvent", "WorkerUnparkEvent")})
check(on == t.workers_of("run_loop (d9p_uring_server)") and len(on) == 1,
      "%s: every poll, park and unpark is the loop's worker's (workers %s, the loop's %s)"
      % (mode, on, t.workers_of("run_loop (d9p_uring_server)")))
# polls with their durations, paired per worker (start, then the worker's next end)
durations, open_poll = [], {}
for e in sorted((e for e in t.events if e["event"] in ("PollStartEvent", "PollEndEvent")),
                key=lambda e: e["ts"]):
    w = e["fields"]["worker_id"]
    if e["event"] == "PollStartEvent":
        open_poll[w] = e
    elif w in open_poll:
        s = open_poll.pop(w)
        durations.append((e["ts"] - s["ts"], s["fields"]["task_id"]))
check(not open_poll, "%s: every poll ended" % mode)
for pair in (("WorkerParkEvent", "WorkerUnparkEvent"), ("PollStartEvent", "PollEndEvent")):
    seq = [e["event"] for e in sorted((e for e in t.events if e["event"] in pair), key=lambda e: e["ts"])]
    bad = sum(1 for i, e in enumerate(seq) if e != pair[i % 2])
    check(seq and bad == 0, "%s: %s and %s alternate (%d events, %d out of turn)"
          % (mode, pair[0], pair[1], len(seq), bad))

accepts = [s for s in t.spawns if s["spawn_loc"].startswith("accept on 127.0.0.1:")]
check(len(accepts) == 3, "%s: 3 connections spawned at their listening address (%d)"
      % (mode, len(accepts)))
task = {c: s["task_id"] for c, s in zip("ABC", accepts)}
check(len(set(task.values())) == 3, "%s: A, B, C are 3 tasks" % mode)
for k, n in (("A", 4), ("B", 4), ("C", 3)):
    polls = sum(1 for p in t.polls if p["task_id"] == task[k])
    wakes = sum(1 for w in t.wakes if w["woken_task_id"] == task[k] and w["waker_task_id"] == 0)
    if mode in ("batch", "timeout"):
        check(polls == n, "%s: %s's %d requests are %d polls of its task" % (mode, k, n, polls))
    else:  # wait_cqe, enter: a request whose read completes inline at submit is peeked
        # without a wait, so under load every one of a connection's requests can join another's
        # poll, or come before the loop's first wait (0 polls: enter 1 run in 6 at load 4,
        # wait_cqe 2 runs in 6 at load 10, the same before and after the shim's io_uring code
        # was shared with syscall()); the wakes below still count each of its completions
        check(polls <= n, "%s: %s's %d requests are %d polls of its task (a completion "
              "found by the inline peek joins the poll in progress)" % (mode, k, n, polls))
    if mode != "enter":
        check(wakes == n, "%s: %s woken by %d completions (%d)" % (mode, k, n, wakes))
    else:  # the completion of the last request, peeked after the last io_uring_submit, unread
        check(n - 1 <= wakes <= n, "%s: %s woken by %d completions, or all but one (%d)"
              % (mode, k, n, wakes))
longest = max(durations)
own = [s["task_id"] for s in t.spawns if s["spawn_loc"] == "run_loop (d9p_uring_server)"]
# the slow request comes to a loop blocked in its wait (the client waits for that): its
# iteration starts as B's poll, or in mode enter as the loop's own, which its sleep is in
expected = own if mode == "enter" else [task["B"]]
check(longest[1] in expected and longest[0] >= 200e6,
      "%s: the longest poll (%.1f ms) is B's slow request, its 200 ms sleep inside%s"
      % (mode, longest[0] / 1e6, " (the iteration before its first I/O)" if mode == "enter" else ""))
terminated = {e["fields"]["task_id"] for e in t.of("TaskTerminateEvent")}
check(all(task[k] in terminated for k in "ABC"),
      "%s: A's, B's (close) and C's (IORING_OP_CLOSE) tasks end" % mode)
PY
    echo "ok: $mode"
}

uring_loop batch
uring_loop wait_cqe
uring_loop timeout
uring_loop enter
echo "PASS: an io_uring loop's iterations are polls, one per connection"
