#!/usr/bin/env bash
# executor_demo_smoke: run the demo ~1 s into a temporary directory; it must exit 0 and leave
# a run directory holding a non-empty trace.0.bin. When the dial9 CLI is built (second
# argument), the trace must also decode and hold every kind of event the executor records.
set -euo pipefail
demo=${1:?usage: smoke_test.sh path/to/executor_demo [path/to/dial9]}
dial9=${2:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/executor-smoke.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# The test decides where and whether to record, whatever the caller's environment says.
unset DIAL9_ENABLED DIAL9_TRACE_DIR
status=0
"$demo" --seconds 1 --workers 3 --rate 3000 --trace-dir "$dir" >"$dir/out.txt" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  echo "FAIL: executor_demo exited with status $status"; cat "$dir/out.txt"; exit 1
fi
cat "$dir/out.txt"
mapfile -t traces < <(find "$dir" -mindepth 2 -maxdepth 2 -name trace.0.bin)
if [ "${#traces[@]}" -ne 1 ]; then
  echo "FAIL: expected one run directory with trace.0.bin under $dir, found ${#traces[@]}:"
  find "$dir" -ls; exit 1
fi
if [ ! -s "${traces[0]}" ]; then
  echo "FAIL: ${traces[0]} is empty"; exit 1
fi
run_dir=$(dirname "${traces[0]}")
if ! grep -qF "trace     $run_dir" "$dir/out.txt"; then
  echo "FAIL: the demo did not print its run directory ($run_dir)"; exit 1
fi
if [ -n "$dial9" ] && [ -x "$dial9" ]; then
  if ! "$dial9" stats "$run_dir" >"$dir/stats.txt" 2>&1; then
    echo "FAIL: dial9 stats could not read the trace:"; cat "$dir/stats.txt"; exit 1
  fi
  for event in WorkerRegisteredEvent TaskSpawnEvent PollStartEvent PollEndEvent WakeEventEvent \
               WorkerParkEvent WorkerUnparkEvent TaskTerminateEvent; do
    if ! grep -q "$event" "$dir/stats.txt"; then
      echo "FAIL: no $event in the trace:"; cat "$dir/stats.txt"; exit 1
    fi
  done
else
  echo "(dial9 CLI not built: the trace's contents are not checked)"
fi
echo "PASS: $(stat -c %s "${traces[0]}") bytes in ${traces[0]}"
