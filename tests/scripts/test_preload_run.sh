#!/bin/bash
# `dial9 run`: it passes the program's exit status through (128+N for a signal, 127 for a
# command that does not exist, said in one line), says where a memory-mode run's dumps are, leaves its stdout alone, prints the summary on stderr, sets
# the DIAL9_* variables from its options, keeps an LD_PRELOAD that was already there, and
# --exec replaces it. The dial9 binary loads no more than libc, libm and zlib (libdw is
# dlopen'ed by `dial9 symbolize`, libmicrohttpd is in dial9-serve), so `dial9 run` does not make
# the program wait for them. Then, as a benchmark (printed, not checked: timings on a shared
# machine are not a pass/fail), what the shim and `dial9 run` add to the start of a program
# that never uses a loop: the time from before the start to the program's main, best and
# median of 30 interleaved runs, against the 5 ms budget of issue #4.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
BEHAVE="$HELPERS/d9p_behave"
TRUE="$HELPERS/d9p_true"
[ -x "$BEHAVE" ] && [ -x "$TRUE" ] || fail "tests/preload helpers not built"
cd "$WORK"

expect_status() { # WANT DESCRIPTION CMD...
    local want=$1 what=$2
    shift 2
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    [ $rc -eq "$want" ] || fail "$what: exit status $rc, expected $want ($(tail -2 "$WORK/err"))"
    echo "ok: $what: exit status $rc"
}

# ---- usage
expect_status 0 "--help" "$D9" run --help
grep -q "usage: dial9 run" "$WORK/out" || fail "--help prints no usage"
expect_status 2 "no command" "$D9" run
expect_status 2 "unknown option" "$D9" run --no-such-option -- true
expect_status 2 "-e without =" "$D9" run -e NOEQUALS -- true
expect_status 2 "missing shim" env DIAL9_PRELOAD_LIB=/nonexistent/libdial9-preload.so "$D9" run -- true
grep -q "DIAL9_PRELOAD_LIB" "$WORK/err" || fail "missing shim: message does not name DIAL9_PRELOAD_LIB"

# ---- exit status and output of the program
expect_status 3 "exit 3" "$D9" run -q -d "$WORK/t1" -- sh -c 'exit 3'
expect_status 143 "killed by SIGTERM (no handler: flushed, then the default action)" \
    "$D9" run -q -d "$WORK/t1" -- sh -c 'kill -TERM $$; sleep 5'
expect_status 137 "killed by SIGKILL" "$D9" run -q -d "$WORK/t1" -- sh -c 'kill -KILL $$; sleep 5'
expect_status 127 "command not found" "$D9" run -q -d "$WORK/t1" -- /nonexistent/program
# without -q too, and then the reason is the only line: no "no trace" guess about a program
# that never ran (it said "the recorder had not started when the program ended")
expect_status 127 "command not found, with the summary" "$D9" run -d "$WORK/t1" -- /nonexistent/program
[ "$(cat "$WORK/err")" = "dial9 run: /nonexistent/program: No such file or directory" ] ||
    fail "command not found: stderr: $(cat "$WORK/err")"
expect_status 126 "not executable" "$D9" run -d "$WORK/t1" -- /dev/null
[ "$(grep -c '^dial9 run' "$WORK/err")" = 1 ] || fail "not executable: stderr: $(cat "$WORK/err")"
# memory mode writes no run, only dumps: said so (it said "the recorder had not started")
expect_status 0 "memory mode" env DIAL9_MODE=memory "$D9" run -d "$WORK/tm" -- "$BEHAVE" echo hi
grep -q "^dial9 run: no trace in $WORK/tm: DIAL9_MODE=memory keeps the recording in memory and writes only dumps: 0 of this run in $WORK/tm-dumps (dial9 dumps $WORK/tm-dumps)$" "$WORK/err" ||
    fail "memory mode: stderr: $(cat "$WORK/err")"
expect_status 7 "d9p_behave full" "$D9" run -d "$WORK/t2" -- "$BEHAVE" full "$WORK/files"
"$BEHAVE" full "$WORK/files-plain" >"$WORK/plain.out" 2>/dev/null
diff <(sed "s|$WORK/files-plain|F|" "$WORK/plain.out") <(sed "s|$WORK/files|F|" "$WORK/out") >/dev/null ||
    fail "stdout differs under dial9 run"
grep -q "^dial9 run: trace in $WORK/t2/" "$WORK/err" || fail "no summary on stderr: $(cat "$WORK/err")"
grep -q "parks" "$WORK/err" || fail "the summary has no counts: $(cat "$WORK/err")"
echo "ok: stdout unchanged; stderr: $(grep '^dial9 run' "$WORK/err")"

# one loop thread: "1 worker" (it said "1 workers")
expect_status 0 "one worker" "$D9" run -d "$WORK/t1w" -- "$BEHAVE" epoll-loop
grep -q "^dial9 run: trace in .*, 1 worker, [0-9]* dropped$" "$WORK/err" || fail "one worker: $(cat "$WORK/err")"

# ---- options become DIAL9_* variables; a relative --trace-dir is made absolute
mkdir -p "$WORK/cwd"
(cd "$WORK/cwd" && "$D9" run -q -d rel --service svc-from-option -c -e DIAL9_FLUSH_MS=7 -- \
    "$BEHAVE" echo hi >/dev/null 2>&1) || fail "options run failed"
