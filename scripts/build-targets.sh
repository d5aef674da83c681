#!/usr/bin/env bash
# build-targets.sh BUILD_DIR JOBS TARGET...: build these targets of a configured BUILD_DIR, JOBS
# at a time across all of them. With Makefiles, `cmake --build --target A B ...` builds one goal
# after the other (the top Makefile is .NOTPARALLEL), and a test or fuzz program is one file and
# a link, so a CPU would sit idle: one make over the goals' "all" rules shares the jobs and
# builds each library they need once. Ninja builds the targets side by side itself.
set -euo pipefail
build=${1:?usage: build-targets.sh BUILD_DIR JOBS TARGET...}; jobs=${2:?JOBS}; shift 2
[ "$#" -gt 0 ] || { echo "build-targets.sh: no target"; exit 1; }
if [ -f "$build/CMakeFiles/Makefile2" ]; then
    goals=()
    for t in "$@"; do
        goal=$(grep -o -m1 "^\([^ :]*/\)\{0,1\}CMakeFiles/$t\.dir/all" "$build/CMakeFiles/Makefile2") ||
            { echo "build-targets.sh: no target $t in $build"; exit 1; }
        goals+=("$goal")
    done
    exec make --no-print-directory -C "$build" -f CMakeFiles/Makefile2 -j"$jobs" "${goals[@]}"
fi
exec cmake --build "$build" -j"$jobs" --target "$@"
