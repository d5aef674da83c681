#!/usr/bin/env bash
# `dial9 diff`'s command line (docs/diff.md): each bad argument is refused with exit 2 and a
# message naming it; a trace against itself holds every --fail-on item (exit 0); a side that
# could not be read to its end is said (text and JSON), exits 1 and breaks --fail-on data-loss;
# the JSON is schema dial9.diff version 1. On the dial9 fixture (skipped without ../shared):
# --flame writes "stack A B" lines whose columns add up to the CPU and off-CPU samples analyze
# counts in each window, and --slowest 1% puts at least 1 % of the polls in B.
set -uo pipefail
source "$(dirname "$0")/lib/harness.sh"

VEC="$SOURCE/tests/vectors/runtime.bin"
json() { # json FILE EXPR
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"
}

# refused: exit 2, and the message says what was wrong
refused() { # refused "expected text" ARGS...
    local want=$1; shift
    expect_rc 2 "diff $*" "$DIAL9" diff "$@"
    grep -qF -- "$want" "$T/err" || bad "diff $*: stderr lacks '$want': $(head -c 300 "$T/err")"
}
refused "no PATH given"
refused "at most two PATHs" "$VEC" "$VEC" "$VEC"
refused "one PATH needs two windows" "$VEC"
refused "--slowest wants a percentage above 0 and at most 50" --slowest 0% "$VEC"
refused "--slowest wants a percentage above 0 and at most 50" --slowest 60% "$VEC"
refused "--slowest wants a percentage" --slowest 1 "$VEC"
refused "--slowest takes one PATH" --slowest 1% "$VEC" "$VEC"
refused "--flame compares two runs or two windows" --slowest 1% --flame "$T/f" "$VEC"
refused "--fail-on p99=+20% compares two runs or windows, not --slowest" --slowest 1% --fail-on p99=+20% "$VEC"
refused "'bogus': unknown" --fail-on bogus "$VEC" "$VEC"
refused "needs a unit" --fail-on p99=20 "$VEC" "$VEC"
refused "--fail-on given twice" --fail-on new --fail-on regression "$VEC" "$VEC"
refused "--min-polls wants a count of at least 2" --min-polls 1 "$VEC" "$VEC"
refused "--min-change-abs wants a duration" --min-change-abs 5 "$VEC" "$VEC"
refused "--min-change wants a percentage" --min-change ten "$VEC" "$VEC"
refused "--z wants a number above 0" --z 0 "$VEC" "$VEC"
refused "--top wants a count" --top -1 "$VEC" "$VEC"
refused "--a-from" --a-from 5 --b-from 1ms "$VEC"
refused "--to must be after --from" --a-from 2ms --a-to 1ms "$VEC"
refused "unknown or incomplete option" --bogus "$VEC" "$VEC"
if [ -f "$T/f" ]; then bad "--flame was written although refused"; else ok; fi

# a trace against itself: nothing changed, every item holds
expect_rc 0 "diff VEC VEC --fail-on ..." "$DIAL9" diff --fail-on regression,new,p99=+1%,p50=+1ns,mean=+1% "$VEC" "$VEC"
check "the text says every item holds" grep -q "dial9 diff: ok: 5 --fail-on items hold" "$T/out"
expect_rc 0 "diff --json VEC VEC" "$DIAL9" diff --json "$VEC" "$VEC"
cp "$T/out" "$T/self.json"
check "schema dial9.diff" [ "$(json "$T/self.json" 'd["schema"], d["version"]')" = "('dial9.diff', 1)" ]
check "ok true" [ "$(json "$T/self.json" 'd["ok"]')" = True ]
check "mode runs" [ "$(json "$T/self.json" 'd["mode"]')" = runs ]
# runtime.bin dropped 4 events: data-loss breaks, and is named
expect_rc 1 "--fail-on data-loss on a trace with drops" "$DIAL9" diff --fail-on data-loss "$VEC" "$VEC"
check "data-loss names the drops" grep -q "FAIL fail-on data-loss: side A lost data: 4 events dropped" "$T/out"

# a side damaged in its middle (bytes 900-959 overwritten): said, exit 1, the rest still compared
python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[900:960] = b"\xff" * 60; open(sys.argv[2], "wb").write(d)' \
    "$VEC" "$T/damaged.bin"
expect_rc 1 "diff VEC damaged.bin" "$DIAL9" diff --json "$VEC" "$T/damaged.bin"
check "b.readable false ($(json "$T/out" 'd["sides"]["b"]'))" \
    [ "$(json "$T/out" 'd["sides"]["b"]["readable"], d["sides"]["b"]["lost_data"], d["ok"]')" = "(False, True, False)" ]
check "the reader says which file" grep -q "damaged.bin: damaged at offset 900" "$T/err"



if [ ! -f "$FIXTURE" ]; then
    echo "SKIP: $FIXTURE not found (no ../shared): the fixture's checks"
else
    expect_rc 0 "diff --flame on the fixture's two windows" "$DIAL9" diff --a-to 2s --b-from 2s --flame "$T/flame" "$FIXTURE"
    check "every flame line is 'stack A B'" awk 'NF < 3 || $(NF-1) !~ /^[0-9]+$/ || $NF !~ /^[0-9]+$/ || ($1 !~ /^(cpu|off-cpu);/) { exit 1 }' "$T/flame"
    for side in a b; do
        if [ $side = a ]; then win="--to 2s"; col='$(NF-1)'; else win="--from 2s"; col='$NF'; fi
        # shellcheck disable=SC2086
        "$DIAL9" analyze --json $win "$FIXTURE" >"$T/an.json"
        want_cpu=$(json "$T/an.json" 'd["cpu"]["cpu_samples"]')
        want_off=$(json "$T/an.json" 'd["blocking"]["offcpu_samples"]')
        got_cpu=$(awk "/^cpu;/ { s += $col } END { print s + 0 }" "$T/flame")
        got_off=$(awk "/^off-cpu;/ { s += $col } END { print s + 0 }" "$T/flame")
        check "flame $side: CPU samples $got_cpu = analyze's $want_cpu" [ "$got_cpu" = "$want_cpu" ]
        check "flame $side: off-CPU samples $got_off = analyze's $want_off" [ "$got_off" = "$want_off" ]
    done
    expect_rc 0 "diff --json --slowest 1% on the fixture" "$DIAL9" diff --json --slowest 1% "$FIXTURE"
    check "B holds at least 1 % of the polls and A the rest" \
        [ "$(json "$T/out" 'd["sides"]["b"]["polls"] * 100 >= d["sides"]["a"]["polls"] + d["sides"]["b"]["polls"]')" = True ]
    check "B's polls are all at least its threshold" \
        [ "$(json "$T/out" 'all(g["b"]["p50_ns"] >= d["slowest"]["threshold_ns"] for g in d["groups"] if g["b"]["count"])')" = True ]
fi

echo "test_diff_cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