[ -d "$WORK/cwd/rel" ] || fail "relative --trace-dir: no $WORK/cwd/rel"
python3 - "$D9" "$WORK/cwd/rel" "$FACTS" <<'EOF' || exit 1
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
d9, root = sys.argv[1], sys.argv[2]
t = Trace(d9, os.path.join(root, sorted(r for r in os.listdir(root) if not r.startswith("."))[0]))
check(t.meta.get("service") == "svc-from-option", "--service: " + t.meta.get("service", "?"))
# `echo` ends at once, usually before the recorder's start reaches the kernel sources (then
# noted "not started"); either way the option reached the recorder, which says otherwise
# "inactive: disabled by configuration"
cpu = t.meta.get("source.cpu_profile", "?")
check(cpu.startswith("active") or cpu.startswith("inactive: not started: the program was ending"), "--cpu-profile: " + cpu)
# the main binary's frame-pointer scan is skipped only when the start saw the program ending
fp = t.meta.get("host.frame_pointers", "?")
check(not fp.startswith("not checked") or "not started" in cpu, "host.frame_pointers: " + fp + " / " + cpu)
check(fp.startswith("not checked (the program was ending") or fp.startswith(("yes", "no", "unknown")), "host.frame_pointers: " + fp)
# so are the kernel's settings (they only explain kernel sources, which such a run has none of)
for key in ("host.perf_event_paranoid", "host.kptr_restrict"):
    v = t.meta.get(key, "?")
    check(v.startswith("not checked (the program was ending") == fp.startswith("not checked"), key + ": " + v + " / " + fp)
    check(not v.startswith("not checked") or "not started" in cpu, key + ": " + v + " / " + cpu)
# the start checks the same never-cleared "ending" flag before each of these, in this order:
# once one says the program was ending, every later one says so too
order = ["source.libuv", "source.libevent", "source.libev", "source.memory_map", "host.perf_event_paranoid",
         "source.cpu_profile"]
said = [("the program was ending" in t.meta.get(k, "")) for k in order]
check(all(not a or b for a, b in zip(said, said[1:])),
      "ending noted out of order: " + "; ".join(k + "=" + t.meta.get(k, "?") for k in order))
EOF

# ---- --children: the exec'd child of d9p_behave full gets its own run, counted in the summary
expect_status 7 "--children" "$D9" run --children -d "$WORK/t3" -- "$BEHAVE" full "$WORK/files3"
[ "$(find "$WORK/t3" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 2 ] || fail "--children: expected 2 runs"
grep -q "1 more run from child processes" "$WORK/err" || fail "--children: summary: $(cat "$WORK/err")"

# ---- an LD_PRELOAD already set is kept (after the shim), and the program sees it without the shim
out=$(LD_PRELOAD=libm.so.6 "$D9" run -q -d "$WORK/t4" -- sh -c 'echo "$LD_PRELOAD"')
[ "$out" = "libm.so.6" ] || fail "existing LD_PRELOAD: the program saw '$out', expected libm.so.6"
echo "ok: an existing LD_PRELOAD is kept"

# ---- --exec: dial9 becomes the program: no summary, same status, a run
expect_status 0 "--exec" "$D9" run --exec -d "$WORK/t5" -- "$BEHAVE" echo hi
! grep -q "^dial9 run" "$WORK/err" || fail "--exec printed a summary"
[ "$(find "$WORK/t5" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 1 ] || fail "--exec: no run written"

# ---- what the dial9 binary loads before `run` starts: no libdw, libmicrohttpd or their trees
if command -v readelf >/dev/null; then
    heavy=$(readelf -d "$D9" | grep NEEDED | grep -E 'libdw|libelf|microhttpd|gnutls' || true)
    [ -z "$heavy" ] || fail "the dial9 binary links what only symbolize / serve need: $heavy"
    echo "ok: dial9 needs $(readelf -d "$D9" | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')"
fi

# ---- benchmark: what the shim and dial9 run add to the start of a program that uses no loop
python3 - "$D9" "$TRUE" "$SHIM" "$WORK/tperf" <<'EOF' || exit 1
import shutil, statistics, subprocess, sys, time
d9, prog, shim, tdir = sys.argv[1:5]
cases = {
    "plain": [prog, "start"],
    "env": ["env", "X=1", prog, "start"],
    "env+shim": ["env", "LD_PRELOAD=" + shim, "DIAL9_TRACE_DIR=" + tdir, prog, "start"],
    "dial9 run": [d9, "run", "-q", "-d", tdir, "--", prog, "start"],
    "dial9 -V": [d9, "--version"],
}
start = {k: [] for k in cases}
total = {k: [] for k in cases}
for _ in range(30):
    for k, cmd in cases.items():
        shutil.rmtree(tdir, ignore_errors=True)
        t0 = time.monotonic_ns()
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
        t1 = time.monotonic_ns()
        if k != "dial9 -V":
            start[k].append((int(out.split()[0]) - t0) / 1e6)
        total[k].append((t1 - t0) / 1e6)
for k in cases:
    s = ("start (to main): best %.2f ms, median %.2f ms; " % (min(start[k]), statistics.median(start[k]))
         if start[k] else "")
    print("  %-9s %swhole run: best %.2f ms, median %.2f ms"
          % (k, s, min(total[k]), statistics.median(total[k])))
def added(k, base):
    return (min(start[k]) - min(start[base]), statistics.median(start[k]) - statistics.median(start[base]))
shim = added("env+shim", "env")
run = added("dial9 run", "plain")
print("  the shim adds %.2f ms to the start (best runs; medians: %.2f ms); dial9 run adds %.2f ms "
      "(medians: %.2f ms); dial9 --version takes %.2f ms more than the program alone"
      % (shim[0], shim[1], run[0], run[1], min(total["dial9 -V"]) - min(total["plain"])))
for what, (best, _) in (("the shim", shim), ("dial9 run", run)):
    if best >= 5.0:
        print("  NOTE: %s adds %.2f ms on its best runs, past the 5 ms budget (issue #4): check "
              "the load (uptime) and measure again" % (what, best))
EOF
echo "PASS"
