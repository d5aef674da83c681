#!/usr/bin/env bash
# Soak the test suite under CPU load, to find tests that fail by timing before users do.
# Not part of `make test`: it takes tens of minutes. Run it before a release, or after touching
# a concurrent test (tests/README.md#soak).
#
#   scripts/soak-tests.sh [-n FULL_RUNS] [-k HOGS] [-r REPEATS] [-j JOBS] [-b BUILD_DIR] [-l LABELS]
#                         [-s SANITIZER_BUILD_DIR]... [-c]
#
# 1. starts K busy-loop processes (CPU hogs) that compete with the tests for the CPUs; with -s,
#    a loop per such dir that runs its test programs one after another (sanitizer processes
#    starting and exiting: their start-up maps and unmaps shadow memory, which stalls a CPU in
#    the kernel the way hogs do not, and is what made the sanitizer-class flakes show); with -c,
#    a loop that rebuilds the library from clean in a scratch build dir (compilers starting),
# 2. runs the whole ctest suite N times with -jJOBS,
# 3. runs the tests labelled LABELS (a ctest label regex, default concurrent|story) R more times,
# 4. stops the hogs and prints every failure (phase, run, test, first failing line).
# Exits 1 if any test failed even once, 0 otherwise. The logs stay in $SOAK_LOG_DIR (a fresh
# directory under /tmp by default) for a look.
set -euo pipefail

RUNS=10 HOGS=2 REPEATS=50 JOBS=2 BUILD=build LABELS='concurrent|story' CHURN_DIRS=() COMPILE=0
usage() { sed -n '5,7p' "$0" | sed 's/^# *//' >&2; exit 2; }
while getopts "n:k:r:j:b:l:s:ch" opt; do
  case $opt in
    n) RUNS=$OPTARG ;; k) HOGS=$OPTARG ;; r) REPEATS=$OPTARG ;; j) JOBS=$OPTARG ;;
    b) BUILD=$OPTARG ;; l) LABELS=$OPTARG ;; s) CHURN_DIRS+=("$OPTARG") ;; c) COMPILE=1 ;;
    *) usage ;;
  esac
done
for v in RUNS HOGS REPEATS JOBS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "soak-tests: $v: expected a number, got '${!v}'" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
  echo "soak-tests: $BUILD is not a configured build (make build, or -b DIR)" >&2
  exit 2
fi
for d in "${CHURN_DIRS[@]}"; do
  [ -d "$d" ] || { echo "soak-tests: -s $d: no such build dir" >&2; exit 2; }
  n=$(find "$d" -maxdepth 1 -name 'test_*' -type f -executable | wc -l)
  [ "$n" -gt 0 ] || { echo "soak-tests: -s $d: no test programs built there" >&2; exit 2; }
done
# the soak tests what is in the tree now: all of it for full runs, else what the labelled tests
# run (a sanitizer build dir, as `make tsan` builds it, holds only those)
if [ "$RUNS" -gt 0 ]; then
  cmake --build "$BUILD" -j"$JOBS" >/dev/null
else
  scripts/test-targets.sh --build "$JOBS" "$BUILD" -L "$LABELS" >/dev/null
fi
BUILD=$(cd "$BUILD" && pwd)
SOURCE=$(pwd)
LOGS=${SOAK_LOG_DIR:-$(mktemp -d /tmp/dial9-soak.XXXXXX)}
mkdir -p "$LOGS"
FAILURES="$LOGS/failures.tsv" # phase <tab> run <tab> test <tab> first failing line
: >"$FAILURES"

