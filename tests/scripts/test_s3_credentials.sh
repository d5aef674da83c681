#!/usr/bin/env bash
# Temporary credentials from the AWS credential services, faked on loopback (they cannot run
# here: tests/scripts/s3/fake_aws_creds.mjs) — EC2 IMDSv2, a container endpoint, STS web
# identity — each issuing new credentials at every fetch with a short Expiration. The verifying
# proxy (tests/scripts/s3/proxy.mjs, CREDENTIALS_FILE) accepts a write only when signed with
# credentials those services issued, before their expiration: a recorder that kept using
# expired ones would get ExpiredToken. The uploads of a run outlast a credential (the proxy
# answers slowly), so the credentials are refreshed mid-run, twice; every event is read back once.
# `dial9 upload` with long-lived container credentials fetches them once for all files (cached).
# Failures — IMDS disabled with nothing else, a wrong container token, STS refusing — give one
# clear message naming the places looked at, and every event stays on disk. The profile file source is in test_s3_upload.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
RECORDER="$BUILD/test_pipeline_compress"
BUCKET=d9-test
N=400000 # 6 segments of 1 MB

[ -x "$RECORDER" ] || { echo "test_s3_credentials: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh"

# No credentials but what a test names: the AWS variables of the environment are dropped.
base_env=(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE
          -u AWS_WEB_IDENTITY_TOKEN_FILE -u AWS_ROLE_ARN -u AWS_ROLE_SESSION_NAME -u AWS_ENDPOINT_URL
          -u AWS_ENDPOINT_URL_STS -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI -u AWS_CONTAINER_CREDENTIALS_FULL_URI
          -u AWS_CONTAINER_AUTHORIZATION_TOKEN -u AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
          -u AWS_EC2_METADATA_SERVICE_ENDPOINT -u AWS_SHARED_CREDENTIALS_FILE -u AWS_CONFIG_FILE -u DIAL9_S3_BUCKET
          AWS_EC2_METADATA_DISABLED=true HOME="$T/home" AWS_REGION=us-east-1 DIAL9_MAX_FILE_SIZE_MB=1
          DIAL9_SYMBOLIZE=0)
mkdir -p "$T/home"

# spawn_fake NAME MODE [VAR=VALUE...]: a fake credential service, started (fake_port NAME waits
# for it and sets FPORT). Its credentials go to $T/NAME/issued, its requests to $T/NAME/fake.log.
declare -A FAKE_PID
spawn_fake() {
    local name=$1 mode=$2; shift 2
    mkdir -p "$T/$name"
    : >"$T/$name/fake.log"
    env "$@" node "$CHECK/fake_aws_creds.mjs" "$mode" "$T/$name/issued" "$T/$name/fake.log" \
        >"$T/$name/fake.port" 2>"$T/$name/fake.err" &
    PROXY_PIDS+=($!)
    FAKE_PID[$name]=$!
}
fake_port() {
    local name=$1
    for _ in $(seq 600); do
        grep -q port "$T/$name/fake.port" 2>/dev/null && break
        kill -0 "${FAKE_PID[$name]}" 2>/dev/null || break
        sleep 0.1
    done
    FPORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$T/$name/fake.port")
    [ -n "$FPORT" ] || { echo "$0: fake $name did not start: $(cat "$T/$name/fake.err")"; exit 1; }
}
issued() { [ -f "$T/$1/issued" ] && wc -l <"$T/$1/issued" || echo 0; }

# start_record NAME [VAR=VALUE...]: N events recorded and uploaded to the proxy at PORT, in the
# background; record_status NAME waits for it and sets REC_STATUS. The proxy
# answers each PUT 3 s late (DELAY_PUT_MS): the uploads of 5 segments or more, one after another,
# start 3 s apart or more however loaded the machine; a credential of the fakes' 8 s is used for
# at most 5 s of it (refreshed at half its life, in whole seconds), so the 3rd and 5th PUTs at
# the latest sign with new ones: 3 credentials or more in a run.
declare -A REC_PID
start_record() {
    local name=$1; shift
    mkdir -p "$T/$name/traces"
    "${base_env[@]}" DIAL9_S3_BUCKET=$BUCKET AWS_ENDPOINT_URL_S3="http://127.0.0.1:$PORT" DIAL9_SERVICE=creds \
        DIAL9_S3_EXIT_WAIT_SECS=600 "$@" \
        "$RECORDER" --record "$T/$name/traces" $N >"$T/$name/rec.out" 2>"$T/$name/rec.err" &
    REC_PID[$name]=$!
    PROXY_PIDS+=($!) # stopped with the proxies if the test ends early
}
record_status() {
    wait "${REC_PID[$1]}"
    REC_STATUS=$?
}

# no_secret_in FILE NAME: none of the secrets or tokens NAME's fake issued appears in FILE
no_secret_in() {
    node -e '
      const fs = require("fs");
      const text = fs.readFileSync(process.argv[1], "utf8");
      const issued = fs.readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean).map(JSON.parse);
      process.exit(issued.some((c) => text.includes(c.secretAccessKey) || text.includes(c.sessionToken)) ? 1 : 0);' \
      "$1" "$T/$2/issued"
}
distinct_access_keys() { grep '"code":"stored"' "$T/$1/log" | sed -n 's/.*"access":"\([^"]*\)".*/\1/p' | sort -u | wc -l; }

