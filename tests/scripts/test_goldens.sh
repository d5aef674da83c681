#!/usr/bin/env bash
# The exact outputs of dump, stats, analyze, check and export on the shared vectors and the dial9
# fixture (tests/goldens/run.sh; the fixture part skips when ../shared is absent).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
D9_BUILD_DIR=$BUILD D9_SHARED_DIR=$SHARED bash "$SOURCE/tests/goldens/run.sh"
