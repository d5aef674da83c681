#!/bin/bash
# Privilege drops (as root; skips otherwise): a daemon that takes an unprivileged identity
# after starting its threads keeps being recorded, and so does a forked worker process that
# drops privileges before its loop runs (d9p_fork_privdrop: its run begins as root, then is
# handed over). d9p_privdrop (two libevent workers, then setgid/setuid(65534)) under
# `dial9 run` with 1 s rotation, and `memcached -u nobody -t 2` under memcslap load: the run
# directory and every file end up owned by the new user (and nothing world-writable), segments
# rotated after the drop are sealed, each carries symbols, and the trace holds polls on both
# worker threads, parks and wakes.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (it drops privileges to uid 65534)"
getent passwd 65534 >/dev/null || skip "no user with uid 65534"
chmod 755 "$WORK" # the new user must reach the trace directory; nothing here is writable to it

# ---- a forked worker that drops to 65534 before its epoll loop runs (nginx's workers) ---------
"$D9" run -d "$WORK/fork" -- "$HELPERS/d9p_fork_privdrop" 65534 200 \
    >"$WORK/fork.out" 2>"$WORK/fork.err" || fail "d9p_fork_privdrop under dial9 run: $(tail -3 "$WORK/fork.err")"
grep -q "worker ran as uid 65534" "$WORK/fork.out" || fail "the worker did not drop: $(cat "$WORK/fork.out")"
grep -q "recording disabled\|cannot" "$WORK/fork.err" && fail "recorder complained: $(cat "$WORK/fork.err")"
python3 - "$D9" "$WORK/fork" "$FACTS" <<'PY' || exit 1
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
root = sys.argv[2]
paths = [os.path.join(root, r) for r in sorted(os.listdir(root)) if not r.startswith(".")]
check(len(paths) == 2, "2 runs: the master and its worker (%s)" % os.listdir(root))
runs = {p: Trace(sys.argv[1], p) for p in paths}
workers = [p for p, t in runs.items() if t.of("LoopEvent")]
check(len(workers) == 1, "1 run with a loop: the worker's (%d)" % len(workers))
run, t = workers[0], runs[workers[0]]
print("  worker: " + t.summary())
owners = {os.stat(run).st_uid} | {os.stat(os.path.join(run, f)).st_uid for f in os.listdir(run)}
check(owners == {65534}, "the worker's run and files are uid 65534's: %s" % sorted(owners))
check(len(t.polls) >= 1, "the worker's loop has polls (%d)" % len(t.polls))
PY
echo "ok: a forked worker recorded across its setuid(65534) before its loop"

PRIVDROP="$HELPERS/d9p_privdrop"
[ -x "$PRIVDROP" ] || skip "$PRIVDROP not built (needs libevent-dev)"

