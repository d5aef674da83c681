#!/usr/bin/env bash
# The folder rules of src/README.md hold (tests/scripts/lib/source_layout.py): every
# #include "..." under src/ is one that the README's table allows, and no file of src/ is
# compiled twice (the build's compile_commands.json). Then the checker is shown to refuse what
# it must, on copies: a planted include of cli/ from common/, a bare include that resolves
# nowhere, a folder without a row, and a source compiled into two targets.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
CHECK="$SOURCE/tests/scripts/lib/source_layout.py"
python3 -c 'import json' 2>/dev/null || { echo "test_source_layout: SKIP: python3 not found"; exit 0; }
COMMANDS="$BUILD/compile_commands.json"
[ -f "$COMMANDS" ] || { echo "test_source_layout: $COMMANDS missing (configure at the top level)"; exit 1; }

# refuses "what" PATTERN SRC README [COMMANDS]: the checker exits 1 and names PATTERN
refuses() {
    local what=$1 pattern=$2; shift 2
    python3 "$CHECK" "$@" >"$T/out" 2>&1
    local rc=$?
    if [ "$rc" = 1 ] && grep -qF -- "$pattern" "$T/out"; then ok; else bad "$what: exit $rc, output: $(head -c 600 "$T/out")"; fi
}

# ---- the tree as it is ----
if python3 "$CHECK" "$SOURCE/src" "$SOURCE/src/README.md" "$COMMANDS" >"$T/out" 2>&1; then ok; else
    bad "the source tree breaks src/README.md's rules:"; cat "$T/out" >&2
fi

# ---- planted breaches, on a copy ----
cp -r "$SOURCE/src" "$T/src"
RULES="$T/src/README.md"
sed -i 's|#include "common/arena.h"|#include "common/arena.h"\n#include "cli/cli.h"|' "$T/src/common/arena.c"
check "the plant is in place" grep -qF '#include "cli/cli.h"' "$T/src/common/arena.c"
refuses "common/ including cli/" 'src/common/arena.c:' "$T/src" "$RULES"
grep -F 'src/common/arena.c:' "$T/out" | grep -qF 'common/ may not use cli/' && ok || bad "reason: $(cat "$T/out")"
cp "$SOURCE/src/common/arena.c" "$T/src/common/arena.c"

# serve/ reaching into cli/ again (the dependency this layout removed)
echo '#include "cli/cli.h"' >>"$T/src/serve/serve_main.c"
refuses "serve/ including cli/" 'serve/ may not use cli/' "$T/src" "$RULES"
cp "$SOURCE/src/serve/serve_main.c" "$T/src/serve/serve_main.c"

# the Parquet writer stays a libc + common part: no reaching into the trace format
echo '#include "format/decoder.h"' >>"$T/src/parquet/pq_writer.c"
refuses "parquet/ including format/" 'parquet/ may not use format/' "$T/src" "$RULES"
cp "$SOURCE/src/parquet/pq_writer.c" "$T/src/parquet/pq_writer.c"

# the AWS client is a part of its own that the uploader and the fleet reader use: it reaches
# back into neither, and the recorder's sinks never into the fleet reader
echo '#include "sinks/pipeline.h"' >>"$T/src/aws/s3_client.c"
refuses "aws/ including sinks/" 'aws/ may not use sinks/' "$T/src" "$RULES"
cp "$SOURCE/src/aws/s3_client.c" "$T/src/aws/s3_client.c"
echo '#include "fleet/s3_fetch.h"' >>"$T/src/aws/sigv4.c"
refuses "aws/ including fleet/" 'aws/ may not use fleet/' "$T/src" "$RULES"
cp "$SOURCE/src/aws/sigv4.c" "$T/src/aws/sigv4.c"
echo '#include "fleet/s3_cache.h"' >>"$T/src/sinks/step_upload.c"
refuses "sinks/ including fleet/" 'sinks/ may not use fleet/' "$T/src" "$RULES"
cp "$SOURCE/src/sinks/step_upload.c" "$T/src/sinks/step_upload.c"

# a bare include found only through some include path
echo '#include "decoder.h"' >>"$T/src/model/symtab.c"
refuses "a bare include of another folder" 'src/model/symtab.c' "$T/src" "$RULES"
cp "$SOURCE/src/model/symtab.c" "$T/src/model/symtab.c"

# a new folder without a row
mkdir -p "$T/src/newpart" && echo 'int d9_newpart;' >"$T/src/newpart/newpart.c"
refuses "a folder the table does not name" 'newpart/ has no row' "$T/src" "$RULES"
rm -rf "$T/src/newpart"

# the copy is clean again: the refusals above came from the plants alone
check "the restored copy passes" python3 "$CHECK" "$T/src" "$RULES"

# a source compiled into two targets: its entry twice in compile_commands.json, the second
# as another target's object (paths made to point into the copy)
python3 - "$COMMANDS" "$SOURCE/src" "$T/src" "$T/commands.json" <<'EOF'
import json, os, sys
entries = json.load(open(sys.argv[1]))
src, copy = os.path.realpath(sys.argv[2]), sys.argv[3]
for e in entries:
    e["file"] = os.path.join(e.get("directory", ""), e["file"]).replace(src, copy, 1)
dup = next(e for e in entries if e["file"].endswith("/src/format/decoder.c"))
entries.append(dict(dup, output="CMakeFiles/other_target.dir/src/format/decoder.c.o"))
json.dump(entries, open(sys.argv[4], "w"))
EOF
refuses "a file compiled twice" 'src/format/decoder.c: compiled 2 times' "$T/src" "$RULES" "$T/commands.json"

echo "test_source_layout: $pass passed, $fail failed"
[ "$fail" = 0 ]
