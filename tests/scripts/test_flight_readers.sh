#!/bin/bash
# The readers of flight recorder dumps (docs/flight-recorder.md), on a dump `dial9 trigger` makes
# of an unmodified program (sleep) recorded in memory mode by the preload shim, and a copy of it
# without its manifest (an interrupted dump):
#  - `dial9 dumps DIR` lists both: the first complete with its trigger and window, the copy
#    INCOMPLETE;
#  - `dial9 serve DIR`'s /api/index gives each run its "flight_dump": trigger, reason, window,
#    or complete: false; a run that is no dump has null;
#  - `dial9 analyze DUMP` says the trigger and its time and starts its report at the trigger's
#    look-back (the manifest's window.from_mono_ns), unless --from is given.
# The program then gets a SIGSEGV: memory mode's crash dump ({run}.crash) is listed and analyzed
# whole, and the program still dies of the signal.
set -u
source "$(dirname "$0")/lib/harness.sh"
source "$(dirname "$0")/lib/serve_harness.sh"
[ -f "$BUILD/libdial9-preload.so" ] || { echo "SKIP: libdial9-preload.so not built"; exit 0; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$BUILD/libdial9-preload.so" 2>/dev/null)"; then
    echo "SKIP: the preload shim is built with a sanitizer (it cannot be preloaded into plain programs)"
    exit 0
fi
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 0; }

pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT

"$DIAL9" run -q -d "$T/traces" -e DIAL9_MODE=memory -e DIAL9_DUMP_DIR="$T/dumps" -- sleep 600 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do # until its recorder answers, however long its start takes
    "$DIAL9" trigger --lookback 3 --lookforward 0 --reason "for the readers" "$pid" >"$T/out" 2>"$T/err"
    rc=$?
    grep -q "has no flight recorder" "$T/err" || break
    sleep 0.05
done
check "dial9 trigger exits 0 ($(cat "$T/err"))" test "$rc" = 0
# then the program crashes (a SIGSEGV from outside, as a zero-code program would get one): memory
# mode writes what it held as a crash dump, and the program dies of the signal all the same
kill -SEGV "$pid"
wait "$pid" 2>/dev/null
st=$?
check "the program died of its SIGSEGV (dial9 run's status $st: 128 + 11)" test "$st" = 139
pid=
dump=$(cat "$T/out")
crash=$(ls -d "$T"/dumps/*.crash 2>/dev/null | head -1)
check "a crash dump is written" test -f "$crash/manifest.json"
name=$(basename "$dump")
cp -r "$dump" "$T/dumps/$name.interrupted"
rm "$T/dumps/$name.interrupted/manifest.json"
mkdir -p "$T/dumps/not-a-dump"
cp "$dump"/trace.*.bin "$T/dumps/not-a-dump/"
from=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["window"]["from_mono_ns"])' "$dump/manifest.json")
at=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trigger"]["at_mono_ns"])' "$dump/manifest.json")

# ---- dial9 dumps
"$DIAL9" dumps "$T/dumps" >"$T/list" 2>"$T/list.err"
check "dial9 dumps DIR exits 0" test $? = 0
check "the dump: complete, its trigger, window and reason" \
    grep -q "/$name	complete	control at .*, window 3000 ms before to 0 ms after, [0-9]* segments, reason \"for the readers\"" "$T/list"
check "the copy without manifest: INCOMPLETE" grep -q "/$name.interrupted	INCOMPLETE	no manifest.json" "$T/list"
check "a directory of segments is no dump" test "$(grep -c not-a-dump "$T/list")" = 0
check "the crash dump: complete, its signal" grep -q "\.crash	complete	crash (SIGSEGV sent by pid [0-9]*) at " "$T/list"
# the README's `dial9 dumps /tmp/dial9-traces-dumps` before any dump: why it is missing (it
# said only "No such file or directory")
"$DIAL9" dumps "$T/no-dumps-yet" >"$T/list" 2>"$T/list.err"
check "no dump directory yet: exit 1" test $? = 1
check "... saying no dump was written yet" grep -qx "dial9 dumps: $T/no-dumps-yet: No such file or directory (no dump was written there yet: a recorder makes the directory at its first dump)" "$T/list.err"

# ---- dial9 serve: /api/index
serve_under_test curl
if serve_start serve "$DIAL9" serve "$T/dumps"; then
    curl -sf "http://127.0.0.1:$PORT/api/index" >"$T/index.json"
    check "/api/index answers" test -s "$T/index.json"
    python3 - "$T/index.json" "$name" >"$T/index.check" 2>&1 <<'PY'
import json, sys
runs = {r["run"]: r for r in json.load(open(sys.argv[1]))["runs"]}
name = sys.argv[2]
d, i, n = runs[name]["flight_dump"], runs[name + ".interrupted"]["flight_dump"], runs["not-a-dump"]["flight_dump"]
assert d["complete"] is True and d["trigger"] == "control" and d["reason"] == "for the readers", d
assert d["lookback_ms"] == 3000 and d["lookforward_ms"] == 0 and abs(d["to_unix_ns"] - d["from_unix_ns"] - 3000 * 10**6) < 10**6, d  # each converted to the wall clock on its own
assert "control at " in d["summary"], d
assert i == {"complete": False, "summary": i["summary"]} and "incomplete" in i["summary"], i
assert n is None, n
print("ok")
PY
    check "each run's flight_dump: trigger and window, incomplete, or null ($(tail -1 "$T/index.check"))" \
        test "$(tail -1 "$T/index.check")" = ok
    serve_stop
fi

# ---- dial9 analyze DUMP starts at the trigger
"$DIAL9" analyze "$dump" >"$T/analyze" 2>"$T/analyze.err"
check "dial9 analyze DUMP exits 0 ($(head -c 300 "$T/analyze.err"))" test $? = 0
check "it says the trigger and its time" grep -q "^dump $dump: trigger control at .* (@$at ns in the trace's clock)" "$T/analyze"
check "its report starts at the look-back" grep -q "^the report starts at the trigger's look-back: @$from ns" "$T/analyze"
check "... as a window of the report" grep -q "\[--from/--to: " "$T/analyze"
"$DIAL9" analyze --from @$((at - 1000000000)) "$dump" >"$T/analyze2" 2>&1
check "--from given: the report starts there" grep -q "^the report starts at --from" "$T/analyze2"
"$DIAL9" analyze "$crash" >"$T/analyze3" 2>&1
check "analyze of a crash dump covers all it holds" grep -q "^a crash dump holds everything the recorder held" "$T/analyze3"
check "... and reads its events ($(grep -m1 events "$T/analyze3"))" grep -q "SUMMARY" "$T/analyze3"
"$DIAL9" analyze --json "$dump" >"$T/analyze.json" 2>"$T/analyze.json.err"
check "--json stays JSON (the trigger line on stderr)" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/analyze.json"
check "... which says the trigger" grep -q "^dump $dump: trigger control" "$T/analyze.json.err"

echo "test_flight_readers: $pass passed, $fail failed"
[ "$fail" = 0 ]
