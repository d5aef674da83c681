#!/bin/bash
# The kernel sources as an unprivileged user: run test_source_unprivileged as `nobody` (with a
# trace directory it can write), so perf is limited by perf_event_paranoid and the timer
# fallback, the user-frames-only profile and the refused context-switch stacks are exercised
# for real, and their metadata checked. Needs root (to switch user) and setpriv; skips without.
set -u
BUILD=${D9_BUILD_DIR:?D9_BUILD_DIR is not set}
BIN="$BUILD/test_source_unprivileged"
if [ "$(id -u)" != 0 ]; then echo "SKIP: not root, cannot switch to nobody"; exit 0; fi
if ! command -v setpriv >/dev/null; then echo "SKIP: setpriv not installed"; exit 0; fi
if [ ! -x "$BIN" ]; then echo "FAIL: $BIN not built"; exit 1; fi
if ! id nobody >/dev/null 2>&1; then echo "SKIP: no user nobody"; exit 0; fi
group=$(id -gn nobody)

dir=$(mktemp -d /tmp/d9test-fallback-XXXXXX)
trap 'rm -rf "$dir"' EXIT
chown nobody:"$group" "$dir"
# the binary must be reachable by nobody (a build directory under /root is not)
cp "$BIN" "$dir/test_source_unprivileged"
chmod 755 "$dir" "$dir/test_source_unprivileged"

echo "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
env -i PATH=/usr/bin:/bin DIAL9_TRACE_DIR="$dir/traces" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" TSAN_OPTIONS="${TSAN_OPTIONS:-}" \
    setpriv --reuid=nobody --regid="$group" --clear-groups "$dir/test_source_unprivileged"
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: test_source_unprivileged as nobody exited with $rc"; exit 1; fi
# the files really were written by nobody
owner=$(find "$dir/traces" -name 'trace.*.bin*' -printf '%u\n' | sort -u)
if [ "$owner" != nobody ]; then echo "FAIL: trace files owned by '$owner', expected nobody"; exit 1; fi
echo "PASS"
