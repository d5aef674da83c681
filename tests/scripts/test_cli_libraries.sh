#!/usr/bin/env bash
# `dial9` needs libc alone: `dial9 run` execs it before the program it records, and every
# library it needs is loaded first (libz + libzstd + libm cost ~0.25 ms of CPU a start).
# zlib and libzstd are loaded with dlopen at the first compressed file (src/common/
# libz_loader.c, libzstd_loader.c). So:
#   - dial9's dynamic section needs none of libz, libzstd, libm (nor does dial9-serve's);
#   - with a broken libz.so.1 / libzstd.so.1 first in LD_LIBRARY_PATH (an empty file: dlopen
#     fails; the other library under its name: a function is missing) dial9 still starts and
#     reads plain traces, and a .bin.gz / .bin.zst / pprof fails with a message that names the
#     library and its Debian package.
# A sanitizer build links libdw (CMakeLists.txt: D9_LIBDW_LINKED), which loads zlib at start:
# there the broken zlib cannot be tried, the broken libzstd still is.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
command -v readelf >/dev/null || { echo "test_cli_libraries: readelf missing (binutils)"; exit 1; }
VEC="$SOURCE/tests/vectors/runtime.bin"

# needed FILE: its DT_NEEDED names, one a line
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }

# ---- the dynamic sections ----
needed "$DIAL9" >"$T/needed"
check "dial9 needs libraries ($(tr '\n' ' ' <"$T/needed"))" [ -s "$T/needed" ]
allowed='libc\.so\.6|ld-linux[-.a-z0-9_]*\.so\.[0-9]+'
SAN=0
if grep -qE '^lib(a|ub|t)san\.so\.' "$T/needed"; then
    SAN=1
    allowed="$allowed|lib(a|ub|t)san\.so\.[0-9]+|libdw\.so\.1|libelf\.so\.1"
fi
others=$(grep -Ev "^($allowed)\$" "$T/needed" | tr '\n' ' ')
check "dial9 needs libc only, not: $others" [ -z "$others" ]
if [ -x "$BUILD/dial9-serve" ]; then
    # libmicrohttpd, the server's own, and libc: no zlib, libzstd or libm
    others=$(needed "$BUILD/dial9-serve" | grep -E '^lib(z|zstd|m)\.so\.' | tr '\n' ' ')
    check "dial9-serve needs no zlib, libzstd, libm: $others" [ -z "$others" ]
fi

