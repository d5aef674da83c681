#!/usr/bin/env bash
# S3 faults while an application keeps recording (tests/scripts/s3/: s3rver behind the
# verifying proxy; the recorder is test_pipeline_compress --record-until, which spawns tasks
# until told to stop and exits 3 if any event was dropped):
#  - a PUT whose body stalls: the upload times out (DIAL9_S3_STALL_SECS), is retried and the
#    object stored exactly once; the application records on (nothing dropped); meanwhile
#    `dial9 upload` of the same directory leaves the running recorder's files alone;
#  - connection refused (nothing listens at 127.0.0.2:PORT) until the circuit breaker has
#    opened (meanwhile the queued segments are compressed: .gz files on disk), then the store
#    comes up: every event uploaded once, one message for the outage, one for the pause, one
#    for the recovery;
#  - the same with a disk budget of 3 MB: the oldest segments are deleted before they are
#    uploaded; the objects uploaded after the outage hold an UploadLossEvent with the count the
#    recorder's own stats give, and dial9 stats/analyze/check (text and --json) report it;
#  - an endpoint that never answers and a short exit wait (DIAL9_S3_EXIT_WAIT_SECS=1): the
#    program still exits, its segments stay on disk with a message that counts and names every
#    one, and `dial9 upload DIR` uploads them later, every event once;
#  - every key of every case is under the recording run's service.
# Every wait is for an event (a log line, a file, a process exit); the bounds are safety nets.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
RECORDER="$BUILD/test_pipeline_compress"
BUCKET=d9-test
N=0

