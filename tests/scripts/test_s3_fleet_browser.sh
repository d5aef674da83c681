#!/usr/bin/env bash
# `dial9 serve --bucket` in a real browser. Our recorder uploads two services to s3rver behind
# the verifying proxy (tests/scripts/s3/): api from the example executor (polls, wakes, parks on
# two workers), db from the test recorder; one more object is stored under dial9's older key
# layout ({prefix}/{date}/{HHMM}/{service}/{host}/{epoch}-{index}.bin.gz, read as service
# checkout-api, instance host1). `dial9 serve
# --bucket` runs on a free loopback port; Debian's Chromium (playwright-core from viewer/)
# opens its list of runs and clicks a run as a user would: the api run of this host, then the
# run in dial9's layout. The viewer must show exactly the events `dial9 dump` finds in that
# run's objects as the AWS SDK reads them back (the same total on the summary chip, the same
# count per event name, the service, a lane per polling worker), without a page error; then a
# user picks a time window of checkout-api/host1 in the start page's form, with the same checks.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
VIEWER="$SOURCE/viewer"
DEMO="$BUILD/examples/executor/executor_demo"
RECORDER="$BUILD/test_pipeline_compress"
CHROMIUM=${D9_CHROMIUM:-/usr/bin/chromium}
BUCKET=d9-test
N=20000
# dial9's dated layout without boot id, as in dial9's own tests, but recent: serve lists the last day
LEGACY_EPOCH=$(date +%s)
LEGACY_KEY=dial9-traces/$(date -u -d "@$LEGACY_EPOCH" +%Y-%m-%d/%H%M)/checkout-api/host1/$LEGACY_EPOCH-0.bin.gz
LEGACY_RUN=service=checkout-api/instance=host1/boot=noboot-$LEGACY_EPOCH

