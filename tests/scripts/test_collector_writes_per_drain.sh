#!/usr/bin/env bash
# The collector writes a drain's output in one write: counted with strace on its thread, the
# `pwrite64`s between two of its sleeps (the timed FUTEX_WAIT of d9_collector_sleep) are at most
# one, each after one `fstat` of the segment (the segment writer's guard against closes the
# shim cannot see, kept). The recording is steady and small (512 spawns every 100 ms: a drain's
# output far under the collector's 256 KiB flush size, no rotation by age or size), so a drain
# that writes twice is a second flush of the collector's, not a segment ending. Counts only: how
# many drains there are does not matter, any drain with two writes fails.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
RECORDER="$BUILD/test_pipeline_compress"
[ -x "$RECORDER" ] || { echo "test_collector_writes_per_drain: $RECORDER not built"; exit 1; }
command -v strace >/dev/null || { echo "SKIP: strace is not installed (apt-get install strace)"; exit 0; }
strace -f -qq -e trace=none true 2>/dev/null || { echo "SKIP: strace cannot trace here (ptrace refused)"; exit 0; }

mkdir -p "$T/traces"
# LeakSanitizer refuses to run under ptrace and makes the exit 1: leaks are checked by the
# sanitizer suite's other runs of this recorder, not under strace
env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" DIAL9_ROTATION_SECS=0 DIAL9_SYMBOLIZE=0 DIAL9_SCHEDULE_PROFILE_ENABLED=0 \
    strace -f -qq -o "$T/strace" -e trace=futex,pwrite64,fstat,newfstatat \
    "$RECORDER" --record-until "$T/traces" "$T/stop" 100 >"$T/out" 2>"$T/err" &
pid=$!
# until the collector has written 30 times (polled: a wait for an event, not a duration)
for _ in $(seq 3000); do
    n=$(grep -c 'pwrite64(' "$T/strace" 2>/dev/null); [ "${n:-0}" -ge 30 ] && break
    sleep 0.1
done
touch "$T/stop"
wait "$pid"
rc=$?
check "the recorder exited cleanly (exit $rc)" [ "$rc" = 0 ]
[ "$rc" = 0 ] || sed 's/^/  recorder: /' "$T/err" | tail -20

# the collector's thread: the one that sleeps in the timed FUTEX_WAIT and writes
tid=$(grep -E 'pwrite64\(' "$T/strace" | awk '{print $1}' | sort | uniq -c | sort -rn | awk 'NR == 1 {print $2}')
check "the collector's writes found" [ -n "$tid" ]
# per drain (the calls between two timed sleeps): its writes, and the fstats before them; the
# first and last drains are left out (start's preamble, stop's last words)
awk -v tid="$tid" '
    $1 != tid { next }
    /futex\(.*FUTEX_WAIT_PRIVATE.*tv_sec/ { if (n++) print w, f; w = 0; f = 0; next }
    /pwrite64\(/ { w++ }
    /fstat\(|newfstatat\(/ { f++ }
' "$T/strace" | sed '$d' >"$T/drains"
drains=$(awk '$1 > 0' "$T/drains" | wc -l)
twice=$(awk '$1 > 1' "$T/drains" | wc -l)
unguarded=$(awk '$1 > $2' "$T/drains" | wc -l)
echo "drains with writes: $drains; with two or more: $twice; writes without their fstat: $unguarded"
check "drains with writes counted ($drains)" [ "$drains" -ge 15 ]
check "no drain writes twice ($twice did)" [ "$twice" = 0 ]
check "every write after an fstat of the segment ($unguarded not)" [ "$unguarded" = 0 ]

echo "test_collector_writes_per_drain: $pass passed, $fail failed"
[ "$fail" = 0 ]
