#!/bin/bash
# libdial9-preload.so must never change what a program does: d9p_behave (tests/preload) runs
# each of its modes with and without the shim, and its output and exit status must be the
# same. Then each trace must decode and hold what the mode did: parks of home-grown poll and
# epoll loops, threads registered, a final flush on exit(), on exit from another thread, on
# pthread_exit in main, and on death by SIGTERM (also while the shim is still starting).
# Also: a close-all-fds program keeps its files intact, a relative DIAL9_TRACE_DIR survives
# chdir, children are traced only on request, exec without fork hands the recording on, a bad
# DIAL9_* value is one warning line, a privately dlopen()ed libuv still works, and a
# statically linked libevent is noted as such.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
BEHAVE="$HELPERS/d9p_behave"
[ -x "$BEHAVE" ] || fail "$BEHAVE not built"

# run_both NAME ENV... -- ARGS...: run `d9p_behave ARGS` plain and with the shim (in
# $WORK/NAME, trace dir "traces" relative to it); compares output and status.
run_both() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local dir="$WORK/$name"
    mkdir -p "$dir/plain" "$dir/shim"
    (cd "$dir/plain" && timeout 60 "$BEHAVE" "${@//@DIR@/$dir/plain}" >"$dir/plain.out" 2>"$dir/plain.err")
    local rc_plain=$?
    (cd "$dir/shim" && timeout 60 env LD_PRELOAD="$SHIM" DIAL9_TRACE_DIR=traces DIAL9_FLUSH_MS=5 \
        "${envs[@]}" "$BEHAVE" "${@//@DIR@/$dir/shim}" >"$dir/shim.out" 2>"$dir/shim.err")
    local rc_shim=$?
    [ $rc_plain -ne 124 ] || fail "$name: timed out without the shim"
    [ $rc_shim -ne 124 ] || fail "$name: timed out with the shim (hung at exit?)"
    [ $rc_plain -eq $rc_shim ] || fail "$name: exit status $rc_plain without the shim, $rc_shim with it"
    sed "s|$dir/plain|DIR|g" "$dir/plain.out" >"$dir/plain.norm"
    sed "s|$dir/shim|DIR|g" "$dir/shim.out" >"$dir/shim.norm"
    diff -u "$dir/plain.norm" "$dir/shim.norm" >"$dir/diff" ||
        fail "$name: output differs with the shim: $(cat "$dir/diff")"
    echo "ok: $name: same output and exit status ($rc_shim) with and without the shim"
    RUNS="$dir/shim/traces"
}

expect_no_stderr() {
    [ ! -s "$WORK/$1/shim.err" ] || fail "$1: the shim wrote on stderr: $(cat "$WORK/$1/shim.err")"
}

