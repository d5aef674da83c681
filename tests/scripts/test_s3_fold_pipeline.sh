#!/usr/bin/env bash
# The pipeline's tables beside each uploaded segment (DIAL9_S3_TABLES=1, src/sinks/step_tables.c)
# against a real S3-speaking server on loopback (s3rver behind the verifying proxy): a recorded
# run of examples/executor rotating every second uploads its segments and, beside them under
# PREFIX/tables/, each segment's tables with their manifests and no commit marker; then `dial9
# fold s3://B/PREFIX --to s3://B/PREFIX/tables` compacts them into one file per partition,
# deletes the pipeline's files and commits, and DuckDB through the marker gives analyze --json's
# polls by spawn location for every segment exactly. Without DIAL9_S3_TABLES nothing is written
# beside the segments.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=1 # common.sh's event checks are not used here
EXECUTOR="$BUILD/examples/executor/executor_demo"
[ -x "$EXECUTOR" ] || { echo "test_s3_fold_pipeline: $EXECUTOR not built"; exit 1; }
source "$CHECK/common.sh"
npm_ci_or_skip "$SOURCE/tests/parquet"

S3() { echo "http://127.0.0.1:$PORT"; }
record() { # record NAME VAR=VALUE...: a run of the executor uploading to the bucket
    local name=$1; shift
    "${s3env[@]}" AWS_ENDPOINT_URL="$(S3)" DIAL9_S3_BUCKET=$BUCKET DIAL9_SERVICE=api DIAL9_SYMBOLIZE=0 \
        DIAL9_ROTATION_SECS=1 DIAL9_S3_EXIT_WAIT_SECS=300 "$@" \
        "$EXECUTOR" --workers 2 --seconds 3 --trace-dir "$T/rec-$name" >/dev/null 2>"$T/rec-$name.err"
}

# ---- without DIAL9_S3_TABLES: segments only ----
start_proxy off
record off
rc=$?; check "recorded without tables: exit 0 ($(head -c 300 "$T/rec-off.err"))" [ "$rc" = 0 ]
uploaded() { grep '"code":"stored"' "$T/$1/log" | grep -q 'dial9-traces/version=1/'; }
check "segments uploaded" uploaded off
check "nothing beside them" [ -z "$(grep '"code":"stored"' "$T/off/log" | grep '/tables/')" ]

# ---- DIAL9_S3_TABLES=1 ----
start_proxy on
record on DIAL9_S3_TABLES=1 DIAL9_FOLD_COMMAND="$DIAL9"
rc=$?; check "recorded with tables: exit 0" [ "$rc" = 0 ]
check "no message from the tables step ($(head -c 300 "$T/rec-on.err"))" [ ! -s "$T/rec-on.err" ]
read_back on
mapfile -t seg_keys < <(sed -n 's/.*"key":"\(dial9-traces\/version=1\/[^"]*\)".*/\1/p' "$T/on/objects.jsonl")
check "several segments (${#seg_keys[@]})" [ "${#seg_keys[@]}" -ge 2 ]
# each segment's file and whether it holds polls: the run's last segment may hold none (a
# rotation just before the run's end, on a loaded host), and has then no polls file
declare -A seg_file=()
with_polls=0
while read -r line; do
    key=$(sed -n 's/.*"key":"\([^"]*\)".*/\1/p' <<<"$line") file=$(sed -n 's/.*"file":"\([^"]*\)".*/\1/p' <<<"$line")
    case $key in dial9-traces/version=1/*) ;; *) continue ;; esac
    polls=$("$DIAL9" stats "$file" 2>/dev/null | awk '$2 == "PollStartEvent" {print $1}')
    [ "${polls:-0}" -gt 0 ] || continue
    seg_file[$key]=$file
    with_polls=$((with_polls + 1))
done <"$T/on/objects.jsonl"
check "several segments with polls ($with_polls)" [ "$with_polls" -ge 2 ]
node "$CHECK/mirror.mjs" "$(S3)" $BUCKET dial9-traces/tables/ "$T/beside" >"$T/beside.list" 2>"$T/beside.err"
check "no commit marker: the pipeline does not commit" [ ! -e "$T/beside/_dial9_fold.json" ]
# every segment's polls, in a file of its own with its manifest
polls_manifests=$(find "$T/beside/polls" -name '.part-*.segments' | wc -l)
check "a polls file per segment with polls ($polls_manifests for $with_polls)" [ "$polls_manifests" -ge "$with_polls" ]
ids=$(find "$T/beside/polls" -name '.part-*.segments' -exec cat {} + | sort -u | wc -l)
check "every segment with polls in the polls manifests ($ids of ${#seg_keys[@]}, $with_polls with polls)" \
    [ "$ids" -ge "$with_polls" -a "$ids" -le "${#seg_keys[@]}" ]
for m in $(find "$T/beside" -name '.part-*.segments'); do
    f="$(dirname "$m")/$(basename "$m" .segments | sed 's/^\.//').parquet"
    check "$f beside its manifest" [ -s "$f" ]
done
pipeline_files=$(sed -n 's|^dial9-traces/tables/\([^ ]*\.parquet\) .*|\1|p' "$T/beside.list" | sort)

# ---- compaction ----
"${s3env[@]}" AWS_ENDPOINT_URL="$(S3)" "$DIAL9" fold s3://$BUCKET/dial9-traces --service api \
    --to s3://$BUCKET/dial9-traces/tables 2>"$T/compact.err"
rc=$?; check "compacting fold: exit 0 ($(tail -c 400 "$T/compact.err"))" [ "$rc" = 0 ]
check "it compacted" grep -q "compacted s3://" "$T/compact.err"
node "$CHECK/mirror.mjs" "$(S3)" $BUCKET dial9-traces/tables/ "$T/tables" >"$T/tables.list" 2>"$T/tables.err"
files_of() { grep -o '"[^"]*\.parquet"' "$1" | tr -d '"' | sort; }
check "committed" [ -s "$T/tables/_dial9_fold.json" ]
check "one file per partition" [ -z "$(files_of "$T/tables/_dial9_fold.json" | xargs -n1 dirname | uniq -d)" ]
check "fewer files than the pipeline wrote" [ "$(files_of "$T/tables/_dial9_fold.json" | wc -l)" -lt "$(echo "$pipeline_files" | wc -l)" ]
left=$(comm -12 <(echo "$pipeline_files") <(sed -n 's|^dial9-traces/tables/\([^ ]*\.parquet\) .*|\1|p' "$T/tables.list" | sort) |
       comm -23 - <(files_of "$T/tables/_dial9_fold.json"))
check "the pipeline's files replaced are deleted ($left)" [ -z "$left" ]

# DuckDB through the marker = analyze --json of each segment (the objects as the SDK read them)
specs=()
for key in "${!seg_file[@]}"; do # the segments with polls (a check of one without asks for some)
    file=${seg_file[$key]}
    n=${key##*-}; n=${n%%.*}
    run=$("$DIAL9" dump --jsonl "$file" | grep -m1 -o '"run_id":"[^"]*"' | cut -d'"' -f4)
    "$DIAL9" analyze --json "$file" >"$T/seg$n.json" 2>/dev/null
    specs+=("$run/trace.$n.bin.gz::$T/seg$n.json")
done
(cd "$SOURCE/tests/parquet" && node s3_fold_check.mjs "$T/tables" "${specs[@]}") >"$T/duck.out" 2>&1
rc=$?; check "every segment through the marker = analyze ($(cat "$T/duck.out"))" [ "$rc" = 0 ]

echo "test_s3_fold_pipeline: $pass passed, $fail failed"
[ "$fail" = 0 ]
