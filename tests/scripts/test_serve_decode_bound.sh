#!/usr/bin/env bash
# `dial9 serve` bounds what one segment may decode to while it indexes (--max-decoded MB): a
# few hundred KB of zstd can hold gigabytes of events, and the server's one thread answered
# nothing while it decoded them (a 184 KB .bin.zst of 2 GB held it ~5 s at the start and after
# every touch). Here a 64 MiB run of events in a small .bin.zst, served with --max-decoded 1
# (and one of events without a timestamp, which must count as well):
#   - /api/index answers, and says so of that segment: status too_large, its message naming
#     --max-decoded, at most 1 MiB (plus one frame) decoded, fewer events than it holds;
#   - its /api/trace serves that decoded part, a trace `dial9 stats` reads to its end;
#   - another run's trace and /runs are answered after a touch of the big file (re-indexed);
#   - --max-decoded 0 is a usage error.
# The checks are on the answers, not on how fast they come.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"

serve_under_test python3 zstd curl
[ -x "$DIAL9" ] || { echo "$DIAL9 not built"; exit 1; }

# a dial9 stream: PollStart/PollEnd schemas, one pool string, then PAIRS poll pairs of 20 bytes
# (the known trace of test_serve.sh, its events repeated); with "untimed", PAIRS pairs of 4-byte
# events of a schema without a timestamp instead
make_trace() { # make_trace PAIRS [untimed]
    python3 - "$@" <<'EOF'
import struct, sys
pairs = int(sys.argv[1])
untimed = len(sys.argv) > 2
def name(s): return struct.pack("<H", len(s)) + s.encode()
out = sys.stdout.buffer
out.write(b"TRC\x00\x01")
out.write(b"\x01" + struct.pack("<H", 0) + name("PollStartEvent") + b"\x01" + struct.pack("<H", 4)
          + name("worker_id") + b"\x09" + name("local_queue") + b"\x0b" + name("task_id") + b"\x09"
          + name("spawn_loc") + b"\x07")
out.write(b"\x01" + struct.pack("<H", 1) + name("PollEndEvent") + b"\x01" + struct.pack("<H", 1)
          + name("worker_id") + b"\x09")
out.write(b"\x03" + struct.pack("<III", 1, 1, 6) + b"a.c:1:")
out.write(b"\x01" + struct.pack("<H", 2) + name("UntimedEvent") + b"\x00" + struct.pack("<H", 1)
          + name("value") + b"\x09")
out.write(b"\x05" + struct.pack("<Q", 1000000000))
pair = (b"\x02" + struct.pack("<H", 0) + (500).to_bytes(3, "little") + b"\x00\x00\x07" + struct.pack("<I", 1)
        + b"\x02" + struct.pack("<H", 1) + (1000).to_bytes(3, "little") + b"\x00")
if untimed:
    pair = (b"\x02" + struct.pack("<H", 2) + b"\x07") * 2
block = pair * 65536
for _ in range(pairs // 65536):
    out.write(block)
out.write(pair * (pairs % 65536))
EOF
}
D="$T/traces"
mkdir -p "$D/big" "$D/untimed" "$D/small"
PAIRS=$((64 * 1024 * 1024 / 20))
make_trace "$PAIRS" | zstd -q -c >"$D/big/trace.0.bin.zst"
make_trace $((64 * 1024 * 1024 / 6)) untimed | zstd -q -c >"$D/untimed/trace.0.bin.zst"
make_trace 2 >"$D/small/trace.0.bin"
echo "big: $(stat -c %s "$D/big/trace.0.bin.zst") bytes of zstd, $((PAIRS * 2)) events"

serve_start bound "$SERVE" --max-decoded 1 "$D" || exit 1
U="http://127.0.0.1:$PORT"
check "the index is answered" curl -sf -m 120 -o "$T/index.json" "$U/api/index"
python3 - "$T/index.json" "$PAIRS" >"$T/verdict.txt" <<'EOF'
import json, sys
ix = json.load(open(sys.argv[1]))
pairs = int(sys.argv[2])
seg = next(r for r in ix["runs"] if r["run"] == "big")["files"][0]
small = next(r for r in ix["runs"] if r["run"] == "small")["files"][0]
untimed = next(r for r in ix["runs"] if r["run"] == "untimed")["files"][0]
print("untimed", untimed["status"], 0 < untimed["decoded_bytes"] <= (1 << 20) + 64)
print("status", seg["status"])
print("message-names-option", "--max-decoded" in seg.get("message", ""))
print("decoded-within-bound", 0 < seg["decoded_bytes"] <= (1 << 20) + 64)
print("fewer-events", 0 < seg["events"] < 2 * pairs)
print("small", small["status"], small["events"])
EOF
cat "$T/verdict.txt"
check "the big segment is too_large" grep -qx 'status too_large' "$T/verdict.txt"
check "its message names --max-decoded" grep -qx 'message-names-option True' "$T/verdict.txt"
check "at most 1 MiB of it decoded" grep -qx 'decoded-within-bound True' "$T/verdict.txt"
check "fewer events than it holds" grep -qx 'fewer-events True' "$T/verdict.txt"
check "the small run is indexed whole" grep -qx 'small ok 4' "$T/verdict.txt"
check "events without a timestamp count too: at most 1 MiB" grep -qx 'untimed too_large True' "$T/verdict.txt"
code=$(curl -s -m 120 -o "$T/big.bin" -w '%{http_code}' "$U/api/trace?run=big")
check "the big run's trace is answered ($code)" test "$code" = 200
size=$(stat -c %s "$T/big.bin" 2>/dev/null || echo 0)
check "it is the decoded part: $size bytes, at most 1 MiB and a frame" test "$size" -gt 0 -a "$size" -le $((1048576 + 64))
check "dial9 stats reads it to its end" bash -c '"$0" stats "$1" >/dev/null' "$DIAL9" "$T/big.bin"
touch "$D/big/trace.0.bin.zst" # re-indexed at the next request, under the same bound
code=$(curl -s -m 120 -o /dev/null -w '%{http_code}' "$U/api/trace?run=small")
check "after a touch, another run's trace is answered ($code)" test "$code" = 200
code=$(curl -s -m 120 -o /dev/null -w '%{http_code}' "$U/runs")
check "and /runs ($code)" test "$code" = 200
serve_stop 0

expect_rc 2 "--max-decoded 0 is a usage error" "$SERVE" --max-decoded 0 "$D"
expect_rc 2 "--max-decoded x is a usage error" "$SERVE" --max-decoded x "$D"

echo "test_serve_decode_bound: $pass passed, $fail failed"
[ "$fail" = 0 ]