# refreshed NAME: the checks of a run through the rotating credentials of NAME's fake
refreshed() {
    local name=$1 min=$2
    check "$name: recorder ran (exit $REC_STATUS)" [ "$REC_STATUS" = 0 ]
    check "$name: the service issued $min credentials or more ($(issued "$name"))" [ "$(issued "$name")" -ge "$min" ]
    read_back "$name"
    check "$name: objects read back with the SDK" [ $? = 0 ]
    check "$name: every recorded event ($N) in the objects, once" every_event_once "$T/$name"/objects/*.bin.gz
    check "$name: 5 PUTs or more, 3 s each ($(stored_keys "$name" | wc -l))" [ "$(stored_keys "$name" | wc -l)" -ge 5 ]
    check "$name: every PUT accepted: no expired or unknown credentials used" \
        [ "$(grep '"method":"PUT"' "$T/$name/log" | grep -vc '"code":"stored"')" = 0 ]
    check "$name: uploads signed with $min rotated credentials or more ($(distinct_access_keys "$name"))" \
        [ "$(distinct_access_keys "$name")" -ge "$min" ]
    check "$name: no object stored twice" no_key_twice "$name"
    check "$name: nothing left on disk" [ -z "$(local_segments "$name")" ]
    check "$name: no message" [ ! -s "$T/$name/rec.err" ]
}

# every service and store started at once: node starts up while the first cases run
printf 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJkaWFsOSJ9.c2lnbmF0dXJl\n' >"$T/web-token"
ROLE=arn:aws:iam::123456789012:role/dial9-uploader
spawn_fake imds imds LIFETIME=8
spawn_fake sts sts LIFETIME=8 ROLE_ARN=$ROLE WEB_TOKEN=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJkaWFsOSJ9.c2lnbmF0dXJl
spawn_fake container container AUTH_TOKEN=container-secret-token
spawn_fake stsfail sts STS_FAIL=AccessDenied ROLE_ARN=$ROLE WEB_TOKEN=x
spawn_proxy imds CREDENTIALS_FILE="$T/imds/issued" DELAY_PUT_MS=3000
spawn_proxy sts CREDENTIALS_FILE="$T/sts/issued" DELAY_PUT_MS=3000
spawn_proxy container CREDENTIALS_FILE="$T/container/issued"
spawn_proxy none CREDENTIALS_FILE="$T/imds/issued"
spawn_proxy badtoken CREDENTIALS_FILE="$T/container/issued"
spawn_proxy stsfail CREDENTIALS_FILE="$T/stsfail/issued"

# ---- EC2 IMDSv2 and web identity through STS: 8 s credentials, refreshed mid-run ----
# (the two runs at once: nothing shared, and their waits for the slow answers overlap)
fake_port imds
IMDS_PORT=$FPORT
check "the fake IMDS refuses an IMDSv1 GET (no session token)" node -e '
  require("http").get("http://127.0.0.1:'"$IMDS_PORT"'/latest/meta-data/iam/security-credentials/",
                      (r) => process.exit(r.statusCode === 401 ? 0 : 1));'
: >"$T/imds/fake.log"
proxy_port imds
IMDS_PROXY=$PORT
start_record imds AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$IMDS_PORT"
fake_port sts
STS_PORT=$FPORT
proxy_port sts
STS_PROXY=$PORT
start_record sts AWS_WEB_IDENTITY_TOKEN_FILE="$T/web-token" AWS_ROLE_ARN=$ROLE \
    AWS_ENDPOINT_URL_STS="http://127.0.0.1:$STS_PORT"

record_status imds
PORT=$IMDS_PROXY
refreshed imds 3
check "imds: a session token before every credentials fetch (IMDSv2)" \
    [ "$(grep -c '"code":"token"' "$T/imds/fake.log")" -ge "$(issued imds)" ]
check "imds: no request without a session token" [ "$(grep -c '"code":"no-token"' "$T/imds/fake.log")" = 0 ]
check "imds: no credential in the messages" no_secret_in "$T/imds/rec.err" imds

record_status sts
PORT=$STS_PROXY
refreshed sts 3
check "sts: every AssumeRoleWithWebIdentity answered" [ "$(grep -vc '"code":"issued"' "$T/sts/fake.log")" = 0 ]
check "sts: no credential in the messages" no_secret_in "$T/sts/rec.err" sts

# ---- container credentials with a token file, by `dial9 upload`: fetched once for every file ----
# traces NAME: a trace directory recorded without upload (plain .bin files)
traces() {
    mkdir -p "$T/$1"
    "${base_env[@]}" "$RECORDER" --record "$T/$1/traces" $N >"$T/$1/rec.out" 2>"$T/$1/rec.err"
}
# upload NAME [VAR=VALUE...]: dial9 upload of NAME's traces to the proxy at PORT
upload() {
    local name=$1; shift
    "${base_env[@]}" AWS_ENDPOINT_URL_S3="http://127.0.0.1:$PORT" "$@" \
        "$DIAL9" upload --bucket $BUCKET --service creds --attempts 2 "$T/$name/traces" \
        >"$T/$name/up.out" 2>"$T/$name/up.err"
}
N=100000
printf 'container-secret-token\n' >"$T/container-token"
fake_port container
CONTAINER_PORT=$FPORT
proxy_port container
traces container
files=$(local_segments container | wc -l)
upload container AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$CONTAINER_PORT/creds" \
    AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$T/container-token"
check "container: dial9 upload exit 0 ($(head -c 300 "$T/container/up.err"))" [ $? = 0 ]
read_back container
check "container: every event in the objects, once" every_event_once "$T"/container/objects/*.bin.gz
check "container: $files files stored ($(stored_keys container | wc -l))" \
    [ "$files" -ge 2 -a "$(stored_keys container | wc -l)" = "$files" ]
check "container: one credentials fetch for them all ($(issued container))" [ "$(issued container)" = 1 ]
check "container: local files deleted" [ -z "$(local_segments container)" ]
check "container: no credential in the messages" no_secret_in "$T/container/up.err" container

# ---- failures: one clear message, every event still on disk ----
kept_all() { [ -z "$(stored_keys "$1")" ] && every_event_once $(local_segments "$1"); }

# nothing but a disabled IMDS
proxy_port none
traces none
imds_asked=$(grep -c . "$T/imds/fake.log")
upload none AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$IMDS_PORT"
check "IMDS disabled, nothing else: exit 1" [ $? = 1 ]
check "IMDS disabled: the message names every place looked at" \
    grep -q "no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set; profile default has no .* in $T/home/.aws/credentials or $T/home/.aws/config; AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set; AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI are not set; EC2 instance metadata disabled (AWS_EC2_METADATA_DISABLED=true)" "$T/none/up.err"
check "IMDS disabled: said once" [ "$(grep -c 'no AWS credentials' "$T/none/up.err")" = 1 ]
check "IMDS disabled: IMDS not asked" [ "$(grep -c . "$T/imds/fake.log")" = "$imds_asked" ]
check "IMDS disabled: nothing stored, every event on disk" kept_all none

# a wrong container token
proxy_port badtoken
traces badtoken
asked_before=$(grep -c . "$T/container/fake.log")
upload badtoken AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$CONTAINER_PORT/creds" \
    AWS_CONTAINER_AUTHORIZATION_TOKEN=not-the-token
check "wrong container token: exit 1" [ $? = 1 ]
check "wrong container token: a clear message" \
    grep -q "cannot get AWS credentials: container credentials http://127.0.0.1:$CONTAINER_PORT/creds: HTTP 403 AccessDenied: the authorization token is not valid (is the authorization token right?)" "$T/badtoken/up.err"
check "wrong container token: the token not in the message" bash -c "! grep -q not-the-token '$T/badtoken/up.err'"
check "wrong container token: asked once, not per file" \
    [ "$(grep -c . "$T/container/fake.log")" = $((asked_before + 1)) ]
check "wrong container token: nothing stored, every event on disk" kept_all badtoken

# STS refusing the role
fake_port stsfail
proxy_port stsfail
traces stsfail
upload stsfail AWS_WEB_IDENTITY_TOKEN_FILE="$T/web-token" AWS_ROLE_ARN=$ROLE AWS_ENDPOINT_URL_STS="http://127.0.0.1:$FPORT"
check "STS error: exit 1" [ $? = 1 ]
check "STS error: a clear message" \
    grep -q "cannot get AWS credentials: web identity (role $ROLE, token from $T/web-token) through STS http://127.0.0.1:$FPORT: HTTP 403 AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity" "$T/stsfail/up.err"
check "STS error: nothing stored, every event on disk" kept_all stsfail

echo "test_s3_credentials: $pass passed, $fail failed"
[ "$fail" = 0 ]
