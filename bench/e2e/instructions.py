#!/usr/bin/env python3
"""Instructions per request of examples/uv-server, recording off vs on, counted by callgrind.

    bench/e2e/instructions.py [--build DIR] [--small N] [--large N] [--arms plain,off,on,on+sym]

Time on a shared 2-vCPU machine moves by ±10 % between two identical runs; instruction
counts do not. For each arm the server runs twice under `valgrind --tool=callgrind` (all
threads), answering exactly N1 and then N2 sequential keep-alive requests for `/`; the
difference in instructions divided by N2 - N1 cancels start-up and shutdown. Also printed:
events recorded per request and parks per request (each park and unpark reads
/proc/thread-self/schedstat: kernel time that callgrind does not count, ~370 ns per read on
the project's VM).

Arms: plain (d9-uv-server-plain: the same server with libuv alone, no adapter linked and no
d9_uv_instrument), off (DIAL9_ENABLED=0, the adapter linked), on (polls, parks, wakes,
schedstat; no symbolization of sealed segments) and on+sym (the same with DIAL9_SYMBOLIZE's
default: at seal the segment is scanned and symbols appended). Columns compare with off;
`off - plain` is what the adapter costs a program that does not record. Instructions are split by thread: the
loop (the application plus the hooks), the recorder's background thread (drain, encode,
write) and the sealed-segment pipeline (symbolization).
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
ON = {"DIAL9_ENABLED": "1", "DIAL9_SCHEDSTAT": "1", "DIAL9_SCHEDULE_PROFILE_ENABLED": "0",
      "DIAL9_TASK_DUMPS": "0", "DIAL9_CPU_PROFILE_ENABLED": "0"}
ARMS = {
    "plain": {"DIAL9_ENABLED": "0"},  # run as d9-uv-server-plain (SERVERS)
    "off": {"DIAL9_ENABLED": "0"},
    "on": dict(ON, DIAL9_SYMBOLIZE="0"),
    "on+sym": ON,  # DIAL9_SYMBOLIZE's default: the sealed segment is rescanned and symbolized
}
SERVERS = {"plain": "d9-uv-server-plain"}  # the others: d9-uv-server
# Where the instructions go, by the inclusive cost of each thread's entry function.
PARTS = [("loop thread", "main.c:run_loop"), ("recorder thread", "recorder.c:background_main"),
         ("sealed-segment pipeline", "pipeline.c:worker_main")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port, proc, timeout=120.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("the server exited: " + proc.stderr.read())
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=30)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


def requests(sock, n):
    """n sequential GET / on one keep-alive connection; each answer checked."""
    req = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n"
    buf = b""
    for _ in range(n):
        sock.sendall(req)
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                m = re.search(rb"Content-Length: (\d+)", buf[:end])
                total = end + 4 + int(m.group(1))
                if len(buf) >= total:
                    if not buf.startswith(b"HTTP/1.1 200"):
                        raise RuntimeError("bad answer: " + buf[:80].decode(errors="replace"))
                    buf = buf[total:]
                    break
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            buf += chunk


def run(args, arm, n, work):
    port = free_port()
    out_file = os.path.join(work, f"callgrind.{arm}.{n}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIAL9_")}
    env.update(ARMS[arm])
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--quiet",
           os.path.join(args.server_dir, SERVERS.get(arm, "d9-uv-server")), "--port", str(port), "--loops", "1", "--quiet",
           "--trace-dir", os.path.join(work, f"traces-{arm}-{n}")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sock = connect(port, proc)
        requests(sock, n)
        sock.close()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    total = 0
    with open(out_file) as f:  # one file: callgrind merges threads unless --separate-threads
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    parts = [0] * len(PARTS)
    if shutil.which("callgrind_annotate"):
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                             capture_output=True, text=True).stdout
        for i, (_, fn) in enumerate(PARTS):
            m = re.search(r"^\s*([\d,]+) \([ \d.]+%\)\s+\S*" + re.escape(fn) + r" ", ann, re.M)
            parts[i] = int(m.group(1).replace(",", "")) if m else 0
    rec = re.search(r"recorded\s+(\d+) events", out)
    trace = re.search(r"trace\s+(\S+)", out)
    parks = 0
    if arm == "on" and trace and os.path.isdir(trace.group(1)):  # (the same for on+sym)
        stats = subprocess.run([args.dial9, "stats", trace.group(1)], capture_output=True, text=True).stdout
        m = re.search(r"^\s+(\d+)\s+WorkerParkEvent", stats, re.M)
        parks = int(m.group(1)) if m else 0
    return (total, int(rec.group(1)) if rec else 0, parks, *parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SOURCE, "build"))
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=12000)
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated, off always runs")
    args = ap.parse_args()
    args.server_dir = os.path.join(os.path.abspath(args.build), "examples", "uv-server")
    args.server = os.path.join(args.server_dir, "d9-uv-server")
    args.dial9 = os.path.join(os.path.abspath(args.build), "dial9")
    if not shutil.which("valgrind"):
        print("SKIP: valgrind is not installed (apt-get install valgrind)")
        return 0
    arms = [a for a in ARMS if a == "off" or a in args.arms.split(",")]
    for name in {SERVERS.get(arm, "d9-uv-server") for arm in arms}:
        if not os.access(os.path.join(args.server_dir, name), os.X_OK):
            print(f"SKIP: {os.path.join(args.server_dir, name)} is not built")
            return 0
    work = tempfile.mkdtemp(prefix="d9-e2e-instr.")
    n1, n2 = args.small, args.large
    rows = {}
    try:
        for arm in arms:
            small, large = run(args, arm, n1, work), run(args, arm, n2, work)
            rows[arm] = tuple((b - a) / (n2 - n1) for a, b in zip(small, large))
            print(f"  {arm:4}: {small[0]} instructions for {n1} requests, {large[0]} for {n2}",
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    off = rows["off"]
    print(f"instructions per request of d9-uv-server (user space, all threads; the difference "
          f"between {n2} and {n1} sequential keep-alive GET /)")
    print(f"{'arm':7} {'total':>8} {'vs off':>14} " + " ".join(f"{name:>24}" for name, _ in PARTS)
          + f" {'events/req':>10} {'parks/req':>9}")
    for arm, row in rows.items():
        delta = "" if arm == "off" else f"{row[0] - off[0]:+.0f} ({(row[0] - off[0]) / off[0] * 100:+.0f} %)"
        parts = " ".join(f"{row[3 + i]:10.0f} ({row[3 + i] - off[3 + i]:+6.0f} vs off)" for i in range(len(PARTS)))
        per_req = f"{row[1]:10.2f} {row[2]:9.2f}" if arm == "on" else f"{'':>10} {'':>9}"
        print(f"{arm:7} {row[0]:8.0f} {delta:>14} {parts} {per_req}")
    print("(kernel time is not counted: each park and unpark also reads /proc/thread-self/schedstat)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
