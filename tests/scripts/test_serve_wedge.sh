#!/usr/bin/env bash
# `dial9 serve` keeps accepting after its connection limit was reached and the connections that
# filled it were closed by --request-timeout (the wedge: libmicrohttpd takes its listening
# socket out of its epoll set at the limit and puts it back only at the start of its next
# round; when one round closed them all, nothing woke the server for another one, and every
# later client waited in the accept queue forever).
#
# With --max-connections 8 and --request-timeout 1: N connections from N distinct loopback
# addresses (127.0.30.1..N) that send nothing, so the guard closes every one of them at its
# deadline; once the server has closed them all, a fresh client (127.0.31.1) must be answered.
# The wedge needs all of them closed in the same round of the server, so they are made while
# the server is stopped (SIGSTOP: the kernel completes them in its accept queue) and it then
# accepts them in one round, with one deadline; three times over on each server. N = 8 (the
# limit) and N = 9 (one more waits in the accept queue). Nothing waits for a time to pass:
# each step waits for an event (the server's close, its answer), bounded only by a generous
# safety timeout.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"

serve_under_test python3

mkdir -p "$T/traces" # no runs are needed: /api/index answers for an empty directory

# idle_then_probe PORT N SERVER_PID CYCLES: CYCLES times, N silent connections from
# 127.0.30.1..N made while the server is stopped, each waited for until the server closes it;
# then one whole request from 127.0.31.1. Prints "closed K of N" and "probe: HTTP S" (or
# "probe: no answer") per cycle.
idle_then_probe() {
    python3 - "$SERVE_LIB" "$@" <<'EOF'
import os, signal, socket, sys, time
sys.path.insert(0, sys.argv[1])
from serve_probe import SAFETY, probe
port, n, server, cycles = (int(a) for a in sys.argv[2:6])
for cycle in range(cycles):
    conns = []
    os.kill(server, signal.SIGSTOP)
    try:
        for i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.30.%d" % (i + 1), 0))
            s.connect(("127.0.0.1", port))  # completed by the kernel, in the accept queue
            conns.append(s)
    finally:
        os.kill(server, signal.SIGCONT)
    closed = 0
    end = time.monotonic() + SAFETY
    for s in conns:
        s.settimeout(max(0.1, end - time.monotonic()))
        try:
            while s.recv(4096):
                pass
            closed += 1
        except ConnectionResetError:
            closed += 1
        except socket.timeout:
            pass
        s.close()
    print("closed %d of %d" % (closed, n), flush=True)
    print(probe(port, "127.0.31.1"), flush=True)
EOF
}

for n in 8 9; do
    serve_start "wedge$n" "$SERVE" --max-connections 8 --request-timeout 1 "$T/traces" || continue
    server=$(pgrep -P "$SERVER_PID" | head -1)
    idle_then_probe "$PORT" "$n" "${server:-$SERVER_PID}" 3 >"$T/wedge$n.txt"
    cat "$T/wedge$n.txt"
    check "$n idle connections: all closed by the request timeout, 3 times" \
        test "$(grep -c "^closed $n of $n\$" "$T/wedge$n.txt")" = 3
    check "$n idle connections closed: a fresh client is answered, 3 times" \
        test "$(grep -c '^probe: HTTP 200$' "$T/wedge$n.txt")" = 3
    serve_stop 0
done

echo "test_serve_wedge: $pass passed, $fail failed"
[ "$fail" = 0 ]
