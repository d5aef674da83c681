#!/bin/bash
# io_uring without liburing, recorded zero-code: a loop that sets its ring up and enters it
# through glibc's syscall() and maps the rings itself (tests/preload/d9p_raw_uring_server, the
# same requests as test_preload_uring_loop.sh: A fast x3 + bye, B fast + slow 200 ms, C fast x2
# + bye closed through the ring, B fast + bye; each round one io_uring_enter that submits and
# waits for a completion). Under `dial9 run`:
#   - mode syscall: the loop is named (LoopEvent: run_loop, poller io_uring, polls per
#     connection), its one worker's runtime is the loop's name; parks and unparks alternate, so
#     do poll starts and ends, and there are no more parks than the waits the server counted;
#     each connection is a task spawned at "accept on 127.0.0.1:<port>" (a completed
#     IORING_OP_ACCEPT read from the ring the program mapped), each of its requests exactly one
#     poll of it and one readiness wake (the completion of its IORING_OP_RECV), its polls
#     located where its task was spawned (as analyze's "spawn location" shows); the longest
#     poll is B's slow request; A's and B's tasks end at close(), C's at its IORING_OP_CLOSE;
#     the ring is said set up through syscall(), and nothing says it was never waited on;
#   - mode inline: the ring is set up through syscall() but entered with the program's own
#     syscall instruction: no poll, and the shim says so at exit, on stderr and in an
#     IoUringRingEvent ("never waited through a call the shim sees"), rather than nothing;
#   - syscall() of other numbers passes its six arguments, its result and errno unchanged
#     (tests/preload/d9p_syscall_args: gettid, futex wait/wake with a bitset, FUTEX_CMP_REQUEUE's
#     sixth argument; the io_uring numbers' errors), and it is the shim's syscall() they went
#     through.
# Skips, saying so, when the kernel refuses io_uring. Counted, never timed: the only duration
# compared is the slow handler's 200 ms sleep against handlers that do nothing.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"

SERVER="$HELPERS/d9p_raw_uring_server"
ARGS="$HELPERS/d9p_syscall_args"
[ -x "$SERVER" ] || fail "$SERVER not built"
[ -x "$ARGS" ] || fail "$ARGS not built"

# syscall()'s arguments, under the shim
"$D9" run -d "$WORK/args-traces" -- "$ARGS" >"$WORK/args.out" 2>&1 ||
    fail "syscall() under the shim: $(cat "$WORK/args.out")"
grep -q "^syscall from libdial9-preload.so" "$WORK/args.out" ||
    fail "the program's syscall() is not the shim's: $(head -1 "$WORK/args.out")"
grep -q "^all checks passed" "$WORK/args.out" || fail "syscall(): $(cat "$WORK/args.out")"
echo "ok: syscall() of other numbers passes all six arguments, results and errno ($(grep -c '^ok:' "$WORK/args.out") checks)"

disabled=$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)
[ "$disabled" = 0 ] || skip "io_uring is disabled on this kernel (kernel.io_uring_disabled=$disabled)"

# raw_loop MODE: run the server under dial9 run into $WORK/MODE
raw_loop() {
    local mode=$1 dir="$WORK/$1"
    mkdir -p "$dir"
    timeout 120 "$D9" run -d "$dir/traces" -- "$SERVER" "$mode" >"$dir/out" 2>"$dir/err"
    local rc=$?
    if [ $rc -eq 3 ] && grep -q "^no io_uring" "$dir/out"; then
        skip "the kernel refuses io_uring: $(grep "^no io_uring" "$dir/out")"
    fi
    if [ $rc -eq 4 ]; then
        echo "SKIP (mode $mode): $(cat "$dir/out")"
        return 1
    fi
    [ $rc -eq 0 ] || fail "$mode: exit status $rc under dial9 run: $(cat "$dir/out" "$dir/err")"
}

raw_loop syscall
python3 - "$D9" "$WORK/syscall" <<'PY' || exit 1
import json, os, subprocess, sys
sys.path.insert(0, os.environ["D9_SOURCE_DIR"] + "/tests/preload")
from trace_facts import Trace, check
d9, dir_ = sys.argv[1:]
traces = os.path.join(dir_, "traces")
runs = [r for r in sorted(os.listdir(traces)) if not r.startswith(".")]
check(len(runs) == 1, "one run (%d)" % len(runs))
path = os.path.join(traces, runs[0])
t = Trace(d9, path)
out = open(os.path.join(dir_, "out")).read().split("\n")
waits = int(next(l.split()[1] for l in out if l.startswith("waits ")))

loops = [e["fields"] for e in t.of("LoopEvent")]
check(loops and loops[-1]["function"] == "run_loop" and loops[-1]["poller"] == "io_uring"
      and loops[-1]["polls"] == "connection",
      "the loop is named run_loop, waits in io_uring, polls per connection: %s"
      % (loops[-1:] or "no LoopEvent"))
report = json.loads(subprocess.run([d9, "analyze", "--json", path], check=True,
                                   capture_output=True, text=True).stdout)
runtimes = [w.get("runtime") for w in report["workers"]]
check(runtimes == ["run_loop (d9p_raw_uring_server)"],
      "one worker, its runtime the loop's name: %s" % runtimes)

