#!/usr/bin/env bash
# `dial9 fold s3://... --to s3://...` against a real S3-speaking server on loopback (s3rver
# behind the verifying proxy, tests/scripts/s3/): three recorded runs stored in dial9's key
# layout (api on instances h1 and h2, db on h3), then
#   - a fold of h1 alone: the tables and their commit marker in the bucket; DuckDB, reading the
#     files the marker names (copied back with the AWS SDK), gives analyze --json's polls by
#     spawn location for h1 exactly;
#   - a fold of h1 and h2 while the server stops answering after 2 PUTs: exit 1, objects were
#     uploaded, but the marker is the first fold's, byte for byte, and a reader through it sees
#     exactly h1's numbers still; a fold of h1 alone again does not take those orphans in;
#   - the same fold again, complete: h1's partitions compacted with h2's into one file each, the
#     replaced files deleted, the failed fold's uploads reused (no object the marker does not
#     name is left), both runs' numbers exact;
#   - a third fold of the same segments: no PUT, no DELETE, every object as it was;
#   - mixed inputs (a local segment of db and the s3:// selection): db's numbers added, api's
#     files untouched.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=1 # common.sh's event checks are not used here
EXECUTOR="$BUILD/examples/executor/executor_demo"
[ -x "$EXECUTOR" ] || { echo "test_s3_fold: $EXECUTOR not built"; exit 1; }
source "$CHECK/common.sh"
npm_ci_or_skip "$SOURCE/tests/parquet"

# mirror NAME: the tables/ prefix copied back into $T/NAME, its listing in $T/NAME.list
mirror() {
    rm -rf "$T/$1" && mkdir -p "$T/$1"
    node "$CHECK/mirror.mjs" "http://127.0.0.1:$PORT" "$BUCKET" tables/ "$T/$1" >"$T/$1.list" 2>"$T/$1.err"
}
# duck DIR MATCH::JSON...: DuckDB through the marker against analyze (tests/parquet)
duck() { (cd "$SOURCE/tests/parquet" && node s3_fold_check.mjs "$@") >"$T/duck.out" 2>&1; }
stored() { grep -c '"code":"stored"' "$T/fold/log"; }
deleted() { grep -c '"code":"deleted"' "$T/fold/log"; }

