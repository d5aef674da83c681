#!/usr/bin/env bash
# When every --max-connections slot is held by a connection still sending its request, a new
# client from another address takes the slot of the one that has waited longest, and is
# answered at once. Before, it waited in the accept queue until their request deadlines
# freed slots: with 120 addresses trickling headers, 4.5-5 s; here, with --request-timeout 300,
# it would wait 300 s. With --max-connections 8: 8 connections from 127.0.40.1..8, each with
# its request line and one header sent (then nothing), and a fresh client from 127.0.41.1
# sending a whole request: it must be answered 200, and exactly one of the 8 closed by the
# server: the oldest, 127.0.40.1 (accepted first: the kernel's accept queue is FIFO). (A new
# client refused because every slot is being answered is not tested here: holding a download
# open needs a reader slower than the kernel's buffers, which no test can ensure.)
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"

serve_under_test python3
mkdir -p "$T/traces"

serve_start full "$SERVE" --max-connections 8 --request-timeout 300 "$T/traces" || exit 1
python3 - "$SERVE_LIB" "$PORT" >"$T/full.txt" <<'EOF'
import select, socket, sys
sys.path.insert(0, sys.argv[1])
from serve_probe import SAFETY, probe
port = int(sys.argv[2])
slow = []
for i in range(8):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.40.%d" % (i + 1), 0))
    s.connect(("127.0.0.1", port))  # accepted in this order: the kernel's accept queue is FIFO
    s.sendall(b"GET /api/index HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
    slow.append(s)
print(probe(port, "127.0.41.1"), flush=True)
# the slot taken was closed before the probe was read: wait for that close, then count
select.select(slow, [], [], SAFETY)
closed = []
for i, s in enumerate(slow):
    s.setblocking(False)
    try:
        data = s.recv(4096)
        if not data or data.startswith(b"HTTP/1.1 408"):
            closed.append(i + 1)
    except BlockingIOError:
        pass
    except ConnectionResetError:
        closed.append(i + 1)
print("closed: %d (%s)" % (len(closed), " ".join("127.0.40.%d" % a for a in closed)), flush=True)
EOF
cat "$T/full.txt"
check "a new client is answered while 8 slow ones hold every slot" grep -q '^probe: HTTP 200$' "$T/full.txt"
check "exactly one slow connection gave up its slot: the oldest" grep -qx 'closed: 1 (127.0.40.1)' "$T/full.txt"
check "the server says why" grep -q 'still waiting for its request, for new clients' "$T/full.err"
serve_stop 0

echo "test_serve_full_slots: $pass passed, $fail failed"
[ "$fail" = 0 ]
