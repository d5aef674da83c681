#!/usr/bin/env bash
# `dial9 analyze` and `dial9 check` from the command line: text and --json output (the JSON
# parses and holds the known answers of the hand-built traces that test_analysis writes),
# --from/--to/--top, a directory as PATH, check's exit codes (0 all rules hold, 1 a rule broke
# or a file is unreadable, 2 usage) with one reason line per broken rule, and the real dial9
# fixture (skipped when ../shared is absent).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
WRITER="$BUILD/test_analysis"
has() { # has "what" PATTERN FILE
    if grep -qF -- "$2" "$3"; then ok; else bad "$1: '$2' not in $3: $(head -c 400 "$3")"; fi
}
hasnt() {
    if grep -qF -- "$2" "$3"; then bad "$1: '$2' unexpectedly in $3"; else ok; fi
}
# py "what" 'python code reading the JSON document as `d`' FILE
py() {
    local what=$1 code=$2 file=$3
    if python3 -c "import json,sys
d = json.load(open(sys.argv[1]))
$code" "$file" 2>"$T/pyerr"; then ok; else bad "$what: $(tail -3 "$T/pyerr")"; fi
}

[ -x "$DIAL9" ] || { echo "test_analyze: $DIAL9 not built"; exit 1; }
[ -x "$WRITER" ] || { echo "test_analyze: $WRITER not built"; exit 1; }
python3 -c 'import json' 2>/dev/null || { echo "test_analyze: SKIP: python3 not found"; exit 0; }
D9_ANALYSIS_WRITE_DIR="$T" "$WRITER" || { echo "test_analyze: cannot write the test traces"; exit 1; }

# ---- analyze, text ----
expect_rc 0 "analyze text" "$DIAL9" analyze "$T/main.bin"
cp "$T/out" "$T/main.txt"
for s in SUMMARY "RED FLAGS" "WORKER UTILIZATION" "LONG POLLS" "KERNEL SCHEDULING DELAYS" \
         "WAKE TO POLL DELAYS" "POLL DURATION BY SPAWN LOCATION" "TASK LIFECYCLE" \
         "BLOCKING CALLS" "CPU HOT SPOTS" "TASK MIGRATION" "IDLE WORKERS"; do
    has "section $s" "$s" "$T/main.txt"
done
has "12 ms poll" "12.000 ms       0       0x7" "$T/main.txt"
has "blocking function" "synchronize_rcu" "$T/main.txt"
has "app frame" "<- app: app_handle_request" "$T/main.txt"
has "inlined frame" "app_handle_request [inlined]  (handler.c:12)" "$T/main.txt"
has "critical flag" "CRITICAL  dropped_events" "$T/main.txt"
has "sched delay" "3.000 ms       0       100" "$T/main.txt"
has "migration" "9       4         5  worker.c:20" "$T/main.txt"

