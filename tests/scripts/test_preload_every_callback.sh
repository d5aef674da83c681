#!/bin/bash
# Every callback a loop runs is a poll, from the first to the last, under the zero-code shim:
# programs as short as a first try (tests/preload/d9p_every_callback_*), with no thread of
# their own, run under `dial9 run`, print how many times each callback ran, and the trace must
# hold exactly that many polls of it. The shim starts the recorder on a thread of its own;
# these programs reach their loop, and can end it, before that start is over.
#   libuv: one repeating timer; three; one idle handle; 40 uv_queue_work items queued before
#          uv_run (the loop's first callbacks are pool work, its last one a completion); one
#          repeating timer in a forked child (--children: the child's start happens inside
#          the loop's first poll)
#   libevent: one persistent timer event.  libev: one repeating ev_timer.
# No run holds a LoopEvent: a loop library the adapters interpose is never also recorded as a
# home-grown loop, so no callback is counted twice.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"

checked=0
# every_callback NAME [dial9 run options] -- PROGRAM ARGS...
every_callback() {
    local name=$1 opts=()
    shift
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    [ -x "$1" ] || { echo "note: $1 not built (its loop library is missing): $name not checked"; return; }
    local dir="$WORK/$name"
    mkdir -p "$dir"
    timeout 120 "$D9" run -d "$dir/traces" "${opts[@]}" -- "$@" >"$dir/out" 2>"$dir/err" ||
        fail "$name: exit status $? under dial9 run: $(cat "$dir/err")"
    [ -s "$dir/out" ] || fail "$name: the program printed no counts"
    python3 - "$D9" "$dir/traces" "$dir/out" "$name" <<'PY' || exit 1
import os, sys
sys.path.insert(0, os.environ["D9_SOURCE_DIR"] + "/tests/preload")
from collections import Counter
from trace_facts import Trace, check
d9, traces, out, name = sys.argv[1:]
ran = {}
for line in open(out):
    cb, n = line.split()
    ran[cb] = int(n)
polls = Counter()
runs = [r for r in sorted(os.listdir(traces)) if os.path.isdir(os.path.join(traces, r))]
loops = 0
for run in runs:
    t = Trace(d9, os.path.join(traces, run))
    polls.update(p.get("spawn_loc") for p in t.polls)
    loops += len(t.of("LoopEvent"))
# the adapters' loops are never also recorded as home-grown loops (preload_loop_work.c)
check(loops == 0, "%s: no LoopEvent: the callbacks are the only polls" % name)
for cb, n in ran.items():
    check(n > 0 and polls[cb] == n, "%s: %d polls of %s for %d callbacks" % (name, polls[cb], cb, n))
PY
    checked=$((checked + 1))
}

UV="$HELPERS/d9p_every_callback_uv"
every_callback uv-one-timer -- "$UV" timer 1
every_callback uv-three-timers -- "$UV" timer 3
every_callback uv-idle -- "$UV" idle
every_callback uv-work -- "$UV" work
every_callback uv-forked-timer --children -- "$UV" fork-timer
every_callback libevent-one-timer -- "$HELPERS/d9p_every_callback_event"
every_callback libev-one-timer -- "$HELPERS/d9p_every_callback_ev"
[ $checked -gt 0 ] || skip "none of libuv, libevent, libev is installed"
echo "PASS: every callback is a poll ($checked programs)"
