#!/usr/bin/env bash
# test_storyN_*: run one story with recording into a temporary directory, then check with
# check_story.py that its trace shows the diagnosis.
#   run_story_test.sh path/to/storyN_xxx path/to/dial9 N
set -euo pipefail
story=${1:?usage: run_story_test.sh STORY_BINARY DIAL9 NUMBER}
dial9=${2:?}
number=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v python3 >/dev/null; then echo "SKIP: python3 is not installed"; exit 0; fi
if [ ! -x "$dial9" ]; then echo "SKIP: the dial9 CLI ($dial9) is not built"; exit 0; fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/story$number.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# The test decides what is recorded, whatever the caller's environment says: the defaults.
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

status=0
timeout 120 "$story" --seconds "${STORY_SECONDS:-3}" --trace-dir "$dir" >"$dir/out.txt" 2>&1 || status=$?
cat "$dir/out.txt"
if [ "$status" -ne 0 ]; then echo "FAIL: $(basename "$story") exited with status $status"; exit 1; fi
run_dir=$(sed -n 's/^trace  *//p' "$dir/out.txt" | tail -n 1)
if [ -z "$run_dir" ] || [ ! -d "$run_dir" ]; then echo "FAIL: no run directory in the output"; exit 1; fi
python3 "$here/check_story.py" "$number" "$dial9" "$run_dir"
