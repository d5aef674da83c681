#!/usr/bin/env bash
# `dial9 export` on a hand-built trace with known content (export-check/make_trace.mjs, encoded
# from the format description, not with dial9's encoder): every format is read back by an
# independent reader (protobufjs with Perfetto's protos, pprof-format, the speedscope schema,
# JSON.parse) and compared with the facts of the trace: a poll of exactly 12 ms is a 12 000 µs
# slice, the wake at +15 ms flows to task 8's poll at +40 ms, stacks are root first with inline
# frames expanded, a window holds the slices that start in it, cut at --to. Also option errors
# and the chrome size limit.
set -uo pipefail
source "$(dirname "$0")/export-check/lib.sh"

node "$CHECK/make_trace.mjs" "$T/known.bin" || { echo "make_trace failed"; exit 1; }
K="$T/known.bin"
W0='worker 0 (runtime main)'
W1='worker 1 (runtime main)'

# ---- perfetto ----
expect_rc 0 "export perfetto" "$DIAL9" export --format perfetto "$K" -o "$T/k.pftrace"
run_check perfetto "$T/k.pftrace" "$T/p.json" --slices
expect "$T/p.json" \
    "s.process.length === 1 && s.process[0].pid === 4242 && s.process[0].name === 'known-svc'" \
    "s.threads.length === 2" \
    "s.threads.some(t => t.name === '$W0' && t.tid === 1001 && t.pid === 4242)" \
    "s.threads.some(t => t.name === '$W1' && t.tid === 1002)" \
    "s.polls === 4 && s.parks === 1 && s.wakes === 1 && s.flows === 1 && s.max_depth === 1" \
    "s.slices.some(x => x.cat === 'poll' && x.track === '$W0' && x.name === 'src/known.c:12:1' && x.start === 1000000000 && x.dur === 12000000 && x.args.task_id === 7 && x.args.local_queue === 3)" \
    "s.slices.some(x => x.cat === 'poll' && x.track === '$W0' && x.name === 'src/known.c:40:1' && x.dur === 1000000 && x.args.task_id === 9)" \
    "s.slices.some(x => x.cat === 'poll' && x.track === '$W1' && x.name === 'src/other.c:5:3' && x.start === 1040000000 && x.dur === 5000000 && x.args.task_id === 8)" \
    "s.slices.some(x => x.cat === 'poll' && x.track === '$W1' && x.name === 'src/other.c:9:9' && x.dur === 0)" \
    "s.slices.some(x => x.cat === 'park' && x.track === '$W0' && x.start === 1020000000 && x.dur === 10000000 && x.args.sched_wait_ns === 250000 && x.args.cpu_time_ns === 200)" \
    "s.slices.some(x => x.cat === 'wake' && x.track === '$W0' && x.start === 1015000000 && x.args.woken_task_id === 8 && x.args.waker_task_id === 7)" \
    "s.flow_list.length === 1 && s.flow_list[0].from === '$W0@1015000000' && s.flow_list[0].to === '$W1@1040000000:src/other.c:5:3'" \
    "s.counters['global queue'] === 1 && s.counters['$W0: local queue'] === 4 && s.counters['$W0: scheduling delay'] === 1" \
    "s.samples === 2 && s.sample_tids['1002'] === 2" \
    "s.sample_stacks['1002:0x3000;mid_fn;leaf_fn;inlined_fn'] === 1" \
    "s.sample_stacks['1002:[off-cpu: context switch];0x3000;mid_fn;leaf_fn;inlined_fn'] === 1"

# a window that cuts the first poll (+0 .. +12 ms) at its end: up to +5 ms
expect_rc 0 "export perfetto window" "$DIAL9" export -q -f perfetto --to 5ms "$K" -o "$T/w.pftrace"
run_check perfetto "$T/w.pftrace" "$T/pw.json" --slices
expect "$T/pw.json" "s.polls === 1 && s.parks === 0 && s.wakes === 0 && s.samples === 0" \
    "s.slices[0].start === 1000000000 && s.slices[0].dur === 5000000"
