#!/usr/bin/env bash
# `dial9 diff` on real recordings (issue #34's target): tests/diff/workload.c, built twice
# (d9_diff_workload_fast, and _slow where handle_lookup does 2 ms more of CPU per call, counted
# on the thread's CPU clock), records 300 rounds of four handlers. Recorded 11 times with the
# base build and once with the slow one:
#   - base against slow: handle_lookup's spawn location is ranked first, as a regression, and
#     --fail-on p50=+1ms breaks (exit 1); slow against base: it is an improvement, first;
#   - base against each of the 10 other base runs: no regression, nothing new, and
#     --fail-on regression,new holds (exit 0), at the default thresholds.
# Rounds are counted, not timed: a busy machine makes the 2 ms longer, never shorter, and the
# handlers' few microseconds stay under the default 20 us change however the runs differ.
set -uo pipefail
source "$(dirname "$0")/lib/harness.sh"

FAST="$BUILD/d9_diff_workload_fast"
SLOW="$BUILD/d9_diff_workload_slow"
for p in "$FAST" "$SLOW" "$DIAL9"; do
    [ -x "$p" ] || { echo "FAIL: $p not built" >&2; exit 1; }
done

json() { # json FILE EXPR
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"
}

record() { # record BINARY NAME: the run directory on stdout
    if ! "$1" "$T/$2" >"$T/$2.out" 2>"$T/$2.err"; then
        bad "$2: the workload failed: $(head -c 300 "$T/$2.err")"
        return 1
    fi
    head -n 1 "$T/$2.out"
}

base0=$(record "$FAST" base0) || exit 1
slow=$(record "$SLOW" slow) || exit 1

# base against slow
expect_rc 0 "diff base slow --json" "$DIAL9" diff --json "$base0" "$slow"
cp "$T/out" "$T/slow.json"
first=$(json "$T/slow.json" 'd["groups"][0]["name"] + " " + d["groups"][0]["verdict"]')
check "the slower function's location is ranked first as a regression (got '$first')" [ "$first" = "handle_lookup regression" ]
check "one regression only (got $(json "$T/slow.json" 'd["summary"]'))" \
    [ "$(json "$T/slow.json" 'd["summary"]["regression"]')" = 1 ]
check "its p50 rose by at least 2 ms" \
    [ "$(json "$T/slow.json" 'd["groups"][0]["b"]["p50_ns"] - d["groups"][0]["a"]["p50_ns"] >= 2000000')" = True ]
expect_rc 1 "diff --fail-on p50=+1ms breaks on the slow build" "$DIAL9" diff --fail-on p50=+1ms "$base0" "$slow"
check "the text names handle_lookup's break" grep -q "FAIL fail-on p50=+1ms: handle_lookup" "$T/out"
check "the text ranks handle_lookup first" \
    [ "$(awk '/^verdict/ { getline; print $1, $NF; exit }' "$T/out")" = "regression handle_lookup" ]

# slow against base: the same location, now the first improvement
expect_rc 0 "diff slow base --json" "$DIAL9" diff --json "$slow" "$base0"
first=$(json "$T/out" '[g["name"] for g in d["groups"] if g["verdict"] == "improvement"][:1]')
check "slow against base: handle_lookup improved (got $first)" [ "$first" = "['handle_lookup']" ]
check "slow against base: no regression" [ "$(json "$T/out" 'd["summary"]["regression"]')" = 0 ]

# the same build, 10 more times: no regression at the default thresholds
for i in 1 2 3 4 5 6 7 8 9 10; do
    run=$(record "$FAST" "base$i") || continue
    "$DIAL9" diff --fail-on regression,new "$base0" "$run" >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" = 0 ] && grep -q "^0 regressions, 0 new," "$T/out"; then
        ok
    else
        bad "base0 against base$i: exit $rc: $(grep -A12 '^verdict' "$T/out") $(head -c 300 "$T/err")"
    fi
done

echo "test_diff_recorded: $pass passed, $fail failed"
[ "$fail" = 0 ]
