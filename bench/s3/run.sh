#!/usr/bin/env bash
# Background cost of compress + upload: a segment of 16 and of 64 MiB, each compressed with gzip
# and with zstd (one process each) and uploaded to s3rver behind the verifying proxy of
# tests/scripts/s3 on loopback; then d9_bench's hook costs with and without
# the pipeline uploading beside them. Usage: bench/s3/run.sh [BUILD_DIR] [--short]
set -euo pipefail
BUILD=${1:-build}
SHORT=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHECK="$SRC/tests/scripts/s3"
source "$SRC/tests/scripts/lib/npm_ci.sh"
npm_ci_once "$CHECK"
T=$(mktemp -d)
node "$CHECK/proxy.mjs" "$T/data" d9-bench "$T/log" >"$T/port" 2>"$T/proxy.err" &
PROXY=$!
trap 'kill $PROXY 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 300); do grep -q port "$T/port" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$T/port")
for mb in 16 64; do
    seg=$("$BUILD/bench/s3/d9_bench_upload" --make "$T/rec$mb" $mb)
    for codec in gzip zstd; do
        echo "== $mb MiB segment, $codec"
        NODE_NO_WARNINGS=1 AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER DIAL9_S3_BUCKET=d9-bench \
            AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$BUILD/bench/s3/d9_bench_upload" "$seg" $codec
    done
done

# The hooks while the pipeline works, in the same process: d9_bench's hook section with 1 MiB
# segments, first only written (no bucket: DIAL9_COMPRESS=auto leaves them raw), then each one
# gzip'ed and uploaded as soon as it is sealed. DIAL9_S3_EXIT_WAIT_SECS=0: d9_stop waits for no
# upload, so every object stored was stored while the hooks ran (what is left is adopted by the
# section's next d9_start on the same directory, and uploaded while it runs).
stored() { grep -c '"code":"stored"' "$T/log" || true; }
hooks=(env D9_BENCH_CONFIG_FROM_ENV=1 DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_SYMBOLIZE=0 "$BUILD/bench/d9_bench" --only hooks
       --dir "$T" $SHORT)
echo "== d9_bench hook costs, 1 MiB segments written, no upload"
"${hooks[@]}" | sed -n '/^Hook cost/,$p'
before=$(stored)
echo "== d9_bench hook costs, each 1 MiB segment compressed and uploaded while the hooks run"
NODE_NO_WARNINGS=1 AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER DIAL9_S3_BUCKET=d9-bench \
    AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" DIAL9_S3_EXIT_WAIT_SECS=0 "${hooks[@]}" 2>"$T/hooks.err" |
    sed -n '/^Hook cost/,$p'
echo "objects uploaded while the hooks ran: $(($(stored) - before));" \
     "uploads cut by a d9_stop (exit wait 0, adopted by the next start): $(grep -c 'not done in the time allowed' "$T/hooks.err" || true)"
grep -v 'not done in the time allowed' "$T/hooks.err" >&2 || true
