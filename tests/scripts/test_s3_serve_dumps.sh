#!/usr/bin/env bash
# `dial9 serve --bucket` lists the flight recorder's dumps stored in S3 (docs/flight-recorder.md),
# against a real S3-speaking server on loopback (s3rver behind the verifying proxy,
# tests/scripts/s3): an unmodified program (sleep) recorded in memory mode by the preload shim with
# DIAL9_S3_BUCKET set, dumped by `dial9 trigger`; memory mode stores no segment of its own, so
# the bucket holds the dump only.
#  - /api/index has the dump as a run named by its key under the prefix
#    (dumps/date=D/service=S/instance=H/{run}.dump1), with its flight_dump: complete, trigger,
#    reason and window, from its manifest object;
#  - opening it (/api/trace of the run) fetches its segments: the trace answered decodes to the
#    same events as the local dump's segments;
#  - with its manifest object deleted (an upload cut short), a new serve --bucket lists it as
#    incomplete.
# Before this, serve --bucket skipped dumps/ keys: a bucket of dumps was "no trace objects match".
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=0
[ -f "$BUILD/libdial9-preload.so" ] || { echo "SKIP: libdial9-preload.so not built"; exit 0; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$BUILD/libdial9-preload.so" 2>/dev/null)"; then
    echo "SKIP: the preload shim is built with a sanitizer (it cannot be preloaded into plain programs)"
    exit 0
fi
serve_under_test curl python3
source "$CHECK/common.sh"
trap 'for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done; serve_cleanup' EXIT

start_proxy dumps
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 HOME="$T/dumps"
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" DIAL9_S3_CACHE_DIR="$T/cache"
S3_PORT=$PORT
unset AWS_PROFILE AWS_SESSION_TOKEN

"$DIAL9" run -q -d "$T/traces" -e DIAL9_MODE=memory -e DIAL9_DUMP_DIR="$T/local-dumps" -e DIAL9_S3_BUCKET=$BUCKET \
    -e DIAL9_SERVICE=api -e DIAL9_S3_EXIT_WAIT_SECS=300 -- sleep 600 2>"$T/run.err" &
pid=$!
PROXY_PIDS+=("$pid") # killed at exit whatever happens
while kill -0 "$pid" 2>/dev/null; do # until its recorder answers, however long its start takes
    "$DIAL9" trigger --lookback 10 --lookforward 0 --reason "served from the bucket" "$pid" >"$T/out" 2>"$T/err"
    rc=$?
    grep -q "has no flight recorder" "$T/err" || break
    sleep 0.05
done
check "dial9 trigger exits 0 ($(cat "$T/err"))" test "$rc" = 0
dump=$(cat "$T/out")
name=$(basename "$dump")
# the upload runs after the manifest is written: wait for its last object (a state, not a time)
while kill -0 "$pid" 2>/dev/null && ! grep -q "\"key\":\"[^\"]*/$name/manifest.json\",\"status\":200,\"code\":\"stored\"" "$T/dumps/log" &&
    ! grep -q "not stored in S3" "$T/run.err"; do
    sleep 0.1
done
kill "$pid"
wait "$pid" 2>/dev/null
check "the dump is stored ($(grep -m1 'not stored' "$T/run.err"))" test -z "$(grep 'not stored' "$T/run.err")"

"$DIAL9" stats "$dump" 2>/dev/null | grep -E '^ +[0-9]+  [A-Za-z]+$' | sort >"$T/local.stats"

serve_start serve "$DIAL9" serve --bucket $BUCKET
curl -sf "http://127.0.0.1:$PORT/api/index" >"$T/index.json"
check "/api/index answers ($(head -c 300 "$T/serve.err"))" test -s "$T/index.json"
python3 - "$T/index.json" "$name" >"$T/index.check" 2>&1 <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
name = sys.argv[2]
mine = [r for r in runs if r["run"].endswith("/" + name)]
assert len(mine) == 1, [r["run"] for r in runs]
r = mine[0]
assert r["run"].startswith("dumps/date=") and "/service=api/instance=" in r["run"], r["run"]
d = r["flight_dump"]
assert d and d["complete"] is True and d["trigger"] == "control" and d["reason"] == "served from the bucket", d
assert d["lookback_ms"] == 10000 and d["lookforward_ms"] == 0, d
assert r["segments"] >= 1, r
print(r["trace_url"])
PY
check "the dump is a run of the index, its trigger, reason and window ($(tail -1 "$T/index.check"))" \
    grep -q '^/api/trace' "$T/index.check"
url=$(tail -1 "$T/index.check")
code=$(curl -s -o "$T/opened.bin" -w '%{http_code}' "http://127.0.0.1:$PORT$url")
check "opening it fetches its segments (HTTP $code)" test "$code" = 200
"$DIAL9" stats "$T/opened.bin" 2>/dev/null | grep -E '^ +[0-9]+  [A-Za-z]+$' | sort >"$T/opened.stats"
check "the trace answered holds the local dump's events ($(wc -l <"$T/local.stats") event lines)" \
    bash -c "test -s '$T/local.stats' && cmp -s '$T/local.stats' '$T/opened.stats'"
serve_stop

manifest_key=$(stored_keys dumps | grep "/$name/manifest.json")
node "$CHECK/delete_object.mjs" "http://127.0.0.1:$S3_PORT" $BUCKET "$manifest_key"
# keys no recorder writes, from another writer: a deeper one inside the dump's directory, and a
# dump directory named with an empty component (the SDK refuses to store a ".." one). Neither may
# stop the server (the selection refuses such names) nor be listed as a dump.
dump_dir_key=${manifest_key%/manifest.json}
day_key=${dump_dir_key%/*}
seg_file=$(ls "$dump" | grep -m1 '^trace\.[0-9]*\.bin$')
for odd in "$dump_dir_key/deeper/$seg_file" "$day_key//empty.dump1/$seg_file"; do
    node "$CHECK/put_object.mjs" "http://127.0.0.1:$S3_PORT" $BUCKET "$odd" "$dump/$seg_file" 2>>"$T/put.err"
done
stored_keys dumps | grep -c 'deeper\|empty.dump1' >"$T/odd.count"
serve_start serve2 "$DIAL9" serve --bucket $BUCKET
curl -sf "http://127.0.0.1:$PORT/api/index" >"$T/index2.json"
python3 - "$T/index2.json" "$name" >"$T/index2.check" 2>&1 <<'PY'
import json, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r["run"].endswith("/" + sys.argv[2])]
assert len(runs) == 1, runs
d = runs[0]["flight_dump"]
assert d["complete"] is False and "incomplete" in d["summary"], d
print("ok")
PY
check "without its manifest object: incomplete ($(tail -1 "$T/index2.check"))" test "$(tail -1 "$T/index2.check")" = ok
check "odd keys stored ($(cat "$T/odd.count") of 2; $(head -c 200 "$T/put.err"))" test "$(cat "$T/odd.count")" = 2
check "... and listed as no dump" \
    python3 -c 'import json,sys; runs=[r["run"] for r in json.load(open(sys.argv[1]))["runs"]]; assert not [r for r in runs if "deeper" in r or "empty.dump1" in r], runs' "$T/index2.json"
serve_stop

echo "test_s3_serve_dumps: $pass passed, $fail failed"
[ "$fail" = 0 ]
