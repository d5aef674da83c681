#!/usr/bin/env bash
# The adapters' counted programs (tests/counted_program.h) record with the configuration the
# DIAL9_* variables give, so a count taken by hand with, say, DIAL9_CLOCK=tsc is that clock's
# and not silently the defaults': a variable they are given takes effect, a bad value or
# DIAL9_ENABLED=0 (nothing to count) stops them with the variable named. The instruction
# tests (lib/adapter_counted.sh) unset every DIAL9_* variable, so their figures stay the
# defaults' whatever the caller's environment.
set -euo pipefail
build=${D9_BUILD_DIR:?}
dir=$(mktemp -d "${TMPDIR:-/tmp}/counted-env.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

checked=0
for prog in src/adapters/ev/ev_callbacks_counted src/adapters/event/event_callbacks_counted \
            src/adapters/uv/uv_exchanges_counted; do
  p="$build/$prog" name=$(basename "$prog")
  [ -x "$p" ] || { echo "skip  $name: not built (its library's -dev package missing)"; continue; }
  # taken: the service a variable names is the trace's
  out=$(DIAL9_SERVICE=counted-env-check "$p" 20 "$dir/$name") ||
    { echo "FAIL: $name with DIAL9_SERVICE set failed: $out"; exit 1; }
  run=$(sed -n 2p <<<"$out")
  "$build/dial9" stats "$run" | grep -q '^  service = counted-env-check$' ||
    { echo "FAIL: $name ignored DIAL9_SERVICE: $("$build/dial9" stats "$run" | grep service)"; exit 1; }
  # refused, loudly: a bad value, and recording turned off
  for setting in DIAL9_CLOCK=bogus DIAL9_THREAD_CPU=bogus DIAL9_ENABLED=0; do
    if err=$(env "$setting" "$p" 20 "$dir/$name" 2>&1 >/dev/null); then
      echo "FAIL: $name ran with $setting (its count would be the defaults')"; exit 1
    fi
    grep -q "${setting%%=*}" <<<"$err" ||
      { echo "FAIL: $name with $setting: the error does not name the variable: $err"; exit 1; }
  done
  echo "ok    $name: DIAL9_SERVICE taken; DIAL9_CLOCK, DIAL9_THREAD_CPU bad and DIAL9_ENABLED=0 refused"
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || { echo "SKIP: no counted program is built"; exit 0; }
echo "PASS"
