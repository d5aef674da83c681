#!/usr/bin/env bash
# A FIFO, a device or a socket given as a trace PATH: every command refuses it at once with a
# clear error (it must never open it in a blocking way: a FIFO would wait for a writer
# forever), and a FIFO inside a trace directory is skipped like any other non-trace file.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
[ -x "$DIAL9" ] || { echo "test_nonregular_inputs: $DIAL9 not built"; exit 1; }

mkdir -p "$T/run"
mkfifo "$T/run/trace.0.bin"
ln -s "$T/run/trace.0.bin" "$T/link-to-fifo.bin"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sock.bin" 2>/dev/null

# a real segment beside the FIFO, for the directory walk
printf 'TRC\0\1' >"$T/good.bin"

commands=(stats dump analyze check "export --format chrome -o $T/out.json" symbolize)
inputs=("$T/run/trace.0.bin:a FIFO" "$T/link-to-fifo.bin:a FIFO" "/dev/null:a character device")
[ -S "$T/sock.bin" ] && inputs+=("$T/sock.bin:a socket")

for cmd in "${commands[@]}"; do
    for entry in "${inputs[@]}"; do
        path=${entry%%:*} kind=${entry#*:}
        # shellcheck disable=SC2086 # cmd holds options on purpose
        expect_rc 1 "$cmd $path" timeout 10 "$DIAL9" $cmd "$path"
        check "$cmd $path: says it is $kind" grep -q "not a regular file.*($kind)" "$T/err"
    done
done

# In a directory, a FIFO is not a trace file: skipped, the regular segment is read.
cp "$T/good.bin" "$T/run/trace.1.bin"
expect_rc 0 "stats on a directory holding a FIFO" timeout 10 "$DIAL9" stats "$T/run"
check "the FIFO is not listed" bash -c "! grep -q 'trace.0.bin' '$T/out'"

echo "test_nonregular_inputs: $pass passed, $fail failed"
[ "$fail" = 0 ]
