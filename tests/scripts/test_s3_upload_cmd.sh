#!/usr/bin/env bash
# `dial9 upload DIR` against s3rver behind the verifying proxy (tests/scripts/s3/): a finished
# trace directory recorded without a bucket is compressed and uploaded, every event read back
# once, local files gone; an unreachable endpoint and a wrong secret give clear errors and
# delete nothing; a run directory held by a running recorder (its flock) is skipped. Multipart:
# a 12 MB segment in three parts (S3's 5 MiB minimum enforced by the proxy), and a part failing
# aborts the upload (no upload left open) and the retry stores the file once.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
RECORDER="$BUILD/test_pipeline_compress"
BUCKET=d9-test
N=100000

[ -x "$RECORDER" ] || { echo "test_s3_upload_cmd: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh"

# traces NAME [N] [VAR=VALUE...]: a trace directory recorded without upload (plain .bin files)
traces() {
    local name=$1 n=${2:-$N}; shift 2 2>/dev/null || shift
    mkdir -p "$T/$name"
    env -u DIAL9_S3_BUCKET DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_SYMBOLIZE=0 "$@" \
        "$RECORDER" --record "$T/$name/traces" "$n" >"$T/$name/rec.out" 2>"$T/$name/rec.err"
}
# upload NAME [VAR=VALUE...] -- [ARGS...]: dial9 upload of NAME's traces to the proxy at PORT
upload() {
    local name=$1; shift
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u DIAL9_S3_BUCKET AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
        HOME="$T/$name" AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "${envs[@]}" \
        "$DIAL9" upload --bucket $BUCKET --service "api:green" "$@" "$T/$name/traces" \
        >"$T/$name/up.out" 2>"$T/$name/up.err"
}
stored_keys() { grep '"code":"stored"' "$T/$1/log" | sed 's/.*"key":"\([^"]*\)".*/\1/'; }
local_segments() { find "$T/$1/traces" -name 'trace.*.bin*' | sort; }

# every store started at once: node starts up while the traces are recorded
for name in ok secret busy big; do spawn_proxy $name; done
spawn_proxy bigfail FAULT_PART_FAIL=1

# ---- a finished trace directory ----
traces ok
check "recorded without a bucket: plain segments (exit $?)" [ "$(local_segments ok | grep -c '\.bin$')" -ge 2 ]
proxy_port ok
upload ok --
check "dial9 upload exit 0 ($(head -c 300 "$T/ok/up.err"))" [ $? = 0 ]
read_back ok
objects=$(wc -l <"$T/ok/objects.jsonl")
check "several objects ($objects)" [ "$objects" -ge 2 ]
check "one object per segment stored" [ "$(stored_keys ok | wc -l)" = "$objects" ]
check "every event in the objects, once" every_event_once "$T"/ok/objects/*.bin.gz
check "compressed, under the service given" \
    [ "$(stored_keys ok | grep -Ec '/service=api%3Agreen/.*/[0-9]+-[0-9]+\.bin\.gz$')" = "$objects" ]
check "local files deleted once stored" [ -z "$(local_segments ok)" ]
check "the summary says what was stored" grep -q "dial9 upload: $objects files stored" "$T/ok/up.out"

# ---- no .s3-run, no --service, no DIAL9_SERVICE: the service the trace was recorded under ----
# (to the same store as ok: its keys so far are all api:green)
traces unnamed 2000 DIAL9_SERVICE=checkout
env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u DIAL9_S3_BUCKET -u DIAL9_SERVICE AWS_ACCESS_KEY_ID=S3RVER \
    AWS_SECRET_ACCESS_KEY=S3RVER HOME="$T/unnamed" AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" \
    "$DIAL9" upload --bucket $BUCKET "$T/unnamed/traces" >"$T/unnamed/up.out" 2>"$T/unnamed/up.err"
rc=$?
check "without a service given: exit 0 ($rc: $(head -c 300 "$T/unnamed/up.err"))" [ "$rc" = 0 ]
check "without a service given: under the recorded service ($(stored_keys ok | grep -v api%3Agreen | head -2))" \
    [ "$(stored_keys ok | grep -c '/service=checkout/')" -ge 1 ]
check "without a service given: nothing under service=unknown" [ "$(stored_keys ok | grep -c '/service=unknown/')" = 0 ]

# ---- S3 unreachable: a port nobody listens on ----
traces down
dead_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();})')
before=$(local_segments down | xargs md5sum)
PORT=$dead_port upload down -- --attempts 2
check "unreachable S3: exit 1" [ $? = 1 ]
check "unreachable S3: a clear message" grep -q "S3 upload of .* failed 2 times, the file stays on disk (last error: PUT s3://$BUCKET/.*Couldn't connect to server" "$T/down/up.err"
check "unreachable S3: nothing deleted or changed but compression" \
    [ "$(local_segments down | grep -c '\.bin\.gz$')" = "$(echo "$before" | wc -l)" ]
