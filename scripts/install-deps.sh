#!/usr/bin/env bash
# Install the Debian packages the build, the tests and the demo need (only those missing).
# Each optional part lists its own packages here so a fresh Debian 12 machine needs nothing else.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config     # the build
  zlib1g-dev                           # gzip traces in the reader; headers of the compress step (libz.so.1 dlopen'ed)
  libzstd-dev zstd                     # zstd traces in the reader, headers of DIAL9_COMPRESS=zstd (libzstd.so.1 dlopen'ed); test_serve's .bin.zst
  libcurl4-openssl-dev                 # headers of the S3 upload step (libcurl.so.4 dlopen'ed at run time)
  clang libclang-rt-14-dev             # libFuzzer targets, sanitizers
  valgrind                             # instruction counts in the benchmark
  strace                               # system calls per park/unpark counted (test_recorder_park_syscalls)
  memcached linux-perf                 # the counted cost benchmark's server and its system-call counts
  procps util-linux                    # setpriv, ps in tests
  libuv1-dev libevent-dev libev-dev    # loop adapters and their tests
  libdw-dev elfutils                   # file:line and inlined frames in dial9 symbolize
  libmicrohttpd-dev curl python3       # dial9 serve and its tests (python3: their raw requests)
  wrk                                  # load for the libuv demo server (make demo)
  redis-server nginx-light             # home-grown event loops recorded zero-code (test_server_redis, test_server_nginx)
  liburing-dev                         # io_uring loops recorded zero-code (test_preload_uring_loop; the shim reads liburing.h)
  chromium fonts-liberation            # the browser tests: ctest's test_s3_fleet_browser runs before
                                       # scripts/test-viewer.sh, which installs them too
)
# Node.js and npm (export checks with independent readers, viewer tests, the Parquet readers of
# tests/parquet, which install their npm packages themselves): only when the commands
# are missing, so a Node.js installed another way is never replaced.

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
