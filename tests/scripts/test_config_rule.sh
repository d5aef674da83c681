#!/bin/bash
# One rule for every entry point and every DIAL9_* variable: the program always runs, a bad
# value or an unusable trace directory disables recording, and the message names the
# variable and the value. Checked for `dial9 run` (the shim's variables, DIAL9_TRACE_CHILDREN
# included; a 5039-byte DIAL9_TRACE_DIR; an unusable trace dir with a program that ends at
# once with _exit, where the end-of-run line must give the actual reason and never point at
# messages that are not there; a statically linked program), executor_demo, d9-uv-server and
# a story program.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do
    [ "$v" = DIAL9_PRELOAD_LIB ] || unset "$v"
done
cd "$WORK"

runs_in() { find "$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }

# expect NAME WANT_STATUS PATTERN CMD...: CMD exits WANT_STATUS, its stdout has "ran",
# stderr matches PATTERN (grep -E) and never says "see the messages above"
expect() {
    local name=$1 want=$2 pattern=$3
    shift 3
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    [ $rc -eq "$want" ] || fail "$name: exit status $rc, expected $want: $(cat "$WORK/err")"
    grep -q ran "$WORK/out" || fail "$name: the program did not run: $(cat "$WORK/out" "$WORK/err")"
    grep -qE -- "$pattern" "$WORK/err" || fail "$name: stderr does not match /$pattern/: $(cat "$WORK/err")"
    ! grep -q "see the messages above" "$WORK/err" || fail "$name: points at messages: $(cat "$WORK/err")"
    echo "ok: $name: $(tail -1 "$WORK/err" | cut -c1-160)"
}

# ---- dial9 run: a bad value of the recorder's variables and of the shim's own
expect "dial9 run, bad DIAL9_BUFFER_KB" 4 '^dial9 run: no trace: recording disabled: DIAL9_BUFFER_KB="8"' \
    "$D9" run -d "$WORK/t1" -e DIAL9_BUFFER_KB=8 -- sh -c 'echo ran; exit 4'
[ "$(runs_in "$WORK/t1")" -eq 0 ] || fail "bad DIAL9_BUFFER_KB: a run was written"
expect "dial9 run, bad DIAL9_TRACE_CHILDREN" 0 '^dial9 run: no trace: recording disabled: DIAL9_TRACE_CHILDREN="maybe"' \
    "$D9" run -d "$WORK/t2" -e DIAL9_TRACE_CHILDREN=maybe -- sh -c 'echo ran'
[ "$(runs_in "$WORK/t2")" -eq 0 ] || fail "bad DIAL9_TRACE_CHILDREN: a run was written"
grep -q '^dial9: recording disabled: DIAL9_TRACE_CHILDREN="maybe"' "$WORK/err" ||
    fail "bad DIAL9_TRACE_CHILDREN: the shim said nothing: $(cat "$WORK/err")"

# ---- a trace dir too long to use: the program runs, the variable is named
long="/$(head -c 5038 /dev/zero | tr '\0' a)"
expect "dial9 run, 5039-byte DIAL9_TRACE_DIR (-d)" 5 'DIAL9_TRACE_DIR="/aaa.*\(5039 bytes\)' \
    "$D9" run -d "$long" -- sh -c 'echo ran; exit 5'
expect "dial9 run, 5039-byte DIAL9_TRACE_DIR (variable)" 0 'DIAL9_TRACE_DIR="/aaa.*\(5039 bytes\)' \
    env DIAL9_TRACE_DIR="$long" "$D9" run -- sh -c 'echo ran'

# ---- an unusable trace dir and a program that ends at once (dash's exit is _exit, before
# the recorder has said anything): the end-of-run line says why, naming the directory once
# (it said "DIAL9_TRACE_DIR=D: trace directory D: ...")
touch "$WORK/a-file"
expect "dial9 run, unusable trace dir, short program" 0 \
    "^dial9 run: no trace: DIAL9_TRACE_DIR=$WORK/a-file/traces: $WORK/a-file: Not a directory$" \
    "$D9" run -d "$WORK/a-file/traces" -- sh -c 'echo ran'

# ---- a program LD_PRELOAD cannot reach
if [ -x /sbin/ldconfig ] && command -v readelf >/dev/null && ! readelf -l /sbin/ldconfig | grep -q INTERP; then
    "$D9" run -d "$WORK/t3" -- /sbin/ldconfig -p >/dev/null 2>"$WORK/err" || fail "ldconfig -p failed"
    grep -q "^dial9 run: no trace: /sbin/ldconfig: it is statically linked" "$WORK/err" ||
        fail "static program: $(cat "$WORK/err")"
    echo "ok: dial9 run, static program: $(cat "$WORK/err")"
fi

# ---- executor_demo: unwritable trace dir, bad value
demo="$BUILD/examples/executor/executor_demo"
if [ -x "$demo" ]; then
    demo_expect() { # NAME PATTERN ENV...
        local name=$1 pattern=$2
        shift 2
        env "$@" "$demo" --seconds 0.2 --workers 2 --rate 500 >"$WORK/out" 2>"$WORK/err"
        local rc=$?
        [ $rc -eq 0 ] || fail "executor_demo, $name: exit status $rc: $(cat "$WORK/err")"
        grep -q "recording nothing" "$WORK/out" && grep -q "^requests " "$WORK/out" ||
            fail "executor_demo, $name: did not run without recording: $(cat "$WORK/out")"
        grep -qE -- "$pattern" "$WORK/err" || fail "executor_demo, $name: stderr: $(cat "$WORK/err")"
        echo "ok: executor_demo, $name: $(head -1 "$WORK/err")"
    }
    demo_expect "unwritable trace dir" "recording disabled: .*$WORK/a-file/traces" \
        DIAL9_TRACE_DIR="$WORK/a-file/traces"
    demo_expect "bad DIAL9_FLUSH_MS" 'recording disabled: DIAL9_FLUSH_MS="0"' \
        DIAL9_TRACE_DIR="$WORK/t4" DIAL9_FLUSH_MS=0
    [ "$(runs_in "$WORK/t4")" -eq 0 ] || fail "executor_demo, bad DIAL9_FLUSH_MS: a run was written"
fi

# ---- d9-uv-server and a story: a bad value is not ignored
server="$BUILD/examples/uv-server/d9-uv-server"
if [ -x "$server" ]; then
    DIAL9_SCHEDSTAT=sometimes timeout 30 "$server" --port 0 --seconds 0.3 --trace-dir "$WORK/t5" \
        >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ $rc -eq 0 ] || fail "d9-uv-server, bad DIAL9_SCHEDSTAT: exit status $rc: $(cat "$WORK/err")"
    grep -q "^listening on" "$WORK/out" || fail "d9-uv-server did not run: $(cat "$WORK/out" "$WORK/err")"
    grep -q 'recording disabled: DIAL9_SCHEDSTAT="sometimes"' "$WORK/err" ||
        fail "d9-uv-server, bad DIAL9_SCHEDSTAT: $(cat "$WORK/err")"
    [ "$(runs_in "$WORK/t5")" -eq 0 ] || fail "d9-uv-server, bad DIAL9_SCHEDSTAT: recorded with defaults"
    echo "ok: d9-uv-server, bad DIAL9_SCHEDSTAT: $(grep 'recording disabled' "$WORK/err")"
fi
story="$BUILD/examples/stories/story2_global_mutex"
if [ -x "$story" ]; then
    DIAL9_CLOCK=sundial timeout 60 "$story" --seconds 0.2 --trace-dir "$WORK/t6" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ $rc -eq 0 ] || fail "story, bad DIAL9_CLOCK: exit status $rc: $(cat "$WORK/err")"
    grep -q 'recording disabled: DIAL9_CLOCK="sundial"' "$WORK/err" || fail "story, bad DIAL9_CLOCK: $(cat "$WORK/err")"
    [ "$(runs_in "$WORK/t6")" -eq 0 ] || fail "story, bad DIAL9_CLOCK: recorded with defaults"
    echo "ok: story, bad DIAL9_CLOCK: $(grep 'recording disabled' "$WORK/err")"
fi
echo PASS
