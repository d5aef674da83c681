#!/usr/bin/env bash
# `cmake --install` puts the library, headers, CLI (and dial9-serve, which the installed
# `dial9 serve` finds) and dial9.pc under a prefix, and
# `pkg-config --cflags --libs dial9` is all a user needs to build a program against it.
set -euo pipefail
: "${D9_BUILD_DIR:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$D9_BUILD_DIR" --prefix "$prefix" >/dev/null

pcdir=$(dirname "$(find "$prefix" -name dial9.pc | head -n 1)")
[ -f "$pcdir/dial9.pc" ] || { echo "FAIL: dial9.pc not installed"; exit 1; }
[ -f "$prefix/include/dial9/dial9.h" ] || { echo "FAIL: dial9.h not installed"; exit 1; }
[ -x "$prefix/bin/dial9" ] || { echo "FAIL: the dial9 CLI not installed"; exit 1; }
# `dial9 serve` execs dial9-serve, installed in libexec when the build has it
if [ -x "$D9_BUILD_DIR/dial9-serve" ]; then
    [ -x "$prefix/libexec/dial9-serve" ] || { echo "FAIL: dial9-serve not installed in libexec"; exit 1; }
    rc=0
    "$prefix/bin/dial9" serve --bind not-an-address "$work" 2>"$work/serve.err" || rc=$?
    [ "$rc" = 2 ] && grep -q -- "--bind takes" "$work/serve.err" ||
        { echo "FAIL: the installed dial9 serve did not run dial9-serve: $rc $(cat "$work/serve.err")"; exit 1; }
fi

cat > "$work/app.c" <<'C'
#include <dial9/dial9.h>
#include <stdio.h>
int main(int argc, char **argv) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[1];
    if (d9_start(&cfg) != 0) { fprintf(stderr, "%s\n", d9_last_error()); return 1; }
    d9_worker_begin("app", 0);
    for (int i = 0; i < 100; i++) { d9_poll_begin(1, D9_HERE); d9_poll_end(); }
    d9_stop();
    printf("%s\n", d9_run_dir());
    return argc > 2;
}
C
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dial9)
# A sanitizer build installs an instrumented library: the program needs the same runtime.
san=$(sed -n 's/^D9_SANITIZE:STRING=//p' "$D9_BUILD_DIR/CMakeCache.txt")
[ -n "$san" ] && flags="$flags -fsanitize=$san"
cc -o "$work/app" "$work/app.c" $flags -Wl,-rpath,"$prefix/lib" -Wl,-rpath,"$(dirname "$pcdir")"
run=$("$work/app" "$work/traces")
out=$("$prefix/bin/dial9" stats --json "$run")
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); n=d["by_name"].get("PollStartEvent",0); sys.exit(0 if n==100 else 1)' "$out" \
  || { echo "FAIL: expected 100 PollStartEvent in $run: $out"; exit 1; }
echo "install + pkg-config: 2 passed, 0 failed"