# ---- three runs, one segment each, in dial9's key layout ----
now=$(date -u +%s)
day=$(date -u -d "@$now" +%Y-%m-%d) hhmm=$(date -u -d "@$now" +%H%M)
declare -A SEG RUN
for spec in api:h1 api:h2 db:h3; do
    svc=${spec%%:*} inst=${spec##*:}
    DIAL9_SERVICE=$svc DIAL9_SYMBOLIZE=0 "$EXECUTOR" --workers 2 --seconds 1 --trace-dir "$T/rec-$inst" \
        >/dev/null 2>"$T/rec-$inst.err"
    mapfile -t segs < <(find "$T/rec-$inst" -name 'trace.*.bin*' | sort)
    check "$inst: one segment recorded (${#segs[@]})" [ "${#segs[@]}" = 1 ]
    SEG[$inst]=${segs[0]}
    RUN[$inst]=$(basename "$(dirname "${segs[0]}")") # the run directory: its run_id
    "$DIAL9" analyze --json "${SEG[$inst]}" >"$T/$inst.json" 2>"$T/$inst.json.err"
    check "$inst: analyze --json" [ -s "$T/$inst.json" ]
done

start_proxy fold
for spec in api:h1 api:h2 db:h3; do
    svc=${spec%%:*} inst=${spec##*:} ext=${SEG[${spec##*:}]##*.bin}
    node "$CHECK/put_object.mjs" "http://127.0.0.1:$PORT" $BUCKET \
        "dial9-traces/version=1/date=$day/service=$svc/time=$hhmm/instance=$inst/boot=b-$inst/$now-0.bin$ext" \
        "${SEG[$inst]}" 2>"$T/put.err"
    rc=$?; check "$inst stored ($(head -c 200 "$T/put.err"))" [ "$rc" = 0 ]
done

# ---- 1. h1 alone ----
d9s3 fold s3://$BUCKET/dial9-traces --service api --instance h1 --to s3://$BUCKET/tables 2>"$T/fold1.err"
rc=$?; check "fold of h1: exit 0 ($(tail -c 400 "$T/fold1.err"))" [ "$rc" = 0 ]
check "fold of h1: committed" grep -q "committed s3://$BUCKET/tables/_dial9_fold.json" "$T/fold1.err"
mirror m1
check "the marker is in the bucket" [ -s "$T/m1/_dial9_fold.json" ]
check "the marker names polls files" grep -q '"polls/service=api/date=' "$T/m1/_dial9_fold.json"
duck "$T/m1" "${RUN[h1]}::$T/h1.json"
rc=$?; check "h1 through the marker = analyze ($(cat "$T/duck.out"))" [ "$rc" = 0 ]

# ---- 2. the server stops answering midway ----
kill "${PROXY_PID[fold]}"; wait "${PROXY_PID[fold]}" 2>/dev/null
start_proxy fold FAULT_GONE_AFTER_PUTS=2
d9s3 fold s3://$BUCKET/dial9-traces --service api --to s3://$BUCKET/tables 2>"$T/fold2.err"
rc=$?; check "fold while the server goes away: exit 1 ($rc)" [ "$rc" = 1 ]
check "it failed midway: 2 objects uploaded first ($(stored))" [ "$(stored)" = 2 ]
check "the error says why ($(tail -c 300 "$T/fold2.err"))" grep -q "dial9 fold: .*PUT" "$T/fold2.err"
kill "${PROXY_PID[fold]}"; wait "${PROXY_PID[fold]}" 2>/dev/null
start_proxy fold
mirror m2
check "the marker is the first fold's" cmp -s "$T/m1/_dial9_fold.json" "$T/m2/_dial9_fold.json"
check "the failed fold's uploads are in the bucket" [ "$(wc -l <"$T/m2.list")" -gt "$(wc -l <"$T/m1.list")" ]
duck "$T/m2" "${RUN[h1]}::$T/h1.json"
rc=$?; check "a reader through the marker sees h1 exactly, nothing of the failed fold ($(cat "$T/duck.out"))" [ "$rc" = 0 ]
duck "$T/m2" "${RUN[h2]}::$T/h2.json"
rc=$?; check "and nothing of h2" [ "$rc" != 0 ]

# the failed fold's uploads have no manifest yet: a fold of h1 alone again leaves them out of
# the marker (it stays the first fold's, not rewritten)
d9s3 fold s3://$BUCKET/dial9-traces --service api --instance h1 --to s3://$BUCKET/tables 2>"$T/fold2b.err"
rc=$?; check "fold of h1 again: exit 0 ($(tail -c 400 "$T/fold2b.err"))" [ "$rc" = 0 ]
check "orphans are no part of the tables: marker unchanged" grep -q "commit marker unchanged" "$T/fold2b.err"

# ---- 3. the same fold, complete: compaction ----
d9s3 fold s3://$BUCKET/dial9-traces --service api --to s3://$BUCKET/tables 2>"$T/fold3.err"
rc=$?; check "fold of h1 and h2: exit 0 ($(tail -c 400 "$T/fold3.err"))" [ "$rc" = 0 ]
mirror m3
duck "$T/m3" "${RUN[h1]}::$T/h1.json" "${RUN[h2]}::$T/h2.json"
rc=$?; check "h1 and h2 through the marker = analyze ($(cat "$T/duck.out"))" [ "$rc" = 0 ]
files_of() { grep -o '"[^"]*\.parquet"' "$1" | tr -d '"' | sort; }
check "one file per partition (compacted)" [ -z "$(files_of "$T/m3/_dial9_fold.json" | xargs -n1 dirname | uniq -d)" ]
gone=$(comm -23 <(files_of "$T/m1/_dial9_fold.json") <(files_of "$T/m3/_dial9_fold.json"))
check "the first fold's files were replaced" [ -n "$gone" ]
absent() { ! grep -q "$1" "$2"; }
for f in $gone; do check "replaced $f deleted" absent "^tables/$f " "$T/m3.list"; done
check "deletes logged ($(deleted))" [ "$(deleted)" -gt 0 ]
check "no object the marker does not name is left" \
    [ -z "$(comm -13 <(files_of "$T/m3/_dial9_fold.json") <(sed -n 's|^tables/\([^ ]*\.parquet\) .*|\1|p' "$T/m3.list" | sort))" ]

# ---- 4. idempotent ----
before_put=$(stored) before_del=$(deleted)
d9s3 fold s3://$BUCKET/dial9-traces --service api --to s3://$BUCKET/tables 2>"$T/fold4.err"
rc=$?; check "the second fold: exit 0 ($(tail -c 400 "$T/fold4.err"))" [ "$rc" = 0 ]
check "it says nothing changed" grep -q "0 object(s) uploaded, 0 deleted, commit marker unchanged" "$T/fold4.err"
check "no PUT, no DELETE" [ "$(stored)/$(deleted)" = "$before_put/$before_del" ]
mirror m4
check "every object as it was (key, size, ETag, time)" cmp -s "$T/m3.list" "$T/m4.list"

# ---- 5. mixed local and s3:// inputs ----
d9s3 fold "${SEG[h3]}" s3://$BUCKET/dial9-traces --service api --to s3://$BUCKET/tables 2>"$T/fold5.err"
rc=$?; check "mixed fold: exit 0 ($(tail -c 400 "$T/fold5.err"))" [ "$rc" = 0 ]
mirror m5
duck "$T/m5" "${RUN[h1]}::$T/h1.json" "${RUN[h2]}::$T/h2.json" "${RUN[h3]}::$T/h3.json"
rc=$?; check "h1, h2 and the local db segment through the marker = analyze ($(cat "$T/duck.out"))" [ "$rc" = 0 ]
check "api's objects untouched" cmp -s <(grep 'service=api' "$T/m4.list") <(grep 'service=api' "$T/m5.list")

echo "test_s3_fold: $pass passed, $fail failed"
[ "$fail" = 0 ]
