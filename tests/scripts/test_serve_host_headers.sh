#!/usr/bin/env bash
# `dial9 serve` answers 400 to a request with more than one Host header (RFC 7230 section 5.4):
# libmicrohttpd keeps every header and its lookup returns the first, so "Host: 127.0.0.1" then
# "Host: evil.com" used to pass the DNS-rebinding check on the first and answer 200. Raw
# requests through python3 (curl sends one Host however often it is given).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"

serve_under_test python3
mkdir -p "$T/traces"

# status_of PORT HEADER_LINE...: the status of GET /api/index with exactly these header lines
status_of() {
    python3 - "$@" <<'EOF'
import socket, sys
port, headers = int(sys.argv[1]), sys.argv[2:]
req = "GET /api/index HTTP/1.1\r\n" + "".join(h + "\r\n" for h in headers) + "Connection: close\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port), timeout=60)
s.sendall(req.encode())
answer = b""
while b"\r\n" not in answer:
    chunk = s.recv(4096)
    if not chunk:
        break
    answer += chunk
words = answer.split(b" ")
print(words[1].decode() if len(words) > 1 else "none")
EOF
}
expect() { # expect STATUS what header-lines...
    local want=$1 what=$2; shift 2
    local got; got=$(status_of "$PORT" "$@")
    check "$what: $want (got $got)" test "$got" = "$want"
}

serve_start hosts "$SERVE" "$T/traces" || exit 1
expect 200 "one Host" "Host: 127.0.0.1"
expect 400 "an allowed Host, then a foreign one" "Host: 127.0.0.1" "Host: evil.com"
expect 400 "a foreign Host, then an allowed one" "Host: evil.com" "Host: 127.0.0.1"
expect 400 "the same Host twice" "Host: localhost" "Host: localhost"
expect 400 "two Hosts, spelled in other cases" "host: 127.0.0.1" "HOST: evil.com"
expect 400 "two Hosts with another header between" "Host: 127.0.0.1" "Accept: */*" "Host: evil.com"
check "the 400 is logged" grep -q '/api/index 400' "$T/hosts.err"
serve_stop 0

echo "test_serve_host_headers: $pass passed, $fail failed"
[ "$fail" = 0 ]
