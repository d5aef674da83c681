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
step "unit and integration tests"
# the slow S3 integrations (label sanitizer_pass) run once, in the ASan pass below
(cd build && ctest --output-on-failure -j"$JOBS" -LE sanitizer_pass)
step "AddressSanitizer + UndefinedBehaviorSanitizer"
make --no-print-directory asan
step "ThreadSanitizer (concurrent tests)"
make --no-print-directory tsan
step "fuzzing (short)"
FUZZ_SECONDS=${FUZZ_SECONDS:-20} make --no-print-directory fuzz
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
