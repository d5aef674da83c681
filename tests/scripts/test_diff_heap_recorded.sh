#!/bin/bash
# `dial9 diff` of two recorded heaps: tests/preload/d9p_heap's leak program (4 KiB blocks from
# leak_inner <- leak_middle <- leak_outer, among churn that frees what it allocates) under the
# preload shim, sampled at one sample per 64 KiB with a seed, recorded twice with two leak sizes
# (A: 4000 rounds, about 4 MiB leaked; B: 16000 rounds, about 16 MiB). The heap section ranks the
# growing site first, in the text and the JSON, with its in-use bytes near what each run leaked
# (about 62 and 250 samples of the leak: within 50 % on each side, and B at least twice A). No
# sample may be dropped for that: each sample's record carries a stack copy (~2 KiB), and under
# load the collector drains rarely enough for a 1 MiB ring to fill (docs/heap-profiling.md;
# test_preload_heap saw 4 196 events dropped), so both runs record into a 64 MiB ring;
# `--fail-on heap_inuse=+100%` breaks on it (exit 1) and names it, `--fail-on heap_inuse=+1GiB`
# holds (exit 0); heap_inuse with --slowest is a usage error; against a run recorded without heap
# profiling there is no section, stderr says why, and a heap gate breaks.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
HEAP="$HELPERS/d9p_heap"
[ -x "$HEAP" ] || fail "$HEAP not built"

# record NAME ROUNDS: the leak program under the shim and its heap library; prints the run directory
record() {
    local dir="$WORK/$1"
    DIAL9_TRACE_DIR="$dir" DIAL9_BUFFER_KB=65536 DIAL9_MEMORY_PROFILE_ENABLED=1 DIAL9_MEMORY_SAMPLE_BYTES=65536 DIAL9_MEMORY_SEED=1 \
        LD_PRELOAD="$SHIM:$HEAP_SHIM" "$HEAP" leak "$2" >"$WORK/$1.out" 2>"$WORK/$1.err" ||
        fail "d9p_heap leak $2: exit $? ($(tail -3 "$WORK/$1.out" "$WORK/$1.err"))"
    local runs=("$dir"/*/)
    [ ${#runs[@]} = 1 ] && [ -d "${runs[0]}" ] || fail "one run in $dir (${runs[*]})"
    "$D9" symbolize "${runs[0]%/}" >"$WORK/$1.sym" 2>&1 || fail "dial9 symbolize: $(tail -3 "$WORK/$1.sym")"
    echo "${runs[0]%/}"
}

A=$(record a 4000) || exit 1
B=$(record b 16000) || exit 1
leaked_a=$(awk '/^leaked/ { print $2 }' "$WORK/a.out")
leaked_b=$(awk '/^leaked/ { print $2 }' "$WORK/b.out")
[ -n "$leaked_a" ] && [ -n "$leaked_b" ] || fail "the helper said nothing of its leak"

"$D9" diff "$A" "$B" >"$WORK/diff.txt" 2>"$WORK/diff.err" || fail "dial9 diff: exit $? ($(tail -3 "$WORK/diff.err"))"
sed -n '/^HEAP/,$p' "$WORK/diff.txt" | head -8
"$D9" diff --json "$A" "$B" >"$WORK/diff.json" 2>"$WORK/diff.err" || fail "dial9 diff --json: $(tail -3 "$WORK/diff.err")"
python3 - "$WORK/diff.txt" "$WORK/diff.json" "$leaked_a" "$leaked_b" <<'PY' || exit 1
import json, sys
text, doc = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
leaked = [int(sys.argv[3]), int(sys.argv[4])]
if "\nHEAP " not in text:
    sys.exit("FAIL: no HEAP section in the text")
rows = text.split("\nHEAP ", 1)[1].split("\n")
first = next((r for r in rows if r.strip() and r.strip()[0].isdigit() and "<-" in r), None)
if not first or "leak_inner <- leak_middle <- leak_outer" not in first:
    sys.exit("FAIL: the text's first heap site is not the leak:\n" + "\n".join(rows[:8]))
h = doc.get("heap") or sys.exit("FAIL: no heap in diff --json")
top = h["sites"][0]
if not top["site"].endswith(";leak_outer;leak_middle;leak_inner"):
    sys.exit("FAIL: the first site is %s" % top["site"])
est = [top["a"]["inuse_bytes"], top["b"]["inuse_bytes"]]
for side, bound in ((0, 0.5), (1, 0.5)):
    err = abs(est[side] - leaked[side]) / leaked[side]
    print("side %s: leak in use %.0f estimated, %d leaked (%.1f %% off)" % ("AB"[side], est[side], leaked[side], 100 * err))
    if err > bound:
        sys.exit("FAIL: side %s's estimate is more than %d %% off" % ("AB"[side], 100 * bound))
if not est[1] > 2 * est[0] or top["rank"] != 1:
    sys.exit("FAIL: the leak did not grow: %s" % top)
for r in h["sites"][1:]:
    if r["inuse_change_bytes"] > top["inuse_change_bytes"]:
        sys.exit("FAIL: not ranked by growth: %s above %s" % (top, r))
print("leak: %.0f -> %.0f bytes in use, first of %d sites" % (est[0], est[1], len(h["sites"])))
PY
echo "ok: the growing site is ranked first, text and JSON"

"$D9" diff --fail-on heap_inuse=+100% "$A" "$B" >"$WORK/gate.txt" 2>&1
rc=$?
[ $rc = 1 ] || fail "--fail-on heap_inuse=+100%: exit $rc, want 1 ($(tail -3 "$WORK/gate.txt"))"
grep -q '^FAIL fail-on heap_inuse=+100%: leak_inner: in use ' "$WORK/gate.txt" ||
    fail "the gate does not name the leak: $(grep fail-on "$WORK/gate.txt")"
"$D9" diff --fail-on heap_inuse=+1GiB "$A" "$B" >"$WORK/gate.txt" 2>&1 ||
    fail "--fail-on heap_inuse=+1GiB: exit $? ($(grep fail-on "$WORK/gate.txt"))"
echo "ok: --fail-on heap_inuse breaks on the leak, holds above it"

"$D9" diff --slowest 1% --fail-on heap_inuse=+10% "$B" >/dev/null 2>"$WORK/usage.err"
rc=$?
[ $rc = 2 ] && grep -q "heap_inuse=+10% compares two runs" "$WORK/usage.err" ||
    fail "heap_inuse with --slowest: exit $rc, $(cat "$WORK/usage.err")"
echo "ok: heap_inuse needs two runs"

# a run without heap samples against one with them: no section, said on stderr; a heap gate breaks
DIAL9_TRACE_DIR="$WORK/off" LD_PRELOAD="$SHIM" "$HEAP" leak 100 >/dev/null 2>&1 || fail "d9p_heap without heap profiling"
OFF=$(echo "$WORK"/off/*/)
"$D9" diff --fail-on heap_inuse=+1GiB "${OFF%/}" "$B" >"$WORK/off.txt" 2>"$WORK/off.err"
rc=$?
[ $rc = 1 ] && ! grep -q '^HEAP' "$WORK/off.txt" && grep -q "only B has heap samples" "$WORK/off.err" &&
    grep -q "^FAIL fail-on heap_inuse=+1GiB: no heap samples on both runs" "$WORK/off.txt" ||
    fail "a run without heap samples: exit $rc, $(cat "$WORK/off.err") $(grep fail-on "$WORK/off.txt")"
echo "ok: one run without heap samples: said, and a heap gate breaks"
echo "PASS"
