#!/usr/bin/env bash
# `make test`: everything, in the order that fails fastest. Exits nonzero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
START=$SECONDS
# each step says when it started (seconds into the run), so the slow steps are plain in CI's log
step() { printf '\n==== %s (at %d s) ====\n' "$*" "$((SECONDS - START))"; }

step "build (warnings are errors)"
make --no-print-directory build
# The sanitizer and fuzz builds run beside the plain tests, at the lowest priority: the tests
# wait on servers, proxies, sleeps and timeouts much of the time, and the builds take that idle
# CPU, not the tests' (nice 19 gets ~1.5 % of a CPU a test wants). Their log is printed below.
BG_LOG=$(mktemp)
BG_AT=$((SECONDS - START))
# set -m: its own process group, ended whole if the run stops early; not setsid: a new session
# is a new scheduler autogroup (Linux, sched_autogroup_enabled), which competes with ours as
# an equal whatever its nice value
set -m
nice -n 19 make --no-print-directory asan-build tsan-build fuzz-build >"$BG_LOG" 2>&1 &
BG_PID=$!
set +m
trap 'kill -- -"$BG_PID" 2>/dev/null; rm -f "$BG_LOG"' EXIT
step "unit and integration tests (the sanitizer and fuzz builds beside them, nice 19)"
# the slow S3 integrations (label sanitizer_pass) run once, in the ASan pass below
(cd build && ctest --output-on-failure -j"$JOBS" -LE sanitizer_pass)
step "sanitizer and fuzz builds (started beside the tests at $BG_AT s)"
bg_status=0
wait "$BG_PID" || bg_status=$?
trap - EXIT # its group is gone: nothing left to end
cat "$BG_LOG"
rm -f "$BG_LOG"
[ "$bg_status" = 0 ] || { echo "run-tests: the sanitizer or fuzz build failed (exit $bg_status)"; exit 1; }
step "AddressSanitizer + UndefinedBehaviorSanitizer"
make --no-print-directory asan
step "ThreadSanitizer (concurrent tests)"
make --no-print-directory tsan
step "fuzzing (short)"
# 10 s per target here (13 targets, 2 at a time: ~65 s of fuzzing, ~65 s less than 20 s each);
# the seeds all run and each target still explores; `make fuzz` alone keeps 30 s
FUZZ_SECONDS=${FUZZ_SECONDS:-10} make --no-print-directory fuzz
if [ -x build/bench/d9_bench ]; then
  step "benchmark (short mode)"
  build/bench/d9_bench --short
fi
if [ -x build/bench/d9_bench ]; then
  step "counted cost per request (short mode: the table's form only)"
  python3 bench/e2e/counted_cost.py --build build --short
fi
if [ -x build/bench/fleet/fleet_gen ] && command -v node >/dev/null; then
  step "fleet tables benchmark (short mode: numbers, no assertion)"
  python3 bench/fleet/fleet_bench.py --build build --short
fi
if [ -x build/dial9 ] && [ -f build/libdial9-preload.so ]; then
  step "start-up cost (short mode)"
  python3 bench/startup_bench.py build --short
fi
if [ -f viewer/package.json ]; then
  step "viewer tests"
  scripts/test-viewer.sh
fi
step "all tests passed"