check "unreachable S3: every event still on disk" every_event_once $(local_segments down)

# ---- a wrong secret: one message, stops, deletes nothing ----
traces secret
proxy_port secret
upload secret AWS_SECRET_ACCESS_KEY=wrong --
check "wrong secret: exit 1" [ $? = 1 ]
check "wrong secret: the answer named" grep -q "dial9 upload: stopped: PUT s3://$BUCKET/.*HTTP 403 SignatureDoesNotMatch" "$T/secret/up.err"
check "wrong secret: one request, not one per file" [ "$(grep -c '"method":"PUT"' "$T/secret/log")" = 1 ]
check "wrong secret: every event still on disk" every_event_once $(local_segments secret)
# the same directory uploads once the credentials are right, every file once
upload secret --
check "then uploaded (exit 0)" [ $? = 0 ]
read_back secret
check "then every event once in the bucket" every_event_once "$T"/secret/objects/*.bin.gz

# ---- a run directory a running recorder holds (its flock) is left alone ----
traces busy
proxy_port busy
run_dir=$(find "$T/busy/traces" -mindepth 1 -maxdepth 1 -type d)
flock "$run_dir" env -u AWS_PROFILE AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
    AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$DIAL9" upload --bucket $BUCKET "$T/busy/traces" \
    >"$T/busy/up.out" 2>"$T/busy/up.err"
check "held run: exit 1" [ $? = 1 ]
check "held run: said" grep -q "in use by a running recorder" "$T/busy/up.err"
check "held run: nothing sent" [ ! -s "$T/busy/log" ]

# ---- usage errors ----
expect_rc 2 "no bucket" env -u DIAL9_S3_BUCKET "$DIAL9" upload "$T/ok"
grep -q "no bucket: pass --bucket or set DIAL9_S3_BUCKET" "$T/err"; check "no bucket: said" [ $? = 0 ]
expect_rc 2 "not a directory" "$DIAL9" upload --bucket $BUCKET "$T/nothing-here"
expect_rc 2 "bad bucket name" "$DIAL9" upload --bucket B_A_D "$T/ok"

# ---- multipart: a 12 MB segment, uncompressed, in 5 MiB parts ----
BIG=850000
N=$BIG # every_event_once counts to N
traces big $BIG DIAL9_MAX_FILE_SIZE_MB=64
size=$(stat -c %s "$(local_segments big)")
check "one segment" [ "$(local_segments big | wc -l)" = 1 ]
check "the segment is over 10 MiB ($size bytes)" [ "$size" -gt $((10 << 20)) ]
# recorded once: the failing-part case uploads a copy, and each object read back is compared
# with the segment byte for byte (the events in it decoded once, below)
cp "$(local_segments big)" "$T/big.segment"
mkdir -p "$T/bigfail"
cp -a "$T/big/traces" "$T/bigfail/"
proxy_port big
upload big DIAL9_COMPRESS=none DIAL9_S3_MULTIPART_THRESHOLD_MB=5 DIAL9_S3_PART_SIZE_MB=5 --
check "multipart upload exit 0 ($(head -c 300 "$T/big/up.err"))" [ $? = 0 ]
check "three parts" [ "$(grep -c '"code":"part"' "$T/big/log")" = 3 ]
check "then completed" [ "$(grep -c '"code":"completed"' "$T/big/log")" = 1 ]
check "the parts add up to the file" [ "$(grep '"code":"part"' "$T/big/log" | sed 's/.*"size":\([0-9]*\).*/\1/' | awk '{ s += $1 } END { print s }')" = "$size" ]
read_back big
check "one object" [ "$(wc -l <"$T/big/objects.jsonl")" = 1 ]
check "the object is the file, byte for byte" cmp -s "$T"/big/objects/object0.bin.gz "$T/big.segment"
check "the object: every event once" every_event_once "$T"/big/objects/object0.bin.gz
check "stored whole" [ "$(sed 's/.*"size":\([0-9]*\).*/\1/' "$T/big/objects.jsonl")" = "$size" ]

