#!/usr/bin/env bash
# `make demo`: record the example executor (a simulated request server) for ~3 s, then show
# what the trace holds and how to look at it.   Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
demo="$build/examples/executor/executor_demo"
dial9="$build/dial9"
traces="$build/demo-traces"
seconds=${DEMO_SECONDS:-3}

if [ ! -x "$demo" ]; then
  echo "demo: $demo is missing: build first (make build)" >&2
  exit 1
fi
step() { printf '\n== %s\n' "$*"; }

step "Recording the example executor for ${seconds} s into $traces"
echo "   (4 workers with work stealing; connections wait on a backend thread, a timer thread"
echo "    and child tasks; about one request in 500 does ~12 ms of CPU in a single poll)"
echo "   CPU profiling is on for the demo (DIAL9_CPU_PROFILE_ENABLED=${DIAL9_CPU_PROFILE_ENABLED:-1}),"
echo "   so the analysis can show what the slow polls were doing"
mkdir -p "$traces"
out=$(DIAL9_CPU_PROFILE_ENABLED=${DIAL9_CPU_PROFILE_ENABLED:-1} \
      "$demo" --seconds "$seconds" --trace-dir "$traces")
printf '%s\n' "$out" | sed 's/^/   /'
run_dir=$(printf '%s\n' "$out" | sed -n 's/^trace  *//p' | tail -n 1)
if [ -z "$run_dir" ] || [ ! -d "$run_dir" ]; then
  echo "demo: nothing was recorded (is DIAL9_ENABLED=0 set?)" >&2
  exit 1
fi

if [ ! -x "$dial9" ]; then
  step "The dial9 CLI ($dial9) is not built yet: cannot summarize the trace"
else
  step "dial9 stats $run_dir"
  "$dial9" stats "$run_dir" | sed 's/^/   /' || echo "   (dial9 stats reported a problem: exit status $?)"

  if "$dial9" help analyze >/dev/null 2>&1; then
    step "dial9 analyze --top 3 --stack-depth 8 $run_dir"
    "$dial9" analyze --top 3 --stack-depth 8 "$run_dir" | sed 's/^/   /' ||
      echo "   (dial9 analyze reported a problem: exit status $?)"
  else
    step "dial9 analyze is not built yet: the summary above is all there is"
  fi
fi

step "Where the trace is and how to look at it"
echo "   run directory   $run_dir"
for f in "$run_dir"/trace.*; do
  [ -e "$f" ] && printf '   %-15s %s (%s bytes)\n' "" "$(basename "$f")" "$(stat -c %s "$f")"
done
echo "   summary         $dial9 stats $run_dir"
echo "   diagnosis       $dial9 analyze $run_dir"
echo "   every event     $dial9 dump $run_dir | less      (--jsonl for JSON lines)"
echo "   viewer          open file://$root/viewer/index.html in a browser and drop"
echo "                   $run_dir/trace.*.bin on the page"
echo "   older demo runs are kept in $traces (delete it freely)"
