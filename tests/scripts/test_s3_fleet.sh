#!/usr/bin/env bash
# The fleet from S3: two services upload to s3rver behind the verifying proxy
# (tests/scripts/s3/); then `dial9 dump/stats/analyze/check/export s3://bucket/prefix` with
# --service, --instance and a wall-clock window read exactly that service's events (compared
# with the objects read back by the AWS SDK), a second read comes from the cache (no GET), a
# window or instance that matches nothing, a wrong secret and an unreachable endpoint give clear
# errors; `dial9 serve --bucket` serves the runs listed from the bucket, only those (not what
# else the cache holds), each with its wall-clock range from the keys.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
RECORDER="$BUILD/test_pipeline_compress"
BUCKET=d9-test
N=60000

[ -x "$RECORDER" ] || { echo "test_s3_fleet: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh"

s3env=(env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u DIAL9_S3_BUCKET AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
       HOME="$T/home" AWS_REGION=us-east-1 DIAL9_S3_CACHE_DIR="$T/cache")
mkdir -p "$T/home"

start_proxy fleet
for svc in api db; do
    "${s3env[@]}" AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" DIAL9_S3_BUCKET=$BUCKET DIAL9_SERVICE=$svc \
        DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_SYMBOLIZE=0 DIAL9_S3_EXIT_WAIT_SECS=300 \
        "$RECORDER" --record "$T/rec-$svc" $N >"$T/rec-$svc.out" 2>"$T/rec-$svc.err"
    rc=$?
    check "$svc recorded and uploaded (exit $rc)" [ "$rc" = 0 ]
    check "$svc: nothing on stderr ($(head -c 300 "$T/rec-$svc.err"))" [ ! -s "$T/rec-$svc.err" ]
done
read_back fleet
check "api in the bucket" grep -q 'service=api/' "$T/fleet/objects.jsonl"
check "db in the bucket" grep -q 'service=db/' "$T/fleet/objects.jsonl"
# the api objects as the SDK read them: the reference for every command below
mkdir -p "$T/ref"
grep 'service=api/' "$T/fleet/objects.jsonl" | sed 's/.*"file":"\([^"]*\)".*/\1/' | xargs -I{} cp {} "$T/ref/"
host=$(hostname)
S3="http://127.0.0.1:$PORT"
d9s3() { "${s3env[@]}" AWS_ENDPOINT_URL="$S3" "$DIAL9" "$@"; }

# ---- dump: exactly the api events ----
d9s3 dump --jsonl s3://$BUCKET/dial9-traces --service api --from -15m >"$T/dump.jsonl" 2>"$T/dump.err"
# (rc=$? first: the message's $(...) would reset $? before the check reads it)
rc=$?; check "dump s3:// exit 0 ($(head -c 300 "$T/dump.err"))" [ "$rc" = 0 ]
check "every api event once, no db event" every_event_once_jsonl "$T/dump.jsonl"
gets=$(grep -c '"code":"got"' "$T/fleet/log")
check "objects fetched with GET" [ "$gets" -gt 0 ]

# ---- the same reports as on the local copy ----
for cmd in "stats" "analyze" "check"; do
    d9s3 $cmd s3://$BUCKET/dial9-traces --service api --instance "$host" >"$T/$cmd.s3" 2>"$T/$cmd.s3.err"
    rc_s3=$?
    "$DIAL9" $cmd "$T/ref" >"$T/$cmd.local" 2>"$T/$cmd.local.err"
    rc_local=$?
    # file names differ (cache vs. read-back copy); everything else must not
    sed -E 's#[^ "]*/(object[0-9]+|trace\.[0-9]+)\.bin\.gz#FILE#g' "$T/$cmd.s3" >"$T/$cmd.s3.n"
    sed -E 's#[^ "]*/(object[0-9]+|trace\.[0-9]+)\.bin\.gz#FILE#g' "$T/$cmd.local" >"$T/$cmd.local.n"
    check "$cmd s3:// exits as $cmd on the local copy ($rc_s3/$rc_local)" [ "$rc_s3" = "$rc_local" ]
    check "$cmd s3:// reports something" [ -s "$T/$cmd.s3" ]
    check "$cmd s3:// = $cmd on the local copy" cmp -s "$T/$cmd.s3.n" "$T/$cmd.local.n"
done
check "from the cache the second time: no GET" [ "$(grep -c '"code":"got"' "$T/fleet/log")" = "$gets" ]
d9s3 export --format folded -o "$T/folded.txt" s3://$BUCKET/dial9-traces --service db >"$T/export.out" 2>"$T/export.err"
rc=$?; check "export s3:// (db) exit 0 ($(head -c 300 "$T/export.err"))" [ "$rc" = 0 ]

# ---- dial9's older key layouts: the same services, instances, runs and windows ----
# the db and api segments stored again under the dated layouts, with and without a boot id, over several
# minutes (so several {HHMM} directories): a recording must stay one run, chosen by
# --service/--instance and listed by time prefix like the current layout.
mapfile -t seg < <(grep 'service=db/' "$T/fleet/objects.jsonl" | sed 's/.*"file":"\([^"]*\)".*/\1/';
                   grep 'service=api/' "$T/fleet/objects.jsonl" | sed 's/.*"file":"\([^"]*\)".*/\1/')
check "two different segments to store again (${#seg[@]})" [ "${#seg[@]}" -ge 2 ]
seg[2]=${seg[0]}
now=$(date +%s)
: >"$T/dated.keys"
put_dated() { # EPOCH SERVICE INSTANCE BOOT|- N FILE: a key in dial9's dated layout
    local dir boot=""; dir=$(date -u -d "@$1" +%Y-%m-%d/%H%M)
    [ "$4" != - ] && boot="$4/"
    local key="dial9-traces/$dir/$2/$3/$boot$1-$5.bin.gz"
    node "$CHECK/put_object.mjs" "$S3" $BUCKET "$key" "$6" 2>>"$T/put.err" && echo "$key" >>"$T/dated.keys"
}
put_dated $((now - 1800)) legacy-svc hostL boot-7 0 "${seg[0]}" &&
    put_dated $((now - 1680)) legacy-svc hostL boot-7 1 "${seg[1]}" &&
    put_dated $((now - 1560)) legacy-svc hostL boot-7 2 "${seg[2]}" &&
    put_dated $((now - 1500)) old-svc hostO - 0 "${seg[0]}" && # one recording without boot id ...
    put_dated $((now - 1440)) old-svc hostO - 1 "${seg[1]}" &&
    put_dated $((now - 1200)) old-svc hostO - 0 "${seg[1]}" && # ... and the next one (n from 0 again)
    put_dated 1577836800 old-svc hostO - 0 "${seg[0]}"       # 2020-01-01 00:00 UTC
check "objects stored under dial9's dated layouts ($(head -c 300 "$T/put.err"))" [ "$(wc -l <"$T/dated.keys")" = 7 ]
check "a recording in the dated layout spans several {HHMM} directories" \
    [ "$(grep legacy-svc "$T/dated.keys" | cut -d/ -f3 | sort -u | wc -l)" -gt 1 ]
"$DIAL9" dump --jsonl "${seg[0]}" "${seg[1]}" "${seg[2]}" >"$T/legacy.ref.jsonl"
"$DIAL9" dump --jsonl "${seg[0]}" "${seg[1]}" "${seg[1]}" >"$T/old.ref.jsonl" # run A (0, 1), then run B
"$DIAL9" dump --jsonl "${seg[0]}" >"$T/old2020.ref.jsonl"
lists_before=$(wc -l <"$T/fleet/log")
d9s3 dump --jsonl s3://$BUCKET/dial9-traces --service legacy-svc --from -2h >"$T/legacy.jsonl" 2>"$T/legacy.err"
check "dated layout with boot id: --service and a window select it ($(head -c 300 "$T/legacy.err"))" \
    cmp -s "$T/legacy.jsonl" "$T/legacy.ref.jsonl"
d9s3 dump --jsonl s3://$BUCKET/dial9-traces --service old-svc --instance hostO --from -2h >"$T/old.jsonl" 2>"$T/old.err"
check "dated layout without boot id: --service/--instance, the window leaves 2020 out ($(head -c 300 "$T/old.err"))" \
    cmp -s "$T/old.jsonl" "$T/old.ref.jsonl"
d9s3 dump --jsonl s3://$BUCKET/dial9-traces --service old-svc --from 2020-01-01 --to 2020-01-01T00:30Z \
    >"$T/old2020.jsonl" 2>"$T/old2020.err"
check "dated layout: an old window lists its day ($(head -c 300 "$T/old2020.err"))" \
    cmp -s "$T/old2020.jsonl" "$T/old2020.ref.jsonl"
tail -n +$((lists_before + 1)) "$T/fleet/log" | grep '"code":"listed"' >"$T/window.lists"
check "windows listed by time prefix only (both layouts)" python3 - "$T/window.lists" <<'EOF'
import json, re, sys
prefixes = [json.loads(l)["prefix"] for l in open(sys.argv[1])]
assert prefixes, "nothing listed"
for p in prefixes:
    assert re.fullmatch(r"dial9-traces/(version=1/date=\d{4}-\d\d-\d\d/(service=[^/]+/)?|\d{4}-\d\d-\d\d/\d\d)", p), p
assert any(p.startswith("dial9-traces/2020-01-01/") for p in prefixes), prefixes
EOF

# ---- selections that match nothing, errors ----
d9s3 stats s3://$BUCKET/dial9-traces --service api --from 2020-01-01 --to 2020-01-02T00:00Z >/dev/null 2>"$T/old.err"
rc=$?
check "a window with no uploads: exit 1 ($rc)" [ "$rc" = 1 ]
check "a window with no uploads: said" grep -q 'no trace objects match' "$T/old.err"
d9s3 stats s3://$BUCKET/dial9-traces --instance no-such-host >/dev/null 2>"$T/inst.err"
rc=$?
check "an unknown instance: exit 1 ($rc)" [ "$rc" = 1 ]
check "an unknown instance: said" grep -q 'no trace objects match.*instance no-such-host' "$T/inst.err"
"${s3env[@]}" AWS_ENDPOINT_URL="$S3" AWS_SECRET_ACCESS_KEY=wrong DIAL9_S3_CACHE_DIR="$T/cache2" \
    "$DIAL9" stats s3://$BUCKET/dial9-traces >/dev/null 2>"$T/secret.err"
rc=$?
check "a wrong secret: exit 1 ($rc)" [ "$rc" = 1 ]
check "a wrong secret: the answer named" grep -q 'GET s3://d9-test/: HTTP 403 SignatureDoesNotMatch' "$T/secret.err"
dead_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();})')
"${s3env[@]}" AWS_ENDPOINT_URL="http://127.0.0.1:$dead_port" DIAL9_S3_CACHE_DIR="$T/cache2" \
    "$DIAL9" stats s3://$BUCKET/dial9-traces >/dev/null 2>"$T/down.err"
