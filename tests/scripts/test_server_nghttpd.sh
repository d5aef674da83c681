#!/bin/bash
# nghttpd (nghttp2's HTTP/2 server, libev, one loop per worker thread) under `dial9 run`,
# loaded with h2load on 127.0.0.1 (cleartext HTTP/2, 30000 requests). The trace must show
# its loop threads as "libev" workers with per-watcher polls and parks (libev's own
# release/acquire hooks, not epoll_wait), the cross-thread ev_async_send wakes that hand
# connections to the workers, and a death by SIGTERM (nghttpd has no handler) that still
# flushes the trace and keeps the status (143).
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
apt_need nghttp2-server nghttp2-client
NGHTTPD=$(command -v nghttpd || echo /usr/sbin/nghttpd)
[ -x "$NGHTTPD" ] || skip "nghttpd not found after install"
command -v h2load >/dev/null || skip "h2load not found after install"
grep -q 'libev\.so' <<<"$(ldd "$NGHTTPD")" || skip "this nghttpd does not use the shared libev"

port=$(free_port)
cd "$WORK"
mkdir www
echo "hello from nghttpd" >www/index.html
"$D9" run -d "$WORK/traces" -e DIAL9_FLUSH_MS=10 -- \
    "$NGHTTPD" --no-tls -a 127.0.0.1 -n 2 -d "$WORK/www" "$port" \
    >"$WORK/server.out" 2>"$WORK/server.err" </dev/null &
server=$!
D9T_PIDS+=("$server")
wait_port "$port" tcp 15 || fail "nghttpd did not listen on 127.0.0.1:$port: $(tail -5 "$WORK/server.err")"

timeout 30 h2load -n 30000 -c 8 -m 4 -t 2 "http://127.0.0.1:$port/index.html" >"$WORK/load" 2>&1 ||
    fail "h2load: $(tail -5 "$WORK/load")"
grep -E "^requests:|^status codes:" "$WORK/load" | sed 's/^/  h2load: /'
grep -qE "status codes: [1-9][0-9]* 2xx" "$WORK/load" || fail "no successful request"

stop_server "$server"
D9T_PIDS=()
[ "$STATUS" = 143 ] || fail "dial9 run exited $STATUS, expected 143 (nghttpd killed by SIGTERM)"
grep "^dial9 run:" "$WORK/server.err" | sed 's/^/  /'
"$D9" stats "$WORK/traces" >"$WORK/stats" || fail "dial9 stats: $(tail -3 "$WORK/stats")"
if ls "$WORK"/traces/*/*.active >/dev/null 2>&1; then fail "the last segment was not sealed"; fi

python3 - "$D9" "$WORK/traces" "$FACTS" <<'EOF'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, root = sys.argv[1], sys.argv[2]
runs = sorted(r for r in os.listdir(root) if not r.startswith("."))  # runs, not the hidden files beside them
check(len(runs) == 1, "one run (%s)" % runs)
t = Trace(d9, os.path.join(root, runs[0]))
print("  " + t.summary())
check(t.meta.get("source.libev", "").startswith("active"), "source.libev: " + t.meta.get("source.libev", "?"))
ev = t.workers_of("libev")
check(len(ev) >= 3, "the acceptor and 2 worker loops are libev workers (%d)" % len(ev))
polls, ups = t.polls_by_worker(), t.unparks_by_worker()
busy = [w for w in ev if len(polls[w]) >= 200]
check(len(busy) >= 2, "per-watcher polls on the worker loops (%s)" %
      ", ".join("%d: %d" % (w, len(polls[w])) for w in ev))
check(all(len(ups[w]) >= 20 for w in busy), "the busy loops park and unpark (%s)" %
      ", ".join("%d: %d" % (w, len(ups[w])) for w in busy))
# a turn's last callback owes its poll's end to the loop's next park (libev's release callback,
# d9__poll_end_park: one clock read, one record), so most parks of a busy loop have a poll's end
# of that worker at their very time (not a turn that ran no callback, nor one whose last poll
# ended with its task's terminate); 0 before the libev adapter owed it
ends = {(e["fields"]["worker_id"], e["ts"]) for e in t.of("PollEndEvent")}
busy_parks = [p for p in t.parks if p["worker_id"] in busy]
fused = sum((p["worker_id"], p["ts"]) in ends for p in busy_parks)
check(len(busy_parks) >= 20 and fused >= 0.5 * len(busy_parks),
      "%d of %d busy libev loops' parks end a poll at their time" % (fused, len(busy_parks)))
check(len(t.wakes) >= 2, "cross-thread wakes (ev_async_send): %d" % len(t.wakes))
woken = {w["woken_task_id"] for w in t.wakes}
polled_woken = sum(1 for w in ev for p in polls[w] if p["task_id"] in woken)
check(polled_woken >= 1, "woken async watchers are polled (%d polls)" % polled_woken)
EOF
[ $? -eq 0 ] || exit 1
echo "PASS"
