#!/usr/bin/env bash
# test-targets.sh [--build JOBS] BUILD_DIR [CTEST_ARGS...]: the build targets that the tests ctest
# would select with CTEST_ARGS (e.g. -L concurrent) run: every program in a test's command line,
# and the test's own name (ctest leaves out the command of a program not built yet; unit tests
# are named after their program), that is a target of BUILD_DIR, and the dial9 CLI (tests find it
# through D9_BUILD_DIR). A program left out is not silent: ctest reports its test as not run, a
# failure. With --build JOBS, builds them (build-targets.sh): a sanitizer pass that runs a few
# tests builds these only, not the whole tree. BUILD_DIR must be configured.
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

exec "$(dirname "$0")/build-targets.sh" "$build" "$jobs" $targets
