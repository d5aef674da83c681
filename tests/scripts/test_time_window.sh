#!/usr/bin/env bash
# One time grammar (src/common/time_arg.c): `dial9 analyze`, `dial9 check` and `dial9 export`
# take the same --from/--to words and select the same window of the dial9 fixture (4.810 s,
# ../shared/fixtures/dial9-demo-trace.bin): analyze's summary.start_ns/end_ns against export's
# otherData.t0_monotonic_ns and "N s window", for times since the start, before the end,
# absolute and mixed. A bare number is refused by all three with the same message, and
# `export --from 5s` (no --to, past the end) says so instead of "--to is before --from".
# One rule for what a window holds (common/time_arg.h): export's polls and parks are the ones
# analyze counts (those that start in the window), and a window outside the trace is refused
# by all three alike. Skips when ../shared is absent.
set -uo pipefail
source "$(dirname "$0")/lib/harness.sh"

if [ ! -f "$FIXTURE" ]; then
    echo "SKIP: $FIXTURE not found (no ../shared): nothing to test"
    exit 0
fi

json() { # json FILE EXPR: a field of a JSON file
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"
}

FIRST=503226032430072 # the fixture's first and last timestamps (docs/cli.md, dial9 stats)
LAST=503230842286478

# same_window FROM TO WANT_START WANT_END: both commands resolve [FROM, TO) to these ns
same_window() {
    local from=$1 to=$2 want_start=$3 want_end=$4 what="--from $1 --to $2"
    if ! "$DIAL9" analyze --json --from "$from" --to "$to" "$FIXTURE" >"$T/a.json" 2>"$T/a.err"; then
        bad "analyze $what: $(head -c 300 "$T/a.err")"; return
    fi
    if ! "$DIAL9" export -f chrome --from "$from" --to "$to" "$FIXTURE" -o "$T/e.json" 2>"$T/e.err"; then
        bad "export $what: $(head -c 300 "$T/e.err")"; return
    fi
    local a_start a_end e_start e_secs a_secs
    a_start=$(json "$T/a.json" 'd["summary"]["start_ns"]')
    a_end=$(json "$T/a.json" 'd["summary"]["end_ns"]')
    e_start=$(json "$T/e.json" 'd["otherData"]["t0_monotonic_ns"]')
    e_secs=$(sed -n 's/.*: \([0-9.]*\) s window.*/\1/p' "$T/e.err")
    a_secs=$(awk -v s="$a_start" -v e="$a_end" 'BEGIN { printf "%.3f", (e - s) / 1e9 }')
    check "analyze $what starts at $want_start (got $a_start)" [ "$a_start" = "$want_start" ]
    check "analyze $what ends at $want_end (got $a_end)" [ "$a_end" = "$want_end" ]
    check "export $what starts where analyze does ($e_start vs $a_start)" [ "$e_start" = "$a_start" ]
    check "export $what is as long as analyze's ($e_secs s vs $a_secs s)" [ "$e_secs" = "$a_secs" ]
    # check reads the same window (its JSON names no window: it must accept the words)
    expect_rc 0 "check $what" "$DIAL9" check --fail-on never --from "$from" --to "$to" "$FIXTURE"
}

same_window 1s 1500ms $((FIRST + 1000000000)) $((FIRST + 1500000000))
same_window 0.25s 1.25s $((FIRST + 250000000)) $((FIRST + 1250000000))
same_window -2s -1.5s $((LAST - 2000000000)) $((LAST - 1500000000))
same_window "@$((FIRST + 3000000000))" "@$((FIRST + 3400000000))" $((FIRST + 3000000000)) $((FIRST + 3400000000))
same_window 4s -0.5s $((FIRST + 4000000000)) $((LAST - 500000000))                 # mixed bases
same_window "@$((FIRST + 100000000))" 600000us $((FIRST + 100000000)) $((FIRST + 600000000))
same_window -1s -0s $((LAST - 1000000000)) "$LAST"                                     # up to the end

# a bare number: refused, the same words from every command
for cmd in analyze check export; do
    args=("$cmd" --from 5)
    [ "$cmd" = export ] && args+=(-f folded -o "$T/x")
    expect_rc 2 "$cmd --from 5 is refused" "$DIAL9" "${args[@]}" "$FIXTURE"
    check "$cmd: the refusal names the forms ($(head -c 300 "$T/err"))" \
        grep -q -- "--from \"5\": a time needs a unit: use 5s, 250ms, 10us, 1h (since the trace start), -15m (before its end), @NS" "$T/err"
