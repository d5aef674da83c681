#!/usr/bin/env bash
# Another local user against root's recording (root and setpriv only; skipped otherwise). The
# attacker, uid 65534, works in a shared sticky directory like /tmp and loops: it replaces each
# run directory root makes by its own and plants in it links from the names the recorder
# writes (trace.N.bin, trace.N.bin.active, the compress step's .trace.N.bin.gz.tmp) to a file
# of root's and to paths of its choosing. Whatever the interleaving, root must never write
# through those links nor create a file where they point:
#  - a trace directory the attacker made first is refused, with a message naming it and its
#    owner (the program still runs);
#  - a trace directory root made (0755) cannot be written by the attacker; the run's files are
#    0600 and its directories 0700 (traces hold kernel addresses).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "test_trace_dir_hostile: $DIAL9 not built"; exit 1; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$(dirname "$DIAL9")/libdial9-preload.so" 2>/dev/null)"; then
    echo "test_trace_dir_hostile: SKIP: the preload shim is built with a sanitizer"
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! getent passwd 65534 >/dev/null; then
    echo "test_trace_dir_hostile: SKIP: needs root, setpriv and a uid 65534"
    exit 0
fi
as_attacker() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

chmod 0755 "$T" # the attacker reaches the shared directory below, nothing else of ours
SHARED_TMP="$T/tmp"
mkdir -m 1777 "$SHARED_TMP"
VICTIM="$T/root-file" # root's, outside any run: the links point at it
printf 'root data, not a trace\n' >"$VICTIM"
cp "$VICTIM" "$T/root-file.orig"

# The attacker's loop: for each run directory of root's that appears in trace dir $1, move it
# away, make its own in its place and plant the links. Paced (a few ms a round): the checks
# below hold for every interleaving, the pace only keeps the machine usable.
cat >"$T/attacker.sh" <<'ATTACK'
D=$1 VICTIM=$2 PLANT=$3
while :; do
    for r in "$D"/2*; do
        [ -d "$r" ] && [ ! -O "$r" ] || continue
        mv "$r" "$r.moved.$RANDOM" 2>/dev/null || continue
        mkdir -m 0777 "$r" 2>/dev/null || continue
        for i in 0 1 2 3 4 5 6 7; do
            ln -sf "$VICTIM" "$r/trace.$i.bin"
            ln -sf "$VICTIM" "$r/trace.$i.bin.active"
            ln -sf "$PLANT/planted.$i" "$r/.trace.$i.bin.gz.tmp"
            ln -sf "$PLANT/planted.$i" "$r/.trace.$i.bin.zst.tmp"
        done
        ln -sf "$PLANT/planted.final" "$r/.final-accounting"
        ln -sf "$PLANT/planted.s3" "$r/.s3-run.tmp"
    done
    sleep 0.005
done
ATTACK
attacker=""
start_attacker() { # trace dir
    # setpriv execs bash: $! is the attacker's own pid (no subshell in between)
    setpriv --reuid=65534 --regid=65534 --clear-groups bash "$T/attacker.sh" "$1" "$VICTIM" "$SHARED_TMP" &
    attacker=$!
}
stop_attacker() {
    if [ -n "$attacker" ]; then
        kill "$attacker" 2>/dev/null
        wait "$attacker" 2>/dev/null
    fi
    attacker=""
}
trap 'stop_attacker; rm -rf "$T"' EXIT

nothing_written_outside() { # what
    check "$1: root's file is unchanged" cmp -s "$VICTIM" "$T/root-file.orig"
    local planted
    planted=$(ls "$SHARED_TMP" | grep '^planted' || true)
    check "$1: no file created where the links point ($planted)" test -z "$planted"
}

# A program that records a few segments with every step that writes into the run: small files
# and fast rotation, symbols, compression.
record() { # trace dir, stderr file
    "$DIAL9" run -d "$1" -e DIAL9_COMPRESS=gzip -e DIAL9_SYMBOLIZE=1 -e DIAL9_ROTATION_SECS=1 \
        -e DIAL9_FLUSH_MS=10 -- python3 -c 'import time
end = time.time() + 1.5
while time.time() < end: time.sleep(0.001)' >/dev/null 2>"$2"
}
command -v python3 >/dev/null || { echo "test_trace_dir_hostile: SKIP: needs python3"; exit 0; }

