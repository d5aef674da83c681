#!/usr/bin/env bash
# `dial9 run` on a disk that fills up during the run and never frees up again (a 3 MiB tmpfs
# in a private mount namespace; root only, skipped otherwise): the drop accounting still
# reaches the trace (the recorder's final reserve), and the run's summary and `dial9 stats`
# both report it.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "test_run_disk_full: $DIAL9 not built"; exit 1; }
# A sanitizer build's shim cannot be preloaded into a plain program (python3 here): plain builds only.
# ldd read whole before grep: grep -q stops at the first match, and under pipefail the
# SIGPIPE that ldd then gets would make the test think the shim is a plain one
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$(dirname "$DIAL9")/libdial9-preload.so" 2>/dev/null)"; then
    echo "test_run_disk_full: SKIP: the preload shim is built with a sanitizer"
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v python3 >/dev/null || ! unshare -m true 2>/dev/null; then
    echo "test_run_disk_full: SKIP: needs root, python3 and mount namespaces"
    exit 0
fi

# Inside the namespace: mount, run, report. The filler is capped (4 MiB) and lives only on the
# tmpfs, so nothing can fill any other disk.
cat >"$T/inside.sh" <<'INSIDE'
set -u
M=$1 DIAL9=$2 OUT=$3
mount --make-rprivate / && mount -t tmpfs -o size=3m d9-run-full "$M" || exit 3
# One drain at exit (DIAL9_FLUSH_MS=60000): the whole run in one write, bigger than any
# slack left in the last page of a file, so it cannot land on the full disk.
# The recorder starts on a thread of its own: the disk fills only once it has started, i.e.
# once its run directory holds the final reserve (created and allocated right after the first
# segment), or a loaded host would fill it first and leave no run at all.
FILLER="$M/filler" TRACES="$M/traces" "$DIAL9" run -d "$M/traces" -e DIAL9_FLUSH_MS=60000 -- python3 -c '
import select, os, glob, time
ep = select.epoll(); r, w = os.pipe(); ep.register(r, select.EPOLLIN)
path = os.environ["FILLER"]
assert path.endswith("/filler")
def started():
    return any(os.path.getsize(p) > 0 for p in glob.glob(os.environ["TRACES"] + "/*/.final-accounting"))
deadline = time.monotonic() + 120  # a safety net only
while not started():
    assert time.monotonic() < deadline, "the recorder did not start within 120 s"
    ep.poll(0.001)
for _ in range(200): ep.poll(0.0001)
with open(path, "wb") as f:  # the disk is full from here on, to the end
    try:
        for _ in range(64): f.write(b"\0" * 65536); f.flush()
    except OSError: pass
for _ in range(3000): ep.poll(0.0001)  # parks the recorder cannot write any more
' >"$OUT/run.out" 2>"$OUT/run.err"
echo "rc=$?" >>"$OUT/run.out"
"$DIAL9" stats --json "$M/traces" >"$OUT/stats.json" 2>"$OUT/stats.err"
ls -a "$M/traces"/*/ >"$OUT/files"
# A disk full from the start (the first run's reserve is freed: fill that too): a second run
# can leave no trace, and must say why.
head -c 4M /dev/zero >"$M/filler2" 2>/dev/null
"$DIAL9" run -d "$M/traces2" -- python3 -c 'pass' >"$OUT/run2.out" 2>"$OUT/run2.err"
umount -l "$M"
INSIDE
mkdir -p "$T/mnt"
unshare -m bash "$T/inside.sh" "$T/mnt" "$(readlink -f "$DIAL9")" "$T"
check "the program ran" grep -q "rc=0" "$T/run.out"
summary=$(grep "^dial9 run: trace in" "$T/run.err")
run_dropped=$(sed -n 's/.* \([0-9][0-9]*\) dropped.*/\1/p' <<<"$summary")
stats_dropped=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drops"]["total"])' "$T/stats.json")
write_errors=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drops"]["by_reason"].get("write_error", 0))' "$T/stats.json")
echo "test_run_disk_full: summary says ${run_dropped:-?} dropped, stats ${stats_dropped:-?} (write_error ${write_errors:-?})"
check "the summary reports drops ($summary)" [ "${run_dropped:-0}" -gt 0 ]
check "stats reports the same drops" [ "${stats_dropped:-x}" = "${run_dropped:-y}" ]
check "write errors are among them" [ "${write_errors:-0}" -gt 0 ]
check "no reserve left behind" bash -c "! grep -q final-accounting '$T/files'"
check "a run on the full disk says why it left no trace ($(tail -n1 "$T/run2.err"))" \
    grep -q "no trace: DIAL9_TRACE_DIR=.*cannot write a file in it: No space left on device" "$T/run2.err"

echo "test_run_disk_full: $pass passed, $fail failed"
[ "$fail" = 0 ]
