#!/usr/bin/env bash
# Exact-output goldens: every case of tests/goldens/cases runs on every vector of tests/vectors
# and on the dial9 fixture (../shared, skipped when absent), and its standard output and exit
# status must equal the stored ones byte for byte. A mismatch prints a diff.
#
#   tests/goldens/run.sh            compare (what ctest's test_goldens runs)
#   tests/goldens/run.sh --update   rewrite the stored outputs from the current build
#
# Outputs: tests/vectors/NAME.dump.jsonl (the vector's `dump --jsonl`),
# tests/goldens/NAME/CASE.stdout.exact, or CASE.sha256 for binary or large outputs, and
# tests/goldens/NAME/exit-codes; the fixture's outputs over 128 KiB are kept as their SHA-256. Commands run in the input's directory on its bare file name,
# so no path of this machine gets into an output.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${D9_BUILD_DIR:-$SOURCE/build}" && pwd)
SHARED=${D9_SHARED_DIR:-$SOURCE/../shared}
DIAL9="$BUILD/dial9"
UPDATE=0
[ "${1:-}" = --update ] && UPDATE=1
[ -x "$DIAL9" ] || { echo "goldens: $DIAL9 not built" >&2; exit 1; }

# The fixed environment the outputs depend on: no colour, C collation, UTC.
export LC_ALL=C TZ=UTC
unset NO_COLOR DIAL9_TRACE_DIR

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

# run_target NAME DIR FILE: every case on DIR/FILE, results under tests/goldens/NAME
run_target() {
    local name=$1 dir=$2 file=$3 gdir="$HERE/$1"
    mkdir -p "$gdir"
    : >"$T/exit-codes"
    local cname args kind out want
    while IFS='|' read -r cname args; do
        cname=${cname// /}
        [ -z "$cname" ] || [ "${cname:0:1}" = "#" ] && continue
        args=${args#"${args%%[![:space:]]*}"}
        args=${args//\{\}/$file}
        # shellcheck disable=SC2086 # the case's arguments are words
        (cd "$dir" && "$DIAL9" $args >"$T/out" 2>"$T/err")
        echo "$cname $?" >>"$T/exit-codes"
        kind=stdout.exact
        case $cname in *.sha256) kind=sha256; cname=${cname%.sha256} ;; esac
        # the fixture's large outputs (dumps: 40 MB) are kept as their SHA-256
        if [ "$name" = fixture ]; then
            if [ "$UPDATE" = 1 ]; then
                [ "$(stat -c %s "$T/out")" -gt 131072 ] && kind=sha256
            elif [ -f "$gdir/$cname.sha256" ]; then
                kind=sha256
            fi
        fi
        if [ "$cname" = dump-jsonl ] && [ "$name" != fixture ]; then
            want="$SOURCE/tests/vectors/$name.dump.jsonl"
        else
            want="$gdir/$cname.$kind"
        fi
        out="$T/out"
        if [ "$kind" = sha256 ]; then sha256sum <"$T/out" | cut -d' ' -f1 >"$T/sum"; out="$T/sum"; fi
        if [ "$UPDATE" = 1 ]; then
            cp "$out" "$want"
        elif [ ! -f "$want" ]; then
            fail=$((fail + 1)); echo "FAIL: $name $cname: no golden ${want#"$SOURCE"/} (run tests/goldens/run.sh --update)" >&2
        elif cmp -s "$out" "$want"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL: $name $cname: \`dial9 $args\` differs from ${want#"$SOURCE"/} (- golden, + now):" >&2
            diff -u "$want" "$out" | head -60 >&2
            [ -s "$T/err" ] && { echo "  its standard error:" >&2; head -c 600 "$T/err" >&2; }
        fi
    done <"$HERE/cases"
    if [ "$UPDATE" = 1 ]; then
        cp "$T/exit-codes" "$gdir/exit-codes"
    elif diff -u "$gdir/exit-codes" "$T/exit-codes" >"$T/d" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL: $name: exit codes differ (- golden, + now):" >&2; cat "$T/d" >&2
    fi
}

for v in "$SOURCE"/tests/vectors/*.bin; do
    n=$(basename "$v" .bin)
    run_target "$n" "$SOURCE/tests/vectors" "$n.bin"
done
if [ -f "$SHARED/fixtures/dial9-demo-trace.bin" ]; then
    run_target fixture "$SHARED/fixtures" dial9-demo-trace.bin
else
    echo "goldens: SKIP the fixture: $SHARED/fixtures/dial9-demo-trace.bin absent"
fi

[ "$UPDATE" = 1 ] && echo "goldens: updated; review with git diff tests/goldens tests/vectors" && exit 0
echo "goldens: $pass passed, $fail failed"
[ "$fail" = 0 ]
