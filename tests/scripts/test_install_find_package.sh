#!/usr/bin/env bash
# `cmake --install` gives a CMake package: a project with find_package(dial9 X.Y) builds against
# dial9::dial9, dial9::dial9_static and the loop adapters (dial9::uv), and its programs record;
# the version file refuses another major version (docs/abi.md). The adapters' pkg-config files
# (dial9-uv.pc, ...) build the same libuv program with `pkg-config --libs dial9-uv libuv`.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CONSUMER="$SOURCE/tests/scripts/consumer"
[ -x "$DIAL9" ] || { echo "test_install_find_package: $DIAL9 not built"; exit 1; }

polls() { # polls RUN_DIR: PollStartEvent count
    "$DIAL9" stats --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["by_name"].get("PollStartEvent",0))'
}
version_part() { sed -n "s/^#define DIAL9_VERSION_$1 \([0-9]*\)$/\1/p" "$SOURCE/include/dial9/version.h"; }
major=$(version_part MAJOR)
minor=$(version_part MINOR)

prefix="$T/prefix"
cmake --install "$BUILD" --prefix "$prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }
check "dial9Config.cmake installed" [ -f "$prefix/lib/cmake/dial9/dial9Config.cmake" ]
check "dial9ConfigVersion.cmake installed" [ -f "$prefix/lib/cmake/dial9/dial9ConfigVersion.cmake" ]

# A sanitizer build installs an instrumented library: the programs need the same runtime.
san=$(sed -n 's/^D9_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt")
san_flags=()
[ -n "$san" ] && san_flags=(-DCMAKE_C_FLAGS="-fsanitize=$san" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$san")
with_uv=OFF
[ -f "$prefix/lib/pkgconfig/dial9-uv.pc" ] && with_uv=ON
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- find_package(dial9 MAJOR.MINOR) ----
if cmake -S "$CONSUMER" -B "$T/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DD9_WANT_VERSION="$major.$minor" \
        -DD9_WITH_UV_APP=$with_uv "${san_flags[@]}" >"$T/configure.log" 2>&1 &&
    cmake --build "$T/consumer" >"$T/build.log" 2>&1; then
    ok
    check "the consumer found this version" grep -q "found dial9 $major.$minor" "$T/configure.log"
    for app in app app_static; do
        run=$("$T/consumer/$app" "$T/traces-$app")
        check "$app (find_package) records 100 polls" [ "$(polls "$run")" = 100 ]
    done
    if [ $with_uv = ON ]; then
        run=$("$T/consumer/uv_app" "$T/traces-uv")
        check "uv_app (dial9::uv) records its timer callbacks" [ "$(polls "$run")" -ge 5 ]
    fi
else
    bad "find_package consumer: $(tail -20 "$T/configure.log" "$T/build.log" 2>/dev/null)"
fi

# ---- another major version is refused ----
expect_rc 1 "find_package(dial9 $((major + 1)).0)" cmake -S "$CONSUMER" -B "$T/consumer-next" \
    -DCMAKE_PREFIX_PATH="$prefix" -DD9_WANT_VERSION="$((major + 1)).0"
check "the refusal names the version found" grep -q "$major.$minor" "$T/err"

# ---- pkg-config files of the adapters ----
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
for a in uv event ev; do
    if [ -f "$BUILD/libdial9-$a.so" ]; then
        check "dial9-$a.pc is usable" pkg-config --exists --print-errors "dial9-$a = $major.$minor.$(version_part PATCH)"
    fi
done
if [ $with_uv = ON ]; then
    # shellcheck disable=SC2046 # word splitting of the flags is wanted
    if cc -o "$T/uv_app_pc" "$CONSUMER/uv_app.c" $(pkg-config --cflags --libs dial9-uv libuv) ${san:+-fsanitize=$san} \
            2>"$T/cc.err"; then
        run=$("$T/uv_app_pc" "$T/traces-uv-pc")
        check "uv_app (pkg-config dial9-uv) records its timer callbacks" [ "$(polls "$run")" -ge 5 ]
    else
        bad "cc with pkg-config dial9-uv libuv: $(cat "$T/cc.err")"
    fi
fi

echo "install_find_package: $pass passed, $fail failed"
[ "$fail" = 0 ]
