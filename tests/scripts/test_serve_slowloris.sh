#!/usr/bin/env bash
# `dial9 serve` against slow clients (issue 11, item 2), all on loopback, with
# tests/serve/d9s_slow_clients.c:
#   1. 96 connections from four addresses (127.0.0.1, .3, .4, .5) that trickle their headers
#      cannot lock out a fifth address: a probe from 127.0.0.2 is answered. The request
#      deadline is set far away here (300 s), so what lets the probe in is the per-address cap
#      (16 by default) and the slots kept for addresses that hold none (64 in all, the last 8
#      reserved): 16 + 16 + 16 + 8 stay open, the rest are refused at once;
#   2. with --request-timeout 2, connections that trickle their headers (a line every 300 ms,
#      so libmicrohttpd's idle timeout never fires) are answered 408 and closed, as are ones
#      that trickle the request line itself or send nothing (closed silently); a probe from
#      another address is answered meanwhile. Bounds are generous (40 s for a 2 s deadline):
#      the checks are "answered" and "closed", not how fast;
#   3. a kept-alive connection still serves several requests one after the other;
#   4. SIGTERM stops the server during a connection storm (tests/serve/d9s_connect_storm.c),
#      when its listening socket is ready at almost every turn of the event loop. Every phase
#      ends with SIGTERM, checked to stop the server within 30 s.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"

SERVE="${D9_SERVE_UNDER_TEST:-$BUILD/dial9-serve}" SLOW="$BUILD/d9s_slow_clients" STORM="$BUILD/d9s_connect_storm"
[ -x "$SERVE" ] || { echo "SKIP: dial9-serve not built (libmicrohttpd missing)"; exit 0; }
[ -x "$SLOW" ] && [ -x "$STORM" ] || { echo "$SLOW or $STORM not built"; exit 1; }

D="$T/traces"
mkdir -p "$D/run"
serve_recorded_trace "$D/run/trace.0.bin" || exit 1

start_server() { serve_start "$1" "$SERVE" "${@:2}" "$D"; } # start_server NAME [options...]
stop_server() { serve_stop 0; }

# ---- 1. per-address cap and reserved slots ----
if start_server caps --request-timeout 300; then
    timeout 120 "$SLOW" "$PORT" 127.0.0.1,127.0.0.3,127.0.0.4,127.0.0.5 24 3 127.0.0.2 30 headers >"$T/caps.txt"
    cat "$T/caps.txt"
    check "caps: a new client address is answered" grep -q '^probe: answered HTTP 200' "$T/caps.txt"
    for a in 127.0.0.1 127.0.0.3 127.0.0.4; do
        check "caps: $a holds at most 16" grep -q "^source $a: 24 opened, 16 open at the end" "$T/caps.txt"
    done
    check "caps: the last 8 slots are not for addresses that hold some" \
        grep -q '^source 127.0.0.5: 24 opened, 8 open at the end' "$T/caps.txt"
    check "caps: refusals are logged" grep -q 'refused [0-9]* connection' "$T/caps.err"
    stop_server
fi

# ---- 2. the whole-request deadline ----
if start_server deadline --request-timeout 2; then
    for mode in headers line silent; do
        timeout 120 "$SLOW" "$PORT" 127.0.0.1 8 40 127.0.0.2 30 "$mode" >"$T/deadline-$mode.txt"
        cat "$T/deadline-$mode.txt"
        check "deadline ($mode): the probe is answered" grep -q '^probe: answered HTTP 200' "$T/deadline-$mode.txt"
        check "deadline ($mode): every slow connection is closed" \
            grep -q '^slow: 8 opened, 0 open at the end' "$T/deadline-$mode.txt"
    done
    check "deadline: trickled headers are answered 408" \
        grep -q '^source 127.0.0.1: 8 opened, 0 open at the end, 8 closed, 8 answered 408' "$T/deadline-headers.txt"
    check "deadline: a trickled request line or silence gets no 408" \
        grep -q ', 0 answered 408' "$T/deadline-line.txt"
    check "deadline: expiries are logged" grep -q 'did not arrive within 2 s' "$T/deadline.err"
    # ---- 3. keep-alive still works: three requests on one connection ----
    got=$(curl -s -m 30 -w '%{http_code} %{num_connects}\n' -o /dev/null "http://127.0.0.1:$PORT/api/index" \
          -o /dev/null "http://127.0.0.1:$PORT/api/index" -o /dev/null "http://127.0.0.1:$PORT/runs" | tr '\n' ' ')
    check "keep-alive: three answers on one connection ($got)" test "$got" = "200 1 200 0 200 0 "
    stop_server
fi

# ---- 4. SIGTERM during a connection storm ----
if start_server storm --quiet; then
    timeout 120 "$STORM" "$PORT" 100 >"$T/storm.txt" &
    storm_pid=$!
    for _ in $(seq 300); do grep -qs '^storm: started' "$T/storm.txt" && break; sleep 0.1; done
    check "storm: connections go through" grep -q '^storm: started' "$T/storm.txt"
    stop_server # while the storm goes on
    kill "$storm_pid" 2>/dev/null; wait "$storm_pid" 2>/dev/null
fi

# ---- options ----
expect_rc 2 "--request-timeout 0 is a usage error" "$SERVE" --request-timeout 0 "$D"
expect_rc 2 "--max-per-client x is a usage error" "$SERVE" --max-per-client x "$D"
expect_rc 2 "--max-connections 100000 is a usage error" "$SERVE" --max-connections 100000 "$D"

echo "test_serve_slowloris: $pass passed, $fail failed"
[ "$fail" = 0 ]
