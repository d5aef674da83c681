#!/usr/bin/env bash
# `dial9 serve --bucket` (serve/trace_index.c) with two recordings of one instance and boot (the
# process restarted without a reboot: both count their segments from 0, their keys differ only
# in the epoch), against a real S3-speaking server on loopback (s3rver behind the verifying
# proxy, tests/scripts/s3/):
#   - one window holding both: two runs (run-{epoch} directories below the boot), each answering
#     its own recording's events when opened;
#   - one cache, two servers: a window of the second recording, opened (its segment 0 fetched
#     to boot=b1/trace.0.bin), then a window of the first (its segment 0 of the same size, other
#     bytes, at that same local path): the index says the segment is not cached, and opening it
#     answers the first recording's events, fetched, not the other's file.
# Before this, dial9-serve counted a cached file by its size alone (the fleet cache's key
# sidecar, common/cache_sidecar.h, was not read), and served B's segment as A's.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=1 # common.sh's event checks are not used here
serve_under_test curl python3
source "$CHECK/common.sh"
trap 'for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done; serve_cleanup' EXIT

# Recording A: segment 0 on Jan 10 at 10:00; recording B, same instance and boot: segment 0 two
# days later (a window of one lists no key of the other), of A's size with other bytes (a spawn
# location renamed, same length).
A0="$SOURCE/tests/vectors/runtime.bin" B0="$T/b0.bin"
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); assert b"src/server.c" in d
open(sys.argv[2], "wb").write(d.replace(b"src/server.c", b"src/client.c"))' "$A0" "$B0"
check "B0: A0's size, other bytes" [ "$(stat -c %s "$A0")" = "$(stat -c %s "$B0")" ] && ! cmp -s "$A0" "$B0"
ta=$(date -u -d 2026-01-10T10:00:00Z +%s) tb=$(date -u -d 2026-01-12T10:00:00Z +%s)
key() { # key EPOCH: dial9's current layout, service api, instance h1, boot b1, segment 0
    echo "dial9-traces/version=1/date=$(date -u -d "@$1" +%Y-%m-%d)/service=api/time=$(date -u -d "@$1" +%H%M)/instance=h1/boot=b1/$1-0.bin"
}
start_proxy cache
S3_PORT=$PORT
for spec in "$ta $A0" "$tb $B0"; do
    read -r epoch file <<<"$spec"
    node "$CHECK/put_object.mjs" "http://127.0.0.1:$S3_PORT" $BUCKET "$(key "$epoch")" "$file" 2>"$T/put.err"
    rc=$?; check "stored $(key "$epoch") ($(head -c 200 "$T/put.err"))" [ "$rc" = 0 ]
done
"$DIAL9" dump --jsonl "$A0" >"$T/a0.jsonl" && "$DIAL9" dump --jsonl "$B0" >"$T/b0.jsonl"
check "local dumps" [ -s "$T/a0.jsonl" ] && [ -s "$T/b0.jsonl" ] && ! cmp -s "$T/a0.jsonl" "$T/b0.jsonl"

export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 HOME="$T/home"
export AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
unset AWS_PROFILE AWS_SESSION_TOKEN DIAL9_S3_BUCKET
mkdir -p "$T/home"
boot=service=api/instance=h1/boot=b1

# index NAME: /api/index into $T/NAME.json
index() { curl -sf "http://127.0.0.1:$PORT/api/index" >"$T/$1.json"; }
# run_field NAME RUN FIELD: a field of one run of $T/NAME.json ("none" when the run is absent)
run_field() {
    python3 -c 'import json, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r["run"] == sys.argv[2]]
print(json.dumps(runs[0][sys.argv[3]]) if len(runs) == 1 else "none")' "$T/$1.json" "$2" "$3"
}
# opened NAME RUN: /api/trace of RUN decoded into $T/NAME.jsonl; the HTTP status
opened() {
    local code
    code=$(curl -s -o "$T/$1.bin" -w '%{http_code}' --get --data-urlencode "run=$2" "http://127.0.0.1:$PORT/api/trace")
    "$DIAL9" dump --jsonl "$T/$1.bin" >"$T/$1.jsonl" 2>/dev/null
    echo "$code"
}

# ---- 1. one window holds both recordings: two runs, each its own ----
export DIAL9_S3_CACHE_DIR="$T/cache1"
serve_start both "$DIAL9" serve --bucket $BUCKET --from 2026-01-10T09:00Z --to 2026-01-12T11:00Z
index both
check "both: /api/index answers ($(head -c 300 "$T/both.err"))" [ -s "$T/both.json" ]
runs=$(python3 -c 'import json, sys; print(" ".join(sorted(r["run"] for r in json.load(open(sys.argv[1]))["runs"])))' "$T/both.json")
check "both: a run per recording ($runs)" [ "$runs" = "$boot/run-$ta $boot/run-$tb" ]
code=$(opened both-a "$boot/run-$ta")
check "both: recording A opened (HTTP $code)" [ "$code" = 200 ]
check "both: recording A answers A's events" cmp -s "$T/a0.jsonl" "$T/both-a.jsonl"
code=$(opened both-b "$boot/run-$tb")
check "both: recording B opened (HTTP $code)" [ "$code" = 200 ]
check "both: recording B answers B's events" cmp -s "$T/b0.jsonl" "$T/both-b.jsonl"
serve_stop

# ---- 2. one cache, a window of B, then a window of A (the same local path) ----
export DIAL9_S3_CACHE_DIR="$T/cache2"
one="$T/cache2/$BUCKET/dial9-traces/$boot/trace.0.bin"
serve_start window-b "$DIAL9" serve --bucket $BUCKET --from 2026-01-12T09:55Z --to 2026-01-12T10:05Z
code=$(opened window-b "$boot")
check "window of B: opened (HTTP $code; $(head -c 300 "$T/window-b.err"))" [ "$code" = 200 ]
check "window of B: B's events" cmp -s "$T/b0.jsonl" "$T/window-b.jsonl"
check "window of B: B0 cached at boot=b1/trace.0.bin (one recording listed: one run)" cmp -s "$B0" "$one"
serve_stop

serve_start window-a "$DIAL9" serve --bucket $BUCKET --from 2026-01-10T09:55Z --to 2026-01-10T10:05Z
index window-a
cached=$(run_field window-a "$boot" cached_segments)
check "window of A: its segment 0 is not cached (B's file at its path; cached_segments $cached)" [ "$cached" = 0 ]
code=$(opened window-a "$boot")
check "window of A: opened (HTTP $code; $(head -c 300 "$T/window-a.err"))" [ "$code" = 200 ]
check "window of A: A's events, not those of B's file at the same path" cmp -s "$T/a0.jsonl" "$T/window-a.jsonl"
check "window of A: A0 now at that path" cmp -s "$A0" "$one"
index window-a2
cached=$(run_field window-a2 "$boot" cached_segments)
check "window of A: cached once fetched (cached_segments $cached)" [ "$cached" = 1 ]
serve_stop

echo "test_s3_serve_cache_runs: $pass passed, $fail failed"
[ "$fail" = 0 ]
