#!/usr/bin/env bash
# Damage in a trace is damage, never a clean end (docs/cli.md, "Damage and torn tails"):
# a length field corrupted mid-file makes every reader exit 1 naming the offset, and still
# count the events of the intact streams after it; `check --min-events` fails; in-place
# `symbolize` keeps every intact stream. A torn tail (the last frame cut short) stays exit 0
# and in-place `symbolize` cuts that one frame only. Text output shows a trace's control
# characters escaped. The traces are written here, byte by byte; dial9's demo trace is used
# too when ../shared is there.
. "$(dirname "$0")/lib/harness.sh"

# ---- a trace of four streams, written by hand (format: ../shared/reference/trace-format.md)
# printf -v, not $(printf ...): no fork per byte (each took ~40 ms at load 15)
u32() { local h; printf -v h '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); printf "$h"; }
preamble() { # header, PollStart/PollEnd schemas, a timestamp reset to 1 s + k ms
    printf 'TRC\x00\x01'
    printf '\x01\x00\x00\x0e\x00PollStartEvent\x01\x04\x00'
    printf '\x09\x00worker_id\x09\x0b\x00local_queue\x0b\x07\x00task_id\x09\x09\x00spawn_loc\x07'
    printf '\x01\x01\x00\x0c\x00PollEndEvent\x01\x01\x00\x09\x00worker_id\x09'
    printf '\x05'; u32 $((1000000000 + $1 * 1000000)); printf '\x00\x00\x00\x00'
}
pool() { printf '\x03\x01\x00\x00\x00\x01\x00\x00\x00'; u32 10; printf 'src/a.c:10'; } # string 1
polls() { # two polls of task 7 on worker k, 1000 ns each
    local k; printf -v k '\\x%02x' "$1"
    for _ in 1 2; do
        printf "\\x02\\x00\\x00\\x00\\x00\\x00${k}\\x00\\x07\\x01\\x00\\x00\\x00"
        printf "\\x02\\x01\\x00\\xe8\\x03\\x00${k}"
    done
}
preamble 0 >"$T/preamble"
PRE=$(stat -c %s "$T/preamble")
for k in 0 1 2 3; do { preamble $k; pool; polls $k; } >"$T/s$k.bin"; done
S=$(stat -c %s "$T/s0.bin")
cat "$T"/s0.bin "$T"/s1.bin "$T"/s2.bin "$T"/s3.bin >"$T/good.bin"
events_of() { "$DIAL9" stats "$1" 2>/dev/null | awk '/^events /{print $2}'; }
check "the written trace reads cleanly" [ "$(events_of "$T/good.bin")" = 16 ]

# set the u32 at offset $2 of file $1 to $3
poke() { u32 "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

# ---- every reader on a trace damaged at offset $2 (the damaged frame), next header at $3,
# whose intact streams hold $4 events
readers_on_damage() {
    local f=$1 at=$2 next=$3 want=$4 what=$5
    local where="damaged at offset $at "
    expect_rc 1 "$what: stats exits 1" "$DIAL9" stats "$f"
    check "$what: stats names the offset" grep -q "$where" "$T/err"
    check "$what: stats says damaged" grep -q ": damaged: " "$T/out"
    check "$what: stats counts the intact streams after it ($want)" grep -Eq "^events +$want\$" "$T/out"
    expect_rc 1 "$what: dump exits 1" "$DIAL9" dump "$f"
    check "$what: dump names the offset" grep -q "$where" "$T/err"
    check "$what: dump prints the intact streams' events" [ "$(wc -l <"$T/out")" = "$want" ]
    expect_rc 1 "$what: analyze exits 1" "$DIAL9" analyze "$f"
    check "$what: analyze names the offset" grep -q "$where" "$T/err"
    expect_rc 1 "$what: analyze --json exits 1" "$DIAL9" analyze --json "$f"
    check "$what: analyze --json counts them" grep -Eq "\"events\": $want,?\$" "$T/out"
    check "$what: analyze --json says damaged" grep -q '"status": "damaged"' "$T/out"
    expect_rc 1 "$what: export exits 1" "$DIAL9" export --format chrome -o "$T/export.json" "$f"
    check "$what: export names the offset" grep -q "$where" "$T/err"
    expect_rc 1 "$what: check --min-events 1 fails" "$DIAL9" check --min-events 1 "$f"
    check "$what: check says it could not read it all" grep -q "FAIL readable" "$T/out"
    # what the damage message says was skipped is exact: the prefix before the damaged frame
    # (a torn tail) and the streams from the next header read on their own to the same count
    check "$what: skipped to the header at $next" grep -q "next stream header at offset $next" "$T/err"
    head -c "$at" "$f" >"$T/prefix.bin"
    tail -c +"$((next + 1))" "$f" >"$T/suffix.bin"
    check "$what: the intact streams after it read cleanly" "$DIAL9" check --min-events 1 "$T/suffix.bin" >/dev/null
    check "$what: prefix + intact streams = what readers count" \
        [ "$(($(events_of "$T/prefix.bin") + $(events_of "$T/suffix.bin")))" = "$want" ]
}

# a string pool length set to 2^24 in stream 1: more than any writer writes
cp "$T/good.bin" "$T/huge.bin"
poke "$T/huge.bin" $((S + PRE + 9)) $((1 << 24))
readers_on_damage "$T/huge.bin" $((S + PRE)) $((2 * S)) 12 "length 2^24"
check "length 2^24: says a corrupt length" grep -q "more than any writer writes" "$T/err"

# a length of 1000 in stream 2: it runs past the end, but stream 3's header follows it, so the
# frame is damaged, not a torn tail
cp "$T/good.bin" "$T/past.bin"
poke "$T/past.bin" $((2 * S + PRE + 9)) 1000
readers_on_damage "$T/past.bin" $((2 * S + PRE)) $((3 * S)) 12 "length past the end"

# ---- in-place symbolize keeps every intact stream: it leaves a damaged file as it is; a
# copy (-o) holds every intact stream
for f in huge past; do
    cp "$T/$f.bin" "$T/sym-$f.bin"
    expect_rc 1 "$f: symbolize in place exits 1 on damage" "$DIAL9" symbolize "$T/sym-$f.bin"
    check "$f: symbolize names the damage" grep -q "not symbolized: damaged at offset" "$T/err"
    check "$f: symbolize left the file as it was" cmp -s "$T/$f.bin" "$T/sym-$f.bin"
    check "$f: symbolize kept every intact stream's events" [ "$(events_of "$T/sym-$f.bin")" = 12 ]
    expect_rc 1 "$f: symbolize -o exits 1 on damage" "$DIAL9" symbolize -q -o "$T/copy-$f.bin" "$T/$f.bin"
    check "$f: the copy holds every intact stream's events" [ "$(events_of "$T/copy-$f.bin")" = 12 ]
done

# ---- a torn tail: the last frame of the last stream cut short, as a crash leaves it
head -c $((3 * S + PRE + 12)) "$T/good.bin" >"$T/torn.bin" # inside stream 3's pool frame
expect_rc 0 "torn tail: stats exits 0" "$DIAL9" stats "$T/torn.bin"
check "torn tail: reported as truncated" grep -q ": truncated: truncated at offset $((3 * S + PRE))" "$T/out"
check "torn tail: every complete event" grep -Eq '^events +12$' "$T/out"
for cmd in dump analyze "check --min-events 1"; do
    expect_rc 0 "torn tail: $cmd exits 0" "$DIAL9" $cmd "$T/torn.bin"
done
expect_rc 0 "torn tail: symbolize in place exits 0" "$DIAL9" symbolize "$T/torn.bin"
check "torn tail: symbolize cuts the one incomplete frame" [ "$(stat -c %s "$T/torn.bin")" = $((3 * S + PRE)) ]
check "torn tail: every complete event kept" [ "$(events_of "$T/torn.bin")" = 12 ]

# ---- control characters from a trace are shown escaped in text output
{
    printf 'TRC\x00\x01'
    printf '\x01\x00\x00\x14\x00SegmentMetadataEvent\x01\x01\x00\x07\x00entries\x0a'
    printf '\x01\x01\x00\x09\x00Note\x1b[31m\x01\x01\x00\x04\x00text\x04'
    printf '\x05\x00\xca\x9a\x3b\x00\x00\x00\x00'
    printf '\x02\x00\x00\x00\x00\x00\x01\x00\x00\x00\x07\x00\x00\x00service'
    u32 17; printf '\x1b]0;pwned\x07\x1b[2Jsvc'
    printf '\x02\x01\x00\x00\x00\x00'; u32 9; printf 'a\x1b[1mb\r\xc2\x9b'
} >"$T/escape.bin"
no_esc() { ! grep -q "$(printf '\x1b')" "$1" && ! grep -q "$(printf '\r')" "$1"; }
expect_rc 0 "escapes: dump" "$DIAL9" dump "$T/escape.bin"
check "escapes: dump writes no ESC or CR" no_esc "$T/out"
check "escapes: dump shows the schema name escaped" grep -qF 'Note\x1b[31m text=' "$T/out"
check "escapes: dump shows the string escaped" grep -qF '"a\x1b[1mb\r\xc2\x9b"' "$T/out"
check "escapes: dump shows the map escaped" grep -qF '"\x1b]0;pwned\x07\x1b[2Jsvc"' "$T/out"
expect_rc 0 "escapes: analyze" "$DIAL9" analyze "$T/escape.bin"
check "escapes: analyze writes no ESC or CR" no_esc "$T/out"
check "escapes: analyze shows the service escaped" grep -qF 'service        \x1b]0;pwned\x07\x1b[2Jsvc' "$T/out"
expect_rc 0 "escapes: stats" "$DIAL9" stats "$T/escape.bin"
check "escapes: stats writes no ESC" no_esc "$T/out"
check "escapes: stats shows the event name escaped" grep -qF 'Note\x1b[31m' "$T/out"
expect_rc 0 "escapes: dump --jsonl" "$DIAL9" dump --jsonl "$T/escape.bin"
check "escapes: JSON escapes them its way" grep -qF '"text":"a\u001b[1mb\r' "$T/out"
check "escapes: JSON writes no ESC" no_esc "$T/out"

# ---- dial9's demo trace with the issue's corruption: 2^24 at offset 730 659
if [ -f "$FIXTURE" ]; then
    gzip -dc "$FIXTURE" >"$T/demo.bin"
    poke "$T/demo.bin" 730659 $((1 << 24))
    expect_rc 1 "demo: stats exits 1" "$DIAL9" stats "$T/demo.bin"
    next=$(grep -o 'next stream header at offset [0-9]*' "$T/err" | awk '{print $NF}')
    check "demo: the damaged frame is named" grep -q "damaged at offset 730650 (stream 6)" "$T/err"
    total=$(awk '/^events /{print $2}' "$T/out")
    readers_on_damage "$T/demo.bin" 730650 "${next:-0}" "${total:-0}" "demo"
    check "demo: more than the 38 395 events before the damage" [ "${total:-0}" -gt 38395 ]
    cp "$T/demo.bin" "$T/demo-sym.bin"
    expect_rc 1 "demo: symbolize in place exits 1" "$DIAL9" symbolize -q "$T/demo-sym.bin"
    check "demo: symbolize left the file as it was" cmp -s "$T/demo.bin" "$T/demo-sym.bin"
    check "demo: symbolize kept every intact stream ($total events)" [ "$(events_of "$T/demo-sym.bin")" = "$total" ]
else
    echo "test_damage: $FIXTURE absent: the demo trace's part skipped"
fi

echo "test_damage: $pass passed, $fail failed"
[ "$fail" = 0 ]