[ -x "$RECORDER" ] || { echo "test_s3_faults: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh"

# recorder_env NAME ENDPOINT: the environment of a recording run uploading to ENDPOINT
recorder_env() {
    REC_ENV=(-u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
             HOME="$T/$1" AWS_REGION=us-east-1 DIAL9_S3_BUCKET=$BUCKET AWS_ENDPOINT_URL="$2"
             DIAL9_MAX_FILE_SIZE_MB=1 DIAL9_ROTATION_SECS=1 DIAL9_SERVICE=faults DIAL9_SYMBOLIZE=0
             DIAL9_S3_EXIT_WAIT_SECS=300)
}
# start_recording NAME ENDPOINT [VAR=VALUE...]: the application, in the background (REC_PID);
# 512 spawns every PAUSE_MS (default 2: a flood, for the disk budget; where the volume does not
# matter a slower one, so that there are fewer events to check)
start_recording() {
    local name=$1 endpoint=$2; shift 2
    recorder_env "$name" "$endpoint"
    mkdir -p "$T/$name/traces"
    env "${REC_ENV[@]}" "$@" "$RECORDER" --record-until "$T/$name/traces" "$T/$name/stop" "${PAUSE_MS:-2}" \
        >"$T/$name/rec.out" 2>"$T/$name/rec.err" &
    REC_PID=$!
}
# stop_recording NAME: tell it to stop, wait for it; REC_RC, and N = the spawns it recorded
stop_recording() {
    touch "$T/$1/stop"
    wait "$REC_PID"
    REC_RC=$?
    N=$(sed -n 's/^spawns //p' "$T/$1/rec.out")
    N=${N:-0}
}
# wait_for WHAT COMMAND...: until COMMAND succeeds (polled; 10 min at most, a safety net only)
wait_for() {
    local what=$1; shift
    for _ in $(seq 6000); do
        "$@" && return 0
        sleep 0.1
    done
    bad "never happened: $what"
    return 1
}
logged() { grep -q "\"code\":\"$2\"" "$T/$1/log"; }

# every store started at once: the later ones start up while the first case waits
spawn_proxy stall FAULT_STALL=1
spawn_proxy refused LISTEN_LATER=127.0.0.2
spawn_proxy evict LISTEN_LATER=127.0.0.2
spawn_proxy later LISTEN_LATER=127.0.0.2 # never opened there: every attempt refused

# The bounded exit wait (last case) runs beside the first: nothing they share, and its waits
# overlap the stall's.
proxy_port later
LATER_PORT=$PORT
recorder_env later "http://127.0.0.2:$LATER_PORT"
mkdir -p "$T/later/traces"
env "${REC_ENV[@]}" DIAL9_S3_EXIT_WAIT_SECS=1 "$RECORDER" --record "$T/later/traces" 100000 \
    >"$T/later/rec.out" 2>"$T/later/rec.err" &
LATER_PID=$!
PROXY_PIDS+=($LATER_PID) # stopped with the proxies if the test ends early

# ---- a stalled body: timed out, retried, stored once; the application unaffected ----
# (15 s: an ordinary answer on a loaded machine took longer than 2 s, and its retry stored the
# object twice)
proxy_port stall
PAUSE_MS=20 start_recording stall "http://127.0.0.1:$PORT" DIAL9_S3_STALL_SECS=15
wait_for "a PUT stalled" logged stall stalled
stalled_key=$(grep '"code":"stalled"' "$T/stall/log" | sed 's/.*"key":"\([^"]*\)".*/\1/')
# while the recorder runs: `dial9 upload` must leave its run directory alone
env -u AWS_PROFILE AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
    AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$DIAL9" upload --bucket $BUCKET "$T/stall/traces" \
    >"$T/stall/up.out" 2>"$T/stall/up.err"
rc=$?
check "dial9 upload beside a running recorder: exit 1 ($rc)" [ "$rc" = 1 ]
check "dial9 upload beside a running recorder: skipped its run, said" grep -q "in use by a running recorder" "$T/stall/up.err"
wait_for "the stalled segment stored after its retry" \
    grep -q "\"key\":\"$stalled_key\",\"status\":200,\"code\":\"stored\"" "$T/stall/log"
stop_recording stall
check "the application recorded on, nothing dropped (exit $REC_RC)" [ "$REC_RC" = 0 ]
check "the application recorded spawns ($N)" [ "$N" -gt 0 ]
read_back stall
check "objects read back" [ $? = 0 ]
check "one stall" [ "$(grep -c '"code":"stalled"' "$T/stall/log")" = 1 ]
check "the stalled segment stored exactly once" [ "$(stored_keys stall | grep -cxF "$stalled_key")" = 1 ]
check "no object stored twice" no_key_twice stall
check "every recorded event uploaded once" every_event_once "$T"/stall/objects/*.bin.gz
check "nothing left on disk" [ -z "$(local_segments stall)" ]
check "the timeout named, once" [ "$(grep -c 'stalled: under 1 KiB/s for 15 s' "$T/stall/rec.err")" = 1 ]
check "the outage said once" [ "$(grep -c 'retrying with backoff' "$T/stall/rec.err")" = 1 ]
check "the outage's end said" grep -q 'S3 upload works again' "$T/stall/rec.err"

# ---- connection refused until the circuit breaker opens, then the store comes up ----
proxy_port refused
refused_pid=${PROXY_PID[refused]}
PAUSE_MS=20 start_recording refused "http://127.0.0.2:$PORT" DIAL9_S3_BREAKER_SECS=1
wait_for "the breaker opened" grep -q 'S3 upload paused after 5 consecutive failures' "$T/refused/rec.err"
# the segments queued behind the one being retried are compressed meanwhile, not left as .bin
# (the old pipeline compressed each only when its upload came: one .gz at a time)
gz_on_disk() { [ "$(find "$T/refused/traces" -name 'trace.*.bin.gz' | wc -l)" -ge 3 ]; }
wait_for "queued segments compressed while the store is unreachable" gz_on_disk
check "nothing reached the store while refused" [ ! -s "$T/refused/log" ]
kill -USR2 "$refused_pid"
wait_for "the store listening at 127.0.0.2" logged refused opened
wait_for "an upload after the outage" logged refused stored
stop_recording refused
check "the application recorded on through the outage (exit $REC_RC)" [ "$REC_RC" = 0 ]
check "the application recorded spawns through the outage ($N)" [ "$N" -gt 0 ]
PORT_SAVED=$PORT
read_back refused
check "objects read back (refused)" [ $? = 0 ]
check "every recorded event uploaded once after the outage" every_event_once "$T"/refused/objects/*.bin.gz
check "no object stored twice (refused)" no_key_twice refused
check "nothing left on disk (refused)" [ -z "$(local_segments refused)" ]
check "the outage said once (refused)" [ "$(grep -c 'retrying with backoff' "$T/refused/rec.err")" = 1 ]
check "the outage's message names the cause" grep -q "retrying with backoff.*Couldn't connect to server" "$T/refused/rec.err"
check "the pause said once" [ "$(grep -c 'S3 upload paused' "$T/refused/rec.err")" = 1 ]
check "the recovery said once" [ "$(grep -c 'S3 upload works again' "$T/refused/rec.err")" = 1 ]
check "no other message (refused)" [ "$(grep -vc 'retrying with backoff\|S3 upload paused\|S3 upload works again' "$T/refused/rec.err")" = 0 ]

# ---- an outage with a tiny disk budget: segments deleted before upload, counted in-band ----
proxy_port evict
evict_pid=${PROXY_PID[evict]}
start_recording evict "http://127.0.0.2:$PORT" DIAL9_S3_BREAKER_SECS=1 DIAL9_MAX_DISK_USAGE_MB=3
wait_for "the budget deleted a segment not uploaded" \
    grep -q 'deleting the oldest sealed segments not uploaded yet' "$T/evict/rec.err"
kill -USR2 "$evict_pid"
wait_for "the store listening (evict)" logged evict opened
wait_for "an upload after the outage (evict)" logged evict stored
stop_recording evict
deleted=$(sed -n 's/^deleted //p' "$T/evict/rec.out")
check "the application recorded on (exit $REC_RC, $N spawns)" [ "$REC_RC" = 0 ]
check "the disk budget deleted segments ($deleted)" [ "${deleted:-0}" -ge 1 ]
read_back evict
check "objects read back (evict)" [ $? = 0 ]
check "no object stored twice (evict)" no_key_twice evict
spawn_ids "$T"/evict/objects/*.bin.gz | sort -n >"$T/evict/ids"
check "events uploaded (evict)" [ -s "$T/evict/ids" ]
check "no event twice (evict)" [ -z "$(uniq -d "$T/evict/ids")" ]
"$DIAL9" stats --json "$T"/evict/objects/*.bin.gz >"$T/evict/stats.json" 2>"$T/evict/stats.err"
check "the uploaded objects say how many segments were deleted ($deleted)" \
    node -e 'const l = JSON.parse(require("fs").readFileSync(process.argv[1])).upload_loss;
             process.exit(l && l.segments === Number(process.argv[2]) && l.bytes > 0 &&
                          l.first_start_unix_ns > 0 && l.last_end_unix_ns >= l.first_start_unix_ns ? 0 : 1)' \
        "$T/evict/stats.json" "$deleted"
"$DIAL9" stats "$T"/evict/objects/*.bin.gz >"$T/evict/stats.txt" 2>&1
check "dial9 stats reports it" grep -Eq "^lost +$deleted segments? \([0-9.]+ MB, [0-9-]+ [0-9:]+ to [0-9:]+ UTC\) deleted before upload" "$T/evict/stats.txt"
"$DIAL9" analyze "$T"/evict/objects/*.bin.gz >"$T/evict/analyze.txt" 2>&1
check "dial9 analyze reports it" grep -q "lost .*$deleted segments\? (.*) deleted before upload" "$T/evict/analyze.txt"
"$DIAL9" check "$T"/evict/objects/*.bin.gz >"$T/evict/check.txt" 2>&1
check "dial9 check reports it" grep -q "note incomplete: $deleted segments\? (.*) deleted before upload" "$T/evict/check.txt"
"$DIAL9" check --json "$T"/evict/objects/*.bin.gz >"$T/evict/check.json" 2>&1
check "dial9 check --json reports it ($deleted)" \
    node -e 'const l = JSON.parse(require("fs").readFileSync(process.argv[1])).upload_loss;
             process.exit(l && l.segments === Number(process.argv[2]) && l.bytes > 0 &&
                          l.first_start_unix_ns > 0 && l.last_end_unix_ns >= l.first_start_unix_ns ? 0 : 1)' \
        "$T/evict/check.json" "$deleted"
check "the deletion said once" [ "$(grep -c 'not uploaded yet' "$T/evict/rec.err")" = 1 ]

# ---- the exit wait is bounded; what is left is uploaded by `dial9 upload DIR`, once ----
# (recorded from the start, above)
N=100000
PORT=$LATER_PORT
wait "$LATER_PID"
check "the program exits when the exit wait is over (exit $?)" [ $? = 0 ]
# (the exit wait over, or the circuit open at exit: S3 not waited for)
check "it said what stays on disk" grep -qE 'not done in the time allowed, the file stays on disk|S3 upload not waited for at exit' "$T/later/rec.err"
mapfile -t left < <(local_segments later)
check "its segments on disk (${#left[@]})" [ "${#left[@]}" -ge 2 ]
# the exit message names every one of them, not only the one being uploaded when time ran out
said=$(sed -n 's/.* \([0-9]*\) sealed segments\{0,1\} of this run not uploaded stays\{0,1\} on disk in .*/\1/p' "$T/later/rec.err")
check "it said how many stay on disk (${said:-nothing} of ${#left[@]})" [ "$said" = "${#left[@]}" ]
named=0
for f in "${left[@]}"; do grep -q "not uploaded stays\{0,1\} on disk in .*[:,] $(basename "$f")[, ]" "$T/later/rec.err" && named=$((named + 1)); done
check "it named every one of them ($named of ${#left[@]})" [ "$named" = "${#left[@]}" ]
check "every event once in the segments on disk" every_event_once "${left[@]}"
env -u AWS_PROFILE -u DIAL9_S3_BUCKET AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
    AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$DIAL9" upload --bucket $BUCKET "$T/later/traces" \
    >"$T/later/up.out" 2>"$T/later/up.err"
rc=$? # first: the message's $(...) resets $?
check "dial9 upload DIR afterwards (exit $rc: $(head -c 300 "$T/later/up.err"))" [ "$rc" = 0 ]
read_back later
check "every event uploaded once, by dial9 upload" every_event_once "$T"/later/objects/*.bin.gz
check "no object stored twice (later)" no_key_twice later
check "the keys carry the recording run's service" [ -z "$(stored_keys later | grep -v '/service=faults/')" ]
for name in stall refused evict; do # every run recorded as DIAL9_SERVICE=faults, before and after its outage
    check "$name: every key under service=faults ($(stored_keys $name | grep -v '/service=faults/' | head -2))" \
        [ -z "$(stored_keys $name | grep -v '/service=faults/')" ]
done
check "nothing left on disk (later)" [ -z "$(local_segments later)" ]

echo "test_s3_faults: $pass passed, $fail failed"
[ "$fail" = 0 ]
