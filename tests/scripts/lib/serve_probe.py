"""One fresh client of `dial9 serve`, for the serve script tests (lib/serve_harness.sh)."""
import socket

SAFETY = 60.0  # a bound against a hang, not a timing assertion


def probe(port, source):
    """GET /api/index from `source` (a loopback address); "probe: HTTP S" with the status the
    server answered, or "probe: no answer"."""
    p = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    p.bind((source, 0))
    p.settimeout(SAFETY)
    answer = b""
    try:
        p.connect(("127.0.0.1", port))
        p.sendall(b"GET /api/index HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        while b"\r\n" not in answer:
            chunk = p.recv(4096)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    p.close()
    words = answer.split(b" ")
    return "probe: HTTP %s" % words[1].decode() if len(words) > 1 else "probe: no answer"