# absolute times select the same window
expect_rc 0 "export perfetto absolute window" "$DIAL9" export -q -f perfetto --from @1000000000 --to @1005000000 "$K" -o "$T/wa.pftrace"
check "absolute and relative windows agree" cmp -s "$T/w.pftrace" "$T/wa.pftrace"
# a poll that started before --from is not in the window (the rule of analyze and check too)
expect_rc 0 "export a window inside a poll" "$DIAL9" export -f perfetto --from 5ms --to 10ms "$K" -o "$T/wi.pftrace"
check "a window inside a poll holds no poll ($(head -c 300 "$T/err"))" grep -q " 0 polls, 0 parks" "$T/err"

# ---- chrome ----
expect_rc 0 "export chrome" "$DIAL9" export -q -f chrome "$K" -o "$T/k.json"
run_check chrome "$T/k.json" "$T/c.json" --slices
expect "$T/c.json" \
    "s.polls === 4 && s.parks === 1 && s.wakes === 1 && s.flows === 1 && s.max_depth === 1" \
    "s.threads['4242:1001'] === '$W0' && s.threads['4242:1002'] === '$W1'" \
    "s.slices.some(x => x.cat === 'poll' && x.name === 'src/known.c:12:1' && x.start === 0 && x.dur === 12000 && x.args.task_id === 7)" \
    "s.slices.some(x => x.cat === 'poll' && x.name === 'src/other.c:5:3' && x.start === 40000 && x.dur === 5000)" \
    "s.slices.some(x => x.cat === 'park' && x.start === 20000 && x.dur === 10000 && x.args.sched_wait_ns === 250000)" \
    "s.other.t0_monotonic_ns === '1000000000' && s.other.t0_realtime_ns === '1700000000000000000'" \
    "s.counters['global queue'] === 1"
# the window from +35 ms holds the two polls at +40 ms and the empty one at +50 ms, no flow
expect_rc 0 "export chrome window" "$DIAL9" export -q -f chrome --from 35ms "$K" -o "$T/kw.json"
run_check chrome "$T/kw.json" "$T/cw.json" --slices
expect "$T/cw.json" "s.polls === 3 && s.parks === 0 && s.flows === 0" \
    "s.slices.some(x => x.name === 'src/other.c:5:3' && x.start === 5000 && x.dur === 5000)"
# over the limit: refused, exit 2, nothing written
expect_rc 2 "chrome over --max-events" "$DIAL9" export -f chrome --max-events 5 "$K" -o "$T/big.json"
check "refused export leaves no file" test ! -e "$T/big.json" -a ! -e "$T/big.json.tmp"
check "refusal says how to proceed" grep -q -- '--from/--to' "$T/err"

# ---- folded ----
expect_rc 0 "export folded" "$DIAL9" export -q -f folded "$K" -o "$T/k.folded"
run_check folded "$T/k.folded" "$T/f.json"
check "folded cpu stack, root first, inline frame innermost" grep -qx '0x3000;mid_fn;leaf_fn;inlined_fn 1' "$T/k.folded"
expect "$T/f.json" "s.lines === 1 && s.total === 1"
expect_rc 0 "export folded offcpu" "$DIAL9" export -q -f folded --stacks offcpu "$K" -o "$T/off.folded"
check "folded offcpu" grep -qx '0x3000;mid_fn;leaf_fn;inlined_fn 1' "$T/off.folded"
expect_rc 0 "export folded all by location" "$DIAL9" export -q -f folded --stacks all --by-location "$K" -o "$T/all.folded"
run_check folded "$T/all.folded" "$T/fa.json"
check "folded all by location (cpu)" grep -qx 'src/other.c:5:3;\[cpu\];0x3000;mid_fn;leaf_fn;inlined_fn 1' "$T/all.folded"
check "folded all by location (off-cpu)" grep -qx 'src/other.c:5:3;\[off-cpu\];0x3000;mid_fn;leaf_fn;inlined_fn 1' "$T/all.folded"
expect "$T/fa.json" "s.lines === 2 && s.total === 2"

