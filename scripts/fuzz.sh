#!/usr/bin/env bash
# Run every libFuzzer target in BUILD_DIR (or those FUZZ_TARGETS names) for SECONDS each, seeded
# from tests/fuzz/corpus/<name>.
# The targets run FUZZ_JOBS at a time (default: nproc): each is single-threaded, so on 2 CPUs
# eleven 20 s targets take ~120 s instead of ~230 s, every one still fuzzed its full SECONDS.
# Each target's summary is printed whole when it ends; a crash fails the run once all are done
# (the others keep their time), with the report's tail and the reproducer libFuzzer saved.
set -euo pipefail
BUILD_DIR=${1:-build-fuzz}; SECONDS_EACH=${2:-30}
JOBS=${FUZZ_JOBS:-$(nproc)}
cd "$(dirname "$0")/.."
shopt -s nullglob
targets=()
if [ -n "${FUZZ_TARGETS:-}" ]; then # some targets only: a longer soak of one, one at a time
  for name in $FUZZ_TARGETS; do
    [ -x "$BUILD_DIR/$name" ] || { echo "fuzz: no target $BUILD_DIR/$name"; exit 1; }
    targets+=("$BUILD_DIR/$name")
  done
else
  for f in "$BUILD_DIR"/fuzz_*; do [ -x "$f" ] && targets+=("$f"); done
fi
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz: no targets built"; exit 0; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# fuzz_one TARGET: fuzz it into its own working corpus; the log and the exit status in $out
fuzz_one() {
  local f=$1 name work rc=0
  name=$(basename "$f")
  work="$out/$name.corpus"
  mkdir -p "$work"
  local seeds=()
  [ -d "tests/fuzz/corpus/$name" ] && seeds+=("tests/fuzz/corpus/$name")
  "$f" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 "$work" "${seeds[@]}" >"$out/$name.log" 2>&1 || rc=$?
  rm -rf "$work"
  echo "$rc" >"$out/$name.rc"
  { echo "fuzz: $name for ${SECONDS_EACH}s"
    if [ "$rc" = 0 ]; then tail -n 12 "$out/$name.log"
    else echo "fuzz: $name FAILED (exit $rc)"; tail -n 60 "$out/$name.log"; fi
  } | flock "$out/print.lock" cat # one summary at a time, never interleaved
}

running=0
for f in "${targets[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$f" &
  running=$((running + 1))
done
wait

failed=()
for f in "${targets[@]}"; do
  name=$(basename "$f")
  [ "$(cat "$out/$name.rc" 2>/dev/null)" = 0 ] || failed+=("$name")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${SECONDS_EACH}s each, $JOBS at a time: no failure"