# the proxy holds us to S3's rule: parts under 5 MiB are refused at completion
check "the proxy refuses parts under 5 MiB" node -e '
  const { S3Client, CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand } = require("'"$CHECK"'/node_modules/@aws-sdk/client-s3");
  const s3 = new S3Client({ endpoint: "http://127.0.0.1:'"$PORT"'", region: "us-east-1", forcePathStyle: true,
                            credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
  (async () => {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "'"$BUCKET"'", Key: "small" }));
    const parts = [];
    for (const n of [1, 2]) {
      const r = await s3.send(new UploadPartCommand({ Bucket: "'"$BUCKET"'", Key: "small", UploadId, PartNumber: n, Body: Buffer.alloc(1000) }));
      parts.push({ PartNumber: n, ETag: r.ETag });
    }
    try {
      await s3.send(new CompleteMultipartUploadCommand({ Bucket: "'"$BUCKET"'", Key: "small", UploadId, MultipartUpload: { Parts: parts } }));
      process.exit(1);
    } catch (e) { process.exit(e.name === "EntityTooSmall" ? 0 : 1); }
  })();'

# a part failing: the upload aborted (no parts left behind), retried whole, stored once
proxy_port bigfail
upload bigfail DIAL9_COMPRESS=none DIAL9_S3_MULTIPART_THRESHOLD_MB=5 DIAL9_S3_PART_SIZE_MB=5 --
check "failed part: exit 0 after the retry" [ $? = 0 ]
check "failed part: the first upload aborted" [ "$(grep -c '"code":"aborted"' "$T/bigfail/log")" = 1 ]
check "failed part: the abort said" grep -q 'multipart upload aborted, no parts left' "$T/bigfail/up.err"
initiated=$(grep '"code":"initiated"' "$T/bigfail/log" | sed 's/.*"uploadId":"\([^"]*\)".*/\1/' | sort)
ended=$(grep -E '"code":"(completed|aborted)"' "$T/bigfail/log" | sed 's/.*"uploadId":"\([^"]*\)".*/\1/' | sort)
check "failed part: every upload initiated was completed or aborted" [ "$initiated" = "$ended" ]
check "failed part: no upload in progress left in the store" [ -z "$(ls -A "$T/bigfail/data/$BUCKET/._S3rver_uploads")" ]
check "failed part: two uploads initiated" [ "$(echo "$initiated" | wc -l)" = 2 ]
read_back bigfail
check "failed part: one object" [ "$(wc -l <"$T/bigfail/objects.jsonl")" = 1 ]
check "failed part: the object is the file, byte for byte (every event once)" \
    cmp -s "$T"/bigfail/objects/object0.bin.gz "$T/big.segment"

echo "test_s3_upload_cmd: $pass passed, $fail failed"
[ "$fail" = 0 ]
