#!/usr/bin/env bash
# `dial9 symbolize` from the command line: usage errors (exit 2), unreadable and corrupt files
# (exit 1), .bin.gz in place (a valid gzip with a new member) and with -o (a plain copy), the
# same for .bin.zst (a new zstd frame; when the zstd command is there to write one),
# several inputs into an -o directory, refusing to overwrite an input, a truncated tail (cut in
# place, repaired in copies), a file a live recorder holds, a second run that adds nothing, and
# the dial9 fixture: every callchain address it leaves unnamed gets a name.
# Traces come from test_symbolize_offline --record (a child process that exits).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
RECORDER="$BUILD/test_symbolize_offline"
unset DEBUGINFOD_URLS
entries() { "$DIAL9" dump "$@" 2>/dev/null | grep -c ' SymbolTableEntry ' || true; }
magic() { head -c 2 "$1" | od -An -tx1 | tr -d ' \n'; }

[ -x "$DIAL9" ] || { echo "test_symbolize_cli: $DIAL9 not built"; exit 1; }
[ -x "$RECORDER" ] || { echo "test_symbolize_cli: $RECORDER not built"; exit 1; }

# ---- a trace recorded by a process that has exited ----
mkdir -p "$T/rec"
"$RECORDER" --record "$T/rec" >/dev/null || { echo "test_symbolize_cli: recording failed"; exit 1; }
RAW=$(ls "$T"/rec/raw/trace.*.bin | head -1)
[ -f "$RAW" ] || { echo "test_symbolize_cli: no raw segment"; exit 1; }
check "raw segment has no symbols" [ "$(entries "$RAW")" = 0 ]

# ---- usage ----
expect_rc 2 "no PATH" "$DIAL9" symbolize
check "no PATH says so" grep -q "no PATH" "$T/err"
expect_rc 2 "unknown option" "$DIAL9" symbolize --bogus "$RAW"
expect_rc 2 "-o without value" "$DIAL9" symbolize "$RAW" -o
expect_rc 2 "--debug-dir not a directory" "$DIAL9" symbolize --debug-dir "$T/nope" "$RAW"
expect_rc 0 "--help" "$DIAL9" symbolize --help
check "--help shows usage" grep -q "usage: dial9 symbolize" "$T/out"
expect_rc 0 "listed in dial9 --help" "$DIAL9" --help
check "dial9 --help lists symbolize" grep -q "symbolize" "$T/out"

# ---- unreadable and corrupt inputs ----
expect_rc 1 "missing file" "$DIAL9" symbolize "$T/missing.bin"
cp "$RAW" "$T/readonly.bin" && chmod 444 "$T/readonly.bin"
if [ "$(id -u)" != 0 ]; then
    expect_rc 1 "read-only file" "$DIAL9" symbolize "$T/readonly.bin"
    check "read-only file: suggests -o" grep -q "use -o" "$T/err"
fi
expect_rc 0 "read-only file with -o" "$DIAL9" symbolize -q -o "$T/readonly-copy.bin" "$T/readonly.bin"
printf 'not a trace at all' >"$T/garbage.bin"
expect_rc 1 "not a trace" "$DIAL9" symbolize "$T/garbage.bin"
check "not a trace: file named" grep -q "garbage.bin" "$T/err"
check "not a trace: left unchanged" [ "$(cat "$T/garbage.bin")" = "not a trace at all" ]
cp "$RAW" "$T/badtag.bin"
printf '\x07\x00\x00' >>"$T/badtag.bin" # an unknown frame tag after the data
size=$(stat -c %s "$T/badtag.bin")
expect_rc 1 "decode error" "$DIAL9" symbolize "$T/badtag.bin"
check "decode error: unchanged" [ "$(stat -c %s "$T/badtag.bin")" = "$size" ]

# ---- in place, twice ----
cp "$RAW" "$T/a.bin"
expect_rc 0 "in place" "$DIAL9" symbolize "$T/a.bin"
check "in place: summary line" grep -q "addresses" "$T/out"
n1=$(entries "$T/a.bin")
check "in place: symbols appended" [ "$n1" -gt 0 ]
size1=$(stat -c %s "$T/a.bin")
expect_rc 0 "second run" "$DIAL9" symbolize -q "$T/a.bin"
check "second run appends nothing" [ "$(stat -c %s "$T/a.bin")" = "$size1" ]
expect_rc 0 "--force" "$DIAL9" symbolize -q --force "$T/a.bin"
check "--force appends again" [ "$(entries "$T/a.bin")" -gt "$n1" ]
expect_rc 0 "stats reads it" "$DIAL9" stats "$T/a.bin"

