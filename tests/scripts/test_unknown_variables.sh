#!/usr/bin/env bash
# `dial9 run` says which DIAL9_* variables no part of dial9 reads (a typo was ignored in silence:
# DIAL9_TRACEDIR=... recorded into /tmp/dial9-traces), naming the nearest known one; a known one
# is not named. The library's d9_config_from_env says the same once (a linked program, the shim
# preloaded directly), and not a second time under dial9 run. Its list (src/core/unknown_variables.c) is every DIAL9_ name read under src/:
# a variable added or removed there without the list fails here.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "SKIP: $DIAL9 not built"; exit 0; }
LIST="$SOURCE/src/core/unknown_variables.c"

# the list against the names the sources read (string literals outside the list's own file)
grep -rhoE '"DIAL9_[A-Z0-9_]+"' --include='*.c' --include='*.h' "$SOURCE/src" "$SOURCE/include" \
    --exclude=unknown_variables.c | tr -d '"' | sort -u >"$T/read"
sed -n '/k_known\[\] = {/,/};/p' "$LIST" | grep -oE '"DIAL9_[A-Z0-9_]+"' | tr -d '"' | sort -u >"$T/listed"
if diff "$T/read" "$T/listed" >"$T/diff"; then ok; else
    bad "src/core/unknown_variables.c's list differs from what src/ reads (< read, not listed; > listed, not read): $(cat "$T/diff")"
fi

# A program linking the library (its d9_config_from_env) names a misspelt variable once, in
# the same words, as "dial9:"; DIAL9_VARIABLES_NAMED=1 (what dial9 run sets) silences it
REC="$BUILD/test_pipeline_compress"
if [ -x "$REC" ]; then
    expect_rc 0 "a linked program with a misspelt variable" env DIAL9_TRACEDIR=/nonexistent \
        "$REC" --record "$T/linked" 10
    check "the library names DIAL9_TRACEDIR, DIAL9_TRACE_DIR suggested" grep -qx \
        "dial9: DIAL9_TRACEDIR is not a variable dial9 reads (ignored): did you mean DIAL9_TRACE_DIR?" "$T/err"
    check "named once ($(grep -c DIAL9_TRACEDIR "$T/err"))" [ "$(grep -c DIAL9_TRACEDIR "$T/err")" = 1 ]
    expect_rc 0 "a linked program, variables named already" env DIAL9_TRACEDIR=/nonexistent DIAL9_VARIABLES_NAMED=1 \
        "$REC" --record "$T/linked2" 10
    check "not named again after DIAL9_VARIABLES_NAMED=1" bash -c "! grep -q DIAL9_TRACEDIR '$T/err'"
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
check "said once under dial9 run, not again by the recorder ($(grep -c DIAL9_TRACEDIR "$T/err"))" \
    [ "$(grep -c DIAL9_TRACEDIR "$T/err")" = 1 ]
# the preload shim used directly: the recorder says it
expect_rc 0 "the shim preloaded directly with a misspelt variable" env DIAL9_TRACEDIR=/nonexistent \
    DIAL9_TRACE_DIR="$T/traces" LD_PRELOAD="$(dirname "$DIAL9")/libdial9-preload.so" true
check "the shim names DIAL9_TRACEDIR, once" [ "$(grep -cx \
    "dial9: DIAL9_TRACEDIR is not a variable dial9 reads (ignored): did you mean DIAL9_TRACE_DIR?" "$T/err")" = 1 ]
expect_rc 0 "a name near no known one" env DIAL9_QQQQQQQQQQ=1 "$DIAL9" run -q -d "$T/traces" -- true
check "no suggestion far from every name" grep -qx "dial9 run: DIAL9_QQQQQQQQQQ is not a variable dial9 reads (ignored)" "$T/err"

echo "test_unknown_variables: $pass passed, $fail failed"
[ "$fail" = 0 ]
