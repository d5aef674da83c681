#!/usr/bin/env bash
# Rewrite the shared vectors from the C encoder, then every golden from the current build:
#   tests/vectors/update.sh [BUILD_DIR]     (default: build)
# Review the result with `git diff tests/vectors tests/goldens` before committing it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$(cd "${1:-$HERE/../../build}" && pwd)
"$BUILD/test_vectors_encode" --write "$HERE"
D9_BUILD_DIR=$BUILD "$HERE/../goldens/run.sh" --update
