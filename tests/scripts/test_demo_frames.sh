#!/usr/bin/env bash
# `make demo`'s analysis names no frame as `[unknown]+0x...`: every user frame of its stacks is
# an address of mapped code (the frame-pointer walk through Debian's frameless libc used to end
# in random values, e.g. `write <- [unknown]+0x55fa3829d310`), and most stacks were unwound
# with CFI (dial9 stats' "stacks" line).
set -euo pipefail
src=${D9_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${D9_BUILD_DIR:-$src/build}
dir=$(mktemp -d "${TMPDIR:-/tmp}/demo-frames.XXXXXX")
trap 'rm -rf "$dir"' EXIT
failed=0 passed=0
check() { if eval "$1"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2" >&2; fi; }

DEMO_SECONDS=2 TMPDIR="$dir" bash "$src/scripts/demo.sh" "$build" >"$dir/out.txt" 2>&1 || {
  cat "$dir/out.txt" >&2
  echo "FAIL: demo.sh exited with an error" >&2
  exit 1
}
run_dir=$(sed -n 's/^   run directory   //p' "$dir/out.txt")
check '[ -n "$run_dir" ] && [ -d "$run_dir" ]' "the demo names its run directory"
check '! grep -q "\[unknown\]+0x" "$dir/out.txt"' "no [unknown]+0x frame in the demo's output"
"$build/dial9" analyze --top 20 --stack-depth 32 "$run_dir" >"$dir/analyze.txt"
check 'grep -q "LONG POLLS\|BLOCKING CALLS" "$dir/analyze.txt"' "the analysis has stacks to show"
check '! grep -q "\[unknown\]+0x" "$dir/analyze.txt"' "no [unknown]+0x frame in a deeper analysis"
# every user frame of every stack (not just the ones the report shows) lies in an executable
# mapping of the recording (its MemoryMapEvents)
"$build/dial9" dump --jsonl "$run_dir" | python3 -c '
import json, sys
events = [json.loads(l) for l in sys.stdin if l.strip()]
maps = [(e["fields"]["start"], e["fields"]["end"]) for e in events if e["event"] == "MemoryMapEvent"]
stacks = bad = 0
for e in events:
    cc = e["fields"].get("callchain") if e["event"] in ("CpuSampleEvent", "TaskDumpEvent") else None
    if not isinstance(cc, list):
        continue
    stacks += 1
    user = [int(a, 16) for a in cc if int(a, 16) < 0xffff800000000000]
    outside = [hex(a) for a in user if not any(s <= a < t for s, t in maps)]
    if outside:
        bad += 1
        print("stack with a frame outside the mapped code:", outside[:3], file=sys.stderr)
print(stacks, bad)' >"$dir/frames.txt"
read -r stacks outside <"$dir/frames.txt"
echo "stacks: $stacks, with a frame outside mapped code: $outside" >&2
check '[ "$stacks" -gt 100 ] && [ "$outside" = 0 ]' "every user frame of the demo's stacks is mapped code"
grep "^   stacks " "$dir/out.txt" >&2 || true
check 'grep -q "^   stacks .*% with CFI unwinding" "$dir/out.txt"' "dial9 stats says how the stacks were obtained"
rm -rf "$run_dir"
echo "test_demo_frames: $passed passed, $failed failed"
[ "$failed" = 0 ]