# check_run DIR MIN_SEGMENTS WORKER_RUNTIME STDERR: ownership, sealing, symbols, and the trace's facts
check_run() {
    local root=$1 min_segments=$2 runtime=$3 err=$4
    local runs=("$root"/*/)
    [ ${#runs[@]} = 1 ] || fail "one run in $root (${runs[*]})"
    local run=${runs[0]%/}
    [ "$(stat -c %u "$run")" = 65534 ] || fail "$run is owned by uid $(stat -c %u "$run"), not 65534"
    local bad
    bad=$(find "$run" -perm -o+w -print)
    [ -z "$bad" ] || fail "world-writable: $bad"
    bad=$(find "$run" -mindepth 1 ! -uid 65534 -print)
    [ -z "$bad" ] || fail "not handed over to uid 65534: $bad"
    ls "$run"/*.active >/dev/null 2>&1 && fail "segments left unsealed: $(ls "$run")"
    local segs=("$run"/trace.*.bin)
    [ -e "${segs[0]}" ] || fail "no sealed segment in $run: $(ls -la "$run")"
    [ ${#segs[@]} -ge "$min_segments" ] || fail "${#segs[@]} segments, want >= $min_segments (rotation after the drop)"
    local s
    for s in "${segs[@]}"; do
        "$D9" stats "$s" >"$WORK/seg.stats" || fail "dial9 stats $s: $(tail -3 "$WORK/seg.stats")"
        grep -Eq '^ +[0-9]+ +CpuSampleEvent' "$WORK/seg.stats" || continue
        grep -Eq '^ +[1-9][0-9]* +SymbolTableEntry' "$WORK/seg.stats" && continue
        # The pipeline runs at idle priority and gets a bounded time at exit: on a loaded
        # machine it may run out of it, which the recorder must then say (no silent loss).
        grep -q "symbols not added in the time allowed at exit" "$err" ||
            fail "$s has CPU samples but no symbols, and the recorder did not say it ran out of time"
        echo "ok: $(basename "$s") left without symbols, out of time at exit (said on stderr)"
    done
    python3 - "$D9" "$run" "$FACTS" "$runtime" <<'PY' || exit 1
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from trace_facts import Trace, check
t = Trace(sys.argv[1], sys.argv[2])
print("  " + t.summary())
pid = int(t.meta["pid"])
workers = [w for w in t.workers_of(sys.argv[4]) if t.workers[w][2] != pid]
check(len(workers) == 2, "two worker threads (%s)" % workers)
polls = t.polls_by_worker()
for w in workers:
    check(len(polls[w]) >= 10, "worker %d polls after the drop (%d)" % (w, len(polls[w])))
ups = t.unparks_by_worker()
check(sum(len(ups[w]) for w in workers) >= 10, "workers park and wake up")
check(len(t.wakes) >= 10, "wakes (%d)" % len(t.wakes))
PY
}

# ---- a small daemon: threads first, then setgid/setuid(65534), 2.5 s of work -----------------
"$D9" run -d "$WORK/small" -e DIAL9_ROTATION_SECS=1 -e DIAL9_FLUSH_MS=10 -- "$PRIVDROP" 2500 \
    >"$WORK/small.out" 2>"$WORK/small.err" || fail "d9p_privdrop under dial9 run: $(tail -3 "$WORK/small.err")"
grep -q "ran as uid 65534" "$WORK/small.out" || fail "d9p_privdrop did not drop: $(cat "$WORK/small.out")"
grep -q "recording disabled\|cannot" "$WORK/small.err" && fail "recorder complained: $(cat "$WORK/small.err")"
check_run "$WORK/small" 2 libevent "$WORK/small.err"
echo "ok: d9p_privdrop recorded across setuid(65534)"

# ---- memcached -u nobody -t 2 ------------------------------------------------------------------
apt_need memcached libmemcached-tools
MEMCACHED=$(command -v memcached || echo /usr/bin/memcached)
MEMCSLAP=$(command -v memcslap || command -v memaslap || true)
[ -x "$MEMCACHED" ] || skip "memcached not found after install"
[ -n "$MEMCSLAP" ] || skip "memcslap not found after install"
port=$(free_port)
"$D9" run -d "$WORK/mc" -e DIAL9_FLUSH_MS=10 -e DIAL9_ROTATION_SECS=1 -- \
    "$MEMCACHED" -u nobody -l 127.0.0.1 -p "$port" -U 0 -t 2 -c 256 -m 64 \
    >"$WORK/mc.out" 2>"$WORK/mc.err" &
server=$!
D9T_PIDS+=("$server")
wait_port "$port" tcp 15 || fail "memcached did not listen on 127.0.0.1:$port: $(cat "$WORK/mc.err")"
for round in 1 2 3; do
    timeout 30 "$MEMCSLAP" --servers="127.0.0.1:$port" --concurrency=8 --execute-number=400 \
        --binary >"$WORK/load.$round" 2>&1 || fail "memcslap round $round: $(tail -3 "$WORK/load.$round")"
done
stop_server "$server"
D9T_PIDS=()
[ "$STATUS" = 0 ] || fail "dial9 run exited $STATUS (memcached: $(tail -3 "$WORK/mc.err"))"
grep -q "recording disabled\|cannot" "$WORK/mc.err" && fail "recorder complained: $(cat "$WORK/mc.err")"
check_run "$WORK/mc" 1 libevent "$WORK/mc.err"
echo "ok: memcached -u nobody recorded"
echo "PASS"
