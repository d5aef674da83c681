#!/bin/bash
# redis-server (Debian: its own `ae` epoll loop, no loop library) under `dial9 run` with CPU
# profiling, on one client connection: 200 GETs, then three EVALs of a Lua script that
# busy-loops ~80 ms of CPU (every other client would wait), then 20 GETs more. Without any change
# to redis, the trace must show:
#   - the loop named (LoopEvent: a function of redis-server, polls per connection), one worker
#     (redis' background threads only wait on condition variables: not loops) whose runtime
#     is the loop's name, in analyze --json and stats --json, not "epoll": "aeProcessEvents
#     (redis-server)" (Debian's redis-server is stripped and the poller's caller is
#     aeProcessEvents' static body, aeProcessEvents.part.0 of GCC's partial inlining, which
#     aeMain calls directly: named by the exported aeProcessEvents that jumps to it) where the
#     build is one the shim can name, else "redis-server epoll loop";
#   - the client's connection one task spawned at "accept on 127.0.0.1:<port>", with at least
#     one poll per request (each located there, as analyze shows it) and a readiness wake per
#     request;
#   - the three EVALs the three polls with the most CPU time (by wall time, a short poll
#     preempted on a loaded host can outlast them: scheduling delays of ~120 ms were seen at a
#     load of 10 on 2 CPUs), each lasting at least what the script measured itself (redis TIME;
#     what the client measured around it is printed next to it);
#   - the CPU samples inside them naming the script's code (Lua's VM or redis' eval).
# Counted, never timed: the bounds above hold on any machine load.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
apt_need redis-server
REDIS=$(command -v redis-server || echo /usr/bin/redis-server)
[ -x "$REDIS" ] || skip "redis-server not found after install"

port=$(free_port)
cd "$WORK"
"$D9" run -d "$WORK/traces" -e DIAL9_CPU_PROFILE_ENABLED=1 -- \
    "$REDIS" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    >"$WORK/server.out" 2>"$WORK/server.err" &
server=$!
D9T_PIDS+=("$server")
wait_port "$port" tcp 30 || fail "redis did not listen on 127.0.0.1:$port: $(cat "$WORK/server.out" "$WORK/server.err")"

# The client: RESP over one socket; each EVAL timed around its round trip (monotonic ns).
python3 - "$port" >"$WORK/client.out" <<'PY' || fail "client: $(cat "$WORK/client.out")"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb")
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    line = f.readline()
    if line[:1] == b"$" and int(line[1:]) >= 0:
        f.read(int(line[1:]) + 2)
    if line[:1] == b"-":
        raise SystemExit("redis error: %r" % line)
    return line
# a fixed amount of work (40 000 calls of TIME, ~80 ms of CPU here), so that the script's CPU
# time and the profile's samples inside it do not shrink with the host's load (a loop until
# 80 ms of wall time had passed got 4 samples at a load of 9, half of them outside the script:
# its reply's write, an allocator frame); returns the microseconds it took by the server's clock
SCRIPT = ("local t0 = redis.call('TIME') for i = 1, 40000 do redis.call('TIME') end "
          "local t = redis.call('TIME') return (t[1] - t0[1]) * 1000000 + (t[2] - t0[2])")
requests = 0
cmd("SET", "k", "v"); requests += 1
for _ in range(200):
    cmd("GET", "k"); requests += 1
for _ in range(3):
    t0 = time.monotonic_ns()
    reply = cmd("EVAL", SCRIPT, "0")
    t1 = time.monotonic_ns()
    requests += 1
    print("eval %d %d" % (int(reply[1:]) * 1000, t1 - t0))
for _ in range(20):
    cmd("GET", "k"); requests += 1
print("requests %d" % requests)
PY

stop_server "$server"
D9T_PIDS=()
[ "$STATUS" = 0 ] || fail "dial9 run exited $STATUS (redis: $(tail -3 "$WORK/server.out"))"
grep "^dial9 run:" "$WORK/server.err" | sed 's/^/  /'
run_dir="$WORK/traces/$(ls "$WORK/traces" | head -n 1)"
"$D9" symbolize -q "$run_dir" >"$WORK/symbolize" 2>&1 || fail "dial9 symbolize: $(tail -3 "$WORK/symbolize")"