hog_pids=() # a negative id is a process group's (a loop and the program it runs)
stop_hogs() {
  for p in "${hog_pids[@]}"; do kill -- "$p" 2>/dev/null || true; done
  for p in "${hog_pids[@]}"; do wait "${p#-}" 2>/dev/null || true; done
  hog_pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((h = 0; h < HOGS; h++)); do
  (trap - EXIT INT TERM; while :; do :; done) &
  hog_pids+=($!)
done
# A churn loop: the build dir's test programs, each run to its end (or 60 s), in a scratch
# directory, their output and exit status ignored (they are load here, not tests). The loop
# runs in its own process group so that stopping it ends the program it is running too
# (timeout --foreground: by default timeout moves to a group of its own, out of reach).
for d in "${CHURN_DIRS[@]}"; do
  dir=$(cd "$d" && pwd)
  scratch="$LOGS/churn-$(basename "$dir")"
  mkdir -p "$scratch"
  set -m
  (trap - EXIT INT TERM
   cd "$scratch"
   export D9_BUILD_DIR="$dir" D9_SOURCE_DIR="$SOURCE" D9_SHARED_DIR="$SOURCE/../shared" \
     AWS_EC2_METADATA_DISABLED=true ASAN_OPTIONS=detect_leaks=1 TSAN_OPTIONS=halt_on_error=1
   while :; do
     for prog in "$dir"/test_*; do
       [ -f "$prog" ] && [ -x "$prog" ] || continue
       timeout --foreground 60 "$prog" >/dev/null 2>&1 </dev/null || true
     done
   done) &
  set +m
  hog_pids+=("-$!")
done
# The compile loop: the library rebuilt from clean, one compiler at a time, in its own build
# dir (configured once; no compiler cache, so every file compiles).
if [ "$COMPILE" = 1 ]; then
  cmake -S "$SOURCE" -B "$LOGS/compile-build" -DCMAKE_C_COMPILER_LAUNCHER= >/dev/null
  set -m
  (trap - EXIT INT TERM
   while :; do cmake --build "$LOGS/compile-build" --target dial9_objs --clean-first -j1 >/dev/null 2>&1 || true; done) &
  set +m
  hog_pids+=("-$!")
fi

# Record the failed tests of one ctest log: ctest --output-on-failure prints a failed test's
# output right after its "***Failed" line; the first line that looks like a failure
# (a CHECK, an assertion, a sanitizer report, "FAIL") names it, else ctest's verdict and the
# output's last line.
record_failures() { # phase run log
  awk -v phase="$1" -v run="$2" -v OFS='\t' '
    function flush() {
      if (first == "") first = weak
      if (name != "") print phase, run, name, (first != "" ? first : status (last != "" ? "; last output: " last : ""))
      name = ""; first = ""; weak = ""; last = ""
    }
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
      flush()
      if ($0 ~ /\*\*\*|Not Run|Timeout|Exception/) {
        name = $0; sub(/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /, "", name); sub(/ .*/, "", name)
        status = $0; sub(/.*\*\*\*/, "", status); sub(/ +[0-9.]+ sec$/, "", status)
        status = "ctest: " status
      }
      next
    }
    /^ *Start +[0-9]+: / || /^[0-9]+% tests passed/ { flush(); next }
    name != "" {
      if (first == "" && $0 ~ /CHECK failed|Assertion|Sanitizer|FAIL|not ok|Traceback/) first = $0
      if (weak == "" && $0 ~ /[Ff]ailed|[Ee]rror/ && $0 !~ / 0 (errors|failed)/) weak = $0
      if ($0 != "") last = $0
    }
    END { flush() }
  ' "$3" >>"$FAILURES"
}

run_ctest() { # phase run of log ctest-args...
  local phase=$1 run=$2 of=$3 log=$4
  shift 4
  local rc=0
  (cd "$BUILD" && ctest --output-on-failure -j"$JOBS" "$@") >"$log" 2>&1 || rc=$?
  record_failures "$phase" "$run" "$log"
  # a ctest failure that names no test (a crash of ctest itself, no tests found) counts too
  if [ $rc -ne 0 ] && ! grep -q "^$phase	$run	" "$FAILURES"; then
    printf '%s\t%s\t%s\t%s\n' "$phase" "$run" "(ctest)" "exit $rc, see $log" >>"$FAILURES"
  fi
  local n
  n=$(grep -c "^$phase	$run	" "$FAILURES" || true)
  printf 'soak: %-8s run %3d/%d: %s (%s)\n' "$phase" "$run" "$of" \
    "$([ "$n" -eq 0 ] && echo ok || echo "$n failed")" "$(grep -o 'Total Test time.*' "$log" || echo no total)"
}

load="$HOGS CPU hogs"
for d in "${CHURN_DIRS[@]}"; do load+=", $d's test programs in a loop"; done
[ "$COMPILE" = 0 ] || load+=", a compile loop"
echo "soak: $RUNS full runs and $REPEATS runs of labels '$LABELS', ctest -j$JOBS, $load; logs in $LOGS"
start=$(date +%s)
for ((i = 1; i <= RUNS; i++)); do
  run_ctest full "$i" "$RUNS" "$LOGS/full-$i.log"
done
for ((i = 1; i <= REPEATS; i++)); do
  run_ctest labelled "$i" "$REPEATS" "$LOGS/labelled-$i.log" -L "$LABELS"
done
stop_hogs

nfail=$(wc -l <"$FAILURES")
echo
echo "soak: $RUNS full runs + $REPEATS labelled runs in $(( $(date +%s) - start )) s, $load: $nfail failures"
if [ "$nfail" -gt 0 ]; then
  echo "failures by test:"
  cut -f3 "$FAILURES" | sort | uniq -c | sort -rn | sed 's/^/  /'
  echo "every failure (phase, run, test, first failing line):"
  sed 's/^/  /' "$FAILURES"
  echo "logs: $LOGS"
  exit 1
fi
