#!/usr/bin/env bash
# D9_WITH_LIBUV/LIBEVENT/LIBEV/LIBDW/MHD (cmake/dependency_options.cmake): AUTO builds what is
# found, OFF leaves a part out even when its package is installed, ON fails the configuration
# loudly when the package is missing (hidden here by an empty pkg-config search path), and a
# value that is none of these is refused; the fuzz build leaves out the fuzzer of a part that is
# not built. Configuration only: nothing is compiled.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
SRC=$(cd "$SOURCE" && pwd)
mkdir -p "$T/empty-pkgconfig"
configure() { # configure NAME [cmake args...]: output in $T/NAME.log, exit status returned
    local name=$1; shift
    cmake -S "$SRC" -B "$T/$name" -DBUILD_TESTING=OFF "$@" >"$T/$name.log" 2>&1
}

# ON and missing: fails, naming the option and the package to install
if PKG_CONFIG_LIBDIR="$T/empty-pkgconfig" configure on-missing -DD9_WITH_LIBUV=ON; then
    bad "D9_WITH_LIBUV=ON without libuv configured"
else
    ok
    check "the failure names D9_WITH_LIBUV=ON" grep -q "D9_WITH_LIBUV=ON but it is not found" "$T/on-missing.log"
    check "the failure names the package" grep -q "libuv1-dev" "$T/on-missing.log"
fi
# AUTO and missing: configures, saying what is left out
PKG_CONFIG_LIBDIR="$T/empty-pkgconfig" configure auto-missing
check "AUTO without libuv, libevent, libdw, libmicrohttpd configures" [ $? = 0 ]
check "AUTO says the libuv adapter is not built" grep -q "LIBUV not found.*the libuv adapter not built" "$T/auto-missing.log"
# OFF with the package present: configures without the part
check "OFF configures" configure off -DD9_WITH_LIBUV=OFF -DD9_WITH_LIBEV=OFF -DD9_WITH_MHD=OFF
check "OFF says so" grep -q "D9_WITH_LIBEV=OFF: the libev adapter not built" "$T/off.log"
check "OFF: no libuv adapter (no dial9-uv.pc)" [ ! -e "$T/off/dial9-uv.pc" ]
# ON with the package present (the Debian packages the project installs): configures
if pkg-config --exists libuv; then
    check "ON with libuv configures" configure on-present -DD9_WITH_LIBUV=ON
    check "ON: the libuv adapter is built (dial9-uv.pc)" [ -e "$T/on-present/dial9-uv.pc" ]
fi
# A bad value
if configure bad-value -DD9_WITH_LIBDW=maybe; then
    bad "D9_WITH_LIBDW=maybe configured"
else
    ok
    check "a bad value is named" grep -q 'D9_WITH_LIBDW="maybe": expected AUTO, ON or OFF' "$T/bad-value.log"
fi

# The fuzz build without libmicrohttpd (hidden as above): fuzz_serve_request is left out with a
# message, and the list `make fuzz-build` builds (fuzz-targets.txt) names only targets that
# exist (scripts/build-targets.sh stopped at "no target fuzz_serve_request" before)
if command -v clang >/dev/null; then
    PKG_CONFIG_LIBDIR="$T/empty-pkgconfig" configure fuzz-no-mhd -DD9_FUZZ=ON -DCMAKE_C_COMPILER=clang
    check "the fuzz build configures without libmicrohttpd" [ $? = 0 ]
    check "it says fuzz_serve_request is not built, and why" \
        grep -q "fuzz_serve_request not built: it needs libmicrohttpd" "$T/fuzz-no-mhd.log"
    list="$T/fuzz-no-mhd/fuzz-targets.txt"
    check "fuzz-targets.txt written" [ -s "$list" ]
    check "fuzz_serve_request not listed" bash -c "! grep -qx fuzz_serve_request '$list'"
    check "the other fuzzers listed (fuzz_elf)" grep -qx fuzz_elf "$list"
    missing=""
    while read -r t; do
        grep -q "CMakeFiles/$t\.dir/all" "$T/fuzz-no-mhd/CMakeFiles/Makefile2" || missing+=" $t"
    done <"$list"
    check "every listed fuzzer is a target of the build (missing:${missing:- none})" [ -z "$missing" ]
    check "make fuzz-build builds that list" grep -q 'build-targets.sh build-fuzz .*fuzz-targets.txt' "$SRC/Makefile"
fi

echo "cmake_options: $pass passed, $fail failed"
[ "$fail" = 0 ]