# the loop's module is the program's name as started (Debian's redis-server is a link to
# redis-check-rdb, and redis rewrites its argv[0] as a title)
python3 - "$D9" "$run_dir" "$FACTS" "$WORK/client.out" "$(basename "$REDIS")" <<'EOF'
import json, os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, run, _, client, module = sys.argv[1:]
t = Trace(d9, run)
print("  " + t.summary())
evals = [tuple(map(int, l.split()[1:])) for l in open(client) if l.startswith("eval ")]
requests = int(re.search(r"requests (\d+)", open(client).read()).group(1))

loops = [e["fields"] for e in t.of("LoopEvent")]
check(loops and loops[-1]["module"] == module and loops[-1]["function"] and loops[-1]["polls"] == "connection",
      "the loop is named, polls per connection: %s" % (loops[-1:] or "no LoopEvent"))
exact = loops[-1].get("named_by") in ("dynamic symbol", "symbol table", "exported entry")
# Debian 12's redis-server 7.0 (x86-64): its ae loop by name, not only "redis-server epoll loop"
if os.uname().machine == "x86_64" and "deb12" in subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "redis-server"], capture_output=True, text=True).stdout:
    check(loops[-1]["function"] == "aeProcessEvents", "Debian 12's redis: the loop is aeProcessEvents (%s, %s)"
          % (loops[-1]["function"], loops[-1].get("named_by")))
loop_name = "%s (%s)" % (loops[-1]["function"], module) if exact else "%s epoll loop" % module
check(len(t.of("WorkerRegisteredEvent")) == 1 and t.workers_of(loop_name),
      "one worker, the ae loop's thread, of runtime %r (background threads are not loops)"
      % loop_name)
# every reader names the worker's runtime after the loop (the runtime.<name> metadata)
report = json.loads(subprocess.run([d9, "analyze", "--json", run], check=True,
                                   capture_output=True, text=True).stdout)
runtimes = [w.get("runtime") for w in report["workers"]]
check(runtimes == [loop_name],
      "analyze --json: the worker's runtime is the loop's name: %s" % runtimes)
stats = json.loads(subprocess.run([d9, "stats", "--json", run], check=True,
                                  capture_output=True, text=True).stdout)
check(stats.get("runtimes") == {loop_name: [0]}, "stats --json: runtimes %s" % stats.get("runtimes"))

conns = [s["task_id"] for s in t.spawns if s["spawn_loc"].startswith("accept on 127.0.0.1:")]
check(len(conns) >= 1, "the client's connection is a task spawned at its listening address")
conn = conns[-1]  # the client's (a readiness probe before it may have connected too)
conn_polls = sum(1 for p in t.polls if p["task_id"] == conn)
wakes = sum(1 for w in t.wakes if w["woken_task_id"] == conn and w["waker_task_id"] == 0)
check(conn_polls >= requests, "%d polls of the connection for %d requests" % (conn_polls, requests))
check(wakes >= requests, "%d readiness wakes of the connection for %d requests" % (wakes, requests))

open_poll, polls = {}, []
for e in sorted((e for e in t.events if e["event"] in ("PollStartEvent", "PollEndEvent")),
                key=lambda e: e["ts"]):
    w = e["fields"]["worker_id"]
    if e["event"] == "PollStartEvent":
        open_poll[w] = e
    elif w in open_poll:
        s = open_poll.pop(w)
        polls.append((e["ts"] - s["ts"], s["ts"], e["ts"], s["fields"]["task_id"]))
# redis exits from inside its loop (SIGTERM: serverCron's shutdown calls exit): its last poll
# ends at exit
check(not open_poll, "every poll ended, the last one at redis' exit (%d open)" % len(open_poll))
# a long poll's exact CPU time (PollCpuEvent, when the thread was switched out inside it) comes
# right after its end, where every reader pairs it (it came before the end when the loop's wait
# ended the poll with its park, d9__poll_end_park, and was read as the previous poll's)
order = [e for e in t.events if e["event"] in ("PollStartEvent", "PollEndEvent", "WorkerParkEvent",
                                               "WorkerUnparkEvent", "PollCpuEvent")]
