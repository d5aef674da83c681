#!/bin/bash
# nginx (Debian: its own epoll loop, a master process that forks worker processes) serving a
# static file under wrk, recorded with `dial9 run` (no --children: a forked worker process starts
# its run once it runs a loop, or before it changes its user). Run as root where it can (the
# workers then take Debian's default `user www-data;`), else as the user it is. Without any
# change to nginx:
#   - each worker's run begins as root and is handed to www-data (its directory and files are
#     www-data's), with no complaint in nginx's error.log;
#   - each of the 2 worker processes is a run of its own with a loop (LoopEvent) and polls,
#     per connection where it served some (nginx's epoll event data is a pointer, so each
#     iteration starts as the loop's own poll and its first recv on a connection starts that
#     connection's poll, or, as the pointer was registered for the fd with epoll_ctl, the
#     first connection's poll, with a readiness wake of each connection returned ready);
#     the master, which only waits for signals, has none; the loop is named from nginx's
#     .symtab (ngx_epoll_process_events) or, stripped as Debian ships it, honestly after the
#     program and its poller ("nginx epoll loop", the runtime analyze shows), its LoopEvent
#     keeping the nearest exported caller with its frame's offset ("ngx_spawn_process+0x2b3");
#   - every run's service is "nginx", the program as started (nginx writes its process title
#     over argv[0] before it forks its workers);
#   - every connection nginx served (the serial numbers in its access log) is one task,
#     spawned at "accept on 127.0.0.1:<port>" in the worker that accepted it (the polls per
#     request are printed).
# Counted, never timed: wrk's duration only sets how many requests there are.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
apt_need nginx-light wrk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || skip "nginx not found after install"
command -v wrk >/dev/null || skip "wrk not found after install"

CONNS=4
# Debian's default: the master runs as root, its workers as www-data (reading the files served)
user_line="user www-data;" workers_uid=$(id -u)
if [ "$(id -u)" = 0 ]; then
    getent passwd www-data >/dev/null || skip "no user www-data (Debian's nginx workers' user)"
    workers_uid=$(id -u www-data)
    chmod 755 "$WORK" # www-data reads $WORK/www; nothing here is writable to it
else
    user_line="" # not root: nginx ignores the user line and runs its workers as this user
fi
port=$(free_port)
mkdir -p "$WORK/www" "$WORK/logs"
head -c 4096 /dev/zero | tr '\0' x >"$WORK/www/index.html"
cat >"$WORK/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
$user_line
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log;
events { worker_connections 64; }
http {
    log_format conn '\$connection';
    access_log $WORK/logs/access.log conn;
    keepalive_requests 100000000;
    keepalive_timeout 60s;
    server {
        listen 127.0.0.1:$port;
        root $WORK/www;
    }
}
EOF
cd "$WORK"
"$D9" run -d "$WORK/traces" -- "$NGINX" -c "$WORK/nginx.conf" -p "$WORK" \
    >"$WORK/server.out" 2>"$WORK/server.err" &
server=$!
D9T_PIDS+=("$server")
wait_port "$port" tcp 30 || fail "nginx did not listen on 127.0.0.1:$port: $(cat "$WORK/server.err" "$WORK/logs/error.log")"

timeout 60 wrk -t 1 -c "$CONNS" -d 2s "http://127.0.0.1:$port/index.html" >"$WORK/wrk.out" 2>&1 ||
    fail "wrk: $(cat "$WORK/wrk.out")"
sed 's/^/  wrk: /' "$WORK/wrk.out" | grep -E "requests in|Non-2xx|Socket errors"
grep -qE "Non-2xx|Socket errors" "$WORK/wrk.out" && fail "wrk saw errors: $(cat "$WORK/wrk.out")"
requests=$(sed -nE 's/^ *([0-9]+) requests in.*/\1/p' "$WORK/wrk.out")
[ -n "$requests" ] || fail "no request count from wrk: $(cat "$WORK/wrk.out")"

stop_server "$server"
D9T_PIDS=()
grep "^dial9 run:" "$WORK/server.err" | sed 's/^/  /'

# the connections nginx served: the distinct serial numbers in its access log
conns=$(sort -u "$WORK/logs/access.log" | wc -l)
# what a worker that could not begin its run says (nginx's stderr is its error.log)
grep -E "dial9: (recording disabled|.*cannot)" "$WORK/logs/error.log" &&
    fail "the recorder complained in nginx's error.log"
