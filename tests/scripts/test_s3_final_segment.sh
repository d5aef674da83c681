#!/usr/bin/env bash
# The final accounting segment goes through the pipeline: an application records with uploads
# onto a disk that fills up and stays full to the end (a 4 MiB tmpfs in a private mount
# namespace; root only, skipped otherwise), so its last drops can only be said in the segment
# the recorder writes at stop into the room it set aside. That segment must be uploaded within
# the exit wait like any other: after a clean stop nothing is left on disk, and the objects'
# DroppedEventsEvents add up to every event the recorder dropped (the old pipeline never saw
# that segment: it stayed on disk, its drops missing from the store).
# The disk stays full although uploads delete the local files: every trace file is hard-linked
# into a keep/ directory on the same tmpfs first (the store refuses connections until then), so
# an unlink frees no block. Every wait is for a state (a file, a log line, an exit).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
RECORDER="$BUILD/test_pipeline_compress"
BUCKET=d9-test
N=0

[ -x "$RECORDER" ] || { echo "test_s3_final_segment: $RECORDER not built"; exit 1; }
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "test_s3_final_segment: SKIP: needs root and mount namespaces (a tmpfs that fills up)"
    exit 0
fi
source "$CHECK/common.sh"

spawn_proxy final LISTEN_LATER=127.0.0.2 # refused until told (USR2)
proxy_port final

cat >"$T/inside.sh" <<'INSIDE'
set -u
M=$1 RECORDER=$2 PORT=$3 PROXY=$4 LOG=$5 OUT=$6
mount --make-rprivate / && mount -t tmpfs -o size=4m d9-final "$M" || exit 3
mkdir -p "$M/traces" "$M/keep"
# until STATE holds (polled; 10 min at most, a safety net only)
wait_for() { for _ in $(seq 6000); do "$@" && return 0; sleep 0.1; done; echo "never: $*" >>"$OUT/inside.err"; return 1; }
env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER HOME="$OUT" \
    AWS_REGION=us-east-1 DIAL9_S3_BUCKET=d9-test AWS_ENDPOINT_URL="http://127.0.0.2:$PORT" DIAL9_SERVICE=final \
    DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_ROTATION_SECS=1 DIAL9_SYMBOLIZE=0 DIAL9_S3_EXIT_WAIT_SECS=300 \
    DIAL9_S3_BREAKER_SECS=1 "$RECORDER" --record-until "$M/traces" "$M/stop" 20 >"$OUT/rec.out" 2>"$OUT/rec.err" &
REC=$!
reserved() { [ -n "$(find "$M/traces" -name .final-accounting -size +0 2>/dev/null)" ]; }
# hard links to every trace file (sealed, being written, compressed): no upload frees space
pin() { for f in $(find "$M/traces" -name 'trace.*'); do ln -f "$f" "$M/keep/$(basename "$(dirname "$f")").$(basename "$f")" 2>/dev/null; done; }
wait_for reserved
pin
head -c 8M /dev/zero >"$M/filler" 2>/dev/null # the disk is full from here on, to the end
wait_for test -e "$M/stop.write-errors"         # the recorder's writes fail
pin                                             # files sealed since the first pin
kill -USR2 "$PROXY"                             # the store comes up: uploads, unlinks
wait_for grep -q '"code":"stored"' "$LOG"
# whatever a failed compression's partial file gave back is taken too: the stop's last writes
# fail, so its drops can only go into the final segment
head -c 8M /dev/zero >"$M/filler2" 2>/dev/null
touch "$M/stop"
wait "$REC"
echo "rc=$?" >>"$OUT/rec.out"
find "$M/traces" -name 'trace.*' >"$OUT/left"
df -k "$M" >"$OUT/df"
umount -l "$M"
INSIDE
mkdir -p "$T/mnt"
unshare -m bash "$T/inside.sh" "$T/mnt" "$(readlink -f "$RECORDER")" "$PORT" "${PROXY_PID[final]}" "$T/final/log" "$T"
check "the steps inside the namespace happened ($(cat "$T/inside.err" 2>/dev/null))" [ ! -s "$T/inside.err" ]
dropped=$(sed -n 's/^dropped //p' "$T/rec.out")
check "the application ran to its stop, dropping on the full disk (${dropped:-?} dropped; $(grep rc= "$T/rec.out"))" \
    [ "${dropped:-0}" -gt 0 ]
check "nothing left on disk after the stop: the final segment was uploaded too ($(tr '\n' ' ' <"$T/left"))" \
    [ ! -s "$T/left" ]
read_back final
check "objects read back" [ $? = 0 ]
check "no object stored twice" no_key_twice final
"$DIAL9" stats --json "$T"/final/objects/* >"$T/stats.json" 2>"$T/stats.err"
store_drops=$(node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(s.drops.total)' \
    "$T/stats.json" 2>/dev/null)
check "the store holds every drop the recorder counted ($store_drops of $dropped)" [ "${store_drops:-x}" = "${dropped:-y}" ]
check "among them write errors" node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
    process.exit((s.drops.by_reason.write_error || 0) > 0 ? 0 : 1)' "$T/stats.json"

echo "test_s3_final_segment: $pass passed, $fail failed"
[ "$fail" = 0 ]
