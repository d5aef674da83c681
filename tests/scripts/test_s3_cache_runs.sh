#!/usr/bin/env bash
# The fleet cache (src/fleet/s3_cache.c, s3_fetch.c) with two recordings of one instance and
# boot (the process restarted without a reboot): both count their segments from 0, so their
# keys differ only in the epoch, and before this test both segment 0s were cached at
# boot=B/trace.0.bin. Against a real S3-speaking server on loopback (s3rver behind the
# verifying proxy, tests/scripts/s3/):
#   - in one selection: each object is read once, with its own bytes (the reader's dump is the
#     local files' dumps in order), each recording in a run directory of its own;
#   - across selections: a window that holds only the second recording, then one that holds
#     only the first (its segment 0 of the same size, other bytes, at the same local path as
#     the first window left it): the second read gets the first recording's bytes, not the
#     cached file of the other (its sidecar names another key).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=1 # common.sh's event checks are not used here
source "$CHECK/common.sh"

# d9s3 CACHE ARGS...: dial9 against the loopback server, with its own cache directory
d9s3() { local cache=$1; shift; "${s3env[@]}" DIAL9_S3_CACHE_DIR="$cache" AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$DIAL9" "$@"; }

# Recording A: segments 0 and 1 on Jan 10 at 10:00; recording B, same instance and boot:
# segment 0 two days later (so that a window of one lists no key of the other), of A's segment 0's size with other bytes (a spawn location renamed, same length).
A0="$SOURCE/tests/vectors/runtime.bin" A1="$SOURCE/tests/vectors/worked-example.bin" B0="$T/b0.bin"
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); assert b"src/server.c" in d
open(sys.argv[2], "wb").write(d.replace(b"src/server.c", b"src/client.c"))' "$A0" "$B0"
check "B0: A0's size, other bytes" [ "$(stat -c %s "$A0")" = "$(stat -c %s "$B0")" ]
differ() { ! cmp -s "$1" "$2"; }
check "B0 differs from A0" differ "$A0" "$B0"
ta=$(date -u -d 2026-01-10T10:00:00Z +%s) tb=$(date -u -d 2026-01-12T10:00:00Z +%s)
key() { # key EPOCH N: dial9's current layout, service api, instance h1, boot b1
    echo "dial9-traces/version=1/date=$(date -u -d "@$1" +%Y-%m-%d)/service=api/time=$(date -u -d "@$1" +%H%M)/instance=h1/boot=b1/$1-$2.bin"
}
start_proxy cache
for spec in "$ta 0 $A0" "$((ta + 60)) 1 $A1" "$tb 0 $B0"; do
    read -r epoch n file <<<"$spec"
    node "$CHECK/put_object.mjs" "http://127.0.0.1:$PORT" $BUCKET "$(key "$epoch" "$n")" "$file" 2>"$T/put.err"
    rc=$?; check "stored $(key "$epoch" "$n") ($(head -c 200 "$T/put.err"))" [ "$rc" = 0 ]
done
"$DIAL9" dump --jsonl "$A0" >"$T/a0.jsonl" && "$DIAL9" dump --jsonl "$A1" >"$T/a1.jsonl" &&
    "$DIAL9" dump --jsonl "$B0" >"$T/b0.jsonl"
check "local dumps" [ -s "$T/a0.jsonl" ] && [ -s "$T/b0.jsonl" ]
cat "$T/a0.jsonl" "$T/a1.jsonl" "$T/b0.jsonl" >"$T/all.jsonl"

# ---- 1. one selection holds both recordings ----
d9s3 "$T/cache1" dump --jsonl s3://$BUCKET/dial9-traces >"$T/s1.jsonl" 2>"$T/s1.err"
rc=$?; check "dump of both recordings: exit 0 ($(head -c 300 "$T/s1.err"))" [ "$rc" = 0 ]
check "each object read once, with its own bytes (A0, A1, B0 in order)" cmp -s "$T/all.jsonl" "$T/s1.jsonl"
mapfile -t cached < <(find "$T/cache1" -name 'trace.*.bin' | sort)
check "three files cached (${cached[*]})" [ "${#cached[@]}" = 3 ]
boot="$T/cache1/$BUCKET/dial9-traces/service=api/instance=h1/boot=b1"
check "recording A in its own run directory" cmp -s "$A0" "$boot/run-$ta/trace.0.bin"
check "A's segment 1 beside its segment 0" cmp -s "$A1" "$boot/run-$ta/trace.1.bin"
check "recording B in its own run directory" cmp -s "$B0" "$boot/run-$tb/trace.0.bin"
d9s3 "$T/cache1" dump --jsonl s3://$BUCKET/dial9-traces >"$T/s1b.jsonl" 2>"$T/s1b.err"
check "read again from the cache: the same" cmp -s "$T/all.jsonl" "$T/s1b.jsonl"
check "read again: nothing fetched ($(grep -c '"code":"got"' "$T/cache/log") GETs)" [ "$(grep -c '"code":"got"' "$T/cache/log")" = 3 ]

# ---- 2. two selections, one recording each, one cache ----
d9s3 "$T/cache2" dump --jsonl s3://$BUCKET/dial9-traces --from 2026-01-12T09:55Z --to 2026-01-12T10:05Z \
    >"$T/s2.jsonl" 2>"$T/s2.err"
rc=$?; check "window of B: exit 0 ($(head -c 300 "$T/s2.err"))" [ "$rc" = 0 ]
check "window of B: B0 alone" cmp -s "$T/b0.jsonl" "$T/s2.jsonl"
one="$T/cache2/$BUCKET/dial9-traces/service=api/instance=h1/boot=b1/trace.0.bin"
check "window of B: B0 at boot=b1/trace.0.bin (one recording listed: one run)" cmp -s "$B0" "$one"
d9s3 "$T/cache2" dump --jsonl s3://$BUCKET/dial9-traces --from 2026-01-10T09:55Z --to 2026-01-10T10:05Z \
    >"$T/s3.jsonl" 2>"$T/s3.err"
rc=$?; check "window of A: exit 0 ($(head -c 300 "$T/s3.err"))" [ "$rc" = 0 ]
cat "$T/a0.jsonl" "$T/a1.jsonl" >"$T/a.jsonl"
check "window of A: A's bytes, not B's cached at the same path" cmp -s "$T/a.jsonl" "$T/s3.jsonl"
check "window of A: A0 now at that path" cmp -s "$A0" "$one"

echo "test_s3_cache_runs: $pass passed, $fail failed"
[ "$fail" = 0 ]
