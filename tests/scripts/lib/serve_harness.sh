# Shared by the `dial9 serve` script tests (sourced after harness.sh): start a server in the
# background on a free port, stop it with SIGTERM (checked and bounded), and leave nothing
# behind at exit.
#
#   serve_start NAME COMMAND...   run COMMAND (a dial9-serve or `dial9 serve` line without --port)
#                                 with --port 0 under timeout(1); sets SERVER_PID and PORT, logs
#                                 in $T/NAME.out and $T/NAME.err; returns 1 (and says why) if it
#                                 did not start
#   serve_recorded_trace OUT      the first 64 KiB of a trace our recorder writes here (the test
#                                 recorder, $BUILD/test_pipeline_compress): a short answer of a
#                                 real trace, needing no fixture from ../shared; returns 1 (and
#                                 says why) if none was written
#   serve_under_test [TOOL...]    sets SERVE (D9_SERVE_UNDER_TEST, else the build's dial9-serve);
#                                 exits 0 saying SKIP when it is not built or a TOOL is missing
#   $SERVE_LIB/serve_probe.py     probe(port, source): a whole request from that address, its
#                                 "probe: HTTP S" (or "probe: no answer") line, for python heredocs
#   serve_stop [STATUS]           SIGTERM; it must stop within 120 s (a safety net for ASan at
#                                 high load; else where it is stuck is printed, then SIGKILL)
#                                 and, when STATUS is given, exit with it
#
# A server under timeout(1) is timeout's child; serve_stop signals the child itself.

SERVER_PID= SERVER_NAME=
SERVE_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

serve_under_test() {
    SERVE="${D9_SERVE_UNDER_TEST:-$BUILD/dial9-serve}"
    [ -x "$SERVE" ] || { echo "SKIP: dial9-serve not built (libmicrohttpd missing)"; exit 0; }
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 0; }
    done
}
serve_cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$T"
}
trap serve_cleanup EXIT

# serve_pause I: the I-th pause of a wait: 10 ms for the first second (a server starts or stops
# in well under one: ~50 waits in the suite each slept 50 ms too long at 100 ms), then 100 ms
# (few forks of sleep during a long wait)
serve_pause() { if [ "$1" -le 100 ]; then sleep 0.01; else sleep 0.1; fi; }

serve_start() {
    SERVER_NAME=$1; shift
    # under timeout(1): a test killed by ctest's timeout leaves no server behind for long. The
    # bound is the longest ctest TIMEOUT of a script test (1800 s), never less: a server killed
    # while its test still runs fails the test (300 s did, for test_s3_fleet_browser at load 20)
    timeout 1800 "$@" --port 0 >"$T/$SERVER_NAME.out" 2>"$T/$SERVER_NAME.err" &
    SERVER_PID=$!
    PORT=
    # until it prints its URL or exits (`serve --bucket` first fetches the bucket): the bound
    # is the server's own timeout, only a safety net
    local i
    for i in $(seq 3100); do # 1 s + 300 s
        PORT=$(grep -o 'http://127.0.0.1:[0-9]*' "$T/$SERVER_NAME.out" 2>/dev/null | head -1 | sed 's/.*://')
        [ -n "$PORT" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        serve_pause "$i"
    done
    [ -n "$PORT" ] && return 0
    bad "$SERVER_NAME: the server did not start: $(head -c 600 "$T/$SERVER_NAME.err")"
    return 1
}

serve_recorded_trace() {
    local out=$1 recorder="$BUILD/test_pipeline_compress" run
    [ -x "$recorder" ] || { echo "$recorder not built" >&2; return 1; }
    # 20 000 task spawns: about 200 KiB, no upload, no compression, no symbols
    run=$(env -u DIAL9_S3_BUCKET DIAL9_COMPRESS=none DIAL9_SYMBOLIZE=0 "$recorder" --record "$T/recorded" 20000 \
          2>"$T/recorded.err") || { echo "the recorder failed: $(head -c 300 "$T/recorded.err")" >&2; return 1; }
    head -c 65536 "$run/trace.0.bin" >"$out" 2>/dev/null
    [ "$(stat -c %s "$out" 2>/dev/null)" = 65536 ] ||
        { echo "the recorder wrote less than 64 KiB in $run/trace.0.bin" >&2; return 1; }
}

serve_stop() {
    local want=${1:-} rc
    local asked=$SECONDS server i
    # SIGTERM to the server itself, not to timeout(1): timeout passes it on to the server and
    # to its process group, then sends both a SIGCONT, and a SIGCONT that lands while
    # LeakSanitizer attaches to the exiting server (ASan builds) cancels the attach's SIGSTOP:
    # tracer and server then wait for each other forever (seen: 2 stops in 50)
    server=$(pgrep -P "$SERVER_PID" | head -1)
    kill "${server:-$SERVER_PID}" 2>/dev/null
    for i in $(seq 1300); do kill -0 "$SERVER_PID" 2>/dev/null || break; serve_pause "$i"; done # 1 s + 120 s
    # slow stops are worth knowing about (one took over 30 s under ASan at load 20)
    [ $((SECONDS - asked)) -lt 5 ] || echo "note: $SERVER_NAME took $((SECONDS - asked)) s to stop after SIGTERM"
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        bad "$SERVER_NAME: the server did not stop within 120 s of SIGTERM"
        local child; child=$(pgrep -P "$SERVER_PID" | head -1)
        for t in /proc/"${child:-none}"/task/*; do # where it is: blocked in a call, or running
            [ -r "$t/stat" ] && echo "  thread ${t##*/}: state $(awk '{print $3}' "$t/stat"), syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null)"
        done
        echo "  the server's last messages:"; tail -5 "$T/$SERVER_NAME.err" | sed 's/^/    /'
        pkill -KILL -P "$SERVER_PID"; kill -KILL "$SERVER_PID" 2>/dev/null
    fi
    wait "$SERVER_PID" 2>/dev/null
    rc=$?
    SERVER_PID=
    [ -z "$want" ] || check "$SERVER_NAME: SIGTERM stops it with status $want ($rc)" test "$rc" = "$want"
}
