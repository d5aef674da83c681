#!/usr/bin/env bash
# Record our libuv HTTP server (examples/uv-server) for a few seconds under wrk load, then show
# what dial9 found and where the trace is. Builds nothing.
#
#   scripts/demo-uv.sh BUILD_DIR [--seconds S] [--loops N] [--export-demo PATH]
#
# The load is a fixed mix of routes (examples/uv-server/mixed.lua), paced to leave the CPUs
# room: mostly fast requests, thread-pool work (/file, /lookup) and one request in 1000 that
# computes 15 ms on the loop thread. --export-demo also writes the run's first segment, gzip-compressed, to PATH (the
# viewer's bundled demo trace is made this way).
# Without wrk (apt-get install wrk) a slower curl loop makes the load.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [ -z "$build" ] || [ "${build#-}" != "$build" ]; then
  echo "usage: scripts/demo-uv.sh BUILD_DIR [--seconds S] [--loops N] [--export-demo PATH]" >&2
  exit 2
fi
shift
seconds=4
loops=2
export_demo=
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=${2:?}; shift 2 ;;
    --loops) loops=${2:?}; shift 2 ;;
    --export-demo) export_demo=${2:?}; shift 2 ;;
    *) echo "demo-uv: unknown option $1" >&2; exit 2 ;;
  esac
done
case $build in /*) ;; *) build="$PWD/$build" ;; esac
server="$build/examples/uv-server/d9-uv-server"
dial9="$build/dial9"
traces=${DEMO_UV_TRACE_DIR:-$build/demo-traces} # where runs are recorded (tests point it elsewhere)
mix="$root/examples/uv-server/mixed.lua"

if [ ! -x "$server" ]; then
  echo "demo-uv: $server is missing: build first (make build; it needs libuv1-dev)" >&2
  exit 1
fi
step() { printf '\n== %s\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/demo-uv.XXXXXX")
server_pid=
load_pid=
cleanup() {
  for pid in $load_pid $server_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The demo decides what is recorded: the defaults (polls, parks, wakes, schedstat, off-CPU
# stacks where the host allows them), whatever the caller's DIAL9_* variables say.
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
mkdir -p "$traces"

step "Starting examples/uv-server with $loops loops (recording into $traces)"
# The files exist before the server does: the background job opens them in its own time, and
# the first read below must not find them missing (under `set -e`, that ended the demo).
: >"$work/server.out"
: >"$work/server.err"
"$server" --port 0 --loops "$loops" --trace-dir "$traces" >>"$work/server.out" 2>>"$work/server.err" &
server_pid=$!
port=
for _ in $(seq 100); do # up to 5 s
  port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/server.out")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$port" ]; then
  echo "demo-uv: the server did not start:" >&2
  cat "$work/server.out" "$work/server.err" >&2
  exit 1
fi
url="http://127.0.0.1:$port"
echo "   $(head -n 1 "$work/server.out")"

if command -v wrk >/dev/null; then
  step "Load: MIX_PACE_MS=2 wrk -t2 -c8 -d${seconds}s --latency -s examples/uv-server/mixed.lua $url"
  echo "   (8 connections, each sending its next request 2 ms after the last answer)"
  MIX_PACE_MS=2 timeout $((seconds + 15)) wrk -t2 -c8 -d"${seconds}s" --latency -s "$mix" "$url" \
    >"$work/wrk.out" 2>&1 &
  load_pid=$!
  wait "$load_pid" || { echo "demo-uv: wrk failed:" >&2; cat "$work/wrk.out" >&2; exit 1; }
  load_pid=
  sed -n '/Latency Distribution/,$p' "$work/wrk.out" | sed 's/^/   /'
else
  step "Load: wrk is not installed (apt-get install wrk): a curl loop for ${seconds} s instead"
  end=$((SECONDS + seconds))
  n=0
  while [ $SECONDS -lt $end ]; do
    n=$((n + 1))
    path=/
    if [ $((n % 40)) -eq 0 ]; then path="/work?ms=15"; elif [ $((n % 5)) -eq 0 ]; then path=/file
    elif [ $((n % 7)) -eq 0 ]; then path=/lookup; fi
    curl -s -o /dev/null --max-time 5 "$url/" "$url$path" "$url/work?ms=1" || true
  done
  echo "   $((n * 3)) requests"
fi

kill -INT "$server_pid"
for _ in $(seq 200); do # up to 10 s to drain and seal the trace
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
if kill -0 "$server_pid" 2>/dev/null; then
  echo "demo-uv: the server did not stop within 10 s" >&2
  exit 1
fi
status=0
wait "$server_pid" || status=$?
server_pid=
if [ "$status" -ne 0 ]; then
  echo "demo-uv: the server exited with status $status:" >&2
  cat "$work/server.err" >&2
  exit 1
fi
sed -n '/^loop\|^served\|^recorded/p' "$work/server.out" | sed 's/^/   /'
run_dir=$(sed -n 's/^trace  *//p' "$work/server.out" | tail -n 1)
if [ -z "$run_dir" ] || [ ! -d "$run_dir" ]; then
  echo "demo-uv: nothing was recorded" >&2
  exit 1
fi

if [ ! -x "$dial9" ]; then
  step "The dial9 CLI ($dial9) is not built: cannot summarize the trace"
elif "$dial9" analyze --help >/dev/null 2>&1; then
  step "dial9 analyze --top 5 $run_dir"
  timeout 120 "$dial9" analyze --top 5 --stack-depth 8 "$run_dir" | sed 's/^/   /' || true
else
  step "dial9 stats $run_dir"
  timeout 120 "$dial9" stats "$run_dir" | sed 's/^/   /' || true
fi

first=$(ls "$run_dir"/trace.0.bin* 2>/dev/null | head -n 1)
if [ -n "$export_demo" ]; then
  if [ -z "$first" ]; then echo "demo-uv: no first segment to export" >&2; exit 1; fi
  mkdir -p "$(dirname "$export_demo")"
  case $first in
    *.gz) cp "$first" "$export_demo" ;;
    *) gzip -9 -n -c "$first" >"$export_demo" ;;
  esac
  step "Exported the first segment to $export_demo ($(stat -c %s "$export_demo") bytes, gzip)"
fi

step "Where the trace is and how to look at it"
echo "   run directory   $run_dir"
for f in "$run_dir"/trace.*; do
  [ -e "$f" ] && printf '   %-15s %s (%s bytes)\n' "" "$(basename "$f")" "$(stat -c %s "$f")"
done
echo "   summary         $dial9 stats $run_dir"
echo "   diagnosis       $dial9 analyze $run_dir"
echo "   every event     $dial9 dump $run_dir | less      (--jsonl for JSON lines)"
echo "   viewer          $dial9 serve $traces      (then open the address it prints)"
echo "                   or open file://$root/viewer/index.html and load $first"
echo "   older demo runs are kept in $traces (delete it freely)"
