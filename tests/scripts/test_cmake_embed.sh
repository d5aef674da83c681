#!/usr/bin/env bash
# dial9 embedded in another CMake project with add_subdirectory: it configures and builds from
# there (paths from PROJECT_SOURCE_DIR, not the outer project's), gives the same dial9::
# targets as find_package, adds none of its tests to the outer project, and the programs record.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CONSUMER="$SOURCE/tests/scripts/consumer"
[ -x "$DIAL9" ] || { echo "test_cmake_embed: $DIAL9 not built"; exit 1; }
SRC=$(cd "$SOURCE" && pwd)

# Built without sanitizers whatever $BUILD uses: D9_SANITIZE's flags stay on dial9's own
# targets (as every dial9 flag does), so the outer programs would lack the runtime.
with_uv=OFF
[ -f "$BUILD/libdial9-uv.so" ] && with_uv=ON

# D9_WERROR=ON and the compile commands written: dial9's flags must reach dial9's own files
# (the positive control) and none of the outer project's (they are dial9_build_flags, linked
# PRIVATE to dial9's targets, not directory-wide or PUBLIC).
if cmake -S "$CONSUMER" -B "$T/outer" -DD9_CONSUME=add_subdirectory -DD9_SOURCE="$SRC" -DBUILD_TESTING=ON \
        -DD9_WITH_UV_APP=$with_uv -DD9_WERROR=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$T/configure.log" 2>&1; then
    ok
    flags_check() { # flags_check FILE_SUFFIX: the dial9 build flags in that file's compile command
        python3 - "$T/outer/compile_commands.json" "$1" <<'PY'
import json, sys
commands = [e["command"] for e in json.load(open(sys.argv[1])) if e["file"].endswith(sys.argv[2])]
dial9_flags = ["-Werror", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes",
               "-fno-omit-frame-pointer", "-D_GNU_SOURCE"]
if not commands: sys.exit("no compile command for " + sys.argv[2])
print(" ".join(f for f in dial9_flags if any(f in c.split() for c in commands)))
PY
    }
    own=$(flags_check /src/core/recorder.c)
    check "dial9's own files get its flags ($own)" grep -q -- "-Werror" <<<"$own"
    outer=$(flags_check /consumer/app.c)
    check "the outer project's app.c gets none of dial9's flags (${outer:-none})" [ -z "$outer" ]
    targets=(app app_static)
    [ $with_uv = ON ] && targets+=(uv_app)
    if cmake --build "$T/outer" -j2 --target "${targets[@]}" >"$T/build.log" 2>&1; then
        ok
        for app in "${targets[@]}"; do
            run=$(LD_LIBRARY_PATH="$T/outer/dial9" "$T/outer/$app" "$T/traces-$app")
            n=$("$DIAL9" stats --json "$run" | python3 -c 'import json,sys; print(json.load(sys.stdin)["by_name"].get("PollStartEvent",0))')
            check "$app (embedded) records polls ($n)" [ "$n" -ge 5 ]
        done
    else
        bad "building the embedded consumer: $(tail -20 "$T/build.log")"
    fi
    (cd "$T/outer" && ctest -N) >"$T/ctest.log" 2>&1
    check "no dial9 test in the outer project's ctest" grep -q "Total Tests: 0" "$T/ctest.log"
else
    bad "configuring with add_subdirectory: $(tail -20 "$T/configure.log")"
fi

echo "cmake_embed: $pass passed, $fail failed"
[ "$fail" = 0 ]