rc=$?
check "unreachable: exit 1 ($rc)" [ "$rc" = 1 ]
check "unreachable: said" grep -q "Couldn't connect to server" "$T/down.err"
check "the cache is private (0700)" [ "$(stat -c %a "$T/cache")" = 700 ]

# ---- serve --bucket ----
if "$DIAL9" serve --help 2>&1 | grep -q 'without libmicrohttpd'; then
    echo "SKIP: serve --bucket (dial9 built without libmicrohttpd)"
else
    source "$SOURCE/tests/scripts/lib/serve_harness.sh"
    trap 'for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done; serve_cleanup' EXIT
    # a cache of its own, where another command fetched a run outside serve's window first:
    # serve must list and serve only what it selected, not everything in the cache
    "${s3env[@]}" AWS_ENDPOINT_URL="$S3" DIAL9_S3_CACHE_DIR="$T/cache-serve" "$DIAL9" dump \
        s3://$BUCKET/dial9-traces --service old-svc --from 2020-01-01 --to 2020-01-01T00:30Z >/dev/null 2>"$T/pre.err"
    OLD_RUN=service=old-svc/instance=hostO/boot=noboot-1577836800
    check "the 2020 run is in serve's cache before it starts ($(head -c 300 "$T/pre.err"))" \
        [ -d "$T/cache-serve/$BUCKET/dial9-traces/$OLD_RUN" ]
    log_before_serve=$(wc -l <"$T/fleet/log")
    serve_start serve "${s3env[@]}" AWS_ENDPOINT_URL="$S3" DIAL9_S3_CACHE_DIR="$T/cache-serve" \
        "$DIAL9" serve --bucket $BUCKET --prefix dial9-traces
    if [ -n "$PORT" ]; then
        curl -s "http://127.0.0.1:$PORT/api/index" >"$T/index.json"
        curl -s "http://127.0.0.1:$PORT/runs" >"$T/runs.html"
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/trace?run=$OLD_RUN")
        check "a run in the cache that this serve did not select is not served (HTTP $code)" [ "$code" = 404 ]
        check "... nor listed" python3 -c '
