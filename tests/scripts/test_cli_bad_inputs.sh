#!/usr/bin/env bash
# `dial9 analyze`, `stats`, `check` and `fold` on inputs that are not whole traces: each gives a
# clear message naming the file (or the directory it skipped) and its exit status says so,
# without crashing (docs/cli.md, exit status):
#   - a truncated trace (a torn tail): read, exit 0, the file named as truncated (fold: named
#     as truncated, with no clock sync in what is left, exit 1);
#   - a corrupt one (bytes flipped mid-stream): damaged, named, exit 1;
#   - an empty file: no trace, named, exit 1 (before: read as a trace of nothing, exit 0);
#   - a directory without permission: "DIR: Permission denied", exit 1 (before: "no trace
#     files found");
#   - a directory with one unreadable subdirectory: the rest read, the subdirectory named as
#     skipped, exit 1 (fold: nothing written) (before: skipped silently, exit 0);
#   - a missing path: "PATH: No such file or directory", exit 1;
#   - a directory of many files that are not traces: analyze's summary line names 5, counts the
#     rest; when no event at all could be read, analyze says so instead of a report of zeros.
# Permissions are tested as user nobody when run as root (root reads every directory).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "SKIP: $DIAL9 not built"; exit 0; }
V="$SOURCE/tests/vectors/runtime.bin"

chmod 755 "$T" # the unprivileged user below reads what is made here
head -c 1000 "$V" >"$T/truncated.bin"
cp "$V" "$T/corrupt.bin"
python3 -c 'import sys; p = sys.argv[1]; d = bytearray(open(p, "rb").read())
for i in range(1500, 1600): d[i] ^= 0xff
open(p, "wb").write(d)' "$T/corrupt.bin"
: >"$T/empty.bin"
mkdir -p "$T/noperm/run" "$T/partial/readable" "$T/partial/closed"
cp "$V" "$T/noperm/run/trace.0.bin"
cp "$V" "$T/partial/readable/trace.0.bin"
cp "$V" "$T/partial/closed/trace.0.bin"
chmod 000 "$T/noperm" "$T/partial/closed"
mkdir -m 777 "$T/out"

# as: run unprivileged when root (so that a mode of 000 keeps a directory closed)
as=()
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is not installed"; exit 0; }
    as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    "${as[@]}" test -r "$T/truncated.bin" ||
        { chmod -R u+rwx "$T"; echo "SKIP: user nobody cannot reach $T (TMPDIR closed to others)"; exit 0; }
    "${as[@]}" test -x "$DIAL9" ||
        { chmod -R u+rwx "$T"; echo "SKIP: user nobody cannot run $DIAL9 (its directory is closed to others)"; exit 0; }
fi

# run CMD INPUT: dial9 CMD INPUT (fold: into a fresh directory), output in $T/out.txt and
# $T/err.txt, exit status in $rc
run() {
    local cmd=$1 input=$2 extra=()
    [ "$cmd" = fold ] && extra=(--to "$T/out/$cmd-$(basename "$input")")
    "${as[@]}" "$DIAL9" "$cmd" "$input" "${extra[@]}" >"$T/out.txt" 2>"$T/err.txt"
    rc=$?
}
# expect WHAT RC PATTERN [WHERE]: the last run's exit status and a line of WHERE (err.txt by
# default) matching PATTERN (grep -E)
expect() {
    local what=$1 want=$2 pattern=$3 where=${4:-err.txt}
    if [ "$rc" = "$want" ] && grep -qE -- "$pattern" "$T/$where"; then
        ok
    else
        bad "$what: exit $rc (want $want), $where wants /$pattern/: $(head -c 400 "$T/$where")"
    fi
}
esc() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

for cmd in analyze stats check fold; do
    run $cmd "$T/truncated.bin"
    if [ $cmd = fold ]; then
        expect "$cmd truncated" 1 "$(esc "$T/truncated.bin"): truncated at offset [0-9]+.*no ClockSyncEvent"
    else
        where=out.txt
        expect "$cmd truncated" 0 "$(esc "$T/truncated.bin")(: |\\]| *)?.*truncated" $where
    fi
    run $cmd "$T/corrupt.bin"
    expect "$cmd corrupt" 1 "^dial9 $cmd: $(esc "$T/corrupt.bin"): damaged at offset 1"
    run $cmd "$T/empty.bin"
    expect "$cmd empty" 1 "^dial9 $cmd: $(esc "$T/empty.bin"): empty file: not a dial9 trace"
    run $cmd "$T/noperm"
    expect "$cmd directory without permission" 1 "^dial9 $cmd: $(esc "$T/noperm"): Permission denied$"
    run $cmd "$T/partial"
    expect "$cmd directory with an unreadable subdirectory" 1 \
        "^dial9 $cmd: $(esc "$T/partial/closed"): Permission denied \\(skipped"
    case $cmd in
    stats) expect "stats: the readable subdirectory still read" 1 "$(esc "$T/partial/readable/trace.0.bin"): ok" out.txt ;;
    analyze) expect "analyze: the readable subdirectory still read" 1 "files +1$" out.txt ;;
    fold) expect "fold: nothing written" 1 "nothing was written"
          check "fold: no table written" [ -z "$(ls -A "$T/out/fold-partial" 2>/dev/null)" ] ;;
    esac
    run $cmd "$T/missing.bin"
    expect "$cmd missing path" 1 "^dial9 $cmd: $(esc "$T/missing.bin"): No such file or directory$"
done
chmod 755 "$T/noperm" "$T/partial/closed" # for the scratch directory's removal

# symbolize an empty file: no trace, as for every reader (it said "0 addresses", exit 0)
"${as[@]}" "$DIAL9" symbolize -o "$T/out/empty-symbolized.bin" "$T/empty.bin" >"$T/out.txt" 2>"$T/err.txt"
rc=$?
expect "symbolize empty" 1 "^dial9 symbolize: $(esc "$T/empty.bin"): not symbolized: empty file: not a dial9 trace"

# a directory of many files that are not traces (a PATH that is no trace directory, /tmp): each
# named on stderr, but analyze's SUMMARY line names the first 5 and counts the rest (it named
# all of them: 2 403 under /tmp made one line of 120 KiB)
mkdir "$T/junk"
for i in 1 2 3 4 5 6 7 8; do echo junk >"$T/junk/f$i.bin"; done
cp "$V" "$T/junk/trace.0.bin"
run analyze "$T/junk"
expect "analyze: each file that is no trace named on stderr" 1 "f8.bin: error at offset 0"
expect "analyze: the summary names 5 and counts the rest" 1 \
    "^  files +9  (\[[^]]*: error\]  ){5}\[and 3 more not read whole: see stderr\]$" out.txt

# no event read at all: said, after each file's error, and no report of zeros (it printed 45
# lines of an empty report, "no polls" and all, which read as a healthy trace)
rm "$T/junk/trace.0.bin"
for input in "$T/junk" "$T/empty.bin"; do
    run analyze "$input"
    expect "analyze $(basename "$input"): nothing to analyze, said last" 1 \
        "^dial9 analyze: nothing to analyze: no event could be read from the [0-9]+ files? given$"
    tail -n 1 "$T/err.txt" >"$T/last.txt"
    check "analyze $(basename "$input"): said last" grep -q "^dial9 analyze: nothing to analyze:" "$T/last.txt"
    check "analyze $(basename "$input"): no report" [ ! -s "$T/out.txt" ]
done

echo "test_cli_bad_inputs: $pass passed, $fail failed"
[ "$fail" = 0 ]
