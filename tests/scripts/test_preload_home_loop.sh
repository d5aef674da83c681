#!/bin/bash
# A home-grown event loop (no loop library) recorded zero-code: its iterations are polls, one
# per connection. tests/preload/d9p_loop_server runs a small epoll (epoll_pwait2, poll)
# server and a client thread that never polls; one request of connection B sleeps 200 ms in
# its handler, all others answer at once. Under `dial9 run`, in each mode:
#   - the loop is named (LoopEvent: run_loop, polls per connection), the one worker is its thread,
#     and its runtime is the loop's name: `dial9 analyze --json` and `stats --json` say
#     "run_loop (d9p_loop_server)", not "epoll" (the runtime.<name> metadata every reader reads),
#     and analyze's text says "worker 0: runtime run_loop (d9p_loop_server)";
#   - each accepted connection is a task spawned at "accept on 127.0.0.1:<port>" (accept4 in
#     the epoll modes, accept in poll mode), and each of its requests is exactly one poll of
#     that task, woken by the poller's readiness (a WakeEvent per request);
#   - the longest poll is B's slow request;
#   - C, accepted on A's old fd number after A closed, is a new task; A's task terminated;
#   - every poll ended: the loop's last iteration, still running when the program exits, too.
# Mode static: epoll_wait called from a static function: the loop is named from the program's
# .symtab (named_by "symbol table"), and, run from a stripped copy, honestly after the program
# and its poller ("d9p_loop_server_stripped epoll loop", the worker's runtime in every reader),
# LoopEvent keeping its nearest exported caller with its frame's offset ("run_loop+0x...",
# named_by "nearest exported caller") as a detail.
# Mode split: epoll_wait called from the static body ("wait_split_body.part.0") of a function the
# program exports as a jump to it (GCC's partial inlining: redis' aeProcessEvents), the body
# called directly: named from .symtab (the clone's suffix dropped), and, stripped, after the
# exported function that enters the body (named_by "exported entry"): "wait_split_body
# (d9p_loop_server_stripped)", the runtime every reader shows.
# Mode fork: two forked worker processes, each a run of its own with the same facts, without
# --children (a forked child starts its run once it runs a loop).
# Counted, never timed: the only duration compared is the slow handler's 200 ms sleep against
# handlers that do nothing.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"

SERVER="$HELPERS/d9p_loop_server"
[ -x "$SERVER" ] || fail "$SERVER not built"

