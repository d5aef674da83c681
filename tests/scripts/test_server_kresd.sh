#!/bin/bash
# knot-resolver's kresd (libuv, linked to Debian's shared libuv) under `dial9 run`, loaded
# with dnsperf on 127.0.0.1 for a few seconds. kresd is configured to answer every query
# itself (policy DENY: NXDOMAIN, no trust anchor, no priming), and when we can the whole test
# runs in a network namespace of its own with only a loopback, so no query can leave the
# machine. The trace must show the loop thread as a "uv" worker with per-callback polls (UDP
# receive and send callbacks) and parks in epoll_wait with scheduling data.
set -u
if [ -z "${D9T_NETNS:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
    command -v ip >/dev/null && unshare -n true 2>/dev/null; then
    D9T_NETNS=1 exec unshare -n -- bash -c 'ip link set lo up && exec bash "$0"' "$0"
fi
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
apt_need knot-resolver dnsperf
KRESD=$(command -v kresd || echo /usr/sbin/kresd)
[ -x "$KRESD" ] || skip "kresd not found after install"
command -v dnsperf >/dev/null || skip "dnsperf not found after install"
grep -q 'libuv' <<<"$(ldd "$KRESD")" || skip "this kresd does not use the shared libuv"
[ -n "${D9T_NETNS:-}" ] && echo "(in a network namespace of its own: loopback only)"

port=$(free_port)
cd "$WORK"
cat >kresd.conf <<EOF
-- loopback only; every answer is local: no query ever leaves the machine
net.listen('127.0.0.1', $port, { kind = 'dns' })
trust_anchors.remove('.')
modules.unload('priming')
modules.unload('detect_time_skew')
policy.add(policy.all(policy.DENY))
EOF
for i in $(seq 1 50); do echo "host$i.example.test A"; done >queries.txt
mkdir rundir
"$D9" run -d "$WORK/traces" -e DIAL9_FLUSH_MS=10 -- "$KRESD" -n -c "$WORK/kresd.conf" "$WORK/rundir" \
    >"$WORK/server.out" 2>"$WORK/server.err" </dev/null &
server=$!
D9T_PIDS+=("$server")
wait_port "$port" udp 20 || fail "kresd did not listen on 127.0.0.1:$port: $(tail -5 "$WORK/server.err")"

timeout 30 dnsperf -s 127.0.0.1 -p "$port" -d queries.txt -l 3 -c 4 -Q 3000 >"$WORK/load" 2>&1 ||
    fail "dnsperf: $(tail -5 "$WORK/load")"
grep -E "Queries (sent|completed)|Response codes" "$WORK/load" | sed 's/^ */  dnsperf: /'
grep -q "Queries completed: *[1-9]" "$WORK/load" || fail "kresd answered no query"

stop_server "$server"
D9T_PIDS=()
[ "$STATUS" = 0 ] || fail "dial9 run exited $STATUS (kresd: $(tail -3 "$WORK/server.err"))"
grep "^dial9 run:" "$WORK/server.err" | sed 's/^/  /'
"$D9" stats "$WORK/traces" >"$WORK/stats" || fail "dial9 stats: $(tail -3 "$WORK/stats")"

python3 - "$D9" "$WORK/traces" "$FACTS" <<'EOF'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, root = sys.argv[1], sys.argv[2]
runs = sorted(r for r in os.listdir(root) if not r.startswith("."))  # runs, not the hidden files beside them
check(len(runs) == 1, "one run (%s)" % runs)
t = Trace(d9, os.path.join(root, runs[0]))
print("  " + t.summary())
check(t.meta.get("source.libuv", "").startswith("active"), "source.libuv: " + t.meta.get("source.libuv", "?"))
uv = t.workers_of("uv")
check(len(uv) >= 1, "the loop thread is a uv worker")
polls = t.polls_by_worker()
w = max(uv, key=lambda x: len(polls[x]))
check(len(polls[w]) >= 1000, "per-callback polls on the loop thread (%d)" % len(polls[w]))
locs = {p.get("spawn_loc") for p in polls[w]}
check(len(locs) >= 2, "polls of several callbacks (%d distinct)" % len(locs))
ups = t.unparks_by_worker()[w]
check(len(ups) >= 100, "parks / unparks in epoll_wait (%d)" % len(ups))
check(all("sched_wait_ns" in u and "cpu_time_ns" in u for u in ups), "unparks carry schedstat data")
EOF
[ $? -eq 0 ] || exit 1
# Task identity in zero-code mode: kresd's handles exist before the shim's recording starts
# (it starts on a thread of its own): they spawn when the run starts, before their polls.
identity="$D9_BUILD_DIR/src/adapters/common/d9-trace-identity"
if [ -x "$identity" ]; then
    run_dir="$WORK/traces/$(ls "$WORK/traces" | head -n 1)"
    "$identity" "$run_dir" | sed 's/^/  /'
    "$identity" "$run_dir" >/dev/null || fail "task identity (above)"
fi
echo "PASS"