import json, sys
assert not [r for r in json.load(open(sys.argv[1]))["runs"] if r["run"] == sys.argv[2]]' "$T/index.json" "$OLD_RUN"
        check "every run's wall-clock range from its keys (first and last segment start)" \
            python3 - "$T/index.json" "$T/fleet/objects.jsonl" "$now" <<'EOF2'
import json, re, sys
runs = {r["run"]: (r["first_epoch_s"], r["last_epoch_s"]) for r in json.load(open(sys.argv[1]))["runs"]}
now = int(sys.argv[3])
want = {"service=legacy-svc/instance=hostL/boot=boot-7": (now - 1800, now - 1560),
        "service=old-svc/instance=hostO/boot=noboot-%d" % (now - 1500): (now - 1500, now - 1440),
        "service=old-svc/instance=hostO/boot=noboot-%d" % (now - 1200): (now - 1200, now - 1200)}
for line in open(sys.argv[2]):  # our uploads, in the current layout
    m = re.search(r'/(service=[^/]+)/time=\d+/(instance=[^/]+/boot=[^/]+)/(\d+)-\d+\.bin\.gz"', line)
    name, t = m.group(1) + "/" + m.group(2), int(m.group(3))
    a, b = want.get(name, (t, t))
    want[name] = (min(a, t), max(b, t))
