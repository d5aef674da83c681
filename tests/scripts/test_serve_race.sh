#!/usr/bin/env bash
# `dial9 serve` under a path-swap race (issue 11, item 1): the server runs as root on a trace
# directory owned by an unprivileged user (nobody), who keeps exchanging a run directory with a
# symlink to a root-only (0700) directory holding a 0600 file of the same name
# (renameat2 RENAME_EXCHANGE, tests/serve/d9s_race.c) while the run's segment is requested over
# and over. No answer may carry the private file. Run twice: with openat2 and with the
# component walk (D9_SERVE_RESOLVE=walk). Bounded: at most 20 000 requests or 12 s per round.
# Skips when not root (it needs another user) or without dial9-serve.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"
SWAP_PID=
cleanup() {
    [ -n "$SWAP_PID" ] && kill "$SWAP_PID" 2>/dev/null && wait "$SWAP_PID" 2>/dev/null
    serve_cleanup
}
trap cleanup EXIT

SERVE="${D9_SERVE_UNDER_TEST:-$BUILD/dial9-serve}" RACE="$BUILD/d9s_race"
[ -x "$SERVE" ] || { echo "SKIP: dial9-serve not built (libmicrohttpd missing)"; exit 0; }
[ -x "$RACE" ] || { echo "$RACE not built"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the race is between root's server and another user)"; exit 0; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is missing"; exit 0; }
NOBODY=65534

# the attacker's directory: reachable by nobody, owned by nobody
chmod 0711 "$T"
D="$T/served"
mkdir -p "$D/R" "$T/private"
# 64 KiB of a trace recorded here: a short answer, so many requests fit in the time
serve_recorded_trace "$D/R/trace.0.bin" || exit 1
chown -R "$NOBODY:$NOBODY" "$D"
# root's private file, as long as the attacker's, with a marker all through it
MARKER="PRIVATE-ROOT-ONLY-CONTENT"
size=$(stat -c %s "$D/R/trace.0.bin")
yes "$MARKER" | head -c "$size" >"$T/private/trace.0.bin"
chmod 0600 "$T/private/trace.0.bin"
chmod 0700 "$T/private"
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups ln -s "$T/private" "$D/L"
check "the attacker cannot read the private file itself" \
    bash -c "! setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups cat '$D/L/trace.0.bin' 2>/dev/null"

start_server() { serve_start "$1" env "${@:2}" "$SERVE" --quiet "$D"; } # start_server NAME [env...]
stop_server() { serve_stop; }

round() { # round NAME [env...]: one server, the swap, the requests
    local name=$1; shift
    start_server "$name" "$@" || return
    [ -z "${D9_SERVE_UNDER_TEST:-}" ] && check "$name: resolver in use is reported" grep -q "paths resolved with $name" "$T/$name.out"
    # before the race: the run is served, and it is the attacker's own file
    curl -s -o "$T/body" "http://127.0.0.1:$PORT/api/trace?run=R&seg=0"
    check "$name: the run is served before the race" test "$(stat -c %s "$T/body")" -gt 0
    check "$name: ... with the attacker's own data" bash -c "! grep -q '$MARKER' '$T/body'"
    setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$RACE" swap "$D" R L >"$T/$name.swap" 2>&1 &
    SWAP_PID=$!
    "$RACE" fetch "$PORT" "/api/trace?run=R&seg=0" 20000 12 "$MARKER" >"$T/$name.fetch" 2>&1
    local rc=$?
    kill "$SWAP_PID"
    wait "$SWAP_PID"
    SWAP_PID=
    echo "$name: $(cat "$T/$name.fetch" | tr '\n' ' ') $(cat "$T/$name.swap")"
    check "$name: no answer carried the private file" test "$rc" = 0
    check "$name: the swapper ran" grep -q 'exchanges' "$T/$name.swap"
    check "$name: the server is still up" kill -0 "$SERVER_PID"
    stop_server
}

round openat2
round walk D9_SERVE_RESOLVE=walk

echo "test_serve_race: $pass passed, $fail failed"
[ "$fail" = 0 ]
