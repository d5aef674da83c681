#!/usr/bin/env bash
# Viewer tests: the JS decoder under node's test runner, then the viewer in headless Chromium.
# Installs what it needs on a fresh Debian 12 machine: Debian's chromium (never a downloaded
# browser), fonts, and the npm packages pinned by viewer/package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/../viewer"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
dpkg-query -W -f='${Status}' fonts-liberation 2>/dev/null | grep -q "install ok installed" || missing+=(fonts-liberation)
if ((${#missing[@]})); then
  echo "test-viewer: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi

# playwright-core only drives the browser we give it; make sure nothing tries to fetch one.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
# Under the lock the script tests take (test_s3_fleet_browser uses viewer/node_modules too,
# maybe from another build directory at this moment), and only when not installed already.
source ../tests/scripts/lib/npm_ci.sh
npm_ci_once "$PWD" || { echo "test-viewer: npm ci failed in $PWD"; exit 1; }

echo "== viewer: decoder tests (node $(node --version)) =="
node --test test/*.test.mjs

echo "== viewer: browser tests ($(/usr/bin/chromium --version 2>/dev/null | head -1)) =="
node --test --test-concurrency=1 browser-test/*.test.mjs
