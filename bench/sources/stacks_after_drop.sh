#!/usr/bin/env bash
# Context-switch stacks after a privilege drop (issue 32; bench/README.md, "Context-switch stacks
# that survive a privilege drop"). As root, at perf_event_paranoid 2:
#  1. system calls per window (a close and a reopen): window_syscalls.c run under strace -f -c for
#     10 and 40 closes, the difference over 30, privileged all along (keep) and after a drop (drop);
#  2. memcached -u nobody -t 2 under `dial9 run`: memcslap gets (8 connections, 3 x 20 000: the
#     governor samples and pauses), then one connection with a get every 5 ms for 12 s (it comes
#     back to full); the context-switch stacks before and after the governor's first close.
#
#   bench/sources/stacks_after_drop.sh BUILD_DIR [syscalls|memcached|all]     (~1 min each)
#
# Needs strace, memcached and memcslap (apt-get install strace memcached libmemcached-tools).
set -euo pipefail
build=$(cd "${1:?usage: stacks_after_drop.sh BUILD_DIR [syscalls|memcached|all]}" && pwd)
what=${2:-all}
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "stacks_after_drop: needs root (it drops to uid 65534)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/d9-drop-stacks.XXXXXX")
chmod 755 "$work"
mc_pid=
cleanup() { [ -n "$mc_pid" ] && kill -TERM "$mc_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

if [ "$what" != memcached ]; then
  command -v strace >/dev/null || { echo "stacks_after_drop: strace is not installed" >&2; exit 1; }
  # built with the benchmarks (bench/sources/CMakeLists.txt)
  [ -x "$build/bench/sources/d9_bench_window_syscalls" ] ||
    { echo "stacks_after_drop: $build/bench/sources/d9_bench_window_syscalls not built (D9_BENCHMARKS=ON)" >&2; exit 1; }
  cp "$build/bench/sources/d9_bench_window_syscalls" "$work/window_syscalls"
  mkdir -m 1777 "$work/traces"
  calls=perf_event_open,ioctl,close,openat,getdents64,newfstatat,fstat,mmap,munmap
  for mode in keep drop; do
    for n in 10 40; do
      strace -f -c -e trace=$calls -o "$work/strace.$mode.$n" "$work/window_syscalls" $mode $n "$work/traces" 2>/dev/null
    done
  done
  python3 - "$work" <<'PY'
import sys
def parse(path):
    d = {}
    for line in open(path):
        p = line.split()
        if len(p) >= 5 and p[-1].isidentifier() and p[-1] != "total" and p[3].isdigit():
            d[p[-1]] = (int(p[3]), int(p[4]) if len(p) == 6 else 0)
    return d
for mode in ("keep", "drop"):
    a, b = parse(f"{sys.argv[1]}/strace.{mode}.10"), parse(f"{sys.argv[1]}/strace.{mode}.40")
    per = {k: ((b.get(k, (0, 0))[0] - a.get(k, (0, 0))[0]) / 30, (b.get(k, (0, 0))[1] - a.get(k, (0, 0))[1]) / 30)
           for k in sorted(set(a) | set(b))}
    print(f"{mode}: {sum(c for c, _ in per.values()):.1f} system calls per window: " +
          ", ".join(f"{k} {c:.1f}" + (f" ({e:.1f} refused)" if e >= 0.05 else "") for k, (c, e) in per.items() if c >= 0.05))
PY
fi

if [ "$what" != syscalls ]; then
  for tool in memcached memcslap; do
    command -v "$tool" >/dev/null || { echo "stacks_after_drop: $tool is not installed" >&2; exit 1; }
  done
  mkdir -m 1777 "$work/mc"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$build/dial9" run -d "$work/mc" -- memcached -l 127.0.0.1 -p "$port" -t 2 -U 0 -c 1024 -u nobody 2>"$work/mc.err" &
  mc_pid=$!
  for _ in $(seq 100); do # until it answers (up to 10 s)
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2).close()" 2>/dev/null && break
    sleep 0.1
  done
  for _ in 1 2 3; do memcslap -s "127.0.0.1:$port" -c 8 -e 20000 -t get >/dev/null 2>&1; done
  python3 - "$port" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"set k 0 0 1\r\nv\r\n"); s.recv(100)
end = time.time() + 12
while time.time() < end:
    s.sendall(b"get k\r\n"); s.recv(100); time.sleep(0.005)
PY
  kill -TERM "$mc_pid"; wait "$mc_pid" || true; mc_pid=
  grep -h "dial9: context-switch stacks" "$work/mc.err" || true
  "$build/dial9" dump --jsonl "$work/mc" | python3 -c '
import json, sys
cov, stacks, meta = [], [], {}
for line in sys.stdin:
    e = json.loads(line); f = e["fields"]
    if e["event"] == "CoverageEvent": cov.append((e["ts"], f["previous_mode"], f["mode"], f["one_in"]))
    elif e["event"] == "CpuSampleEvent" and f.get("source") == 1: stacks.append(e["ts"])
    elif e["event"] == "SegmentMetadataEvent": meta.update(f["entries"])
cov.sort()
first = next((c[0] for c in cov if c[2] != "full"), None)
after = sum(1 for t in stacks if first is not None and t > first)
print("levels: " + ", ".join(p + "->" + m + (" (1 in %d)" % n if m == "sampled" else "") for _, p, m, n in cov))
print("context-switch stacks: %d, before the first close %d, after it %d, after the last level change (%s) %d" %
      (len(stacks), len(stacks) - after, after, cov[-1][2] if cov else "-", sum(1 for t in stacks if cov and t > cov[-1][0])))
for k in ("governor.reopen_stacks", "governor.between_windows"): print(k, "=", meta.get(k, "(none)"))'
  "$build/dial9" analyze "$work/mc" | grep -E "off-CPU of polls|^ *coverage +off_cpu" || true
fi
