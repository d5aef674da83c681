#!/usr/bin/env bash
# `dial9 run` says which DIAL9_* variables no part of dial9 reads (a typo was ignored in silence:
# DIAL9_TRACEDIR=... recorded into /tmp/dial9-traces), naming the nearest known one; a known one
# is not named. Its list (src/cli/unknown_variables.c) is every DIAL9_ name read under src/:
# a variable added or removed there without the list fails here.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "SKIP: $DIAL9 not built"; exit 0; }
LIST="$SOURCE/src/cli/unknown_variables.c"

# the list against the names the sources read (string literals outside the list's own file)
grep -rhoE '"DIAL9_[A-Z0-9_]+"' --include='*.c' --include='*.h' "$SOURCE/src" "$SOURCE/include" \
    --exclude=unknown_variables.c | tr -d '"' | sort -u >"$T/read"
sed -n '/k_known\[\] = {/,/};/p' "$LIST" | grep -oE '"DIAL9_[A-Z0-9_]+"' | tr -d '"' | sort -u >"$T/listed"
if diff "$T/read" "$T/listed" >"$T/diff"; then ok; else
    bad "src/cli/unknown_variables.c's list differs from what src/ reads (< read, not listed; > listed, not read): $(cat "$T/diff")"
fi

# A sanitizer build's shim cannot be preloaded into a plain program (`true` here): the list's
# check above runs everywhere, `dial9 run`'s warning in plain builds only.
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$(dirname "$DIAL9")/libdial9-preload.so" 2>/dev/null)"; then
    echo "test_unknown_variables: SKIP dial9 run's warning: the preload shim is built with a sanitizer"
    echo "test_unknown_variables: $pass passed, $fail failed"
    [ "$fail" = 0 ]; exit
fi

# the warning, through the environment and -e; the program still runs and is recorded
expect_rc 0 "dial9 run with misspelt variables" env DIAL9_TRACEDIR=/nonexistent DIAL9_FLUSH_MS=5 \
    "$DIAL9" run -d "$T/traces" -e DIAL9_BUFER_KB=64 -- true
check "DIAL9_TRACEDIR named, DIAL9_TRACE_DIR suggested" grep -qx \
    "dial9 run: DIAL9_TRACEDIR is not a variable dial9 reads (ignored): did you mean DIAL9_TRACE_DIR?" "$T/err"
check "-e DIAL9_BUFER_KB named" grep -q "^dial9 run: DIAL9_BUFER_KB is not a variable dial9 reads (ignored): did you mean DIAL9_BUFFER_KB?$" "$T/err"
check "a known variable is not named" bash -c "! grep -q DIAL9_FLUSH_MS '$T/err'"
check "the run is recorded all the same" grep -q "^dial9 run: trace in $T/traces/" "$T/err"
expect_rc 0 "a name near no known one" env DIAL9_QQQQQQQQQQ=1 "$DIAL9" run -q -d "$T/traces" -- true
check "no suggestion far from every name" grep -qx "dial9 run: DIAL9_QQQQQQQQQQ is not a variable dial9 reads (ignored)" "$T/err"

echo "test_unknown_variables: $pass passed, $fail failed"
[ "$fail" = 0 ]