# 1. The attacker made the trace directory first (as anyone can in /tmp): refused.
TD="$SHARED_TMP/dial9-traces"
as_attacker mkdir -m 0777 "$TD"
start_attacker "$TD"
record "$TD" "$T/err1"
record "$TD" "$T/err1b"
stop_attacker
check "refused, with the directory and its owner named ($(head -c 600 "$T/err1"))" \
    grep -q "trace directory $TD is owned by uid 65534" "$T/err1"
check "dial9 run says there is no trace and why" grep -q "dial9 run: no trace: .*owned by uid 65534" "$T/err1"
rootfiles=$(find "$TD" -user root 2>/dev/null | head -5)
check "nothing of root's in the attacker's directory ($rootfiles)" test -z "$rootfiles"
nothing_written_outside "another user's trace directory"

# 2. Writable by others without the sticky bit (root's own, chmod 0777): refused too.
OPEN="$T/open"
mkdir -m 0777 "$OPEN" && chmod 0777 "$OPEN"
record "$OPEN/traces" "$T/err2"
check "a directory on the way writable by everyone is refused ($(head -c 600 "$T/err2"))" \
    grep -q "trace directory $OPEN is writable by everyone (mode 0777) and not sticky" "$T/err2"
check "nothing made under it" test ! -e "$OPEN/traces"
mkdir -p "$OPEN/run-x" && cp "$VICTIM" "$OPEN/run-x/trace.0.bin" # as if a run were there
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s AWS_REGION=us-east-1 AWS_ENDPOINT_URL=http://127.0.0.1:9 \
    "$DIAL9" upload --bucket d9-test "$OPEN" >/dev/null 2>"$T/err2u"
rc=$?
check "dial9 upload refuses it too, exit $rc ($(head -c 400 "$T/err2u"))" \
    bash -c '[ "$1" != 0 ] && grep -q "is writable by everyone .*: not uploaded" "$2"' _ "$rc" "$T/err2u"
check "and leaves its files as they were" test -f "$OPEN/run-x/trace.0.bin" -a ! -e "$OPEN/run-x/trace.0.bin.gz"

# 3. Root's own trace directory in the shared one, the attacker racing against every run.
MINE="$SHARED_TMP/root-traces"
start_attacker "$MINE"
record "$MINE" "$T/err3"
record "$MINE" "$T/err3b"
stop_attacker
check "root's runs are recorded ($(head -c 600 "$T/err3"))" grep -q "dial9 run: trace in $MINE/" "$T/err3"
check "the second one too ($(head -c 600 "$T/err3b"))" grep -q "dial9 run: trace in $MINE/" "$T/err3b"
nothing_written_outside "root's own trace directory"
check "segments were compressed" test -n "$(find "$MINE" -name 'trace.*.bin.gz' | head -1)"
loose=$(find "$MINE" -type f ! -perm 0600 | head -3)
check "every file of the runs is 0600 ($loose)" test -z "$loose"
loose=$(find "$MINE" -mindepth 1 -type d ! -perm 0700 | head -3)
check "every run directory is 0700 ($loose)" test -z "$loose"
check "the trace directory holds them, 0755" test "$(stat -c %a "$MINE")" = 755
others=$(find "$MINE" ! -user root | head -3)
check "everything is root's ($others)" test -z "$others"
check "dial9 symbolize in place refuses a link" bash -c '
    r=$(ls -d "$1"/2* | head -1); ln -s "$2" "$r/trace.99.bin"
    ! "$3" symbolize "$r/trace.99.bin" 2>"$4" && grep -q "symbolic link" "$4"' _ "$MINE" "$VICTIM" "$DIAL9" "$T/err4"
nothing_written_outside "dial9 symbolize"

echo "test_trace_dir_hostile: $pass passed, $fail failed"
[ "$fail" = 0 ]
