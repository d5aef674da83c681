#!/usr/bin/env bash
# What `export -o OUT` and `symbolize -o OUT` do to OUT: a regular file is replaced whole, with
# its mode kept; a device or FIFO is written in place, never replaced by a regular file (as
# root, `export -o /dev/null` used to rename a regular file over /dev/null); a symlink keeps
# pointing where it did; a name planted where the temporary file goes (a symlink in a shared
# directory) is never followed; a failed write leaves OUT as it was and no temporary behind.
# The device cases go through a symlink to /dev/null, so the old code would only replace the
# link, never the machine's /dev/null.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "test_cli_output_files: $DIAL9 not built"; exit 1; }
IN="$SOURCE/tests/vectors/worked-example.bin"
[ -f "$IN" ] || { echo "test_cli_output_files: $IN missing"; exit 1; }

export_to() { "$DIAL9" export -q -f chrome "$IN" -o "$1"; }
symbolize_to() { "$DIAL9" symbolize -q --force "$IN" -o "$1"; }
no_temporaries() { ! compgen -G "$T/*.tmp*" >/dev/null; }

for cmd in export_to symbolize_to; do
    rm -rf "${T:?}"/*

    # A new file: written, 0666 less the umask, nothing else left in the directory.
    old_umask=$(umask) && umask 027
    expect_rc 0 "$cmd: a new file" "$cmd" "$T/new"
    umask "$old_umask"
    check "$cmd: the new file has content" test -s "$T/new"
    check "$cmd: the new file's mode is 0640 under umask 027" test "$(stat -c %a "$T/new")" = 640
    check "$cmd: no temporary left" no_temporaries

    # An existing file: replaced, its mode kept.
    echo old >"$T/existing" && chmod 600 "$T/existing"
    expect_rc 0 "$cmd: an existing file" "$cmd" "$T/existing"
    check "$cmd: the existing file is replaced" cmp -s "$T/new" "$T/existing"
    check "$cmd: its mode 0600 is kept" test "$(stat -c %a "$T/existing")" = 600

    # A symlink to a device: written in place, the link stays a link to it.
    ln -s /dev/null "$T/null-link"
    expect_rc 0 "$cmd: a symlink to /dev/null" "$cmd" "$T/null-link"
    check "$cmd: the link still names /dev/null" test "$(readlink "$T/null-link")" = /dev/null
    check "$cmd: /dev/null is still a character device" test -c /dev/null
    check "$cmd: no temporary beside the link" no_temporaries

    # A FIFO: its reader gets the output, the FIFO stays a FIFO.
    mkfifo "$T/fifo"
    timeout 600 cat "$T/fifo" >"$T/from-fifo" &
    reader=$!
    expect_rc 0 "$cmd: a FIFO" "$cmd" "$T/fifo"
    wait "$reader"
    check "$cmd: the FIFO is still a FIFO" test -p "$T/fifo"
    check "$cmd: its reader got the output" cmp -s "$T/new" "$T/from-fifo"

    # A symlink to a regular file: the file is replaced, the link stays.
    echo old >"$T/target" && ln -s target "$T/link"
    expect_rc 0 "$cmd: a symlink to a file" "$cmd" "$T/link"
    check "$cmd: the link stays a link" test -L "$T/link"
    check "$cmd: the file it names is replaced" cmp -s "$T/new" "$T/target"

    # Planted temporaries: the old names (OUT.tmp, OUT.tmp.PID) as symlinks to a victim file.
    echo precious >"$T/victim"
    ln -s victim "$T/planted.tmp"
    for pid in $(seq $(($$ + 1)) $(($$ + 64))); do ln -s victim "$T/planted.tmp.$pid"; done
    expect_rc 0 "$cmd: planted temporary names" "$cmd" "$T/planted"
    check "$cmd: the planted links are not followed" test "$(cat "$T/victim")" = precious
    check "$cmd: the output is written" cmp -s "$T/new" "$T/planted"

    # A place that cannot be written: a clear error naming it.
    expect_rc 1 "$cmd: a path under a missing directory" "$cmd" "$T/no/such/dir/out"
    check "$cmd: the error names the path" grep -q "$T/no/such/dir/out" "$T/err"
done

# export only: a directory as OUT is refused, and it stays a directory.
mkdir -p "$T/adir"
expect_rc 1 "export: a directory as OUT" export_to "$T/adir"
check "export: says it is a directory" grep -qi "is a directory" "$T/err"
check "export: the directory is untouched" test -d "$T/adir"

echo "test_cli_output_files: $pass passed, $fail failed"
[ "$fail" = 0 ]