# ---- analyze --json ----
expect_rc 0 "analyze --json" "$DIAL9" analyze --json "$T/main.bin"
cp "$T/out" "$T/main.json"
py "json answers" '
p = d["polls"]["longest"][0]
assert p["duration_ns"] == 12000000 and p["task"] == 7 and p["worker"] == 0, p
assert p["location"] == "app.c:10" and p["start_ns_rel_s"] == 0.06, p
g = p["samples"][0]
assert g["source"] == "offcpu" and g["function"] == "synchronize_rcu" and g["offcpu_est_ns"] == 4000000, g
frames = [f["symbol"] for f in d["stacks"][str(g["stack"])]["frames"]]
assert frames.index("expand_fdtable") == frames.index("synchronize_rcu") + 1, frames
assert d["sched_delays"]["wait"]["max_ns"] == 3000000
assert d["sched_delays"]["worst"][0]["wait_ns"] == 3000000
assert d["wake_delays"]["delay"]["max_ns"] == 7000000
assert d["wake_delays"]["worst"][0]["task"] == 9
assert d["tasks"]["migration"]["top"][0] == {"task": 9, "hops": 4, "polls": 5, "location": "worker.c:20"}
assert d["summary"]["dropped"] == {"total": 7, "by_reason": {"buffer_full": 5, "write_error": 2}}
assert d["summary"]["duration_ns"] == 90000000 and d["summary"]["workers"] == [0, 1]
codes = [f["code"] for f in d["red_flags"]]
assert codes[0] == "dropped_events" and "long_poll" in codes and "sched_delay" in codes, codes
assert d["red_flags"][0]["severity"] == "critical"
assert d["workers"][0]["busy_cpu_ns"] == 8000000
assert d["blocking"]["by_function"][0]["app_frame"] == "app_handle_request"
' "$T/main.json"
py "every stack reference resolves" '
refs = []
def walk(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "stack" and v is not None: refs.append(v)
            else: walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk({k: v for k, v in d.items() if k != "stacks"})
assert refs and all(str(r) in d["stacks"] for r in refs), (refs, list(d["stacks"]))
' "$T/main.json"

# ---- --from/--to, --top, directories ----
expect_rc 0 "analyze window" "$DIAL9" analyze --json --from 55ms --to 0.2s "$T/main.bin"
py "window: only the 12 ms poll" 'assert d["polls"]["duration"]["count"] == 1 and d["summary"]["windowed"]' "$T/out"
expect_rc 0 "analyze absolute window" "$DIAL9" analyze --json --from @5000000000 --to @5055000000 "$T/main.bin"
py "absolute window" 'assert d["polls"]["duration"]["count"] == 5 and d["polls"]["duration"]["max_ns"] == 100000' "$T/out"
expect_rc 0 "analyze --top 1" "$DIAL9" analyze --json --top 1 "$T/main.bin"
py "--top 1" 'assert len(d["polls"]["longest"]) == 1' "$T/out"
mkdir -p "$T/dir/run1"
cp "$T/main.bin" "$T/dir/run1/trace.0.bin"
cp "$T/slow.bin" "$T/dir/run1/trace.1.bin"
expect_rc 0 "analyze a directory" "$DIAL9" analyze --json "$T/dir"
py "directory: both segments" 'assert d["polls"]["duration"]["count"] == 8 and len(d["summary"]["files"]) == 2' "$T/out"

# ---- analyze: usage and data errors ----
expect_rc 2 "analyze without PATH" "$DIAL9" analyze
expect_rc 2 "analyze bad --from" "$DIAL9" analyze --from 5parsecs "$T/main.bin"
expect_rc 2 "analyze bad --top" "$DIAL9" analyze --top 0 "$T/main.bin"
expect_rc 2 "analyze --to before --from" "$DIAL9" analyze --from 2s --to 1s "$T/main.bin"
expect_rc 2 "analyze unknown option" "$DIAL9" analyze --frobnicate "$T/main.bin"
expect_rc 0 "analyze --help" "$DIAL9" analyze --help
has "help text" "--from" "$T/out"
expect_rc 1 "analyze missing file" "$DIAL9" analyze "$T/nope.bin"
# a directory of several runs (every run kept in /tmp/dial9-traces) is merged: said, naming the
# last run's directory (it was merged silently); one run's directory is not
mkdir -p "$T/runs/20261207T120000Z-1-a" "$T/runs/20261207T130000Z-2-b"
cp "$T/main.bin" "$T/runs/20261207T120000Z-1-a/trace.0.bin"
cp "$T/main.bin" "$T/runs/20261207T130000Z-2-b/trace.0.bin"
for c in analyze check; do
    [ $c = check ] && want=1 || want=0 # check's default rules fail on main.bin (as on one copy)
    expect_rc $want "$c of several runs" "$DIAL9" $c "$T/runs"
    has "$c of several runs: said" "dial9 $c: note: the trace files are in 2 directories (runs), analyzed as one: their workers, tasks and times are merged; for one run give its directory (the last: $T/runs/20261207T130000Z-2-b)" "$T/err"
    expect_rc $want "$c of one run" "$DIAL9" $c "$T/runs/20261207T130000Z-2-b"
    hasnt "$c of one run: no note" "note:" "$T/err"
done
head -c 3000 "$T/main.bin" >"$T/trunc.bin"
expect_rc 0 "analyze truncated file" "$DIAL9" analyze "$T/trunc.bin"
printf 'TRC\000\001\007garbage' >"$T/bad.bin"
expect_rc 1 "analyze corrupt file" "$DIAL9" analyze "$T/bad.bin"
has "corrupt file reported" "bad.bin" "$T/err"
# nothing of it reads (a stream header, then garbage): said, rather than a report of zeros
# (a partly readable input still gets its report: test_cli_bad_inputs)
has "nothing read: said" "nothing to analyze: no event could be read from the 1 file given" "$T/err"

# ---- check ----
expect_rc 0 "check passes" "$DIAL9" check --max-poll-ms 20 --max-sched-delay-ms 5 --max-wake-delay-ms 10 \
    --max-dropped 7 "$T/main.bin"
has "ok line" "ok   max-poll-ms: longest poll 12.000 ms <= 20.000 ms" "$T/out"
has "summary line" "dial9 check: ok: 4 rules hold" "$T/out"
expect_rc 1 "check breaks" "$DIAL9" check --max-poll-ms 11 --max-sched-delay-ms 2.5 --max-wake-delay-ms 10 \
    --max-dropped 6 "$T/main.bin"
has "poll reason" "FAIL max-poll-ms: longest poll 12.000 ms > 11.000 ms (worker 0, task 0x7 spawned at app.c:10" "$T/out"
has "sched reason" "FAIL max-sched-delay-ms: largest kernel scheduling delay 3.000 ms > 2.500 ms" "$T/out"
has "drops reason" "FAIL max-dropped: dropped events 7 > 6 (buffer_full 5, write_error 2)" "$T/out"
has "wake holds" "ok   max-wake-delay-ms" "$T/out"
has "failed summary" "dial9 check: FAILED: 3 of 4 rules broken" "$T/out"
if [ "$(grep -c '^FAIL' "$T/out")" = 3 ]; then ok; else bad "one FAIL line per broken rule"; fi
expect_rc 1 "check default rule: no critical red flag" "$DIAL9" check "$T/main.bin"
has "default rule" "FAIL fail-on: 1 red flag(s) at critical or above; first: critical dropped_events" "$T/out"
expect_rc 0 "check --fail-on never" "$DIAL9" check --fail-on never "$T/main.bin"
expect_rc 1 "check --fail-on warning" "$DIAL9" check --fail-on warning --max-dropped 100 "$T/main.bin"
expect_rc 1 "check slow trace" "$DIAL9" check "$T/slow.bin"
has "critical long poll" "critical long_poll" "$T/out"
expect_rc 0 "check sources" "$DIAL9" check --require-source symbols --require-source context_switches "$T/main.bin"
expect_rc 1 "check missing source" "$DIAL9" check --require-source sched_switch "$T/main.bin"
has "source reason" "FAIL require-source: data source sched_switch is missing" "$T/out"
expect_rc 0 "check p99 and counts" "$DIAL9" check --max-poll-p99-ms 13 --max-blocking-samples 1 \
    --max-live-tasks 0 --min-events 10 "$T/main.bin"
expect_rc 1 "check blocking samples" "$DIAL9" check --max-blocking-samples 0 "$T/main.bin"
has "blocking reason" "(top: synchronize_rcu called from app_handle_request)" "$T/out"
expect_rc 1 "check --json" "$DIAL9" check --json --max-poll-ms 11 --max-dropped 7 "$T/main.bin"
py "check json" '
assert d["ok"] is False and d["broken"] == 1
r = {x["rule"]: x for x in d["rules"]}
assert r["max-poll-ms"]["ok"] is False and r["max-poll-ms"]["actual_ns"] == 12000000
assert r["max-dropped"]["ok"] is True and r["max-dropped"]["actual"] == 7
assert any(f["code"] == "long_poll" for f in d["red_flags"])
' "$T/out"
expect_rc 0 "check window" "$DIAL9" check --max-poll-ms 1 --to 55ms "$T/main.bin"
expect_rc 1 "check unreadable" "$DIAL9" check --max-poll-ms 100 "$T/bad.bin"
has "unreadable reason" "FAIL readable" "$T/out"
expect_rc 1 "check missing file" "$DIAL9" check "$T/nope.bin"
expect_rc 2 "check without PATH" "$DIAL9" check --max-poll-ms 5
expect_rc 2 "check bad ms" "$DIAL9" check --max-poll-ms fast "$T/main.bin"
expect_rc 2 "check negative ms" "$DIAL9" check --max-poll-ms -1 "$T/main.bin"
expect_rc 2 "check bad count" "$DIAL9" check --max-dropped 1.5 "$T/main.bin"
expect_rc 2 "check bad severity" "$DIAL9" check --fail-on sometimes "$T/main.bin"
expect_rc 2 "check unknown option" "$DIAL9" check --max-fun 3 "$T/main.bin"
expect_rc 2 "check missing value" "$DIAL9" check "$T/main.bin" --max-poll-ms
expect_rc 0 "check --help" "$DIAL9" check --help
has "check help" "--max-sched-delay-ms" "$T/out"
expect_rc 0 "dial9 help lists analyze" "$DIAL9" --help
has "command table" "analyze" "$T/out"
has "command table" "check" "$T/out"

# ---- the real dial9 trace ----
if [ -r "$FIXTURE" ]; then
    expect_rc 0 "fixture analyze" "$DIAL9" analyze "$FIXTURE"
    has "fixture longest poll" "50.280 ms       0      0x70" "$T/out"
    has "fixture location" "examples/metrics-service/src/axum_traced.rs:173:32" "$T/out"
    has "fixture blocking" "synchronize_rcu" "$T/out"
    expect_rc 0 "fixture analyze --json" "$DIAL9" analyze --json "$FIXTURE"
    py "fixture json" '
p = d["polls"]["longest"][0]
assert p["duration_ns"] == 50280303 and p["worker"] == 0 and p["task"] == 112, p
assert p["location"] == "examples/metrics-service/src/axum_traced.rs:173:32"
assert d["polls"]["longest"][1]["duration_ns"] == 47674756 and d["polls"]["longest"][1]["task"] == 121
frames = [f["symbol"] for f in d["stacks"][str(p["samples"][0]["stack"])]["frames"]]
assert frames.index("synchronize_rcu") < frames.index("expand_fdtable") < frames.index("__sys_socket"), frames
fns = {g["function"]: g for g in d["blocking"]["by_function"]}
assert fns["synchronize_rcu"]["in_poll"] == 1 and "metrics_service::ddb" in fns["synchronize_rcu"]["app_frame"]
assert d["polls"]["duration"]["count"] == 36801 and d["summary"]["unmatched_poll_starts"] == 0
assert d["summary"]["late_records"] == 0
' "$T/out"
    expect_rc 0 "fixture check holds" "$DIAL9" check --max-poll-ms 60 --max-dropped 0 "$FIXTURE"
    expect_rc 1 "fixture check breaks" "$DIAL9" check --max-poll-ms 50 "$FIXTURE"
    has "fixture reason" "longest poll 50.280 ms > 50.000 ms (worker 0, task 0x70" "$T/out"
else
    echo "test_analyze: fixture parts SKIPPED: $FIXTURE not found"
fi

echo "test_analyze: $pass passed, $fail failed"
[ "$fail" = 0 ]