cpu_of, stray = {}, 0
for prev, e in zip(order, order[1:]):
    if e["event"] == "PollCpuEvent":
        if prev["event"] == "PollEndEvent":
            cpu_of[prev["ts"]] = e["fields"]["cpu_time_ns"]
        else:
            stray += 1
check(stray == 0, "every PollCpuEvent (%d) right after its poll's end" % (len(cpu_of) + stray))
# A poll's CPU time: its PollCpuEvent when it was switched out inside (a poll of 1 ms or more),
# else its wall time (no switch inside, or shorter than 1 ms: at most that).
def cpu_time(p):
    return cpu_of.get(p[2], p[0])
polls.sort(key=cpu_time, reverse=True)
top = sorted(polls[:3], key=lambda p: p[1])
spawn_of = {s["task_id"]: s["spawn_loc"] for s in t.spawns}
check(all(p[3] == conn for p in top), "the three polls with the most CPU time are the connection's (%s)"
      % "; ".join("%.2f ms on CPU of %.2f ms, task %d (%s)" % (cpu_time(p) / 1e6, p[0] / 1e6, p[3],
                                                            spawn_of.get(p[3], "?")) for p in polls[:5]))
# analyze's LONG POLLS and poll time by spawn location show where a poll's task was spawned:
# the connection's polls name its listening address, not the loop
conn_loc = spawn_of[conn]
locs = {p["spawn_loc"] for p in t.polls if p["task_id"] == conn}
check(locs == {conn_loc}, "the connection's polls are located at %r: %s" % (conn_loc, sorted(locs)))
for (dur, _, end, _), (script_ns, client_ns) in zip(top, evals):
    # the poll also holds the reply's write and redis' housekeeping before its next
    # epoll_wait, after the client may have its answer, and on a busy host the preemption
    # there (its CPU time says how much of it was on CPU): the client's time is a figure here
    cpu = " (on CPU %.2f ms)" % (cpu_of[end] / 1e6) if end in cpu_of else " (no switch inside)"
    check(script_ns <= dur, "EVAL: poll %.2f ms%s, at least the script's own %.2f ms (client: %.2f ms, "
          "the poll %.1f %% of it)" % (dur / 1e6, cpu, script_ns / 1e6, client_ns / 1e6, 100.0 * dur / client_ns))
# the scripts' busy loops stand apart: every other poll had under half the CPU time of the least
check(len(polls) < 4 or 2 * cpu_time(polls[3]) < min(cpu_time(p) for p in top),
      "every other poll had under half the scripts' CPU time (next: %.2f ms, the scripts' least: %.2f ms)"
      % (cpu_time(polls[3]) / 1e6 if len(polls) > 3 else 0, min(cpu_time(p) for p in top) / 1e6))

# the CPU samples inside the EVAL polls name the script's code
names = {}
for e in t.of("SymbolTableEntry"):
    names.setdefault(e["fields"]["addr"], e["fields"]["symbol_name"])
inside = [e for e in t.of("CpuSampleEvent")
          if e["fields"]["source"] == 0 and any(s <= e["ts"] <= end for _, s, end, _ in top)]
def named(e):
    return [names.get(int(a, 16), "") for a in e["fields"]["callchain"]]
script = [e for e in inside if any(re.search(r"^lua|eval", n) for n in named(e))]
check(len(inside) >= 1, "CPU samples inside the EVAL polls (%d)" % len(inside))
check(len(script) * 2 > len(inside), "%d of %d of them name the script's code (%s)"
      % (len(script), len(inside), ", ".join(sorted({n for e in script for n in named(e) if re.search(r"^lua|eval", n)})[:5])))
EOF
[ $? -eq 0 ] || exit 1
echo "PASS"