assert runs == want, {"served": runs, "keys": want}
EOF2
        check "the start page shows them in UTC" python3 - "$T/runs.html" "$now" <<'EOF2'
import html, re, sys, time
page = html.unescape(open(sys.argv[1]).read())
now = int(sys.argv[2])
row = [r for r in page.split("<tr>") if "service=legacy-svc/instance=hostL/boot=boot-7" in r]
assert len(row) == 1, page
utc = lambda t, f: time.strftime(f, time.gmtime(t))
first, last = utc(now - 1800, "%Y-%m-%d %H:%M:%S"), utc(now - 1560, "%H:%M:%S")
if utc(now - 1800, "%d") != utc(now - 1560, "%d"): last = utc(now - 1560, "%Y-%m-%d %H:%M:%S")
assert first + " \u2013 " + last + " UTC" in row[0], row[0]
EOF2
        check "serve --bucket lists one run per service and boot, in every layout" python3 - "$T/index.json" "$host" $((now - 1500)) $((now - 1200)) <<'EOF'
import json, sys
runs = {r["run"]: r["segments"] for r in json.load(open(sys.argv[1]))["runs"]}
assert len(runs) == 5, runs
assert sum("service=api/instance=" + sys.argv[2] + "/boot=" in r for r in runs) == 1, runs
assert sum("service=db/" in r for r in runs) == 1, runs
assert runs.get("service=legacy-svc/instance=hostL/boot=boot-7") == 3, runs
assert runs.get("service=old-svc/instance=hostO/boot=noboot-" + sys.argv[3]) == 2, runs
assert runs.get("service=old-svc/instance=hostO/boot=noboot-" + sys.argv[4]) == 1, runs
EOF
        check "serve --bucket: the last day by default, listed by time prefix" python3 - "$T/fleet/log" "$now" "$log_before_serve" <<'EOF'
import datetime, json, re, sys
log = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[3]):]
serve = [e["prefix"] for e in log if e["code"] == "listed"]
now = datetime.datetime.fromtimestamp(int(sys.argv[2]), datetime.timezone.utc)
days = {(now - datetime.timedelta(days=d)).strftime("%Y-%m-%d") for d in (-1, 0, 1, 2)}
assert serve, "nothing listed"
for p in serve:
    m = re.fullmatch(r"dial9-traces/(?:version=1/date=)?(\d{4}-\d\d-\d\d)/(?:\d\d)?", p)
    assert m and m.group(1) in days, p
assert not any(e["code"] == "got" and "/2020-01-01/" in e["key"] for e in log), "2020 fetched"
EOF
        # a time window of one instance, as the start page's form asks for it
        utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%S; }
        check "the start page has a window form per instance, prefilled with its range" python3 - "$T/runs.html" \
            "$(utc $((now - 1800)))" "$(utc $((now - 1560)))" <<'EOF2'
