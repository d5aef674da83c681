#!/usr/bin/env bash
# Bytes on disk per stack sample on a real workload: memcached (4 worker threads, unmodified)
# recorded through `dial9 run --cpu-profile` (99 Hz CPU samples + context-switch stacks, the
# defaults) while memcslap sends gets, then d9_bench_stack_bytes splits the trace's bytes by kind.
#
#   bench/sources/stack_bytes_memcached.sh BUILD_DIR [GETS_PER_CLIENT]     (default 40000: ~30 s)
#
# Needs memcached and memcslap (apt-get install memcached libmemcached-tools). Loopback only.
set -euo pipefail
build=${1:?usage: stack_bytes_memcached.sh BUILD_DIR [GETS_PER_CLIENT]}
gets=${2:-40000}
for tool in memcached memcslap; do
  command -v "$tool" >/dev/null || { echo "stack_bytes_memcached: $tool is not installed" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/d9-stack-bytes.XXXXXX")
chmod 755 "$work"
mc_pid=
cleanup() { [ -n "$mc_pid" ] && kill -TERM "$mc_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -m 1777 "$work/traces"
# A free port: bind to 0 and read what the kernel chose.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
user=(); [ "$(id -u)" = 0 ] && user=(-u nobody)
"$build/dial9" run -q -c -d "$work/traces" -- memcached -l 127.0.0.1 -p "$port" -t 4 -U 0 "${user[@]}" &
mc_pid=$!
for _ in $(seq 100); do # until it answers (up to 10 s)
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2).close()" 2>/dev/null && break
  sleep 0.1
done
memcslap -s "127.0.0.1:$port" -c 8 -e "$gets" -t get >"$work/memcslap.out" 2>&1 || { cat "$work/memcslap.out" >&2; exit 1; }
kill -TERM "$mc_pid"
wait "$mc_pid" || true
mc_pid=
echo "memcached -t 4 under memcslap -c 8 -e $gets -t get, recorded with dial9 run --cpu-profile:"
"$build/bench/sources/d9_bench_stack_bytes" "$work"/traces/*/
