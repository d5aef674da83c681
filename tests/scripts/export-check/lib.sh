# Shared by tests/scripts/test_export*.sh: paths, pass/fail counting, and the independent
# readers (npm packages pinned in package-lock.json, installed here with `npm ci` on first use).
# Sourced, not run.

source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"
CHECK="$SOURCE/tests/scripts/export-check"
# expect SUMMARY.json 'js expression over s' ...: every expression must hold
expect() {
    local summary=$1; shift
    if node "$CHECK/expect.mjs" "$summary" "$@" >"$T/expect.out" 2>&1; then ok
    else bad "$(grep FAILED "$T/expect.out" | head -5 | tr '\n' ' ')"; fi
}
# run_check KIND FILE SUMMARY [args]: the independent reader of KIND; its summary in SUMMARY
run_check() {
    local kind=$1 file=$2 summary=$3; shift 3
    if node "$CHECK/check_$kind.mjs" "$file" "$@" >"$summary" 2>"$T/check.err"; then ok
    else bad "check_$kind $file: $(head -c 600 "$T/check.err")"; fi
}
finish() {
    echo "$(basename "$0" .sh): $pass passed, $fail failed"
    [ "$fail" = 0 ]
}

[ -x "$DIAL9" ] || { echo "$DIAL9 not built"; exit 1; }
if ! command -v node >/dev/null; then
    echo "SKIP: node is not installed (the export checks read the output with npm packages)"
    exit 0
fi
# one install at a time, whichever build directory's tests ask (lib/npm_ci.sh)
source "$SOURCE/tests/scripts/lib/npm_ci.sh"
npm_ci_or_skip "$CHECK"