python3 - "$D9" "$WORK/traces" "$FACTS" "$requests" "$conns" "$workers_uid" <<'PY'
import os, re, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, root, _, requests, conns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
workers_uid = int(sys.argv[6])
import json, subprocess
paths = [os.path.join(root, r) for r in sorted(os.listdir(root)) if not r.startswith(".")]
runs = [Trace(d9, p) for p in paths]
path_of = {id(t): p for t, p in zip(runs, paths)}
loops = [t for t in runs if t.of("LoopEvent")]
check(len(runs) == 3, "3 runs: the master and its 2 workers (%d)" % len(runs))
check(len(loops) == 2, "2 runs with a loop: the workers (%d)" % len(loops))
# every run is of the service as started, not of the title nginx wrote over its argv[0]
services = sorted({t.meta.get("service") for t in runs})
check(services == ["nginx"], "every run's service is nginx: %s" % services)
accepted, served, conn_polls, conn_wakes, split = 0, 0, 0, 0, 0
for t in loops:
    last = [e["fields"] for e in t.of("LoopEvent")][-1]
    print("  worker %s: %s" % (t.meta.get("pid"), t.summary()))
    run = path_of[id(t)]
    owners = {os.stat(run).st_uid} | {os.stat(os.path.join(run, f)).st_uid for f in os.listdir(run)}
    check(owners == {workers_uid}, "worker %s: its run and files are the workers' user's (uid %s): %s"
          % (t.meta.get("pid"), workers_uid, sorted(owners)))
    # which worker accepts which connection is the kernel's choice: a worker may get none,
    # but every worker's loop runs iterations (at least its master's stop command)
    check(last["module"] == "nginx" and len(t.polls) > 0, "worker %s: its loop (%s in %s) has %d polls, "
          "per %s" % (t.meta.get("pid"), last["function"], last["module"], len(t.polls), last["polls"]))
    # the poller's caller, ngx_epoll_process_events, is static: named from .symtab when the
    # binary has one, else honestly as a frame of its nearest exported caller (Debian's is
    # stripped: "ngx_spawn_process+0x2b3")
    named = (last.get("named_by") == "symbol table" and last["function"] == "ngx_epoll_process_events") or \
            (last.get("named_by") == "nearest exported caller" and re.match(r"ngx_\w+\+0x[0-9a-f]+$", last["function"]))
    check(named, "worker %s: the loop's name %r says how it was found (%s)"
          % (t.meta.get("pid"), last["function"], last.get("named_by")))
    # what analyze shows: the function where it is known, else honestly the program and its
    # poller, never a frame above the loop as if it were the loop ("ngx_spawn_process+0x2b3")
    loop_name = ("ngx_epoll_process_events (nginx)" if last.get("named_by") == "symbol table"
                 else "nginx epoll loop")
    report = json.loads(subprocess.run([d9, "analyze", "--json", path_of[id(t)]], check=True,
                                       capture_output=True, text=True).stdout)
    text = subprocess.run([d9, "analyze", path_of[id(t)]], check=True, capture_output=True, text=True).stdout
    check([w.get("runtime") for w in report["workers"]] == [loop_name] and
          "  worker 0: runtime %s\n" % loop_name in text,
          "worker %s: analyze names its runtime %r: %s" % (t.meta.get("pid"), loop_name,
                                                           [w.get("runtime") for w in report["workers"]]))
    # a worker exits from its loop (the master's stop signal): its last poll ends at exit
    starts, ends = len(t.of("PollStartEvent")), len(t.of("PollEndEvent"))
    check(starts == ends, "worker %s: every poll ended (%d starts, %d ends)" % (t.meta.get("pid"), starts, ends))
    tasks = {s["task_id"] for s in t.spawns if s["spawn_loc"].startswith("accept on 127.0.0.1:")}
    accepted += len(tasks)
    polls = {k: 0 for k in tasks}
    for p in t.polls:
        if p["task_id"] in polls:
            polls[p["task_id"]] += 1
    conn_polls += sum(polls.values())
    conn_wakes += sum(1 for w in t.wakes if w["woken_task_id"] in tasks and w["waker_task_id"] == 0)
    # a connection that served requests has a poll per request and one for its close; wrk's
    # probe of the address, before its load, is accepted and closed without a request
    served += sum(1 for n in polls.values() if n >= 2)
    split += last["polls"] == "connection" and sum(polls.values()) > 0
check(served == conns, "one task per connection: %d tasks with requests (of %d accepted) for the %d "
      "connections nginx logged" % (served, accepted, conns))
# nginx's event data is a pointer: the fd comes from what epoll_ctl registered with it
check(conn_wakes >= served, "%d readiness wakes of the connections" % conn_wakes)
check(split >= 1, "the workers that served connections polled per connection (%d)" % split)
# a request that arrives while nginx still reads its connection after an answer is served
# in the same poll: the ratio is a figure, not a bound
check(conn_polls > served, "%d polls of the connections (%.2f per request of wrk's %d)"
      % (conn_polls, conn_polls / max(requests, 1), requests))
PY
[ $? -eq 0 ] || exit 1
echo "PASS"
