#!/usr/bin/env bash
# scripts/demo-uv.sh: a short run finishes, prints a diagnosis and where the trace is, and
# --export-demo writes a gzip first segment that the CLI reads.
set -euo pipefail
build=${D9_BUILD_DIR:?}
src=${D9_SOURCE_DIR:?}
if [ ! -x "$build/examples/uv-server/d9-uv-server" ]; then echo "SKIP: d9-uv-server is not built"; exit 0; fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/demo-uv-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT

status=0
DEMO_UV_TRACE_DIR="$dir/traces" timeout 120 "$src/scripts/demo-uv.sh" "$build" --seconds 1 \
  --export-demo "$dir/demo.bin.gz" >"$dir/out.txt" 2>&1 || status=$?
cat "$dir/out.txt"
[ "$status" -eq 0 ] || { echo "FAIL: demo-uv.sh exited with $status"; exit 1; }
for want in "run directory" "viewer" "served"; do
  grep -q "$want" "$dir/out.txt" || { echo "FAIL: no '$want' in the output"; exit 1; }
done
[ "$(head -c 2 "$dir/demo.bin.gz" | od -An -tx1 | tr -d ' ')" = "1f8b" ] || { echo "FAIL: the export is not gzip"; exit 1; }
if [ -x "$build/dial9" ]; then
  "$build/dial9" stats "$dir/demo.bin.gz" >"$dir/stats.txt" || { echo "FAIL: dial9 cannot read the export"; cat "$dir/stats.txt"; exit 1; }
  grep -q PollStartEvent "$dir/stats.txt" || { echo "FAIL: no polls in the export"; exit 1; }
  grep -q "analyze\|stats" "$dir/out.txt" || { echo "FAIL: no summary printed"; exit 1; }
fi
# Task identity and wakes as every reader relies on them: distinct task ids = spawns, every
# poll's task spawned before it, no poll after its task's terminate, wakes from their real
# waker, and a readiness wake before every accept / read callback.
identity="$build/src/adapters/common/d9-trace-identity"
run_dir=$(sed -n 's/^ *run directory *//p' "$dir/out.txt" | tail -n 1)
[ -d "$run_dir" ] || { echo "FAIL: no run directory in the output"; exit 1; }
if [ -x "$identity" ]; then
  "$identity" "$run_dir" on_connection on_alloc on_read || { echo "FAIL: task identity or wakes (above)"; exit 1; }
fi
echo "PASS"
