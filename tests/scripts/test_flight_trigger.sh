#!/bin/bash
# The external trigger for a `dial9 run` program (docs/flight-recorder.md): an unmodified
# program (sleep) recorded by the preload shim
#  - in memory mode: `dial9 trigger PID` writes a dump whose manifest names the trigger and
#    the reason, `dial9 stats` on it shows the manifest, and the trace directory stays empty;
#  - on disk with DIAL9_DUMPS=1: `dial9 trigger RUN_DIR` finds the process by its run directory.
# And the CLI's own errors: no such recorder (exit 1), a bad argument (exit 2).
set -u
source "$(dirname "$0")/lib/harness.sh"
[ -f "$BUILD/libdial9-preload.so" ] || { echo "SKIP: libdial9-preload.so not built"; exit 0; }
# A sanitizer build's shim needs its runtime loaded first, which an uninstrumented program
# (sleep) does not have (as tests/preload/preload_lib.sh says)
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$BUILD/libdial9-preload.so" 2>/dev/null)"; then
    echo "SKIP: the preload shim is built with a sanitizer (it cannot be preloaded into plain programs)"
    exit 0
fi

pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT

# Ask until the program's recorder is up (its socket answers), however long its start takes,
# while the program ($pid) lives.
trigger_when_up() { # ARGS...
    while kill -0 "$pid" 2>/dev/null; do
        "$DIAL9" trigger "$@" >"$T/out" 2>"$T/err"
        rc=$?
        grep -q "has no flight recorder" "$T/err" || return $rc
        sleep 0.05
    done
    echo "the program ended before its recorder answered" >"$T/err"
    return 99
}

# ---- memory mode, by process id
"$DIAL9" run -q -d "$T/mem-traces" -e DIAL9_MODE=memory -e DIAL9_DUMP_DIR="$T/mem-dumps" -- sleep 600 &
pid=$!
pids+=("$pid")
trigger_when_up --lookback 10 --lookforward 0 --reason "from the outside" "$pid"
check "dial9 trigger PID exits 0 ($(cat "$T/err"))" test "$rc" = 0
dump=$(cat "$T/out")
check "it prints the dump directory" test -d "$dump"
check "the manifest is there" test -f "$dump/manifest.json"
check "it names the trigger" grep -q '"kind": "control"' "$dump/manifest.json"
check "and the reason" grep -q '"reason": "from the outside"' "$dump/manifest.json"
check "the dump holds a segment" test -f "$dump/trace.0.bin"
"$DIAL9" stats "$dump" >"$T/stats" 2>&1
check "dial9 stats shows the manifest" grep -q "complete, its manifest.json" "$T/stats"
check "... and reads the segment" grep -q "SegmentMetadataEvent" "$T/stats"
check "memory mode writes nothing in the trace directory" test -z "$(ls -A "$T/mem-traces" 2>/dev/null)"
kill "$pid"
wait "$pid" 2>/dev/null

# ---- disk mode with DIAL9_DUMPS=1, by run directory
"$DIAL9" run -q -d "$T/disk-traces" -e DIAL9_DUMPS=1 -e DIAL9_DUMP_DIR="$T/disk-dumps" -- sleep 600 &
pid=$!
pids+=("$pid")
while [ -z "$(ls "$T/disk-traces" 2>/dev/null)" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
run_dir="$T/disk-traces/$(ls "$T/disk-traces" | head -1)"
trigger_when_up --lookback 10 --lookforward 0 "$run_dir"
check "dial9 trigger RUN_DIR exits 0 ($(cat "$T/err"))" test "$rc" = 0
dump=$(cat "$T/out")
check "its manifest says disk mode" grep -q '"mode": "disk"' "$dump/manifest.json"
kill "$pid"
wait "$pid" 2>/dev/null

# ---- errors
"$DIAL9" trigger 999999999 >"$T/out" 2>"$T/err"
check "no such process: exit 1" test $? = 1
check "... saying why" grep -qx "dial9 trigger: no process 999999999 is running" "$T/err"
# a run directory whose process has ended (it said "has no flight recorder to ask (Connection
# refused): it must record with DIAL9_MODE=memory...", which sent users to their settings)
"$DIAL9" trigger "$T/20261207T120000Z-999999999-0badc0de" >"$T/out" 2>"$T/err"
check "an ended run: exit 1" test $? = 1
check "... saying it ended" grep -qx "dial9 trigger: no process 999999999 is running (the pid of that run directory's name: the run has ended)" "$T/err"
# a process that runs but records without a flight recorder: that is what is said
"$DIAL9" trigger $$ >"$T/out" 2>"$T/err"
check "a process without a recorder: exit 1" test $? = 1
check "... saying why" grep -q "has no flight recorder to ask" "$T/err"
"$DIAL9" trigger not-a-pid >"$T/out" 2>"$T/err"
check "a bad target: exit 2" test $? = 2
"$DIAL9" trigger --lookback x 1 >"$T/out" 2>"$T/err"
check "a bad --lookback: exit 2" test $? = 2

echo "test_flight_trigger: $pass passed, $fail failed"
[ "$fail" = 0 ]
