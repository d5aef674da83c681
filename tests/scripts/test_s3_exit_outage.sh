#!/usr/bin/env bash
# A program must not stall at exit because S3 is down. With the longest exit wait there is
# (DIAL9_S3_EXIT_WAIT_SECS=3600, which a working S3 may use), the recorder uploads its last
# segment at d9_stop; once the upload circuit opens (5 consecutive failures, its short backoffs
# spent), S3 is not waited for:
#  - nothing listens at the endpoint (connection refused);
#  - a server accepts and never answers (the attempt ends as stalled, DIAL9_S3_STALL_SECS=2).
# Either way the program exits, says once that S3 was not waited for, names the segments left,
# and every recorded event is in the files left on disk (for the next start or `dial9 upload`).
# No timing is asserted: `timeout 180` only guards against a hang (the code before waited the
# whole hour; the silent server's five stalled attempts take ~50 s here, the refused port ~7 s).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
RECORDER="$BUILD/test_pipeline_compress"
[ -x "$RECORDER" ] || { echo "test_s3_exit_outage: $RECORDER not built"; exit 1; }
[ -x "$DIAL9" ] || { echo "test_s3_exit_outage: $DIAL9 not built"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 0; }
N=3000

# A port nothing listens on: bound, then closed (127.0.0.2: no other test's server there)
REFUSED_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
# A server that accepts every connection and never answers (its port in $T/silent.port)
python3 - "$T/silent.port" <<'EOF' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    c, _ = s.accept()
    held.append(c)  # read nothing, answer nothing
EOF
SILENT_PID=$!
trap 'kill "$SILENT_PID" 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 600); do [ -s "$T/silent.port" ] && break; sleep 0.1; done
SILENT_PORT=$(cat "$T/silent.port" 2>/dev/null)
[ -n "$SILENT_PORT" ] || { echo "FAIL: the silent server did not start"; exit 1; }

# record NAME ENDPOINT: N spawns recorded uploading to ENDPOINT, the longest exit wait
record() {
    local name=$1 endpoint=$2
    mkdir -p "$T/$name"
    env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=TEST AWS_SECRET_ACCESS_KEY=TEST HOME="$T/$name" \
        AWS_REGION=us-east-1 DIAL9_S3_BUCKET=d9-test AWS_ENDPOINT_URL="$endpoint" DIAL9_SERVICE=outage \
        DIAL9_S3_EXIT_WAIT_SECS=3600 DIAL9_S3_STALL_SECS=2 \
        timeout 180 "$RECORDER" --record "$T/$name/traces" $N >"$T/$name/out" 2>"$T/$name/err"
    echo $? >"$T/$name/rc"
}

# both at once (each mostly waits: the silent server's attempts end as stalled, ~9 s each here)
record refused "http://127.0.0.2:$REFUSED_PORT" &
refused_pid=$!
record silent "http://127.0.0.1:$SILENT_PORT" &
wait "$refused_pid" $!
for name in refused silent; do
    rc=$(cat "$T/$name/rc")
    check "$name: the program exited by itself (exit $rc; 124: still waiting after 180 s)" [ "$rc" = 0 ]
    check "$name: S3 not waited for, said once ($(grep -c 'not waited for at exit' "$T/$name/err"))" \
        [ "$(grep -c 'S3 upload not waited for at exit: it is failing' "$T/$name/err")" = 1 ]
    check "$name: the segments left named" grep -q "sealed segments\? of this run not uploaded stay\?s\? on disk" "$T/$name/err"
    run=$(ls -d "$T/$name/traces"/*/ 2>/dev/null | head -1)
    check "$name: segments on disk" [ -n "$run" ] && [ -n "$(ls "$run" | grep -E '^trace\.[0-9]+\.bin')" ]
    [ -n "$run" ] || continue
    "$DIAL9" stats "$run" >"$T/$name/stats" 2>&1
    spawns=$(awk '$2 == "TaskSpawnEvent" {print $1}' "$T/$name/stats")
    check "$name: every recorded spawn on disk (${spawns:-none} of $N)" [ "${spawns:-0}" = "$N" ]
    [ "$fail" = 0 ] || { echo "--- $name stderr"; head -c 3000 "$T/$name/err"; }
done

echo "test_s3_exit_outage: $pass passed, $fail failed"
[ "$fail" = 0 ]