import html, re, sys
forms = re.findall(r'<form class="window".*?</form>', open(sys.argv[1]).read())
legacy = [html.unescape(f) for f in forms if "service=legacy-svc/instance=hostL" in html.unescape(f)]
assert len(legacy) == 1, forms
assert 'name="from" value="%s"' % sys.argv[2] in legacy[0] and 'name="to" value="%s"' % sys.argv[3] in legacy[0], legacy
assert len(forms) == 4, forms  # api, db, legacy-svc, old-svc (two runs: one instance)
EOF2
        W="http://127.0.0.1:$PORT/window?instance=service%3Dlegacy-svc%2Finstance%3DhostL"
        curl -s -o "$T/window.body" -w '%{http_code} %{redirect_url}' "$W&from=$(utc $((now - 1700)))&to=$(utc $((now - 1650)))" >"$T/window.answer"
        check "a window of legacy-svc's instance: straight to the viewer ($(head -c 300 "$T/window.answer"))" \
            grep -q "^303 http://127.0.0.1:$PORT/?trace=" "$T/window.answer"
        wtrace=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.parse_qs(urllib.parse.urlparse(sys.argv[1]).query)["trace"][0])' "$(cut -d' ' -f2 "$T/window.answer")" 2>/dev/null)
        curl -s -o "$T/window.bin" "http://127.0.0.1:$PORT$wtrace"
        "$DIAL9" dump --jsonl "$T/window.bin" >"$T/window.jsonl" 2>/dev/null
        "$DIAL9" dump --jsonl "${seg[0]}" "${seg[1]}" >"$T/window.ref.jsonl"
        check "... the viewer gets the two segments that run into the window ($wtrace)" cmp -s "$T/window.jsonl" "$T/window.ref.jsonl"
        curl -s -o "$T/window2.html" -w '%{http_code}' \
            "http://127.0.0.1:$PORT/window?instance=service%3Dold-svc%2Finstance%3DhostO&from=$(utc $((now - 1500)))&to=$(utc $((now - 1200)))" >"$T/window2.code"
        check "a window over two recordings of one instance: a link to each" python3 - "$T/window2.html" "$(cat "$T/window2.code")" <<'EOF2'
import html, re, sys
assert sys.argv[2] == "200", sys.argv[2]
links = [html.unescape(l) for l in re.findall(r'<li><a href="([^"]*)"', open(sys.argv[1]).read())]
assert len(links) == 2 and all("boot%253Dnoboot-" in l for l in links), links
EOF2
        code=$(curl -s -o "$T/window3.txt" -w '%{http_code}' "$W&from=2019-01-01T00:00:00&to=2019-01-02T00:00:00")
        check "a window with nothing in it: 404, said ($code $(head -c 200 "$T/window3.txt"))" \
            grep -q 'no segment of service=legacy-svc/instance=hostL runs into this window' "$T/window3.txt"
        run=$(python3 -c 'import json,sys,urllib.parse; r=[x for x in json.load(open(sys.argv[1]))["runs"] if "service=api" in x["run"]][0]; print(r["trace_url"])' "$T/index.json")
        curl -s -o "$T/served.bin" "http://127.0.0.1:$PORT$run"
        check "the api run served as one trace: every event once" every_event_once "$T/served.bin"
        serve_stop
        # the same cache holds all three segments of legacy-svc's run now; a window that selects the
        # last two must serve those two only (the first starts 27 min ago, its successor 28 min ago)
        serve_start serve-window "${s3env[@]}" AWS_ENDPOINT_URL="$S3" DIAL9_S3_CACHE_DIR="$T/cache-serve" \
            "$DIAL9" serve --bucket $BUCKET --service legacy-svc --from "$(date -u -d "@$((now - 1620))" +%Y-%m-%dT%H:%M:%SZ)"
        if [ -n "$PORT" ]; then
            curl -s "http://127.0.0.1:$PORT/api/index" >"$T/index-window.json"
            check "a window's serve: its run with the segments in the window, not those cached before" \
                python3 - "$T/index-window.json" "$now" <<'EOF2'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
now = int(sys.argv[2])
got = [(r["run"], [f["seg"] for f in r["files"]], r["first_epoch_s"], r["last_epoch_s"]) for r in runs]
assert got == [("service=legacy-svc/instance=hostL/boot=boot-7", [1, 2], now - 1680, now - 1560)], got
EOF2
            code=$(curl -s -o /dev/null -w '%{http_code}' \
                "http://127.0.0.1:$PORT/api/trace?run=service%3Dlegacy-svc%2Finstance%3DhostL%2Fboot%3Dboot-7&seg=0")
            check "... the cached segment outside it is not served (HTTP $code)" [ "$code" = 404 ]
            serve_stop
        fi
        serve_start serve-all "${s3env[@]}" AWS_ENDPOINT_URL="$S3" DIAL9_S3_CACHE_DIR="$T/cache-all" "$DIAL9" serve --bucket $BUCKET --all
        if [ -n "$PORT" ]; then
            curl -s "http://127.0.0.1:$PORT/api/index" >"$T/index-all.json"
            check "serve --bucket --all: 2020 too" python3 -c '
import json, sys
runs = {r["run"]: r["segments"] for r in json.load(open(sys.argv[1]))["runs"]}
assert len(runs) == 6 and runs.get("service=old-svc/instance=hostO/boot=noboot-1577836800") == 1, runs' "$T/index-all.json"
            serve_stop
        fi
    fi
fi

echo "test_s3_fleet: $pass passed, $fail failed"
[ "$fail" = 0 ]