# ---- gzip ----
cp "$RAW" "$T/g.bin" && gzip -n "$T/g.bin"
gzsize=$(stat -c %s "$T/g.bin.gz")
expect_rc 0 "gz in place" "$DIAL9" symbolize "$T/g.bin.gz"
check "gz in place: still gzip" [ "$(magic "$T/g.bin.gz")" = "1f8b" ]
check "gz in place: gzip -t" gzip -t "$T/g.bin.gz"
check "gz in place: grew" [ "$(stat -c %s "$T/g.bin.gz")" -gt "$gzsize" ]
check "gz in place: same symbols as plain" [ "$(entries "$T/g.bin.gz")" = "$n1" ]
check "gz in place: gunzip gives one trace" sh -c "gzip -dc '$T/g.bin.gz' | cmp -s - '$T/a.bin' || [ \$(gzip -dc '$T/g.bin.gz' | wc -c) -gt 0 ]"
gzsize2=$(stat -c %s "$T/g.bin.gz")
expect_rc 0 "gz second run" "$DIAL9" symbolize -q "$T/g.bin.gz"
check "gz second run appends nothing" [ "$(stat -c %s "$T/g.bin.gz")" = "$gzsize2" ]
cp "$RAW" "$T/h.bin" && gzip -n "$T/h.bin"
expect_rc 0 "gz -o" "$DIAL9" symbolize -q -o "$T/h-copy.bin" "$T/h.bin.gz"
check "gz -o: plain copy" [ "$(magic "$T/h-copy.bin")" = "5452" ]
check "gz -o: input still there" [ "$(stat -c %s "$T/h.bin.gz")" -gt 0 ]
check "gz -o: input still gzip" gzip -t "$T/h.bin.gz"
check "gz -o: input has no symbols" [ "$(entries "$T/h.bin.gz")" = 0 ]
check "gz -o: copy has them" [ "$(entries "$T/h-copy.bin")" = "$n1" ]

# ---- zstd (DIAL9_COMPRESS=zstd's .bin.zst) ----
if command -v zstd >/dev/null; then
    cp "$RAW" "$T/z.bin" && zstd -q --rm "$T/z.bin"
    zsize=$(stat -c %s "$T/z.bin.zst")
    expect_rc 0 "zst in place" "$DIAL9" symbolize "$T/z.bin.zst"
    check "zst in place: still zstd" [ "$(head -c 4 "$T/z.bin.zst" | od -An -tx1 | tr -d ' \n')" = "28b52ffd" ]
    check "zst in place: zstd -t" zstd -q -t "$T/z.bin.zst"
    check "zst in place: grew" [ "$(stat -c %s "$T/z.bin.zst")" -gt "$zsize" ]
    check "zst in place: same symbols as plain" [ "$(entries "$T/z.bin.zst")" = "$n1" ]
    zsize2=$(stat -c %s "$T/z.bin.zst")
    expect_rc 0 "zst second run" "$DIAL9" symbolize -q "$T/z.bin.zst"
    check "zst second run appends nothing" [ "$(stat -c %s "$T/z.bin.zst")" = "$zsize2" ]
    cp "$RAW" "$T/y.bin" && zstd -q --rm "$T/y.bin"
    expect_rc 0 "zst -o" "$DIAL9" symbolize -q -o "$T/y-copy.bin" "$T/y.bin.zst"
    check "zst -o: plain copy" [ "$(magic "$T/y-copy.bin")" = "5452" ]
    check "zst -o: input has no symbols" [ "$(entries "$T/y.bin.zst")" = 0 ]
    check "zst -o: copy has them" [ "$(entries "$T/y-copy.bin")" = "$n1" ]
fi

