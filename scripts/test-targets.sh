#!/usr/bin/env bash
# test-targets.sh [--build JOBS] BUILD_DIR [CTEST_ARGS...]: the build targets that the tests ctest
# would select with CTEST_ARGS (e.g. -L concurrent) run: every program in a test's command line,
# and the test's own name (ctest leaves out the command of a program not built yet; unit tests
# are named after their program), that is a target of BUILD_DIR, and the dial9 CLI (tests find it
# through D9_BUILD_DIR). A program left out is not silent: ctest reports its test as not run, a
# failure. With --build JOBS, builds them: a sanitizer pass that runs a few tests builds these
# only, not the whole tree. BUILD_DIR must be configured.
set -euo pipefail
jobs=
if [ "${1:-}" = --build ]; then jobs=${2:?--build JOBS}; shift 2; fi
build=${1:?usage: test-targets.sh [--build JOBS] BUILD_DIR [CTEST_ARGS...]}; shift
known=$(cmake --build "$build" --target help | sed -n -e 's/^\.\.\. \([^ ]*\).*/\1/p' -e 's/^\([^ :]*\): .*/\1/p') # Makefiles, Ninja
targets=$( (cd "$build" && ctest --show-only=json-v1 "$@") | python3 -c '
import json, os, sys
names = {"dial9"}
for test in json.load(sys.stdin).get("tests", []):
    names.add(test["name"])
    for arg in test.get("command", []):
        names.add(os.path.basename(arg))
print("\n".join(sorted(names)))
' | grep -Fxf <(printf '%s\n' "$known"))
[ -n "$jobs" ] || { printf '%s\n' "$targets"; exit 0; }

if [ -f "$build/CMakeFiles/Makefile2" ]; then
    # Makefiles: `cmake --build --target A B ...` builds one goal after the other (the top
    # Makefile is .NOTPARALLEL), and most goals here are one file and a link, so a CPU would
    # sit idle. One make over the goals' "all" rules shares the jobs and builds each library once.
    goals=()
    for t in $targets; do
        goal=$(grep -o -m1 "^\([^ :]*/\)\{0,1\}CMakeFiles/$t\.dir/all" "$build/CMakeFiles/Makefile2") ||
            { echo "test-targets.sh: no rule for $t in $build/CMakeFiles/Makefile2"; exit 1; }
        goals+=("$goal")
    done
    exec make --no-print-directory -C "$build" -f CMakeFiles/Makefile2 -j"$jobs" "${goals[@]}"
fi
exec cmake --build "$build" -j"$jobs" --target $targets # Ninja builds the targets side by side