# home_loop MODE [SERVER] [dial9 run options]
home_loop() {
    local mode=$1 server=${2:-$SERVER}
    shift
    [ $# -gt 0 ] && shift
    local dir="$WORK/$mode-$(basename "$server")"
    mkdir -p "$dir"
    timeout 120 "$D9" run -d "$dir/traces" "$@" -- "$server" "$mode" >"$dir/out" 2>"$dir/err"
    local rc=$?
    if [ $rc -eq 3 ] && grep -qE "no epoll_pwait2|no split mode" "$dir/out"; then
        echo "note: $(head -1 "$dir/out"): mode $mode not checked"
        return
    fi
    [ $rc -eq 0 ] || fail "$mode: exit status $rc under dial9 run: $(cat "$dir/err")"
    python3 - "$D9" "$dir/traces" "$dir/out" "$mode" "$(basename "$server")" <<'PY' || exit 1
import json, os, re, subprocess, sys
sys.path.insert(0, os.environ["D9_SOURCE_DIR"] + "/tests/preload")
from trace_facts import Trace, check
d9, traces, out, mode, program = sys.argv[1:]
# the loop's function and how it is named: exported, from .symtab (a static function), or,
# stripped, the nearest exported caller with the offset of its frame
if mode == "split":
    want_fn = re.compile(r"wait_split_body$")
    want_by = "exported entry" if program.endswith("_stripped") else "symbol table"
elif mode != "static":
    want_fn, want_by = re.compile(r"run_loop$"), "dynamic symbol"
elif program.endswith("_stripped"):
    want_fn, want_by = re.compile(r"run_loop\+0x[0-9a-f]+$"), "nearest exported caller"
else:
    want_fn, want_by = re.compile(r"wait_for_events$"), "symbol table"

# what the server said, per process (fork mode: two workers print interleaved, but each
# worker's lines are in order and its 3 "accepted" lines come before its "done")
lines = open(out).read().split()
runs = []
for run in sorted(r for r in os.listdir(traces) if not r.startswith(".")):
    t = Trace(d9, os.path.join(traces, run))
    if t.of("LoopEvent") or t.polls:
        runs.append((run, t))
check(len(runs) == (2 if mode == "fork" else 1),
      "%s: %d run(s) with a loop" % (mode, len(runs)))

for run, t in runs:
    name = "%s (%s)" % (mode, run)
    loops = [e["fields"] for e in t.of("LoopEvent")]
    check(loops and want_fn.match(loops[-1]["function"]) and loops[-1].get("named_by") == want_by
          and loops[-1]["module"] == program and loops[-1]["polls"] == "connection",
          "%s: the loop is named %s (%s), polls per connection: %s"
          % (name, want_fn.pattern, want_by, loops[-1:] or "no LoopEvent"))
    # an exact function names the runtime; a frame above it does not: the program and its
    # poller do, honestly ("d9p_loop_server_stripped epoll loop")
    poller = "poll" if mode == "poll" else "epoll"
    loop_name = ("%s %s loop" % (program, poller) if want_by == "nearest exported caller"
                 else "%s (%s)" % (loops[-1]["function"], program))
    check(len(t.of("WorkerRegisteredEvent")) == 1,
          "%s: one worker, the loop thread (the client thread never polls)" % name)
    report = json.loads(subprocess.run([d9, "analyze", "--json", os.path.join(traces, run)],
                                       check=True, capture_output=True, text=True).stdout)
    runtimes = [w.get("runtime") for w in report["workers"]]
    check(runtimes == [loop_name],
          "%s: analyze --json names the worker's runtime after the loop: %s" % (name, runtimes))
    text = subprocess.run([d9, "analyze", os.path.join(traces, run)], check=True,
                          capture_output=True, text=True).stdout
    check("  worker 0: runtime %s\n" % loop_name in text,
          "%s: analyze's text names worker 0's runtime after the loop" % name)
    stats = json.loads(subprocess.run([d9, "stats", "--json", os.path.join(traces, run)],
                                      check=True, capture_output=True, text=True).stdout)
    check(stats.get("runtimes") == {loop_name: [0]},
          "%s: stats --json names the loop's runtime: %s" % (name, stats.get("runtimes")))

    # polls with their durations, paired per worker (start, then the worker's next end)
    ends = {}
    durations = []
    events = sorted((e for e in t.events if e["event"] in ("PollStartEvent", "PollEndEvent")),
                    key=lambda e: e["ts"])
    open_poll = {}
    for e in events:
        w = e["fields"]["worker_id"]
        if e["event"] == "PollStartEvent":
            open_poll[w] = e
        elif w in open_poll:
            s = open_poll.pop(w)
            durations.append((e["ts"] - s["ts"], s["fields"]["task_id"]))

    accepts = [s for s in t.spawns if s["spawn_loc"].startswith("accept on 127.0.0.1:")]
    check(len(accepts) == 3, "%s: 3 connections spawned at their listening address (%d)"
          % (name, len(accepts)))
    task = {c: s["task_id"] for c, s in zip("ABC", accepts)}
    check(len(set(task.values())) == 3, "%s: A, B, C are 3 tasks" % name)
    polls_of = lambda k: sum(1 for p in t.polls if p["task_id"] == task[k])
    wakes_of = lambda k: sum(1 for w in t.wakes if w["woken_task_id"] == task[k] and w["waker_task_id"] == 0)
    for k, n in (("A", 6), ("B", 4), ("C", 4)):
        check(polls_of(k) == n, "%s: %s's %d requests are %d polls of its task" % (name, k, n, polls_of(k)))
        check(wakes_of(k) == n, "%s: %s woken ready %d times (%d)" % (name, k, n, wakes_of(k)))
    check(not open_poll, "%s: every poll ended, the last one at exit (%d open)" % (name, len(open_poll)))
    longest = max(durations)
    check(longest[1] == task["B"], "%s: the longest poll (%.1f ms) is B's slow request"
          % (name, longest[0] / 1e6))
    # the iteration's poll ends with the park of the loop's next wait, in every mode (one hook
    # call and record, d9__poll_end_park: the epoll fast path's since 2026-12-06, the poll()
    # loop's and an epoll loop's first waits' since 2026-12-07): most parks have a poll's end at
    # their very time (not the first wait, nor one after an iteration whose connection closed)
    end_ts = {e["ts"] for e in t.of("PollEndEvent")}
    fused = sum(p["ts"] in end_ts for p in t.parks)
    check(len(t.parks) >= 10 and fused >= 0.5 * len(t.parks),
          "%s: %d of %d parks end the iteration's poll at their time" % (name, fused, len(t.parks)))
    terminated = [e["fields"]["task_id"] for e in t.of("TaskTerminateEvent")]
    check(task["A"] in terminated and task["C"] in terminated,
          "%s: A's and C's tasks end when their fds close" % name)

fds = {}
for m in re.finditer(r"accepted (\w) (\d+)", open(out).read()):
    fds.setdefault(m.group(1), set()).add(int(m.group(2)))
check(fds.get("A") == fds.get("C"), "%s: C was accepted on A's old fd number %s (a new task above)"
      % (mode, sorted(fds.get("A", ()))))
PY
    echo "ok: $mode"
}

home_loop epoll
home_loop pwait2
home_loop poll
home_loop fork
home_loop static
home_loop split
# stripped: no .symtab, the static function's nearest exported caller names the loop, or the
# exported function that enters its body
if command -v strip >/dev/null; then
    strip -o "$WORK/d9p_loop_server_stripped" "$SERVER" || fail "strip $SERVER"
    home_loop static "$WORK/d9p_loop_server_stripped"
    home_loop split "$WORK/d9p_loop_server_stripped"
else
    echo "note: no strip (binutils): the stripped program's loop name not checked"
fi
echo "PASS: a home-grown loop's iterations are polls, one per connection"