durations, open_poll = [], {}
for e in sorted((e for e in t.events if e["event"] in ("PollStartEvent", "PollEndEvent")),
                key=lambda e: e["ts"]):
    w = e["fields"]["worker_id"]
    if e["event"] == "PollStartEvent":
        open_poll[w] = e
    elif w in open_poll:
        s = open_poll.pop(w)
        durations.append((e["ts"] - s["ts"], s["fields"]["task_id"]))
check(not open_poll, "every poll ended")
for pair in (("WorkerParkEvent", "WorkerUnparkEvent"), ("PollStartEvent", "PollEndEvent")):
    seq = [e["event"] for e in sorted((e for e in t.events if e["event"] in pair), key=lambda e: e["ts"])]
    bad = sum(1 for i, e in enumerate(seq) if e != pair[i % 2])
    check(seq and bad == 0, "%s and %s alternate (%d events, %d out of turn)"
          % (pair[0], pair[1], len(seq), bad))
check(0 < len(t.parks) <= waits, "%d parks, at most one per wait of the server's (%d)"
      % (len(t.parks), waits))

accepts = [s for s in t.spawns if s["spawn_loc"].startswith("accept on 127.0.0.1:")]
check(len(accepts) == 3, "3 connections spawned at their listening address (%d)" % len(accepts))
task = {c: s["task_id"] for c, s in zip("ABC", accepts)}
check(len(set(task.values())) == 3, "A, B, C are 3 tasks")
for k, n in (("A", 4), ("B", 4), ("C", 3)):
    polls = sum(1 for p in t.polls if p["task_id"] == task[k])
    wakes = sum(1 for w in t.wakes if w["woken_task_id"] == task[k] and w["waker_task_id"] == 0)
    check(polls == n, "%s's %d requests are %d polls of its task" % (k, n, polls))
    locs = {p["spawn_loc"] for p in t.polls if p["task_id"] == task[k]}
    check(locs == {accepts[0]["spawn_loc"]},
          "%s's polls name where its task was spawned, not the loop: %s" % (k, sorted(locs)))
    check(wakes == n, "%s woken by its %d completions (%d)" % (k, n, wakes))
longest = max(durations)
check(longest[1] == task["B"], "the longest poll (%.1f ms) is B's slow request" % (longest[0] / 1e6))
terminated = {e["fields"]["task_id"] for e in t.of("TaskTerminateEvent")}
check(all(task[k] in terminated for k in "ABC"),
      "A's, B's (close) and C's (IORING_OP_CLOSE) tasks end")
states = [e["fields"]["state"] for e in t.of("IoUringRingEvent")]
check(states == ["set up"], "the ring is said set up through syscall(), never unseen: %s" % states)
err = open(os.path.join(dir_, "err")).read()
check("never waited" not in err, "nothing on stderr says the ring was never waited on")
text = subprocess.run([d9, "analyze", os.path.join(traces, runs[0])], check=True,
                      capture_output=True, text=True).stdout
check("never waited on" not in text, "analyze does not say the ring was never waited on")
PY
echo "ok: syscall"

if raw_loop inline; then
    grep -q "^dial9: io_uring ring (fd [0-9]*) was set up through syscall() but never waited on" \
        "$WORK/inline/err" || fail "inline: stderr does not say the ring's waits are unseen: $(cat "$WORK/inline/err")"
    echo "ok: inline: stderr says the ring's waits are not seen"
    python3 - "$D9" "$WORK/inline" <<'PY' || exit 1
import json, os, subprocess, sys
sys.path.insert(0, os.environ["D9_SOURCE_DIR"] + "/tests/preload")
from trace_facts import Trace, check
d9, dir_ = sys.argv[1:]
traces = os.path.join(dir_, "traces")
runs = [r for r in sorted(os.listdir(traces)) if not r.startswith(".")]
t = Trace(d9, os.path.join(traces, runs[0]))
check(not t.polls and not t.of("LoopEvent"), "inline: no poll, no loop (%d polls)" % len(t.polls))
ev = [e["fields"] for e in t.of("IoUringRingEvent")]
check([f["state"] for f in ev] == ["set up", "never waited through a call the shim sees"]
      and ev[-1]["waits_seen"] == 0 and ev[-1]["set_up_by"] == "syscall()",
      "inline: the trace says the ring set up through syscall() was never waited on: %s" % ev)
# what the user reads: analyze says it, with the ring's fd, in its text and its JSON flags
fd = ev[-1]["ring_fd"]
text = subprocess.run([d9, "analyze", os.path.join(traces, runs[0])], check=True,
                      capture_output=True, text=True).stdout
said = "io_uring ring at fd %d was never waited on where the shim could see it: its completions " \
       "are not recorded" % fd
check(said in text, "inline: analyze says %r:\n%s" % (said, text[-1500:]))
report = json.loads(subprocess.run([d9, "analyze", "--json", os.path.join(traces, runs[0])],
                                   check=True, capture_output=True, text=True).stdout)
check([f.get("title") for f in report.get("red_flags", []) if f.get("code") == "unseen_io_uring"] == [said],
      "inline: analyze --json flags unseen_io_uring: %s" % report.get("red_flags"))
PY
fi
echo "PASS: io_uring through syscall(): iterations are polls, one per connection; unseen waits are said"
