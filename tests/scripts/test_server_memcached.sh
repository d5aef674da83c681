#!/bin/bash
# memcached (libevent: one event base per worker thread, a dispatcher thread that accepts and
# hands each connection to a worker through an eventfd) under `dial9 run`, loaded with
# memcslap on 127.0.0.1 for a few seconds. The trace must show, without any change to
# memcached: a libevent worker per thread, per-connection polls on each worker, parks with
# kernel scheduling delays, and the dispatcher's wakes reaching the workers' notify events.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
apt_need memcached libmemcached-tools
MEMCACHED=$(command -v memcached || echo /usr/bin/memcached)
MEMCSLAP=$(command -v memcslap || command -v memaslap || true)
[ -x "$MEMCACHED" ] || skip "memcached not found after install"
[ -n "$MEMCSLAP" ] || skip "memcslap not found after install"
grep -q 'libevent' <<<"$(ldd "$MEMCACHED")" || skip "this memcached does not use the shared libevent"

THREADS=4
port=$(free_port)
cd "$WORK"
"$D9" run -d "$WORK/traces" -e DIAL9_FLUSH_MS=10 -- \
    "$MEMCACHED" -u root -l 127.0.0.1 -p "$port" -U 0 -t "$THREADS" -c 512 -m 64 \
    >"$WORK/server.out" 2>"$WORK/server.err" &
server=$!
D9T_PIDS+=("$server")
wait_port "$port" tcp 15 || fail "memcached did not listen on 127.0.0.1:$port: $(cat "$WORK/server.err")"

# three short rounds: each opens new connections, which the dispatcher hands to the workers
for round in 1 2 3; do
    timeout 30 "$MEMCSLAP" --servers="127.0.0.1:$port" --concurrency=16 --execute-number=600 \
        --binary >"$WORK/load.$round" 2>&1 || fail "memcslap round $round: $(tail -3 "$WORK/load.$round")"
done
grep -h "Time to set" "$WORK"/load.* | sed 's/^/  memcslap: /'

stop_server "$server"
D9T_PIDS=()
# memcached handles SIGTERM itself and exits 0
[ "$STATUS" = 0 ] || fail "dial9 run exited $STATUS (memcached: $(tail -3 "$WORK/server.err"))"
grep -q "^dial9 run: trace in " "$WORK/server.err" || fail "no summary from dial9 run: $(cat "$WORK/server.err")"
grep "^dial9 run:" "$WORK/server.err" | sed 's/^/  /'
"$D9" stats "$WORK/traces" >"$WORK/stats" || fail "dial9 stats: $(tail -3 "$WORK/stats")"

python3 - "$D9" "$WORK/traces" "$FACTS" "$THREADS" <<'EOF'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, root, threads = sys.argv[1], sys.argv[2], int(sys.argv[4])
runs = sorted(r for r in os.listdir(root) if not r.startswith("."))  # runs, not the hidden files beside them
check(len(runs) == 1, "one run (%s)" % runs)
t = Trace(d9, os.path.join(root, runs[0]))
print("  " + t.summary())
check(t.meta.get("source.libevent", "").startswith("active"), "source.libevent: " + t.meta.get("source.libevent", "?"))

pid = int(t.meta["pid"])
loop_workers = t.workers_of("libevent")
dispatcher = [w for w in loop_workers if t.workers[w][2] == pid]
workers = [w for w in loop_workers if t.workers[w][2] != pid]
check(len(dispatcher) == 1, "the main thread (dispatcher) is a libevent worker")
check(len(workers) == threads, "%d worker threads are libevent workers (%d)" % (threads, len(workers)))

polls = t.polls_by_worker()
for w in workers:
    tasks = {p["task_id"] for p in polls[w]}
    # a worker polls its notify event and the connections it was handed
    check(len(polls[w]) >= 100 and len(tasks) >= 3,
          "worker %d (tid %d): %d polls of %d tasks" % (w, t.workers[w][2], len(polls[w]), len(tasks)))

ups = t.unparks_by_worker()
parks_on_workers = sum(len(ups[w]) for w in workers)
delayed = [u for w in workers for u in ups[w] if (u.get("sched_wait_ns") or 0) > 0]  # null: not measured
check(parks_on_workers >= 50, "workers park in epoll_wait (%d unparks)" % parks_on_workers)
check(len(delayed) >= 1, "unparks carry kernel scheduling delays (%d > 0, max %.1f us)" %
      (len(delayed), max([u["sched_wait_ns"] for u in delayed] or [0]) / 1000))

# a worker's last callback owes its poll's end to the loop's next park: both at one clock read,
# in one hook (adapters/common/thread_state.h, d9__poll_end_park), so nearly every park of a
# worker has a poll's end of that worker at its very time (not the first park, nor one after a
# poll that ended with its task's terminate or after an epoll that ran no callback)
ends = {(e["fields"]["worker_id"], e["ts"]) for e in t.of("PollEndEvent")}
worker_parks = [p for p in t.parks if p["worker_id"] in workers]
fused = sum((p["worker_id"], p["ts"]) in ends for p in worker_parks)
check(len(worker_parks) >= 50 and fused >= 0.5 * len(worker_parks),
      "%d of %d worker parks end a poll at their time" % (fused, len(worker_parks)))

# the dispatcher wakes a worker's notify event; that worker then polls it
dispatcher_tasks = {p["task_id"] for w in dispatcher for p in polls[w]}
wakes = [w for w in t.wakes if w["waker_task_id"] in dispatcher_tasks]
first_poll = {}
for w in workers:
    for p in polls[w]:
        first_poll.setdefault((p["task_id"], w), []).append(p["ts"])
reached = 0
for wk in wakes:
    for w in workers:
        if any(ts >= wk["ts"] for ts in first_poll.get((wk["woken_task_id"], w), [])):
            reached += 1
            break
check(len(wakes) >= 3, "the dispatcher records wakes (%d)" % len(wakes))
check(reached >= 3, "%d of the dispatcher's wakes are followed by a poll of the woken task on a worker" % reached)
EOF
[ $? -eq 0 ] || exit 1
# Task identity and wakes in zero-code mode: distinct ids = spawns, spawns before polls (the
# listener and notify events exist before the shim's recording starts: they spawn when the run
# starts), lifetimes contain polls, real wakers, a readiness wake before every connection
# callback (event_handler: Debian's memcached is stripped, so it is named memcached+0x...: the
# callback with the most polls).
identity="$D9_BUILD_DIR/src/adapters/common/d9-trace-identity"
if [ -x "$identity" ]; then
    run_dir="$WORK/traces/$(ls "$WORK/traces" | head -n 1)"
    conn_cb=$("$D9" dump --jsonl "$run_dir" | python3 -c '
import collections, json, sys
c = collections.Counter(e["fields"].get("spawn_loc") for e in map(json.loads, sys.stdin)
                        if e.get("event") == "PollStartEvent")
print(c.most_common(1)[0][0] if c else "")')
    [ -n "$conn_cb" ] || fail "no polls to find the connection callback"
    "$identity" "$run_dir" "$conn_cb" >"$WORK/identity" 2>&1 || { cat "$WORK/identity"; fail "task identity or wakes (above)"; }
    sed 's/^/  /' "$WORK/identity"
fi
echo "PASS"