# ---- pprof ----
expect_rc 0 "export pprof" "$DIAL9" export -q -f pprof --stacks all "$K" -o "$T/k.pb.gz"
run_check pprof "$T/k.pb.gz" "$T/pp.json"
expect "$T/pp.json" \
    "s.sample_types[0] === 'samples/count' && s.samples === 2 && s.total === 2" \
    "s.sample_stacks['0x3000;mid_fn;leaf_fn;inlined_fn'] === 2" \
    "s.locations === 3 && s.functions === 4" \
    "s.label_values.worker[0] === 1 && s.label_values.thread[0] === 1002 && s.label_values.task_id[0] === 8" \
    "s.label_values.location[0] === 'src/other.c:5:3'" \
    "s.label_values.kind.includes('cpu') && s.label_values.kind.includes('offcpu')" \
    "s.duration_nanos === 50000000 && s.time_nanos === '1700000000000000000'"

# the attribution's cause of each off-CPU sample (tests/vectors/attribution: a lock wait, a
# read, two sleeps), as a label
AV="$SOURCE/tests/vectors/attribution.bin"
expect_rc 0 "export pprof offcpu with causes" "$DIAL9" export -q -f pprof --stacks offcpu "$AV" -o "$T/av.pb.gz"
run_check pprof "$T/av.pb.gz" "$T/pav.json"
expect "$T/pav.json" "s.samples === 5" \
    "['lock', 'io', 'sleep'].every(c => s.label_values.cause.includes(c))" \
    "s.label_values.cause.length === 3"

# ---- speedscope ----
expect_rc 0 "export speedscope" "$DIAL9" export -q -f speedscope --by-location "$K" -o "$T/k.speedscope.json"
run_check speedscope "$T/k.speedscope.json" "$T/s.json"
expect "$T/s.json" "s.profiles.length === 1 && s.profiles[0].name === '$W1' && s.profiles[0].samples === 1" \
    "s.profiles[0].stacks['src/other.c:5:3;0x3000;mid_fn;leaf_fn;inlined_fn'] === 1"
expect_rc 0 "export speedscope polls" "$DIAL9" export -q -f speedscope --speedscope polls "$K" -o "$T/kp.speedscope.json"
run_check speedscope "$T/kp.speedscope.json" "$T/sp.json"
expect "$T/sp.json" "s.profiles.length === 2 && s.profiles.every(p => p.type === 'evented')" \
    "s.profiles[0].opened === 3 && s.profiles[1].opened === 2" \
    "s.profiles[0].frames_opened.join() === 'park,src/known.c:12:1,src/known.c:40:1'"

# ---- several files and standard output ----
cp "$K" "$T/a.bin"; cp "$K" "$T/b.bin"
"$DIAL9" export -q -f folded "$T/a.bin" "$T/b.bin" >"$T/two.folded" 2>"$T/err"
check "two files: samples add up" grep -qx '0x3000;mid_fn;leaf_fn;inlined_fn 2' "$T/two.folded"

# ---- errors ----
expect_rc 2 "no format" "$DIAL9" export "$K" -o "$T/x"
expect_rc 2 "unknown format" "$DIAL9" export -f svg "$K" -o "$T/x"
expect_rc 2 "bad time" "$DIAL9" export -f chrome --from soon "$K" -o "$T/x"
expect_rc 2 "empty window" "$DIAL9" export -f chrome --from 30ms --to 10ms "$K" -o "$T/x"
expect_rc 2 "bad --stacks" "$DIAL9" export -f folded --stacks gpu "$K" -o "$T/x"
expect_rc 2 "no PATH" "$DIAL9" export -f folded -o "$T/x"
expect_rc 1 "missing file" "$DIAL9" export -f folded "$T/nope.bin" -o "$T/x"
expect_rc 1 "unwritable output" "$DIAL9" export -f folded "$K" -o "$T/no/such/dir/x"
expect_rc 0 "help" "$DIAL9" export --help
check "help names every format" grep -q 'speedscope' "$T/out"
# a decode error: what was read is still exported, exit 1
cp "$K" "$T/bad.bin"; printf '\x07' >>"$T/bad.bin"
"$DIAL9" export -q -f chrome "$K" "$T/bad.bin" -o "$T/bad.json" 2>"$T/err"
rc=$?
check "decode error exits 1 ($rc)" test "$rc" = 1
run_check chrome "$T/bad.json" "$T/bad-summary.json"

finish
