#!/usr/bin/env bash
# DIAL9_COMPRESS=zstd on a host where libzstd.so.1 cannot be loaded (hidden in a private mount
# namespace by /dev/null bound over it; root only, skipped otherwise): the program records as
# usual, the reason is said once (not once per segment), the sealed segments stay .bin and
# decode. The recorder is the example executor, which links libdial9 only (not libzstd).
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
APP="$BUILD/examples/executor/executor_demo"
[ -x "$APP" ] || { echo "test_compress_missing_library: SKIP: $APP not built"; exit 0; }
lib=$(ldconfig -p 2>/dev/null | awk '/libzstd\.so\.1 .*x86-64|libzstd\.so\.1 \(/ {print $NF; exit}')
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null || [ -z "$lib" ]; then
    echo "test_compress_missing_library: SKIP: needs root, mount namespaces and libzstd.so.1 to hide"
    exit 0
fi
if grep -q zstd <<<"$(ldd "$APP")"; then
    echo "test_compress_missing_library: $APP links libzstd: it cannot show a missing one"; exit 1
fi
mkdir -p "$T/traces"
unshare -m sh -c 'mount --make-rprivate / && mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" \
    env DIAL9_COMPRESS=zstd DIAL9_ROTATION_SECS=1 DIAL9_SYMBOLIZE=0 "$APP" --seconds 3 --rate 2000 \
    --trace-dir "$T/traces" >"$T/out" 2>"$T/err"
rc=$?
check "the program ran (exit $rc)" [ "$rc" = 0 ]
check "the reason said once ($(grep -c 'libzstd' "$T/err") lines)" \
    [ "$(grep -c 'compressing sealed segments with zstd: cannot load libzstd.so.1' "$T/err")" = 1 ]
check "no other message about it" [ "$(grep -c 'libzstd\|compressing' "$T/err")" = 1 ]
mapfile -t segs < <(find "$T/traces" -name 'trace.*.bin' | sort)
check "sealed segments stay .bin (${#segs[@]})" [ "${#segs[@]}" -ge 2 ]
check "no .zst, no temporary" [ -z "$(find "$T/traces" -name '*.zst*')" ]
"$DIAL9" stats "${segs[@]}" >"$T/stats" 2>&1
check "they decode ($(grep -c ': ok' "$T/stats") ok)" [ "$(grep -c ': ok' "$T/stats")" = "${#segs[@]}" ]

echo "test_compress_missing_library: $pass passed, $fail failed"
[ "$fail" = 0 ]
