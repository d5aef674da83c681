#!/usr/bin/env bash
# `dial9 diff` of two s3:// selections against a real S3-speaking server on loopback (s3rver
# behind the verifying proxy, tests/scripts/s3/): two recorded runs of service api stored in
# dial9's key layout (instances h1 and h2), then
#   - one prefix, a selection per side (--service api --a-instance h1 --b-instance h2), and two
#     URLs with one option each: the JSON equals `dial9 diff --json` of the same two segments as
#     local files (every key but the sides' labels, which name the selection);
#   - the same through a cache bounded below both sides (A is read before B's fetch evicts it);
#   - a side whose selection matches nothing, a bucket that does not exist and an endpoint that
#     does not answer: exit 1, the side and the reason named;
#   - a per-side selection on a local PATH: a usage error (exit 2).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=1 # common.sh's event checks are not used here
EXECUTOR="$BUILD/examples/executor/executor_demo"
[ -x "$EXECUTOR" ] || { echo "test_s3_diff: $EXECUTOR not built"; exit 1; }
source "$CHECK/common.sh"

# same_diff A B: two `diff --json` outputs equal but for the sides' labels
same_diff() {
    python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for s in d["sides"].values():
        s.pop("label")
assert a["groups"], "no groups compared"
sys.exit(a != b)
PY
}

# ---- two runs, one segment each, in dial9's key layout ----
spawn_proxy diff # node starts while the runs are recorded
now=$(date -u +%s)
day=$(date -u -d "@$now" +%Y-%m-%d) hhmm=$(date -u -d "@$now" +%H%M)
declare -A SEG
for inst in h1 h2; do
    DIAL9_SERVICE=api DIAL9_SYMBOLIZE=0 "$EXECUTOR" --workers 2 --seconds 1.5 --trace-dir "$T/rec-$inst" \
        >/dev/null 2>"$T/rec-$inst.err"
    mapfile -t segs < <(find "$T/rec-$inst" -name 'trace.*.bin*' | sort)
    check "$inst: one segment recorded (${#segs[@]})" [ "${#segs[@]}" = 1 ]
    SEG[$inst]=${segs[0]}
done
"$DIAL9" diff --json "${SEG[h1]}" "${SEG[h2]}" >"$T/local.json" 2>"$T/local.err"
rc=$?; check "diff of the local segments: exit 0 ($(head -c 300 "$T/local.err"))" [ "$rc" = 0 ]

