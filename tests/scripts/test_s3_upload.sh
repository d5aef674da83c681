#!/usr/bin/env bash
# Sealed segments uploaded to a real S3-speaking server on loopback (s3rver) behind a proxy that
# recomputes every request's SigV4 signature with the AWS SDK's signer and checks the body's
# hashes (tests/scripts/s3/proxy.mjs); objects are read back with @aws-sdk/client-s3 and decoded
# with `dial9 dump --jsonl`: every recorded event is there, once, under keys in dial9's layout.
# Then faults: connections reset mid-upload and 503 SlowDown (retried, nothing lost or stored
# twice, one message per outage), a wrong secret (SignatureDoesNotMatch reported once, files
# kept on disk), the next start uploading what that run left, and credentials from a profile in
# a shared credentials file. Then DIAL9_COMPRESS=zstd: the recorder's and `dial9 upload`'s
# objects are .bin.zst with Content-Encoding zstd, every event once, read back also as s3://.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
RECORDER="$BUILD/test_pipeline_compress"
BUCKET=d9-test
N=100000 # two segments of 1 MB

[ -x "$RECORDER" ] || { echo "test_s3_upload: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh"

# record NAME [VAR=VALUE...]: N spawns recorded with uploads to the proxy of NAME, into
# $T/$TRACES_OF/traces (default NAME's)
record() {
    local name=$1; shift
    local traces="$T/${TRACES_OF:-$name}/traces"
    mkdir -p "$traces"
    env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
        HOME="$T/$name" AWS_REGION=us-east-1 DIAL9_S3_BUCKET=$BUCKET AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" \
        DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_SERVICE="api:blue" DIAL9_SYMBOLIZE=0 DIAL9_S3_EXIT_WAIT_SECS=300 "$@" \
        "$RECORDER" --record "$traces" $N >"$T/$name/rec.out" 2>"$T/$name/rec.err"
}

# every store started at once: the later ones start up while the first cases run
spawn_proxy ok
spawn_proxy faults FAULT_RESET=2 FAULT_SLOWDOWN=2
for name in secret adopt profile zstd; do spawn_proxy $name; done

# ---- the happy path ----
proxy_port ok
record ok
check "recorder ran (exit 0)" [ $? = 0 ]
read_back ok
check "objects read back with the SDK" [ $? = 0 ]
objects=$(wc -l <"$T/ok/objects.jsonl")
check "several segments uploaded ($objects)" [ "$objects" -ge 2 ]
check "every PUT verified and stored" [ "$(grep '"method":"PUT"' "$T/ok/log" | grep -vc '"code":"stored"')" = 0 ]
check "as many objects as stored PUTs" [ "$(stored_keys ok | wc -l)" = "$objects" ]
check "no object stored twice" no_key_twice ok
check "every recorded event in the objects, once" every_event_once "$T"/ok/objects/*.bin.gz
check "local copies deleted once stored" [ -z "$(local_segments ok)" ]
check "no error message" [ ! -s "$T/ok/rec.err" ]
host=$(hostname)
# the recording's id: the host's boot id and the run directory's name, unique to this run
boot=$(cat /proc/sys/kernel/random/boot_id).$(basename "$(tail -1 "$T/ok/rec.out")")
key_re="^dial9-traces/version=1/date=[0-9]{4}-[0-9]{2}-[0-9]{2}/service=api%3Ablue/time=[0-9]{4}/instance=$host/boot=$boot/[0-9]+-[0-9]+\.bin\.gz\$"
check "keys in dial9's layout, Hive-escaped" [ "$(stored_keys ok | grep -Evc "$key_re")" = 0 ]
check "segment indexes 0.. in the keys" [ -n "$(stored_keys ok | grep -- '-0\.bin\.gz$')" ]
check "content type and encoding" [ "$(grep -c '"contentType":"application/octet-stream","contentEncoding":"gzip"' "$T/ok/objects.jsonl")" = "$objects" ]
check "metadata: service, boot id, host, index, start time" \
    [ "$(grep -c "\"boot-id\":\"$boot\",\"host\":\"$host\",\"segment-index\":\"[0-9]*\",\"service\":\"api%3Ablue\",\"start-time\":\"[0-9]*\"" "$T/ok/objects.jsonl")" = "$objects" ]

# ---- the proxy's verification can fail: a body that does not match its signed hash ----
# (a request signed by us but altered on the way is what SignatureDoesNotMatch protects)
check "the proxy rejects a tampered request" node -e '
  const http = require("node:http");
  const r = http.request({host: "127.0.0.1", port: '"$PORT"', method: "PUT", path: "/'"$BUCKET"'/x",
    headers: {"x-amz-date": "20260101T000000Z", "x-amz-content-sha256": "0".repeat(64),
              authorization: "AWS4-HMAC-SHA256 Credential=S3RVER/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + "0".repeat(64)}},
    (res) => process.exit(res.statusCode === 400 ? 0 : 1));
  r.end("body");'

# ---- outage: resets mid-upload, then 503 SlowDown; a session token (signed) ----
proxy_port faults
record faults AWS_SESSION_TOKEN=session-token-for-the-test
check "recorder ran through the outage (exit 0)" [ $? = 0 ]
read_back faults
check "resets happened (2)" [ "$(grep -c '"code":"reset"' "$T/faults/log")" = 2 ]
check "SlowDowns happened (2)" [ "$(grep -c '"code":"SlowDown"' "$T/faults/log")" = 2 ]
check "every recorded event uploaded once despite the outage" every_event_once "$T"/faults/objects/*.bin.gz
check "no object stored twice after retries" no_key_twice faults
check "nothing left on disk" [ -z "$(local_segments faults)" ]
check "the outage said once, not per retry" [ "$(grep -c 'retrying with backoff' "$T/faults/rec.err")" = 1 ]
check "the recovery said" grep -q 'S3 upload works again' "$T/faults/rec.err"

# ---- a wrong secret: clear error once, files kept, nothing stored ----
proxy_port secret
record secret AWS_SECRET_ACCESS_KEY=not-the-secret
check "recorder unaffected by the wrong secret (exit 0)" [ $? = 0 ]
check "SignatureDoesNotMatch reported" grep -q 'S3 upload stopped for this run: PUT s3://d9-test/.*HTTP 403 SignatureDoesNotMatch' "$T/secret/rec.err"
# once, and at exit the one line that lists what stays on disk (left_on_disk.c): nothing else
check "reported once" [ "$(grep -v 'of this run not uploaded stay' "$T/secret/rec.err" | grep -c 'dial9: ')" = 1 ]
check "one PUT tried" [ "$(grep -c '"method":"PUT"' "$T/secret/log")" = 1 ]
check "nothing stored" [ -z "$(stored_keys secret)" ]
mapfile -t kept < <(local_segments secret)
check "segments kept on disk (${#kept[@]})" [ "${#kept[@]}" -ge 2 ]
check "the kept segments compressed" [ -z "$(printf '%s\n' "${kept[@]}" | grep -v '\.bin\.gz$')" ]
check "every event in the kept files" every_event_once "${kept[@]}"
check "at exit, all of them said to stay on disk (${#kept[@]})" \
    grep -q "S3 upload: ${#kept[@]} sealed segments of this run not uploaded stay on disk in " "$T/secret/rec.err"

# ---- the next start uploads what the failed run left, under that run's identity ----
proxy_port adopt
mkdir -p "$T/adopt"
TRACES_OF=secret record adopt
check "second run ran (exit 0)" [ $? = 0 ]
read_back adopt
check "the second run uploaded its segments and the first run's: every event twice" \
    every_event_times 2 "$T"/adopt/objects/*.bin.gz
check "no object stored twice (adopted)" no_key_twice adopt
# keys that name the recording: the first run's under its own id, the second's under the second's,
# so runs on one host never share a key even when their segments start in the same second
first_id=$(cat /proc/sys/kernel/random/boot_id).$(basename "$(tail -1 "$T/secret/rec.out")")
second_id=$(cat /proc/sys/kernel/random/boot_id).$(basename "$(tail -1 "$T/adopt/rec.out")")
own_ids() { # every adopt key under one of the two runs' ids, at least 2 under each
    [ "$first_id" != "$second_id" ] && [ "$(stored_keys adopt | grep -cF "/boot=$first_id/")" -ge 2 ] &&
        [ "$(stored_keys adopt | grep -cF "/boot=$second_id/")" -ge 2 ] &&
        [ "$(stored_keys adopt | grep -vF -e "/boot=$first_id/" -e "/boot=$second_id/" | wc -l)" = 0 ]
}
check "each run's segments under its own id ($first_id, $second_id)" own_ids
check "nothing left on disk after adopting" [ -z "$(local_segments secret)" ]
check "no error while adopting" [ ! -s "$T/adopt/rec.err" ]
check "adopted run directories removed" [ -z "$(find "$T/secret/traces" -mindepth 1 -maxdepth 1 -type d)" ]

# ---- credentials from a profile in a shared credentials file (empty key variables) ----
proxy_port profile
mkdir -p "$T/profile"
printf '[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n[ci]\n# the one to use\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$T/profile/creds"
record profile AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= AWS_PROFILE=ci AWS_SHARED_CREDENTIALS_FILE="$T/profile/creds"
check "recorder ran (profile)" [ $? = 0 ]
read_back profile
check "uploaded with the profile's keys" every_event_once "$T"/profile/objects/*.bin.gz
check "no error with the profile" [ ! -s "$T/profile/rec.err" ]

# ---- zstd (DIAL9_COMPRESS=zstd): the recorder's uploads and `dial9 upload`'s ----
proxy_port zstd
record zstd DIAL9_COMPRESS=zstd DIAL9_SERVICE=zstd-rec
check "recorder ran (zstd)" [ $? = 0 ]
check "no error message (zstd)" [ ! -s "$T/zstd/rec.err" ]
check "local copies deleted once stored (zstd)" [ -z "$(local_segments zstd)" ]
# a run recorded without a bucket or compression, then sent by `dial9 upload` with zstd
mkdir -p "$T/zstd/later"
env -u DIAL9_S3_BUCKET DIAL9_COMPRESS=none DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_SYMBOLIZE=0 "$RECORDER" --record "$T/zstd/later" $N \
    >"$T/zstd/later.out" 2>&1
env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
    AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" DIAL9_COMPRESS=zstd "$DIAL9" upload --bucket $BUCKET --service zstd-cmd \
    "$T/zstd/later" >"$T/zstd/up.out" 2>"$T/zstd/up.err"
rc=$? # first: the message's $(...) resets $?
check "dial9 upload with zstd (exit $rc: $(head -c 300 "$T/zstd/up.err"))" [ "$rc" = 0 ]
read_back zstd
zstd_objects=$(wc -l <"$T/zstd/objects.jsonl")
both_runs() { [ "$(stored_keys zstd | grep -c '/service=zstd-rec/')" -ge 2 ] && [ "$(stored_keys zstd | grep -c '/service=zstd-cmd/')" -ge 2 ]; }
check "zstd objects from both ($zstd_objects)" both_runs
check "every key ends .bin.zst" [ "$(stored_keys zstd | grep -vc '/[0-9]*-[0-9]*\.bin\.zst$')" = 0 ]
check "content type octet-stream, encoding zstd" \
    [ "$(grep -c '"contentType":"application/octet-stream","contentEncoding":"zstd"' "$T/zstd/objects.jsonl")" = "$zstd_objects" ]
check "the objects are zstd frames" [ "$(for f in "$T"/zstd/objects/*.bin.zst; do head -c4 "$f" | od -An -tx1 | tr -d ' \n'; echo; done | sort -u)" = 28b52ffd ]
rec_files=() cmd_files=()
while IFS= read -r line; do
    f=$(sed 's/.*"file":"\([^"]*\)".*/\1/' <<<"$line")
    case "$line" in *service=zstd-rec/*) rec_files+=("$f") ;; *) cmd_files+=("$f") ;; esac
done <"$T/zstd/objects.jsonl"
check "every event the recorder recorded, once, in its zstd objects" every_event_once "${rec_files[@]}"
check "every event once in dial9 upload's zstd objects" every_event_once "${cmd_files[@]}"
check "no object stored twice (zstd)" no_key_twice zstd
# read as s3:// (the cache keeps the .zst name; the decoder reads it)
env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u DIAL9_S3_BUCKET AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
    HOME="$T/zstd" AWS_REGION=us-east-1 DIAL9_S3_CACHE_DIR="$T/zstd/cache" AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" \
    "$DIAL9" dump --jsonl s3://$BUCKET/dial9-traces --service zstd-rec >"$T/zstd/s3.jsonl" 2>"$T/zstd/s3.err"
rc=$?
check "dump s3:// of zstd objects (exit $rc: $(head -c 300 "$T/zstd/s3.err"))" [ "$rc" = 0 ]
check "every event once through s3://" every_event_once_jsonl "$T/zstd/s3.jsonl"
check "cached as trace.N.bin.zst" [ -n "$(find "$T/zstd/cache" -name 'trace.*.bin.zst')" ]

echo "test_s3_upload: $pass passed, $fail failed"
[ "$fail" = 0 ]
