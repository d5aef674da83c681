#!/usr/bin/env bash
# Run every libFuzzer target in BUILD_DIR for SECONDS each, seeded from tests/fuzz/corpus/<name>.
set -euo pipefail
BUILD_DIR=${1:-build-fuzz}; SECONDS_EACH=${2:-30}
cd "$(dirname "$0")/.."
shopt -s nullglob
found=0
for f in "$BUILD_DIR"/fuzz_*; do
  [ -x "$f" ] || continue
  found=1
  name=$(basename "$f")
  work=$(mktemp -d)
  seeds=()
  [ -d "tests/fuzz/corpus/$name" ] && seeds+=("tests/fuzz/corpus/$name")
  echo "fuzz: $name for ${SECONDS_EACH}s"
  "$f" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 "$work" "${seeds[@]}" 2>&1 | tail -n 12
  rm -rf "$work"
done
[ "$found" = 1 ] || echo "fuzz: no targets built"
