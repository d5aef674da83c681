#!/usr/bin/env bash
# `dial9 stats` and `dial9 dump` on hand-built traces and on the real fixture: counts, JSON
# validity and escaping, segment order in a directory, exit codes (0 ok / truncated, 1 decode
# error, 2 usage). Fixture parts skip when ../shared is absent.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

# A JSON checker: python3 or node, whichever runs. $1 = a script reading stdin (python) or a
# JS body (node) is too different, so each check below names both.
if python3 -c 'import json' 2>/dev/null; then JSON=python; elif node -e '' 2>/dev/null; then JSON=node; else JSON=none; fi
json_py() { local code=$1; shift; python3 -c "$code" "$@"; }

[ -x "$DIAL9" ] || { echo "test_cli: $DIAL9 not built"; exit 1; }

# ---- a tiny encoder in bash: bytes appended to the file $OUT ----
# printf -v, not $(printf ...): no fork per byte (a fork took ~40 ms at load 15; ~0.2 ms now)
b() { local x h; for x in "$@"; do printf -v h '\\x%02x' "$x"; printf "$h" >>"$OUT"; done; }
u16() { b $(($1 & 255)) $(($1 >> 8 & 255)); }
u24() { b $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)); }
u32() { b $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
u64() { u32 $(($1 & 0xffffffff)); u32 $(($1 >> 32 & 0xffffffff)); }
varint() { local v=$1; while [ "$v" -ge 128 ]; do b $((v & 127 | 128)); v=$((v >> 7)); done; b "$v"; }
raw() { printf '%s' "$1" >>"$OUT"; }
name16() { u16 ${#1}; raw "$1"; }
header() { b 0x54 0x52 0x43 0x00 0x01; }
# schema TYPE_ID NAME HAS_TS field:type ...
schema() {
    local id=$1 name=$2 ts=$3; shift 3
    b 1; u16 "$id"; name16 "$name"; b "$ts"; u16 $#
    for f in "$@"; do name16 "${f%%:*}"; b "${f##*:}"; done
}
reset() { b 5; u64 "$1"; }
event() { b 2; u16 "$1"; u24 "$2"; } # TYPE_ID DELTA, then the values
strpool() { b 3; u32 1; u32 "$1"; u32 ${#2}; raw "$2"; } # one entry: ID STRING

# PollEndEvent trace with one event for worker $2 at time $3
poll_end_file() {
    OUT=$1
    : >"$OUT"
    header
    schema 0 PollEndEvent 1 worker_id:9
    reset "$3"
    event 0 0; varint "$2"
}

# ---- usage ----
expect_rc 2 "no arguments" "$DIAL9"
expect_rc 2 "unknown command" "$DIAL9" frobnicate
expect_rc 2 "stats without PATH" "$DIAL9" stats
expect_rc 2 "dump without PATH" "$DIAL9" dump
expect_rc 2 "unknown option" "$DIAL9" stats --bogus "$T"
expect_rc 2 "unknown dump option" "$DIAL9" dump -x "$T"
expect_rc 0 "--help" "$DIAL9" --help
check "--help lists stats and dump" grep -q "dump" "$T/out"
expect_rc 0 "stats --help" "$DIAL9" stats --help
check "stats --help says usage" grep -q "usage: dial9 stats" "$T/out"
expect_rc 0 "dump --help" "$DIAL9" dump --help
expect_rc 0 "help dump" "$DIAL9" help dump
# every reading command takes s3:// PATHs and their selection options (main.c takes them for
# all): its own --help says so (only dial9 --help did, so `analyze --help` hid --service)
for c in stats dump analyze check export; do
    expect_rc 0 "$c --help" "$DIAL9" $c --help
    check "$c --help names s3:// inputs and --service, --instance" \
        grep -q "^PATH may be s3://BUCKET\[/PREFIX\]: uploaded segments chosen by --service S, --instance I$" "$T/out"
done
expect_rc 0 "--version" "$DIAL9" --version
check "--version prints a version" grep -Eq '^dial9 [0-9]+\.[0-9]+' "$T/out"
expect_rc 1 "missing file" "$DIAL9" stats "$T/nonexistent.bin"
check "missing file is named" grep -q "nonexistent.bin" "$T/err"
mkdir -p "$T/empty"
expect_rc 1 "directory without traces" "$DIAL9" stats "$T/empty"

# ---- the worked example of the format reference (tests/vectors, shared with the C and JS tests) ----
VEC="$SOURCE/tests/vectors"
cp "$VEC/worked-example.bin" "$T/golden.bin"
check "golden vector is 60 bytes" [ "$(stat -c %s "$T/golden.bin")" = 60 ]
expect_rc 0 "stats golden" "$DIAL9" stats "$T/golden.bin"
check "stats golden: 2 events" grep -Eq '^events +2$' "$T/out"
check "stats golden: span 1500" grep -q "span 1500 ns" "$T/out"
check "stats golden: workers" grep -Eq '^workers +1: 3$' "$T/out"
expect_rc 0 "dump golden" "$DIAL9" dump "$T/golden.bin"
check "dump golden lines" diff "$SOURCE/tests/goldens/worked-example/dump.stdout.exact" "$T/out"
expect_rc 0 "dump --jsonl golden" "$DIAL9" dump --jsonl "$T/golden.bin"
check "dump --jsonl golden lines" diff "$VEC/worked-example.dump.jsonl" "$T/out"

# ---- a richer trace: metadata, drops, workers, threads, strings to escape ----
OUT=$T/rich.bin
: >"$OUT"
header
schema 0 SegmentMetadataEvent 1 entries:10
schema 1 DroppedEventsEvent 1 count:9 reason:7 tid:13 worker_id:9
schema 2 WorkerParkEvent 1 worker_id:9 local_queue:11 cpu_time_ns:9 tid:13
schema 3 Note 0 text:4 maybe:0x89
strpool 1 buffer_full
strpool 2 oom
reset 5000000000
event 0 0; u32 2; u32 7; raw service; u32 4; raw demo; u32 7; raw sources; u32 9; raw "perf,proc"
event 1 10; varint 5; u32 1; u32 100; varint 0
event 1 10; varint 3; u32 1; u32 100; varint 0
event 1 10; varint 1; u32 2; u32 101; varint 1
event 2 100; varint 0; b 4; varint 123456; u32 100
event 2 100; varint 7; b 0; varint 1; u32 101
# a String with a quote, a backslash, a newline, a control byte, UTF-8 and an invalid byte
b 2; u16 3; u32 13; raw 'q"b\'; b 10 1; raw 'é'; b 0xff; raw ' end'; b 1; varint 300
b 2; u16 3; u32 0; b 0
expect_rc 0 "stats rich" "$DIAL9" stats "$T/rich.bin"
check "stats rich: events" grep -Eq '^events +8$' "$T/out"
check "stats rich: drops total" grep -Eq '^drops +9$' "$T/out"
check "stats rich: drops by reason" grep -Eq '^ +8  buffer_full$' "$T/out"
check "stats rich: oom" grep -Eq '^ +1  oom$' "$T/out"
check "stats rich: workers" grep -Eq '^workers +2: 0 7$' "$T/out"
check "stats rich: threads" grep -Eq '^threads +2: 100 101$' "$T/out"
check "stats rich: metadata" grep -q "sources = perf,proc" "$T/out"
check "stats rich: span" grep -q "span 230 ns" "$T/out"
expect_rc 0 "stats --json rich" "$DIAL9" stats --json "$T/rich.bin"
cp "$T/out" "$T/rich.json"
if [ "$JSON" = python ]; then
    check "stats --json rich content" json_py '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["events"] == 8, o["events"]
assert o["by_name"] == {"DroppedEventsEvent": 3, "WorkerParkEvent": 2, "Note": 2, "SegmentMetadataEvent": 1}, o["by_name"]
assert o["drops"] == {"total": 9, "by_reason": {"buffer_full": 8, "oom": 1}}, o["drops"]
assert o["workers"] == [0, 7] and o["threads"]["count"] == 2
assert o["metadata"] == {"service": "demo", "sources": "perf,proc"}
assert o["time"] == {"first_ns": 5000000000, "last_ns": 5000000230, "span_ns": 230}, o["time"]
assert o["frames"]["streams"] == 1 and o["frames"]["schemas"] == 4 and o["frames"]["string_pools"] == 2
assert o["files"][0]["status"] == "ok"
' "$T/rich.json"
fi
# ---- where truncated stacks end: named by the trace's symbols, else object+offset, else the
# address; a function's addresses count together; CFI stacks are not counted ----
stackpool() { b 4; u32 1; u32 "$1"; shift; u32 $#; for a in "$@"; do u64 "$a"; done; } # ID ADDR...
OUT=$T/trunc.bin
: >"$OUT"
header
schema 0 TaskDumpEvent 1 task_id:9 callchain:6
schema 1 StackOriginEvent 1 callchain:6 method:11
schema 2 SymbolTableEntry 1 addr:9 size:9 symbol_name:7 inline_depth:9 source_file:7 source_line:9
schema 3 MemoryMapEvent 1 start:9 end:9 file_offset:9 path:7 build_id:4
reset 1000
stackpool 1 0x401010 0x402020 0x403030   # truncated in big_frame
stackpool 2 0x401010 0x403040            # truncated in big_frame, another address
stackpool 3 0x401010 0x7f0000001234      # truncated in libfoo (no symbol)
stackpool 4 0x401010 0x402020 0x404000   # complete (CFI)
stackpool 5 0x401010 0x9999              # truncated nowhere known
stackpool 6 0x405000                     # truncated in other_fn
for m in "1 3" "2 3" "3 3" "4 2" "5 3" "6 3"; do set -- $m; event 1 0; u32 "$1"; b "$2"; done
for id in 1 1 1 2 3 3 4 4 5 6; do event 0 0; varint 7; u32 "$id"; done
strpool 1 big_frame
strpool 2 big.c
strpool 3 /usr/lib/libfoo.so.1
strpool 4 other_fn
strpool 5 inlined_helper
event 2 0; varint $((0x403000)); varint 256; u32 1; varint 0; u32 2; varint 10
event 2 0; varint $((0x403030)); varint 0; u32 1; varint 0; u32 2; varint 11   # this address exactly:
event 2 0; varint $((0x403030)); varint 0; u32 5; varint 1; u32 2; varint 12   # with an inline level
event 2 0; varint $((0x405000)); varint 0; u32 4; varint 0; u32 2; varint 20
event 3 0; varint $((0x7f0000000000)); varint $((0x7f0000010000)); varint $((0x1000)); u32 3; u32 0
expect_rc 0 "stats truncated ends" "$DIAL9" stats "$T/trunc.bin"
check "stats truncated ends: share truncated" grep -q "with CFI unwinding, 80.0 % truncated" "$T/out"
check "stats truncated ends: where" grep -q \
    "truncated ones end in big_frame (50.0 %), libfoo.so.1+0x2234 (25.0 %), 0x9999 (12.5 %), elsewhere 12.5 %" "$T/out"
expect_rc 0 "stats --json truncated ends" "$DIAL9" stats --json "$T/trunc.bin"
cp "$T/out" "$T/trunc.json"
if [ "$JSON" = python ]; then
    check "stats --json truncated ends content" json_py '
import json, sys
o = json.load(open(sys.argv[1]))["stack_origin"]
assert (o["cfi"], o["truncated"]) == (2, 8), o
assert o["truncated_ends"] == [{"where": "big_frame", "stacks": 4}, {"where": "libfoo.so.1+0x2234", "stacks": 2},
                               {"where": "0x9999", "stacks": 1}], o["truncated_ends"]
assert o["truncated_elsewhere"] == 1, o
' "$T/trunc.json"
fi

# ---- `dial9 analyze` says which stacks are truncated (StackOriginEvent method 3), and only those ----
OUT=$T/trunc-cpu.bin
: >"$OUT"
header
schema 0 CpuSampleEvent 1 worker_id:9 tid:13 source:11 thread_name:0x87 callchain:6 cpu:0x89
schema 1 StackOriginEvent 1 callchain:6 method:11
schema 2 PollStartEvent 1 worker_id:9 local_queue:11 task_id:9 spawn_loc:7
schema 3 PollEndEvent 1 worker_id:9
reset 1000000
stackpool 1 0x401010 0x403030              # truncated
stackpool 2 0x401010 0x402020 0x404000     # complete (CFI)
stackpool 3 0x401010 0x405050              # no StackOriginEvent: not said to be truncated
event 1 0; u32 1; b 3
event 1 0; u32 2; b 2
strpool 1 here
event 2 0; varint 0; b 0; varint 5; u32 1
for id in 1 1 2 3; do event 0 100; varint 0; u32 100; b 0; b 0; u32 "$id"; b 0; done
event 3 100; varint 0
expect_rc 0 "analyze truncated stacks" "$DIAL9" analyze --stack-depth 8 "$T/trunc-cpu.bin"
check "analyze truncated stacks: said under the stack" grep -q "^ *(truncated: its callers were not recorded)$" "$T/out"
check "analyze truncated stacks: under that stack only" \
    test "$(grep -c "(truncated: its callers were not recorded)" "$T/out")" = "$(grep -c "^ *0x403030$" "$T/out")"
expect_rc 0 "export folded truncated stacks" "$DIAL9" export --format folded "$T/trunc-cpu.bin"
check "export folded: a truncated stack grows from [callers not recorded]" \
    grep -qx "\[callers not recorded\];0x403030;0x401010 2" "$T/out"
check "export folded: the others from their outermost frame" \
    test "$(grep -cx -e "0x404000;0x402020;0x401010 1" -e "0x405050;0x401010 1" "$T/out")" = 2
expect_rc 0 "analyze --json truncated stacks" "$DIAL9" analyze --json "$T/trunc-cpu.bin"
cp "$T/out" "$T/trunc-cpu.json"
if [ "$JSON" = python ]; then
    check "analyze --json truncated stacks content" json_py '
import json, sys
stacks = json.load(open(sys.argv[1]))["stacks"].values()
flags = {tuple(f["addr"] for f in s["frames"]): s["truncated"] for s in stacks}
assert flags == {("0x401010", "0x403030"): True, ("0x401010", "0x402020", "0x404000"): False,
                 ("0x401010", "0x405050"): False}, flags
' "$T/trunc-cpu.json"
fi

expect_rc 0 "dump --jsonl rich" "$DIAL9" dump --jsonl "$T/rich.bin"
cp "$T/out" "$T/rich.jsonl"
if [ "$JSON" = python ]; then
    check "dump --jsonl rich content" json_py '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert len(rows) == 8
assert rows[0]["fields"]["entries"] == {"service": "demo", "sources": "perf,proc"}
assert rows[1]["fields"] == {"count": 5, "reason": "buffer_full", "tid": 100, "worker_id": 0}
assert rows[6]["ts"] is None and rows[6]["event"] == "Note"
assert rows[6]["fields"]["text"] == "q\"b\\\n\x01\u00e9\ufffd end", repr(rows[6]["fields"]["text"])
assert rows[6]["fields"]["maybe"] == 300 and rows[7]["fields"]["maybe"] is None
assert rows[7]["fields"]["text"] == ""
' "$T/rich.jsonl"
elif [ "$JSON" = node ]; then
    check "dump --jsonl rich parses" node -e 'const fs=require("fs");for (const l of fs.readFileSync(process.argv[1],"utf8").trim().split("\n")) JSON.parse(l)' "$T/rich.jsonl"
fi
# An unpark without a schedstat reading, as the recorder wrote it from 0.1.0 until 2026-12-06
# (it now writes dial9's plain varints): cpu_time_ns and sched_wait_ns absent (optional
# varints, 0x89), then a read one with a real 0 wait.
OUT=$T/unread.bin
: >"$OUT"
header
schema 0 WorkerUnparkEvent 1 worker_id:9 local_queue:11 cpu_time_ns:137 sched_wait_ns:137 tid:13
reset 5000
event 0 0; varint 0; b 0; b 0; b 0; u32 77
event 0 10; varint 0; b 0; b 1; varint 1234; b 1; varint 0; u32 77
expect_rc 0 "dump --jsonl unread unpark" "$DIAL9" dump --jsonl "$T/unread.bin"
check "dump: not measured is null" grep -qF '"cpu_time_ns":null,"sched_wait_ns":null' "$T/out"
check "dump: a measured 0 is 0" grep -qF '"cpu_time_ns":1234,"sched_wait_ns":0' "$T/out"

expect_rc 0 "dump rich text" "$DIAL9" dump "$T/rich.bin"
check "dump text escapes" grep -qF 'text="q\"b\\\n\x01é' "$T/out"
check "dump text: one line per event" [ "$(wc -l <"$T/out")" = 8 ]
check "dump text: absent optional" grep -q 'maybe=null' "$T/out"

# ---- corrupt and truncated files ----
cp "$T/golden.bin" "$T/corrupt.bin"
printf '\x07\x01\x02' >>"$T/corrupt.bin"
expect_rc 1 "stats corrupt" "$DIAL9" stats "$T/corrupt.bin"
check "corrupt: still prints what was read" grep -Eq '^events +2$' "$T/out"
check "corrupt: clear message" grep -q "corrupt.bin: damaged at offset 60 (stream 0): unknown frame tag 0x07" "$T/err"
expect_rc 1 "dump corrupt" "$DIAL9" dump "$T/corrupt.bin"
check "dump corrupt: events before the error" [ "$(wc -l <"$T/out")" = 2 ]
check "dump corrupt: message" grep -q "unknown frame tag 0x07" "$T/err"
head -c 57 "$T/golden.bin" >"$T/trunc.bin"
expect_rc 0 "stats truncated" "$DIAL9" stats "$T/trunc.bin"
check "truncated: reported" grep -q "truncated at offset 53" "$T/out"
check "truncated: 1 event" grep -Eq '^events +1$' "$T/out"
expect_rc 0 "stats --json truncated" "$DIAL9" stats --json "$T/trunc.bin"
if [ "$JSON" = python ]; then
    check "stats --json truncated status" json_py '
import json, sys
o = json.load(sys.stdin)
assert o["files"][0]["status"] == "truncated" and "truncated at offset 53" in o["files"][0]["message"]
' <"$T/out"
fi
printf 'not a trace' >"$T/junk.bin"
expect_rc 1 "stats junk" "$DIAL9" stats "$T/junk.bin"
check "junk: bad magic" grep -q "bad magic" "$T/err"

# ---- a directory of segments, in run directory then segment order ----
mkdir -p "$T/traces/run-a" "$T/traces/run-b"
poll_end_file "$T/traces/run-a/trace.10.bin" 10 1000
poll_end_file "$T/traces/run-a/trace.2.bin" 2 1000
poll_end_file "$T/traces/run-a/trace.1.bin" 1 1000
poll_end_file "$T/traces/run-a/trace.0.bin" 0 1000
poll_end_file "$T/traces/run-a/trace.3.bin" 3 1000
gzip "$T/traces/run-a/trace.3.bin"
poll_end_file "$T/traces/run-a/trace.11.bin.active" 11 1000
poll_end_file "$T/traces/run-b/trace.0.bin" 20 1000
poll_end_file "$T/traces/run-b/extra.bin" 21 1000
echo "not a trace" >"$T/traces/run-b/notes.txt"
expect_rc 0 "dump directory" "$DIAL9" dump "$T/traces/"
check "segments in order" diff <(printf '%s\n' 0 1 2 3 10 11 20 21) <(sed 's/.*worker_id=//' "$T/out")
expect_rc 0 "stats directory" "$DIAL9" stats "$T/traces"
check "stats directory: 8 files" grep -Eq '^files +8 ' "$T/out"
check "stats directory: gzip segment" grep -q "trace.3.bin.gz: ok (gzip)" "$T/out"
check "stats directory: 8 events" grep -Eq '^events +8$' "$T/out"
expect_rc 0 "several files" "$DIAL9" stats "$T/golden.bin" "$T/traces/run-b/trace.0.bin"
check "several files: 3 events" grep -Eq '^events +3$' "$T/out"
# a corrupt segment among good ones: exit 1, the others still counted
cp "$T/corrupt.bin" "$T/traces/run-b/trace.1.bin"
expect_rc 1 "directory with a corrupt segment" "$DIAL9" stats "$T/traces"
check "corrupt segment: others counted" grep -Eq '^events +10$' "$T/out"

# ---- an absurd timestamp: a reset to 2^63 after the clock sync ----
OUT=$T/absurd.bin
: >"$OUT"
header
schema 0 PollEndEvent 1 worker_id:9
schema 1 ClockSyncEvent 1 realtime_ns:9
reset 500000000000000
event 1 0; varint 1700000000000000000
event 0 1000; varint 0
event 0 1000; varint 0
reset $((1 << 63))
event 0 0; varint 0
expect_rc 0 "stats with an absurd timestamp (a warning)" "$DIAL9" stats "$OUT"
check "absurd timestamp: a warning line" grep -q "^warning    1 implausible timestamp(s), more than 24 h outside" "$T/out"
check "absurd timestamp: the file says where" grep -q "absurd.bin: ok: warning: 1 implausible timestamp(s).*first: 9223372036854775808 ns at offset" "$T/out"
check "absurd timestamp: not in the span" grep -q "span 2000 ns" "$T/out"
expect_rc 0 "stats --json with an absurd timestamp" "$DIAL9" stats --json "$OUT"
check "absurd timestamp: JSON count" grep -q '"implausible_timestamps": 1' "$T/out"
expect_rc 0 "dump with an absurd timestamp" "$DIAL9" dump "$OUT"
check "absurd timestamp: dump warns" grep -q "warning: 1 implausible timestamp" "$T/err"

# ---- the real dial9 trace ----
if [ -f "$FIXTURE" ]; then
    expect_rc 0 "stats fixture" "$DIAL9" stats "$FIXTURE"
    for row in "events +210639" "frames +streams 14, schemas 94, timestamp resets 7678, string pools 10509, stack pools 293" \
               "span 4809856406 ns" "workers +2: 0 1" "service = metrics-service"; do
        check "stats fixture: $row" grep -Eq "$row" "$T/out"
    done
    expect_rc 0 "stats --json fixture" "$DIAL9" stats --json "$FIXTURE"
    if [ "$JSON" = python ]; then
        check "stats --json fixture counts" json_py '
import json, sys
o = json.load(sys.stdin)
want = {"PollStartEvent": 36801, "PollEndEvent": 36801, "WakeEventEvent": 35552, "TaskDumpEvent": 12952,
        "CpuSampleEvent": 6949, "WorkerParkEvent": 6304, "WorkerUnparkEvent": 6304, "SymbolTableEntry": 992,
        "QueueSampleEvent": 464, "TaskSpawnEvent": 262, "TaskTerminateEvent": 359, "SpanCloseEvent": 9890,
        "ClockSyncEvent": 2, "SegmentMetadataEvent": 1}
for k, v in want.items():
    assert o["by_name"].get(k) == v, (k, o["by_name"].get(k), v)
assert o["events"] == 210639
f = o["frames"]
assert (f["streams"], f["schemas"], f["timestamp_resets"], f["string_pools"], f["stack_pools"]) == (14, 94, 7678, 10509, 293), f
assert o["time"]["span_ns"] == 4809856406
assert o["workers"] == [0, 1]
assert o["metadata"]["service"] == "metrics-service"
' <"$T/out"
    fi
    "$DIAL9" dump --jsonl "$FIXTURE" >"$T/fixture.jsonl" 2>"$T/err"
    check "dump --jsonl fixture exit" [ $? = 0 ]
    check "dump --jsonl fixture lines" [ "$(wc -l <"$T/fixture.jsonl")" = 210639 ]
    if [ "$JSON" = python ]; then
        check "dump --jsonl fixture is JSON" json_py '
import json, sys, collections
c = collections.Counter(json.loads(l)["event"] for l in open(sys.argv[1], encoding="utf-8"))
assert c["PollStartEvent"] == 36801 and c["CpuSampleEvent"] == 6949 and sum(c.values()) == 210639, c
' "$T/fixture.jsonl"
    elif [ "$JSON" = node ]; then
        check "dump --jsonl fixture is JSON" node -e 'const fs=require("fs");let n=0;for (const l of fs.readFileSync(process.argv[1],"utf8").trim().split("\n")) {JSON.parse(l);n++}; if(n!==210639) process.exit(1)' "$T/fixture.jsonl"
    fi
    "$DIAL9" dump "$FIXTURE" >"$T/fixture.txt" 2>/dev/null
    check "dump fixture text lines" [ "$(wc -l <"$T/fixture.txt")" = 210639 ]
    check "dump fixture: stacks in hex" grep -m1 -q 'callchain=\[0xffffffff' "$T/fixture.txt"
    check "dump fixture: pooled strings resolved" grep -m1 -q 'spawn_loc="examples/metrics-service/src/axum_traced.rs:173:32"' "$T/fixture.txt"
    # truncated copy of the fixture: still exit 0, reported
    zcat "$FIXTURE" | head -c 3000000 >"$T/fixture-cut.bin"
    expect_rc 0 "stats truncated fixture" "$DIAL9" stats "$T/fixture-cut.bin"
    check "truncated fixture reported" grep -q "truncated at offset" "$T/out"
else
    echo "test_cli: SKIP fixture checks: $FIXTURE not found"
fi

[ "$JSON" = none ] && echo "test_cli: SKIP JSON content checks: neither python3 nor node runs"
echo "test_cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