[ -x "$DEMO" ] || { echo "test_s3_fleet_browser: $DEMO not built"; exit 1; }
[ -x "$RECORDER" ] || { echo "test_s3_fleet_browser: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh" # s3rver and the SDK (npm), start_proxy, read_back
if "$DIAL9" serve --help 2>&1 | grep -q 'without libmicrohttpd'; then
    echo "SKIP: dial9 built without libmicrohttpd (no dial9 serve)"
    exit 0
fi
[ -x "$CHROMIUM" ] || { echo "SKIP: no $CHROMIUM (scripts/install-deps.sh installs Debian's chromium)"; exit 0; }
npm_ci_or_skip "$VIEWER" # playwright-core
source "$SOURCE/tests/scripts/lib/serve_harness.sh"
trap 'for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done; [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
      if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi' EXIT

s3env=(env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u DIAL9_S3_BUCKET AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
       HOME="$T/home" AWS_REGION=us-east-1 DIAL9_S3_CACHE_DIR="$T/cache")
mkdir -p "$T/home"
start_proxy fleet
S3="http://127.0.0.1:$PORT"
upload_env=("${s3env[@]}" AWS_ENDPOINT_URL="$S3" DIAL9_S3_BUCKET=$BUCKET DIAL9_MAX_FILE_SIZE_MB=1
            DIAL9_SYMBOLIZE=0 DIAL9_S3_EXIT_WAIT_SECS=300)

# ---- the bucket: our uploads, and an object in dial9's older layout ----
"${upload_env[@]}" DIAL9_SERVICE=api "$DEMO" --workers 2 --seconds 2 --trace-dir "$T/rec-api" \
    >"$T/rec-api.out" 2>"$T/rec-api.err"
rc=$?
check "api (executor demo) recorded and uploaded (exit $rc)" [ "$rc" = 0 ]
check "api: nothing on stderr ($(head -c 300 "$T/rec-api.err"))" [ ! -s "$T/rec-api.err" ]
"${upload_env[@]}" DIAL9_SERVICE=db "$RECORDER" --record "$T/rec-db" $N >"$T/rec-db.out" 2>"$T/rec-db.err"
rc=$?
check "db recorded and uploaded (exit $rc)" [ "$rc" = 0 ]
check "db: nothing on stderr ($(head -c 300 "$T/rec-db.err"))" [ ! -s "$T/rec-db.err" ]
# dial9's own demo trace when the shared fixture is there (../shared), else a run of the example
# executor recorded here, kept on disk (no bucket), gzip'ed as dial9 uploads: polls on two workers
if [ -f "$FIXTURE" ]; then legacy_from="dial9's demo trace" # gzip'ed already, as dial9 uploads
    if [ "$(head -c 2 "$FIXTURE" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then cp "$FIXTURE" "$T/legacy.bin.gz"
    else gzip -c "$FIXTURE" >"$T/legacy.bin.gz"; fi
else legacy_from="a local run of the executor demo (no ../shared)"
    "${s3env[@]}" DIAL9_SERVICE=checkout-api DIAL9_COMPRESS=gzip DIAL9_SYMBOLIZE=0 "$DEMO" --workers 2 --seconds 1 \
        --trace-dir "$T/rec-legacy" >"$T/rec-legacy.out" 2>"$T/rec-legacy.err"
    rc=$?; check "checkout-api recorded locally (exit $rc: $(head -c 300 "$T/rec-legacy.err"))" [ "$rc" = 0 ]
    legacy_segments=$(find "$T/rec-legacy" -name 'trace.*.bin.gz' | wc -l)
    check "checkout-api: one segment ($legacy_segments)" [ "$legacy_segments" = 1 ]
    cp "$(find "$T/rec-legacy" -name 'trace.*.bin.gz' | LC_ALL=C sort | head -1)" "$T/legacy.bin.gz"
fi
node "$CHECK/put_object.mjs" "$S3" $BUCKET "$LEGACY_KEY" "$T/legacy.bin.gz" 2>"$T/put.err"
# (rc=$? first: the message's $(...) would reset $? before the check reads it)
rc=$?; check "$legacy_from stored under dial9's older layout ($(head -c 300 "$T/put.err"))" [ "$rc" = 0 ]
read_back fleet
check "objects read back ($(head -c 300 "$T/fleet/read.err"))" [ -s "$T/fleet/objects.jsonl" ]

host=$(hostname)
# expected NAME PATTERN: what `dial9 dump` finds in the objects whose key matches PATTERN
expected() {
    local files=()
    mapfile -t files < <(grep -E "\"key\":\"$2" "$T/fleet/objects.jsonl" | sed 's/.*"file":"\([^"]*\)".*/\1/')
    echo "${#files[@]}" >"$T/$1.objects"
    [ "${#files[@]}" -gt 0 ] && "$DIAL9" dump --jsonl "${files[@]}" >"$T/$1.dump.jsonl" 2>"$T/$1.dump.err"
}
check "the api run's objects read back, decoded" expected api "dial9-traces/version=1/date=[^/]*/service=api/time=[0-9]*/instance=$host/boot="
check "the object in dial9's layout read back, decoded" expected legacy "$LEGACY_KEY\""

# ---- serve --bucket, and a user in Chromium ----
serve_start serve "${s3env[@]}" AWS_ENDPOINT_URL="$S3" "$DIAL9" serve --bucket $BUCKET --prefix dial9-traces ||
    { echo "test_s3_fleet_browser: $pass passed, $fail failed"; exit 1; }
BASE="http://127.0.0.1:$PORT"

# shown_is NAME: the viewer showed NAME's events, exactly those `dial9 dump` found
shown_is() {
    python3 - "$T/$1.shown.json" "$T/$1.dump.jsonl" <<'PY'
import collections, json, sys
shown = json.load(open(sys.argv[1]))
want = collections.Counter(json.loads(l)["event"] for l in open(sys.argv[2], encoding="utf-8"))
assert shown["state"] == "ready", (shown["state"], shown["error"])
assert not shown["page_errors"], shown["page_errors"]
assert sum(want.values()) > 0
assert shown["events"] == sum(want.values()), (shown["events"], sum(want.values()))
assert shown["events_chip"] == str(sum(want.values())), (shown["chips"], sum(want.values()))
assert shown["by_name"] == dict(want), {"viewer": shown["by_name"], "dump": dict(want)}
rows = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
services = {r["fields"]["entries"].get("service") for r in rows if r["event"] == "SegmentMetadataEvent"}
assert len(services) == 1 and shown["service"] in services, (shown["service"], services)
workers = {r["fields"]["worker_id"] for r in rows if r["event"] == "PollStartEvent"}
assert shown["lanes"] == len(workers) > 0, (shown["lanes"], workers)
PY
}

node "$CHECK/open_run_in_browser.mjs" "$BASE" "$T/api.shown.json" "service=api/" "instance=$host/" 2>"$T/api.browser.err"
rc=$?; check "Chromium opened the api run of $host from the list ($(head -c 600 "$T/api.browser.err"))" [ "$rc" = 0 ]
check "the viewer shows the api run's events, as dump reads its $(cat "$T/api.objects") objects" shown_is api
check "db and dial9's layout listed as runs of their own" python3 -c '
import json, sys
listed = json.load(open(sys.argv[1]))["listed"]
assert len(listed) == 3, listed
assert sum("service=db/" in r for r in listed) == 1, listed
assert sum(r == sys.argv[2] for r in listed) == 1, listed' "$T/api.shown.json" "$LEGACY_RUN"

node "$CHECK/open_run_in_browser.mjs" "$BASE" "$T/legacy.shown.json" "$LEGACY_RUN" 2>"$T/legacy.browser.err"
rc=$?; check "Chromium opened the run in dial9's layout ($(head -c 600 "$T/legacy.browser.err"))" [ "$rc" = 0 ]
check "the viewer shows its events, as dump reads the object" shown_is legacy

# a window of one instance picked in the start page: checkout-api/host1 from a minute before its
# object's start to a minute after
cp "$T/legacy.dump.jsonl" "$T/window.dump.jsonl"
utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%S; }
node "$CHECK/open_run_in_browser.mjs" "$BASE" "$T/window.shown.json" --window service=checkout-api/instance=host1 \
    "$(utc $((LEGACY_EPOCH - 60)))" "$(utc $((LEGACY_EPOCH + 60)))" 2>"$T/window.browser.err"
rc=$?; check "Chromium opened a window of checkout-api/host1 from the start page's form ($(head -c 600 "$T/window.browser.err"))" [ "$rc" = 0 ]
check "the viewer shows the window's events, as dump reads its object" shown_is window
serve_stop 0

echo "test_s3_fleet_browser: $pass passed, $fail failed"
[ "$fail" = 0 ]
