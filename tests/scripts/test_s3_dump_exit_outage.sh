#!/usr/bin/env bash
# Flight recorder dumps must not hold up an exit because S3 is down, as the segments do not
# (test_s3_exit_outage). Against a real S3-speaking server on loopback (s3rver behind the
# verifying proxy, tests/scripts/s3) that answers 503 ServiceUnavailable to every request
# (FAULT_DOWN=1), a program records in memory mode with the longest exit wait there is
# (DIAL9_S3_EXIT_WAIT_SECS=3600), takes 3 dumps and stops (test_mt_flight_upload_exit
# --record). The dumps' uploads share one circuit breaker (sinks/upload_pace.h): once it opens
# (5 consecutive failures) the exit does not wait for S3. Counted, not timed:
#  - the program exits by itself (`timeout 180` only guards against a hang, 20 times less
#    than the exit wait);
#  - the proxy got 5 PUTs under dumps/ in all, the circuit's threshold (before: 5 per dump, 15);
#  - one line says S3 was not waited for; each dump is named as not stored, and stays whole on disk.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/s3"
BUCKET=d9-test
N=0
RECORDER="$BUILD/test_mt_flight_upload_exit"
[ -x "$RECORDER" ] || { echo "test_s3_dump_exit_outage: $RECORDER not built"; exit 1; }
source "$CHECK/common.sh"

start_proxy down FAULT_DOWN=1
mkdir -p "$T/rec"
"${s3env[@]}" AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" timeout 180 "$RECORDER" --record "$T/rec" \
    >"$T/out" 2>"$T/err"
rc=$?
check "the program exited by itself (exit $rc; 124: still waiting after 180 s)" [ "$rc" = 0 ]
puts=$(grep '"method":"PUT"' "$T/down/log" | grep -c '/dumps/')
check "5 PUTs of dumps in all, the circuit's threshold ($puts; 5 per dump before)" [ "$puts" = 5 ]
check "no other answer than 503 ($(grep -vc '"status":503' "$T/down/log") others)" [ -z "$(grep -v '"status":503' "$T/down/log")" ]
check "S3 not waited for, said once ($(grep -c 'not waited for at exit' "$T/err"))" \
    [ "$(grep -c 'dial9: dump upload: S3 upload not waited for at exit: it is failing' "$T/err")" = 1 ]
dumps=("$T/rec/dumps"/*/)
check "3 dumps on disk (${#dumps[@]})" [ "${#dumps[@]}" = 3 ]
for d in "${dumps[@]}"; do
    d=${d%/}
    check "$(basename "$d"): named once as not stored in S3" [ "$(grep -cF "dial9: dump $d: not stored in S3" "$T/err")" = 1 ]
    check "$(basename "$d"): whole on disk" test -f "$d/manifest.json"
done
[ "$fail" = 0 ] || { echo "--- the program's stderr"; head -c 4000 "$T/err"; echo "--- the proxy's log"; head -40 "$T/down/log"; }

echo "test_s3_dump_exit_outage: $pass passed, $fail failed"
[ "$fail" = 0 ]
