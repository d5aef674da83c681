#!/usr/bin/env bash
# The Parquet files dial9 writes, read by two independent readers from npm (tests/parquet:
# hyparquet with fzstd, and DuckDB): random tables from our writer value for value, then
# `dial9 fold` of recorded traces against `dial9 analyze --json`, the fold's promises
# (atomic, idempotent, unreadable inputs named) and the documented DDL against the files.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$SOURCE/tests/scripts/lib/npm_ci.sh"
command -v node >/dev/null || { echo "SKIP: node is not installed"; exit 0; }
npm_ci_or_skip "$SOURCE/tests/parquet"
for exe in pq_random_table dial9 examples/executor/executor_demo; do
    [ -x "$BUILD/$exe" ] || { echo "FAIL: $BUILD/$exe not built"; exit 1; }
done

cd "$SOURCE/tests/parquet" || exit 1
export D9_BUILD_DIR=$(cd "$BUILD" && pwd) D9_SOURCE_DIR=$(cd "$SOURCE" && pwd) TMPDIR=$T
if node --test --test-concurrency=1 ./*.test.mjs >"$T/node.out" 2>&1; then
    ok
else
    bad "node tests (tests/parquet):"
    cat "$T/node.out" >&2
fi
grep -E "^# (tests|pass|fail)" "$T/node.out"
echo "test_parquet_readers: $pass passed, $fail failed"
[ "$fail" = 0 ]
