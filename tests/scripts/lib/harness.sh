# Shared by the script tests (sourced, not run): where things are, a scratch directory removed at
# exit, and pass/fail counting. A test prints "NAME: $pass passed, $fail failed" at the end and
# exits with [ "$fail" = 0 ].

BUILD=${D9_BUILD_DIR:-build}
SOURCE=${D9_SOURCE_DIR:-.}
SHARED=${D9_SHARED_DIR:-../shared}
DIAL9="$BUILD/dial9"
FIXTURE="$SHARED/fixtures/dial9-demo-trace.bin"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { # check "what" command...
    local what=$1; shift
    if "$@"; then ok; else bad "$what"; fi
}
expect_rc() { # expect_rc N "what" command...  (output in $T/out and $T/err)
    local want=$1 what=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ "$rc" = "$want" ]; then ok; else bad "$what: exit $rc, want $want ($(head -c 400 "$T/err"))"; fi
}