runs_in() { find "$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }

# facts RUNS_DIR: the python checks that follow (stdin) get `t` (the trace of the only run,
# or of the run whose program is d9p_behave) and `runs` (every run).
facts() {
    local runs=$1
    "$D9" stats "$runs" >"$WORK/stats.txt" 2>&1 || fail "dial9 stats $runs: $(tail -3 "$WORK/stats.txt")"
    python3 - "$D9" "$runs" "$FACTS" 3<&0 <<'EOF'
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, root = sys.argv[1], sys.argv[2]
runs = [Trace(d9, os.path.join(root, r)) for r in sorted(os.listdir(root)) if not r.startswith(".")]
t = runs[0]
for r in runs:
    if r.meta.get("program", "").endswith("/d9p_behave"):
        t = r
        break
print("  " + t.summary())
exec(os.fdopen(3).read())
EOF
    [ $? -eq 0 ] || exit 1
}

# ---- everything in one program: threads, fork, exec, close-all-fds, chdir, exit(7) from a
# SIGTERM handler
run_both full -- full @DIR@/file
expect_no_stderr full
grep -q "^40 of 40 files intact" "$WORK/full/shim.out" || fail "full: the program's files were damaged"
[ "$(runs_in "$WORK/full/shim/traces")" -eq 1 ] ||
    fail "full: expected 1 run (children not traced), found $(runs_in "$WORK/full/shim/traces")"
[ ! -e /traces ] || fail "full: a relative DIAL9_TRACE_DIR followed the program's chdir to /"
facts "$RUNS" <<'EOF'
check(len(runs) == 1, "one run")
check(len(t.workers_blocking_in("poll")) >= 4, "the 3 reader threads and main are poll workers")
check(len(t.parks) >= 25 and len(t.unparks) >= 25, "parks in poll: %d" % len(t.parks))
check(len({u["tid"] for u in t.unparks}) >= 4, "unparks on 4 threads")
late = [p for p in t.parks if p["tid"] == int(t.meta["pid"])]
check(len(late) >= 10, "main's parks after it closed every fd were written (%d)" % len(late))
check(t.meta.get("source.poller", "").startswith("active"), "source.poller noted")
check(t.meta.get("source.libevent", "").startswith("inactive: not loaded"), "source.libevent: not loaded")
EOF

# ---- the same with DIAL9_TRACE_CHILDREN=1: the exec'd child has its own run
run_both full-children DIAL9_TRACE_CHILDREN=1 -- full @DIR@/file
n=$(runs_in "$RUNS")
[ "$n" -eq 2 ] || fail "full-children: expected 2 runs (parent, exec'd child), found $n"
facts "$RUNS" <<'EOF'
progs = sorted(r.meta.get("program", "") for r in runs)
check(len({r.meta["pid"] for r in runs}) == 2, "two processes recorded")
check("children traced" in t.meta.get("preload", ""), "metadata says children are traced")
EOF

# ---- exit(5) from a thread while main blocks in poll
run_both thread-exit -- thread-exit
expect_no_stderr thread-exit
facts "$RUNS" <<'EOF'
check(len(t.workers_blocking_in("poll")) == 2, "main and the exiting thread are poll workers")
check(len(t.parks) >= 3, "parks flushed at exit from a thread (%d)" % len(t.parks))
EOF

# ---- main leaves with pthread_exit; the process ends with its last thread (glibc: exit(0))
run_both pthread-exit -- pthread-exit
expect_no_stderr pthread-exit
facts "$RUNS" <<'EOF'
check(len(t.parks) >= 5, "the last thread's parks were flushed (%d)" % len(t.parks))
EOF

# ---- death by an unhandled SIGTERM: same death, trace flushed and sealed
run_both default-term -- default-term
expect_no_stderr default-term
ls "$RUNS"/*/trace.*.bin >/dev/null 2>&1 || fail "default-term: no sealed trace file"
if ls "$RUNS"/*/*.active >/dev/null 2>&1; then fail "default-term: the last segment was not sealed"; fi
facts "$RUNS" <<'EOF'
check(len(t.workers_blocking_in("poll")) >= 2, "the polling threads are workers")
check(len(t.parks) >= 10, "parks flushed before dying of SIGTERM (%d)" % len(t.parks))
EOF

# ---- SIGTERM while the shim is still starting its recorder: the start finishes, then the
# run is sealed and the program dies of the signal
run_both early-term -- early-term
expect_no_stderr early-term
ls "$RUNS"/*/trace.*.bin >/dev/null 2>&1 || fail "early-term: no sealed trace file"
if ls "$RUNS"/*/*.active >/dev/null 2>&1; then fail "early-term: the last segment was not sealed"; fi
echo "ok: early-term: the run is sealed"

# ---- a home-grown epoll loop woken through an eventfd
run_both epoll-loop -- epoll-loop
expect_no_stderr epoll-loop
facts "$RUNS" <<'EOF'
check(t.workers_blocking_in("epoll") != [], "the loop thread is an epoll worker")
check(len(t.parks) >= 20, "parks in epoll_wait (%d)" % len(t.parks))
check(len(t.of("WorkerRegisteredEvent")) == 1, "only the thread that blocks in the poller is a worker")
check(any(u.get("sched_wait_ns") is not None for u in t.unparks), "unparks carry scheduling delay")
EOF

# ---- the program's own SIGINT handler and what it sees of SIGTERM
run_both signals -- signals
expect_no_stderr signals

# ---- exec without fork (env, nice) hands the recording on; the wrappers leave no run
dir="$WORK/exec"
mkdir -p "$dir"
(cd "$dir" && timeout 60 env LD_PRELOAD="$SHIM" DIAL9_TRACE_DIR=traces env FOO=1 nice -n 1 "$BEHAVE" epoll-loop >out 2>err) ||
    fail "exec: exited $?"
[ "$(runs_in "$dir/traces")" -eq 1 ] || fail "exec: expected 1 run, found $(runs_in "$dir/traces")"
facts "$dir/traces" <<'EOF'
check(t.meta["program"].endswith("/d9p_behave"), "the run is the exec'd program's")
check(len(t.parks) >= 20, "its loop was recorded")
EOF

# ---- a bad value: one warning line, nothing recorded, program unchanged
run_both bad-value DIAL9_BUFFER_KB=lots -- echo hello
[ "$(wc -l <"$WORK/bad-value/shim.err")" -eq 1 ] && grep -q "DIAL9_BUFFER_KB" "$WORK/bad-value/shim.err" ||
    fail "bad-value: expected one warning line naming DIAL9_BUFFER_KB, got: $(cat "$WORK/bad-value/shim.err")"
[ "$(runs_in "$RUNS")" -eq 0 ] || fail "bad-value: a run was written"
echo "ok: bad-value: $(cat "$WORK/bad-value/shim.err")"
# the shim's own variable follows the same rule
run_both bad-children DIAL9_TRACE_CHILDREN=maybe -- echo hello
[ "$(wc -l <"$WORK/bad-children/shim.err")" -eq 1 ] &&
    grep -q 'recording disabled: DIAL9_TRACE_CHILDREN="maybe"' "$WORK/bad-children/shim.err" ||
    fail "bad-children: expected one line disabling recording, naming DIAL9_TRACE_CHILDREN=\"maybe\", got: $(cat "$WORK/bad-children/shim.err")"
[ "$(runs_in "$RUNS")" -eq 0 ] || fail "bad-children: a run was written"
echo "ok: bad-children: $(cat "$WORK/bad-children/shim.err")"

# ---- DIAL9_ENABLED=0: nothing at all
run_both disabled DIAL9_ENABLED=0 -- epoll-loop
expect_no_stderr disabled
[ "$(runs_in "$RUNS")" -eq 0 ] || fail "disabled: a run was written"

# ---- libuv dlopen()ed with RTLD_LOCAL: its real functions are not found by RTLD_NEXT
DLOPEN="$HELPERS/d9p_dlopen_uv"
[ -x "$DLOPEN" ] || fail "$DLOPEN not built"
plain=$("$DLOPEN" 2>&1)
shimmed=$(cd "$WORK" && timeout 60 env LD_PRELOAD="$SHIM" DIAL9_TRACE_DIR=dlopen-traces "$DLOPEN" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$plain" = "$shimmed" ] ||
    fail "dlopen RTLD_LOCAL: status $rc, output '$shimmed' (without the shim: '$plain')"
echo "ok: a program that dlopens libuv privately runs unchanged ($shimmed)"

# ---- libevent linked into the program: no callbacks to interpose, parks from epoll_wait
STATIC="$HELPERS/d9p_static_event"
if [ -x "$STATIC" ]; then
    dir="$WORK/static"
    mkdir -p "$dir"
    plain=$("$STATIC")
    shimmed=$(cd "$dir" && timeout 60 env LD_PRELOAD="$SHIM" DIAL9_TRACE_DIR=traces "$STATIC" 2>"$dir/err")
    [ "$plain" = "$shimmed" ] || fail "static: output differs: '$plain' vs '$shimmed'"
    expect_no_stderr_file() { [ ! -s "$1" ] || fail "static: stderr: $(cat "$1")"; }
    expect_no_stderr_file "$dir/err"
    facts "$dir/traces" <<'EOF'
check("linked statically" in t.meta.get("source.libevent", ""),
      "source.libevent: " + t.meta.get("source.libevent", "(missing)"))
check(t.workers_blocking_in("epoll") != [] and len(t.parks) >= 15, "parks from epoll_wait (%d)" % len(t.parks))
check(len(t.polls) == 0, "no per-callback polls (nothing to interpose)")
EOF
else
    echo "note: d9p_static_event not built (libevent_core.a missing): static case not checked"
fi

echo "PASS"