done
# --to before --from on the same base: refused before reading, by every command
for cmd in analyze check export; do
    args=("$cmd" --from -1s --to -2s)
    [ "$cmd" = export ] && args+=(-f folded -o "$T/x")
    expect_rc 2 "$cmd: --to before --from" "$DIAL9" "${args[@]}" "$FIXTURE"
    check "$cmd says --to must be after --from" grep -q -- "--to must be after --from" "$T/err"
done
# export --from 5s on the 4.810 s trace: no --to was given, so the message is about --from
expect_rc 2 "export --from 5s past the end" "$DIAL9" export -f folded --from 5s "$FIXTURE" -o "$T/x"
check "export --from 5s names --from, not --to ($(head -c 300 "$T/err"))" \
    grep -q -- "--from is 0.190 s after the trace's end (it lasts 4.810 s)" "$T/err"
check "export --from 5s does not blame --to" bash -c '! grep -q -- "--to" "$1"' _ "$T/err"
# hours are the same for both (analyze took 1h, export refused it)
expect_rc 0 "analyze --to 1h" "$DIAL9" analyze --json --to 1h "$FIXTURE"
expect_rc 0 "export --to 1h" "$DIAL9" export -q -f folded --to 1h "$FIXTURE" -o "$T/h.folded"

# the same slices: export holds the polls and parks analyze counts, window by window
same_slices() {
    local from=$1 to=$2 what="--from $1 --to $2"
    "$DIAL9" analyze --json --from "$from" --to "$to" "$FIXTURE" >"$T/a.json" 2>/dev/null
    "$DIAL9" export -f folded --from "$from" --to "$to" "$FIXTURE" -o "$T/s.folded" 2>"$T/e.err"
    local a_polls a_parks e_polls e_parks
    a_polls=$(json "$T/a.json" 'd["polls"]["duration"]["count"]')
    a_parks=$(json "$T/a.json" 'sum(w["parks"] for w in d["workers"])')
    e_polls=$(sed -n 's/.* \([0-9]*\) polls,.*/\1/p' "$T/e.err")
    e_parks=$(sed -n 's/.* \([0-9]*\) parks,.*/\1/p' "$T/e.err")
    check "$what: some polls to compare ($a_polls)" [ "${a_polls:-0}" -gt 0 ]
    check "$what: export's polls are analyze's ($e_polls vs $a_polls)" [ "$e_polls" = "$a_polls" ]
    check "$what: export's parks are analyze's ($e_parks vs $a_parks)" [ "$e_parks" = "$a_parks" ]
}
same_slices 1s 1500ms
same_slices 2.25s 2.3s
same_slices -1s -0.5s
# windows side by side share no slice: their polls add up to the larger window's
count_polls() { "$DIAL9" analyze --json --from "$1" --to "$2" "$FIXTURE" >"$T/c.json" 2>/dev/null; json "$T/c.json" 'd["polls"]["duration"]["count"]'; }
p1=$(count_polls 1s 2s); p2=$(count_polls 2s 3s); p12=$(count_polls 1s 3s)
check "[1s,2s) + [2s,3s) = [1s,3s) in polls ($p1 + $p2 vs $p12)" [ "$((p1 + p2))" = "$p12" ]
# a window outside the trace: refused by every command, exit 2, the same words
for cmd in analyze check export; do
    args=("$cmd" --from 1h)
    [ "$cmd" = export ] && args+=(-f folded -o "$T/x")
    expect_rc 2 "$cmd --from 1h (past the end) is refused" "$DIAL9" "${args[@]}" "$FIXTURE"
    check "$cmd says --from is past the end ($(head -c 300 "$T/err"))" \
        grep -q -- "empty time window: --from is 3595.190 s after the trace's end (it lasts 4.810 s)" "$T/err"
    args=("$cmd" --to "@$FIRST")
    [ "$cmd" = export ] && args+=(-f folded -o "$T/x")
    expect_rc 2 "$cmd --to @FIRST (nothing before it) is refused" "$DIAL9" "${args[@]}" "$FIXTURE"
    check "$cmd says --to is before the start" grep -q -- "empty time window: --to is 0.000 s before the trace's start" "$T/err"
done

echo "test_time_window: $pass passed, $fail failed"
[ "$fail" = 0 ]
