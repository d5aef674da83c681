#!/usr/bin/env bash
# Flight recorder dumps stored in S3 (docs/flight-recorder.md), against a real S3-speaking server
# on loopback (s3rver behind the verifying proxy, tests/scripts/s3): an unmodified program (sleep)
# recorded in memory mode by the preload shim with DIAL9_S3_BUCKET set, dumped by `dial9 trigger`.
#  - the dump's segments and then its manifest are stored under
#    {prefix}/dumps/date=D/service=S/instance=H/{run}.dump1/, the manifest last (the proxy's log
#    is in arrival order), equal to the local one, which stays;
#  - `dial9 dumps s3://BUCKET` lists it complete with its trigger and reason; with its manifest
#    object deleted (an upload cut short) it says INCOMPLETE;
#  - the fleet's segment readers (`dial9 stats s3://...`) do not take a dump's segments for a run.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=0
[ -f "$BUILD/libdial9-preload.so" ] || { echo "SKIP: libdial9-preload.so not built"; exit 0; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$BUILD/libdial9-preload.so" 2>/dev/null)"; then
    echo "SKIP: the preload shim is built with a sanitizer (it cannot be preloaded into plain programs)"
    exit 0
fi
source "$CHECK/common.sh"

start_proxy dumps
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 HOME="$T/dumps"
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT"
unset AWS_PROFILE AWS_SESSION_TOKEN

"$DIAL9" run -q -d "$T/traces" -e DIAL9_MODE=memory -e DIAL9_DUMP_DIR="$T/local-dumps" -e DIAL9_S3_BUCKET=$BUCKET \
    -e DIAL9_SERVICE=api:blue -e DIAL9_S3_EXIT_WAIT_SECS=300 -- sleep 600 2>"$T/run.err" &
pid=$!
PROXY_PIDS+=("$pid") # killed at exit whatever happens
# ask until the recorder is up (its socket answers), however long its start takes
while kill -0 "$pid" 2>/dev/null; do
    "$DIAL9" trigger --lookback 10 --lookforward 0 --reason "to the bucket" "$pid" >"$T/out" 2>"$T/err"
    rc=$?
    grep -q "has no flight recorder" "$T/err" || break
    sleep 0.05
done
check "dial9 trigger exits 0 ($(cat "$T/err"))" test "$rc" = 0
dump=$(cat "$T/out")
name=$(basename "$dump")
# the upload runs after the manifest is written: wait for its last object, or the recorder's
# word that it will not come (a state, not a time)
while kill -0 "$pid" 2>/dev/null && ! grep -q "\"key\":\"[^\"]*/$name/manifest.json\",\"status\":200,\"code\":\"stored\"" "$T/dumps/log" &&
    ! grep -q "not stored in S3" "$T/run.err"; do
    sleep 0.1
done
kill "$pid"
wait "$pid" 2>/dev/null

dump_keys=$(stored_keys dumps | grep "/$name/")
host=$(hostname)
key_re="^dial9-traces/dumps/date=[0-9]{4}-[0-9]{2}-[0-9]{2}/service=api%3Ablue/instance=$host/$name/(trace\.[0-9]+\.bin|manifest\.json)\$"
check "no upload failure said ($(grep -m1 'not stored' "$T/run.err"))" test -z "$(grep 'not stored' "$T/run.err")"
check "the dump's objects are stored ($(echo "$dump_keys" | wc -l))" [ "$(echo "$dump_keys" | grep -c .)" -ge 2 ]
check "under dumps/ in the layout" [ "$(echo "$dump_keys" | grep -Evc "$key_re")" = 0 ]
check "every local segment stored" [ "$(echo "$dump_keys" | grep -c '\.bin$')" = "$(ls "$dump" | grep -c '^trace\..*\.bin$')" ]
check "the manifest stored last" [ "$(echo "$dump_keys" | tail -1 | sed 's|.*/||')" = manifest.json ]
check "the local dump stays" test -f "$dump/manifest.json"
manifest_key=$(echo "$dump_keys" | tail -1)
mkdir -p "$T/back"
node "$CHECK/read_back.mjs" "http://127.0.0.1:$PORT" $BUCKET "dial9-traces/dumps/" "$T/back" >"$T/back.jsonl" 2>"$T/back.err"
back=$(grep "\"key\":\"$manifest_key\"" "$T/back.jsonl" | sed 's/.*"file":"\([^"]*\)".*/\1/')
check "the stored manifest is the local one" cmp -s "$back" "$dump/manifest.json"
seg_key=$(echo "$dump_keys" | grep '\.bin$' | head -1)
seg_back=$(grep "\"key\":\"$seg_key\"" "$T/back.jsonl" | sed 's/.*"file":"\([^"]*\)".*/\1/')
check "a stored segment is the local one" cmp -s "$seg_back" "$dump/$(basename "$seg_key")"

"$DIAL9" dumps s3://$BUCKET >"$T/list" 2>"$T/list.err"
check "dial9 dumps s3://BUCKET exits 0 ($(cat "$T/list.err"))" test $? = 0
check "it lists the dump as complete" grep -q "^s3://$BUCKET/dial9-traces/dumps/.*/$name	complete	control at " "$T/list"
check "with its window and reason" grep -q "window 10000 ms before to 0 ms after, .* segments, reason \"to the bucket\"" "$T/list"

"$DIAL9" stats s3://$BUCKET/dial9-traces >"$T/fleet" 2>&1
check "the fleet's readers take no dump segment for a run (exit $?)" grep -q "no trace" "$T/fleet"

node "$CHECK/delete_object.mjs" "http://127.0.0.1:$PORT" $BUCKET "$manifest_key"
"$DIAL9" dumps s3://$BUCKET >"$T/list2" 2>"$T/list2.err"
check "without its manifest object: INCOMPLETE" grep -q "/$name	INCOMPLETE	no manifest.json" "$T/list2"
check "and not complete" test "$(grep -c "	complete	" "$T/list2")" = 0

"$DIAL9" dumps "$T/local-dumps" >"$T/local" 2>&1
check "dial9 dumps DIR lists the local dump" grep -q "$name	complete	control at " "$T/local"

echo "test_s3_dumps: $pass passed, $fail failed"
[ "$fail" = 0 ]
