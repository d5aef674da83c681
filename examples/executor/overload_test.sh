#!/usr/bin/env bash
# executor_demo_overload: the demo offered far more requests than two workers can serve
# (200 000/s for 2 s), with recording off and on. It must shed what it cannot take, finish
# every request it accepted, stop its threads in order and exit 0, with no sanitizer report
# (the ctest runs in the ASan+UBSan build too, where a use-after-free or leak is reported).
# Nothing here depends on timing: how many requests are accepted varies from run to run, but
# accepted + rejected = offered and completed = accepted always hold.
set -uo pipefail
demo=${1:?usage: overload_test.sh path/to/executor_demo}
dir=$(mktemp -d "${TMPDIR:-/tmp}/executor-overload.XXXXXX")
trap 'rm -rf "$dir"' EXIT
unset DIAL9_TRACE_DIR

fail() { echo "FAIL: $*"; cat "$dir/out.txt"; exit 1; }

overload() { # NAME ENV...: run the demo overloaded, check it
    local name=$1
    shift
    local status=0
    env "$@" "$demo" --workers 2 --rate 200000 --seconds 2 --trace-dir "$dir/traces" \
        >"$dir/out.txt" 2>&1 || status=$?
    [ "$status" -eq 0 ] || fail "$name: executor_demo exited with status $status"
    if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|WARNING: ThreadSanitizer' \
        "$dir/out.txt"; then
        fail "$name: sanitizer report"
    fi
    local line
    line=$(grep -E '^requests ' "$dir/out.txt") || fail "$name: no requests line"
    # requests  O offered, A accepted, R rejected (overloaded), C completed (...)
    read -r offered accepted rejected completed < <(
        echo "$line" | sed -E 's/^requests +([0-9]+) offered, ([0-9]+) accepted, ([0-9]+) rejected[^,]*, ([0-9]+) completed.*/\1 \2 \3 \4/')
    [ -n "${completed:-}" ] || fail "$name: cannot read '$line'"
    [ $((accepted + rejected)) -eq "$offered" ] || fail "$name: accepted + rejected != offered"
    [ "$completed" -eq "$accepted" ] || fail "$name: $completed of $accepted accepted requests completed"
    [ "$rejected" -gt 0 ] || echo "note: $name: nothing was rejected (this machine kept up)"
    echo "ok: $name: $line"
}

overload "recording off" DIAL9_ENABLED=0
overload "recording on" DIAL9_ENABLED=1
echo PASS
