#!/usr/bin/env bash
# Background cost of compress + upload: a segment of 16 and of 64 MiB, uploaded to s3rver behind
# the verifying proxy of tests/scripts/s3 on loopback. Usage: bench/s3/run.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHECK="$SRC/tests/scripts/s3"
[ -d "$CHECK/node_modules" ] || (cd "$CHECK" && npm ci --no-audit --no-fund --loglevel=error)
T=$(mktemp -d)
node "$CHECK/proxy.mjs" "$T/data" d9-bench "$T/log" >"$T/port" 2>"$T/proxy.err" &
PROXY=$!
trap 'kill $PROXY 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 300); do grep -q port "$T/port" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$T/port")
for mb in 16 64; do
    seg=$("$BUILD/bench/s3/d9_bench_upload" --make "$T/rec$mb" $mb)
    echo "== $mb MiB segment"
    NODE_NO_WARNINGS=1 AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER DIAL9_S3_BUCKET=d9-bench \
        AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$BUILD/bench/s3/d9_bench_upload" "$seg"
done
