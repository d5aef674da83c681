#!/usr/bin/env bash
# Spans in `dial9 export --format perfetto`, read back by the independent reader (protobufjs
# with Perfetto's protos, export-check/check_perfetto.mjs): each span a slice on a track of its
# name (a lane per overlap: "request" and "request #2"), the user's id and the split of its
# time as arguments, an unended span drawn to the trace's end and marked. The trace is the one
# test_export_spans builds by hand (its --write-trace), whose exact parts that test checks.
set -uo pipefail
source "$(dirname "$0")/export-check/lib.sh"

maker="$BUILD/test_export_spans"
[ -x "$maker" ] || { echo "SKIP: $maker is not built"; exit 0; }
"$maker" --write-trace "$T/spans.bin" || { echo "test_export_spans --write-trace failed"; exit 1; }

expect_rc 0 "export perfetto with spans" "$DIAL9" export -q -f perfetto "$T/spans.bin" -o "$T/s.pftrace"
run_check perfetto "$T/s.pftrace" "$T/s.json" --slices
B=1000000000
expect "$T/s.json" \
    "s.slices.filter(x => x.cat === 'span').length === 3" \
    "s.slices.some(x => x.cat === 'span' && x.track === 'request' && x.name === 'request' && x.start === $B + 150000 && x.dur === 300000 && x.args.span_id === 1 && x.args.poll_ns === 150000 && x.args.queued_ns === 150000 && x.args.wait_ns === 0 && x.args.unknown_ns === 0 && x.args.task_id === 1 && x.args.unended === undefined)" \
    "s.slices.some(x => x.cat === 'span' && x.track === 'request #2' && x.args.span_id === 2 && x.start === $B + 310000 && x.dur === 150000)" \
    "s.slices.some(x => x.cat === 'span' && x.track === 'flush' && x.args.span_id === 9 && x.args.unended === 1 && x.start === $B + 320000 && x.dur === 680000 && x.args.wait_ns === 550000)"
finish