proxy_port diff
for inst in h1 h2; do
    ext=${SEG[$inst]##*.bin}
    node "$CHECK/put_object.mjs" "http://127.0.0.1:$PORT" $BUCKET \
        "dial9-traces/version=1/date=$day/service=api/time=$hhmm/instance=$inst/boot=b-$inst/$now-0.bin$ext" \
        "${SEG[$inst]}" 2>"$T/put.err"
    rc=$?; check "$inst stored ($(head -c 200 "$T/put.err"))" [ "$rc" = 0 ]
done

# ---- two selections of one prefix ----
URL=s3://$BUCKET/dial9-traces
d9s3 diff --json $URL --service api --a-instance h1 --b-instance h2 >"$T/s3.json" 2>"$T/s3.err"
rc=$?; check "diff of two selections of one prefix: exit 0 ($(head -c 300 "$T/s3.err"))" [ "$rc" = 0 ]
check "it equals the diff of the local segments" same_diff "$T/local.json" "$T/s3.json"
check "each side's label names its selection" python3 -c '
import json, sys; s = json.load(open(sys.argv[1]))["sides"]
assert s["a"]["label"] == sys.argv[2] + " instance h1" and s["b"]["label"] == sys.argv[2] + " instance h2", s' \
    "$T/s3.json" "$URL"
# two URLs, a wall-clock window on A (objects since an hour ago: both runs are in it)
d9s3 diff --json $URL --a-instance h1 --a-from now-1h $URL --b-service api --b-instance h2 >"$T/s3two.json" 2>"$T/s3two.err"
rc=$?; check "diff of two URLs: exit 0 ($(head -c 300 "$T/s3two.err"))" [ "$rc" = 0 ]
check "it equals the diff of the local segments too" same_diff "$T/local.json" "$T/s3two.json"
# a cache (DIAL9_S3_CACHE_MAX_MB) that holds the larger side, not both: A is read before B's
# fetch evicts it. The segments are ~1.5 MB (1.5 s at 4000 requests a second), their exact sizes
# vary with the load: the bound follows them.
read -r size1 size2 < <(stat -c %s "${SEG[h1]}" "${SEG[h2]}" | paste -sd' ')
mb=$(( ((size1 > size2 ? size1 : size2) + 1048575) / 1048576 ))
if [ $((size1 + size2)) -gt $((mb * 1048576)) ]; then
    "${s3env[@]}" AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" DIAL9_S3_CACHE_MAX_MB=$mb DIAL9_S3_CACHE_DIR="$T/cache-small" \
        "$DIAL9" diff --json $URL --a-instance h1 --b-instance h2 >"$T/small.json" 2>"$T/small.err"
    rc=$?; check "diff through a $mb MiB cache, smaller than both sides ($size1 + $size2 bytes): exit 0 ($(head -c 300 "$T/small.err"))" [ "$rc" = 0 ]
    check "it equals the diff of the local segments" same_diff "$T/local.json" "$T/small.json"
else
    echo "note: segments of $size1 and $size2 bytes fit one $mb MiB cache together: the small-cache case not run"
fi
d9s3 diff $URL --a-instance h1 --b-instance h2 >"$T/s3.txt" 2>"$T/s3txt.err"
rc=$?; check "the text: exit 0 ($(head -c 300 "$T/s3txt.err"))" [ "$rc" = 0 ]
check "the text names the sides" grep -q "B  $URL instance h2" "$T/s3.txt"

# ---- selections matching nothing, errors ----
d9s3 diff $URL --a-instance h1 --b-instance no-such-host >/dev/null 2>"$T/none.err"
rc=$?
check "a side matching nothing: exit 1 ($rc)" [ "$rc" = 1 ]
check "a side matching nothing: said ($(head -c 300 "$T/none.err"))" \
    grep -q "dial9 diff: B: $URL: no trace objects match.*instance no-such-host" "$T/none.err"
d9s3 diff $URL --a-from 2020-01-01 --a-to 2020-01-02T00:00Z $URL >/dev/null 2>"$T/old.err"
rc=$?
check "a side's window with no uploads: exit 1 ($rc)" [ "$rc" = 1 ]
check "a side's window with no uploads: said ($(head -c 300 "$T/old.err"))" \
    grep -q "dial9 diff: A: $URL: no trace objects match.*in the time window" "$T/old.err"
d9s3 diff s3://no-such-bucket/dial9-traces --a-instance h1 --b-instance h2 >/dev/null 2>"$T/bucket.err"
rc=$?
check "a wrong bucket: exit 1 ($rc)" [ "$rc" = 1 ]
check "a wrong bucket: said ($(head -c 300 "$T/bucket.err"))" grep -q "dial9 diff: A: .*NoSuchBucket" "$T/bucket.err"
dead_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();})')
"${s3env[@]}" AWS_ENDPOINT_URL="http://127.0.0.1:$dead_port" DIAL9_S3_CACHE_DIR="$T/cache2" \
    "$DIAL9" diff $URL --a-instance h1 --b-instance h2 >/dev/null 2>"$T/down.err"
rc=$?
check "unreachable: exit 1 ($rc)" [ "$rc" = 1 ]
check "unreachable: said ($(head -c 300 "$T/down.err"))" grep -q "dial9 diff: A: .*Couldn't connect to server" "$T/down.err"
"$DIAL9" diff "${SEG[h1]}" --b-instance h2 "${SEG[h2]}" >/dev/null 2>"$T/local-sel.err"
rc=$?
check "a per-side selection on a local PATH: exit 2 ($rc)" [ "$rc" = 2 ]
check "... said ($(head -c 300 "$T/local-sel.err"))" grep -q "B is the local PATH" "$T/local-sel.err"

echo "test_s3_diff: $pass passed, $fail failed"
[ "$fail" = 0 ]
