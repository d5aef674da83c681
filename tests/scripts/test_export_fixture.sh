#!/usr/bin/env bash
# `dial9 export` on the real dial9 trace (../shared/fixtures/dial9-demo-trace.bin), every
# format read back by an independent reader and compared with the fixture's documented
# contents: 36 801 polls, the longest 50 280 303 ns on worker 0 (task 112, axum_traced.rs:173),
# 6 949 stack samples whose context-switch stacks show expand_fdtable. Prints how long each
# export took. Skips when ../shared is absent.
set -uo pipefail
source "$(dirname "$0")/export-check/lib.sh"

if [ ! -f "$FIXTURE" ]; then
    echo "SKIP: $FIXTURE not found (no ../shared): nothing to test"
    exit 0
fi
LOC='examples/metrics-service/src/axum_traced.rs:173:32'

timed() { # timed NAME command...: run, record the wall time in ms
    local name=$1; shift
    local t0; t0=$(date +%s%N)
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    local ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" = 0 ]; then ok; else bad "$name: exit $rc ($(head -c 400 "$T/err"))"; fi
    printf '  %-28s %5d ms  %9d bytes\n' "$name" "$ms" "$(stat -c %s "${OUTFILE:-/dev/null}" 2>/dev/null || echo 0)"
}

echo "export of the fixture (4 047 237 bytes decoded):"
OUTFILE="$T/f.pftrace" timed "perfetto" "$DIAL9" export -q -f perfetto "$FIXTURE" -o "$T/f.pftrace"
OUTFILE="$T/f.json" timed "chrome" "$DIAL9" export -q -f chrome "$FIXTURE" -o "$T/f.json"
OUTFILE="$T/f.folded" timed "folded (all stacks)" "$DIAL9" export -q -f folded --stacks all "$FIXTURE" -o "$T/f.folded"
OUTFILE="$T/f.pb.gz" timed "pprof (all stacks)" "$DIAL9" export -q -f pprof --stacks all "$FIXTURE" -o "$T/f.pb.gz"
OUTFILE="$T/f.speedscope.json" timed "speedscope (by location)" "$DIAL9" export -q -f speedscope --stacks all --by-location "$FIXTURE" -o "$T/f.speedscope.json"
OUTFILE="$T/fp.speedscope.json" timed "speedscope (polls)" "$DIAL9" export -q -f speedscope --speedscope polls "$FIXTURE" -o "$T/fp.speedscope.json"

run_check perfetto "$T/f.pftrace" "$T/p.json"
expect "$T/p.json" \
    "s.polls === 36801 && s.parks === 6304 && s.wakes === 35552" \
    "s.flows > 35000 && s.max_depth === 1" \
    "s.threads.length === 2 && s.threads.map(t => t.tid).sort().join() === '31710,31711'" \
    "s.longest_poll.dur === 50280303 && s.longest_poll.track === 'worker 0' && s.longest_poll.task_id === 112 && s.longest_poll.name === '$LOC'" \
    "s.samples === 6949 && s.sample_functions.includes('expand_fdtable') && s.sample_functions.includes('__schedule')" \
    "s.process[0].name === 'metrics-service'" \
    "Object.keys(s.counters).length === 5"

run_check chrome "$T/f.json" "$T/c.json"
expect "$T/c.json" "s.polls === 36801 && s.parks === 6304 && s.flows > 35000 && s.max_depth <= 2" \
    "s.longest_poll.dur === 50280.303 && s.longest_poll.task_id === 112 && s.longest_poll.name === '$LOC'"

run_check folded "$T/f.folded" "$T/f.json.sum"
expect "$T/f.json.sum" "s.total === 6949" "s.roots['[off-cpu]'] + s.roots['[cpu]'] === 6949" \
    "s.has.includes('expand_fdtable')"

run_check pprof "$T/f.pb.gz" "$T/pp.json"
expect "$T/pp.json" "s.samples === 6949 && s.total === 6949" \
    "s.function_names.includes('expand_fdtable')" \
    "s.label_values.location.includes('$LOC')" \
    "s.label_values.thread.sort().join() === '31710,31711'"

run_check speedscope "$T/f.speedscope.json" "$T/s.json"
expect "$T/s.json" "s.profiles.length === 2 && s.profiles.reduce((a, p) => a + p.samples, 0) === 6949"
run_check speedscope "$T/fp.speedscope.json" "$T/sp.json"
expect "$T/sp.json" "s.profiles.length === 2 && s.profiles.reduce((a, p) => a + p.opened, 0) === 36801 + 6304"

# a one-second window: fewer polls, all inside it
expect_rc 0 "export chrome window" "$DIAL9" export -q -f chrome --from 1s --to 2s "$FIXTURE" -o "$T/w.json"
run_check chrome "$T/w.json" "$T/cw.json" --slices
expect "$T/cw.json" "s.polls > 1000 && s.polls < 36801" \
    "s.slices.every(x => x.start >= 0 && x.start + x.dur <= 1000000.0005)"
# the whole fixture in chrome JSON is over a small limit: refused
expect_rc 2 "chrome over the limit" "$DIAL9" export -f chrome --max-events 100000 "$FIXTURE" -o "$T/big.json"

finish
