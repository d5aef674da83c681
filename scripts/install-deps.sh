#!/usr/bin/env bash
# Install the Debian packages the build, the tests and the demo need (only those missing).
# Each optional part lists its own packages here so a fresh Debian 12 machine needs nothing else.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config     # the build
  zlib1g-dev                           # gzip traces in the reader
  clang libclang-rt-14-dev             # libFuzzer targets, sanitizers
  valgrind                             # instruction counts in the benchmark
  procps util-linux                    # setpriv, ps in tests
  libuv1-dev libevent-dev libev-dev    # loop adapters and their tests
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