# ---- the libraries broken ----
gzip -c "$VEC" >"$T/t.bin.gz"
HAVE_ZSTD=0
command -v zstd >/dev/null && zstd -q -c "$VEC" >"$T/t.bin.zst" && HAVE_ZSTD=1
lib_of() { ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64|AArch64/ {print $NF; exit}'; } # 64-bit
at_start=$(ldd "$DIAL9" 2>/dev/null)

# the trace files decode with the real libraries (the inputs are good)
expect_rc 0 "gzip trace with zlib" "$DIAL9" stats "$T/t.bin.gz"
check "gzip trace: ok" grep -q "t.bin.gz: ok (gzip)" "$T/out"
if [ "$HAVE_ZSTD" = 1 ]; then
    expect_rc 0 "zstd trace with libzstd" "$DIAL9" stats "$T/t.bin.zst"
fi

# says_why "what" PATTERN: the last command's stderr names the library, and no "out of memory"
says_why() {
    if grep -qF -- "$2" "$T/err"; then ok; else bad "$1: no '$2' in: $(head -c 600 "$T/err")"; fi
    if grep -q "out of memory" "$T/err"; then bad "$1: 'out of memory' said"; else ok; fi
}

# broken NAME OTHER: $T/empty-NAME holds an empty NAME, $T/swapped-NAME the library OTHER
# under the name NAME. Returns 1 when NAME is loaded at start anyway (a failure, but in a
# sanitizer build, where libdw loads zlib).
broken() {
    if grep -q "^[[:space:]]*$1 " <<<"$at_start"; then
        if [ "$SAN" = 1 ]; then
            echo "test_cli_libraries: note: $1 is loaded at start (by libdw, linked in a sanitizer build): not tried broken"
        else
            bad "$1 is loaded at start: $(grep "$1" <<<"$at_start")"
        fi
        return 1
    fi
    mkdir -p "$T/empty-$1" "$T/swapped-$1"
    : >"$T/empty-$1/$1"
    local other
    other=$(lib_of "$2")
    [ -n "$other" ] && cp "$other" "$T/swapped-$1/$1"
    return 0
}

if broken libz.so.1 libzstd.so.1; then
    E="$T/empty-libz.so.1" S="$T/swapped-libz.so.1"
    # the old dial9 did not start at all (the dynamic loader refused it); this one starts and
    # reads what is plain
    expect_rc 0 "a plain trace without zlib" env LD_LIBRARY_PATH="$E" "$DIAL9" stats "$VEC"
    check "plain trace: ok" grep -q "runtime.bin: ok" "$T/out"
    expect_rc 0 "--version without zlib" env LD_LIBRARY_PATH="$E" "$DIAL9" --version
    expect_rc 1 "gzip trace, libz.so.1 not loadable" env LD_LIBRARY_PATH="$E" "$DIAL9" stats "$T/t.bin.gz"
    says_why "stats .bin.gz" "t.bin.gz: error at offset 0 (before any stream header): gzip-compressed data: cannot load libz.so.1 (install zlib1g)"
    expect_rc 1 "analyze of a gzip trace, libz.so.1 not loadable" \
        env LD_LIBRARY_PATH="$E" "$DIAL9" analyze "$T/t.bin.gz"
    says_why "analyze .bin.gz" "cannot load libz.so.1 (install zlib1g)"
    cp "$T/t.bin.gz" "$T/s.bin.gz"
    expect_rc 1 "symbolize of a gzip trace, libz.so.1 not loadable" \
        env LD_LIBRARY_PATH="$E" "$DIAL9" symbolize -q "$T/s.bin.gz"
    says_why "symbolize .bin.gz" "not symbolized: error at offset 0 (before any stream header): gzip-compressed data: cannot load libz.so.1 (install zlib1g)"
    check "the .bin.gz is left as it was" cmp -s "$T/t.bin.gz" "$T/s.bin.gz"
    expect_rc 1 "pprof, libz.so.1 not loadable" \
        env LD_LIBRARY_PATH="$E" "$DIAL9" export -f pprof -o "$T/p.pb.gz" "$VEC"
    says_why "export pprof" "pprof profiles are gzip-compressed: cannot load libz.so.1 (install zlib1g)"
    check "no profile written" [ ! -e "$T/p.pb.gz" ]
    if [ -e "$S/libz.so.1" ]; then
        expect_rc 1 "gzip trace, libz.so.1 without zlib's functions" \
            env LD_LIBRARY_PATH="$S" "$DIAL9" stats "$T/t.bin.gz"
        says_why "stats .bin.gz, swapped" "gzip-compressed data: libz.so.1 lacks deflateInit2_ (install zlib1g)"
    fi
fi

if [ "$HAVE_ZSTD" = 1 ] && broken libzstd.so.1 libz.so.1; then
    E="$T/empty-libzstd.so.1" S="$T/swapped-libzstd.so.1"
    expect_rc 0 "a plain trace without libzstd" env LD_LIBRARY_PATH="$E" "$DIAL9" stats "$VEC"
    expect_rc 1 "zstd trace, libzstd.so.1 not loadable" env LD_LIBRARY_PATH="$E" "$DIAL9" stats "$T/t.bin.zst"
    says_why "stats .bin.zst" "t.bin.zst: error at offset 0 (before any stream header): zstd-compressed data: cannot load libzstd.so.1 (install libzstd1)"
    if [ -e "$S/libzstd.so.1" ]; then
        expect_rc 1 "zstd trace, libzstd.so.1 without zstd's functions" \
            env LD_LIBRARY_PATH="$S" "$DIAL9" stats "$T/t.bin.zst"
        says_why "stats .bin.zst, swapped" "zstd-compressed data: libzstd.so.1 lacks ZSTD_createCCtx"
    fi
fi

echo "test_cli_libraries: $pass passed, $fail failed"
[ "$fail" = 0 ]