# ---- -o with several inputs ----
mkdir -p "$T/in1" "$T/in2"
cp "$T"/rec/raw/trace.*.bin "$T/in1/"
nin=$(ls "$T/in1" | wc -l)
sum_before=$(cat "$T"/in1/* | md5sum)
expect_rc 0 "-o directory" "$DIAL9" symbolize -q -o "$T/outdir" "$T/in1"
check "-o directory: one copy per input" [ "$(ls "$T/outdir" | wc -l)" = "$nin" ]
check "-o directory: inputs unchanged" [ "$(cat "$T"/in1/* | md5sum)" = "$sum_before" ]
check "-o directory: copies have symbols" [ "$(entries "$T/outdir")" -gt 0 ]
cp "$RAW" "$T/in2/"
expect_rc 2 "-o name collision" "$DIAL9" symbolize -o "$T/outdir2" "$T/in1/$(basename "$RAW")" "$T/in2/$(basename "$RAW")"
check "-o name collision explained" grep -q "symbolize them separately" "$T/err"
expect_rc 2 "-o onto its input" "$DIAL9" symbolize -o "$T/in1" "$T/in1/$(basename "$RAW")"
check "-o onto its input: unchanged" [ "$(cat "$T"/in1/* | md5sum)" = "$sum_before" ]

# ---- a truncated tail ----
cp "$RAW" "$T/cut.bin"
truncate -s -3 "$T/cut.bin"
expect_rc 0 "truncated in place" "$DIAL9" symbolize "$T/cut.bin"
check "truncated in place: says so" grep -q "incomplete final frame" "$T/err"
expect_rc 0 "truncated in place: decodes to the end" "$DIAL9" stats "$T/cut.bin"
check "truncated in place: no truncation left" sh -c "! grep -q truncated '$T/err'"
check "truncated in place: symbols readable" [ "$(entries "$T/cut.bin")" -gt 0 ]
cp "$RAW" "$T/cutgz.bin" && truncate -s -3 "$T/cutgz.bin" && gzip -n "$T/cutgz.bin"
expect_rc 1 "truncated gz in place refused" "$DIAL9" symbolize "$T/cutgz.bin.gz"
check "truncated gz: suggests -o" grep -q "use -o" "$T/err"
expect_rc 0 "truncated gz -o" "$DIAL9" symbolize -q -o "$T/cutgz-copy.bin" "$T/cutgz.bin.gz"
check "truncated gz -o: symbols" [ "$(entries "$T/cutgz-copy.bin")" -gt 0 ]

# ---- a segment a live recorder still writes (it holds an flock on .active files) ----
cp "$RAW" "$T/trace.9.bin.active"
# the holder says when it has the lock (a fixed sleep before the checks raced a busy machine);
# exec: the process killed below is the one holding it, no orphan keeps it
( exec 9<"$T/trace.9.bin.active" && flock 9 && : >"$T/locked" && exec sleep 600 ) &
holder=$!
while [ ! -e "$T/locked" ] && kill -0 "$holder" 2>/dev/null; do sleep 0.01; done
check "live .active: the lock is held" [ -e "$T/locked" ]
size=$(stat -c %s "$T/trace.9.bin.active")
expect_rc 0 "live .active skipped" "$DIAL9" symbolize "$T/trace.9.bin.active"
check "live .active: says why" grep -q "running recorder" "$T/err"
check "live .active: unchanged" [ "$(stat -c %s "$T/trace.9.bin.active")" = "$size" ]
expect_rc 0 "live .active: -o copies what is complete" "$DIAL9" symbolize -q -o "$T/live-copy.bin" "$T/trace.9.bin.active"
check "live .active: copy has symbols" [ "$(entries "$T/live-copy.bin")" -gt 0 ]
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# ---- libdw is loaded when symbolize needs it: file:line with it; names and a note without ----
# (a libdw.so.1 without libdw's functions stands for one that is missing or broken)
if "$DIAL9" symbolize --help | grep -q debuginfod; then
    cp "$RAW" "$T/dw.bin" && cp "$RAW" "$T/nodw.bin"
    expect_rc 0 "with libdw" "$DIAL9" symbolize -q "$T/dw.bin"
    check "with libdw: file:line" grep -q 'source_line=[1-9]' <("$DIAL9" dump "$T/dw.bin")
    if readelf -d "$DIAL9" | grep -q 'NEEDED.*libdw'; then # sanitizer builds link it
        echo "test_symbolize_cli: SKIP libdw unusable: this dial9 links libdw"
    else
        mkdir -p "$T/fakedw" && cp -L "$BUILD/libdial9.so.0" "$T/fakedw/libdw.so.1"
        expect_rc 0 "libdw unusable" env LD_LIBRARY_PATH="$T/fakedw" "$DIAL9" symbolize -q "$T/nodw.bin"
        check "libdw unusable: one-line note" [ "$(grep -c "no file:line" "$T/err")" = 1 ]
        check "libdw unusable: names" [ "$(entries "$T/nodw.bin")" -gt 0 ]
        check "libdw unusable: no file:line" [ "$("$DIAL9" dump "$T/nodw.bin" | grep -c 'source_line=[1-9]')" = 0 ]
    fi
fi

# ---- debuginfod: a binary found nowhere else, served by a local HTTP server ----
# The debuginfod protocol is plain HTTP: GET /buildid/<build id>/executable.
if ! "$DIAL9" symbolize --help | grep -q debuginfod; then
    echo "test_symbolize_cli: SKIP debuginfod: built without libdw"
elif ! ls /usr/lib/*/libdebuginfod.so.1 /lib/*/libdebuginfod.so.1 >/dev/null 2>&1; then
    echo "test_symbolize_cli: SKIP debuginfod: libdebuginfod.so.1 not installed"
elif ! command -v readelf >/dev/null || ! python3 -c 'import http.server' 2>/dev/null; then
    echo "test_symbolize_cli: SKIP debuginfod: needs python3 (fake server) and readelf"
else
    mkdir -p "$T/dbgi/bin" "$T/dbgi/rec" "$T/dbgi/srv"
    cp "$RECORDER" "$T/dbgi/bin/d9rec"
    "$T/dbgi/bin/d9rec" --record "$T/dbgi/rec" >/dev/null
    bid=$(readelf -n "$T/dbgi/bin/d9rec" | awk '/Build ID/{print $3}')
    mkdir -p "$T/dbgi/srv/buildid/$bid"
    mv "$T/dbgi/bin/d9rec" "$T/dbgi/srv/buildid/$bid/executable" # gone from its recorded path
    (cd "$T/dbgi/srv" && exec python3 -u -m http.server 0 --bind 127.0.0.1) >"$T/dbgi/http.log" 2>&1 &
    server=$!
    port=
    for _ in $(seq 50); do
        port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/dbgi/http.log" | head -1)
        [ -n "$port" ] && break
        sleep 0.1
    done
    expect_rc 0 "without debuginfod" "$DIAL9" symbolize -q -o "$T/dbgi/out0" "$T/dbgi/rec/raw"
    check "without debuginfod: module+offset" sh -c "'$DIAL9' dump '$T/dbgi/out0' | grep -q 'symbol_name=\"d9rec+0x'"
    DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$T/dbgi/cache" \
        expect_rc 0 "with debuginfod" "$DIAL9" symbolize -q -o "$T/dbgi/out1" "$T/dbgi/rec/raw"
    check "debuginfod was asked" grep -q "GET /buildid/$bid/executable" "$T/dbgi/http.log"
    check "debuginfod: names" sh -c "'$DIAL9' dump '$T/dbgi/out1' | grep -q 'symbol_name=\"d9t_offline_leaf\"'"
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
fi

# ---- the dial9 fixture: names what dial9 left unnamed, never drops an address ----
if [ -f "$FIXTURE" ]; then
    before=$(entries "$FIXTURE")
    expect_rc 0 "fixture -o" "$DIAL9" symbolize -o "$T/fixture.bin" "$FIXTURE"
    added=$(sed -n 's/.*: \([0-9]*\) addresses:.*/\1/p' "$T/out")
    check "fixture: addresses to name" [ "${added:-0}" -gt 0 ]
    check "fixture: all added" [ "$(entries "$T/fixture.bin")" = "$((before + added))" ]
    check "fixture: unknown modules named by address" sh -c "'$DIAL9' dump '$T/fixture.bin' | grep -q 'symbol_name=\"\\[unknown\\]+0x\\|symbol_name=\"\\[kernel.kallsyms\\]+0x'"
else
    echo "test_symbolize_cli: SKIP fixture checks: $FIXTURE not found"
fi

echo "test_symbolize_cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
