#!/usr/bin/env bash
# The libuv adapter's hot path, counted: the instructions of its own code per exchange of the
# demo server's shape (one readiness of the loop's epoll_wait, the alloc and read callbacks of
# a stream, one uv_write tracked from submission to its completion callback) on the loop's
# thread, by callgrind, against a bound written here. Counts do not move with the machine's
# load, so a regression fails anywhere.
#
# uv_exchanges_counted makes N exchanges while recording. callgrind collects only inside the
# adapter: its trampolines, its uv_write / uv_write2 wrappers and its epoll_wait wrapper. The
# names it shares with libuv and glibc (uv_write, uv_write2, epoll_wait) toggle collection
# off again when the adapter calls the real one, as do the recorder's hooks (bounded by
# test_poll_instructions.sh and test_collector_instructions.sh) and the application's
# callbacks. Two runs of N1 and N2 exchanges; the difference / (N2 - N1) is one exchange. The
# trace must hold the exchanges' polls, spawns and terminates: an exchange that recorded
# nothing would be cheap for no merit. Labelled nosan: valgrind refuses a sanitizer's runtime.
set -euo pipefail
build=${D9_BUILD_DIR:?}
prog="$build/src/adapters/uv/uv_exchanges_counted"
[ -x "$prog" ] || { echo "SKIP: $prog is not built (libuv1-dev missing)"; exit 0; }
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 0; }
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$prog" 2>/dev/null)"; then
  echo "SKIP: built with a sanitizer (valgrind refuses its runtime)"; exit 0
fi

# Measured (gcc 12, RelWithDebInfo), instructions per exchange: 932.0 with the uv_write
# request inserted into the side table at submission and taken out at its completion (a hash,
# a shard lock, a probe and a backward-shift delete each way); 681.0 with the request's
# callback, location and task in the request itself (uv_request_cell.h); 594.9 with the
# handle's callbacks in a cell of the handle's own (uv_handle_cell.h) instead of a table lookup
# per callback; 561.1 with uv_write2 testing first for the trampoline libuv's uv_write passes
# it. Of those 561: the epoll_wait wrapper ~115, the uv_write wrappers and the request's cell
# ~120, the three trampolines (cells, polls opened and closed) ~320. The bound leaves room for
# another compiler's choices, not for a table round trip per request or a lookup per callback.
BOUND=640

dir=$(mktemp -d "${TMPDIR:-/tmp}/uv-instructions.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT # KEEP=1: leave the callgrind files
for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

count() { # exchanges -> instructions inside the adapter, hooks and callbacks left out
  local n=$1 out="$dir/cg.$1"
  mkdir -p "$dir/trace.$n"
  local toggles=()
  for f in alloc_trampoline read_trampoline write_trampoline uv_write uv_write2 epoll_wait \
           d9u_counted_alloc d9u_counted_read d9u_counted_written \
           d9__poll_begin d9__poll_end d9__poll_end_begin d9__park d9__unpark d9__wake_ready \
           d9__task_spawn_object d9__task_terminate d9_task_id_new; do
    toggles+=("--toggle-collect=$f")
  done
  valgrind --tool=callgrind --quiet --separate-threads=yes --callgrind-out-file="$out" \
    "${toggles[@]}" "$prog" "$n" "$dir/trace.$n" >"$out.stdout" 2>"$out.stderr" || {
      echo "FAIL: uv_exchanges_counted $n under callgrind failed" >&2
      cat "$out.stdout" "$out.stderr" >&2; exit 1; }
  grep -q "^exchanges $n\$" "$out.stdout" || { echo "FAIL: $(cat "$out.stdout")" >&2; exit 1; }
  local run polls spawns terminates
  run=$(sed -n 2p "$out.stdout")
  "$build/dial9" stats "$run" >"$out.stats" 2>&1 || { echo "FAIL: dial9 stats: $(cat "$out.stats")" >&2; exit 1; }
  polls=$(awk '$2 == "PollStartEvent" { print $1 }' "$out.stats")
  spawns=$(awk '$2 == "TaskSpawnEvent" { print $1 }' "$out.stats")
  terminates=$(awk '$2 == "TaskTerminateEvent" { print $1 }' "$out.stats")
  # per exchange: alloc, read and write callbacks are polls; the write request spawns and ends
  [ "${polls:-0}" -ge $((3 * n)) ] && [ "${spawns:-0}" -ge "$n" ] && [ "${terminates:-0}" -ge "$n" ] || {
    echo "FAIL: $n exchanges recorded ${polls:-0} polls, ${spawns:-0} spawns, ${terminates:-0} terminates: $(cat "$out.stats")" >&2
    exit 1; }
  # the loop's thread is the program's first (-01)
  awk '/^(summary|totals):/ {print $2; exit}' "$out-01"
}

n1=200 n2=1200
a=$(count $n1)
b=$(count $n2)
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || { echo "FAIL: no instructions counted in the adapter ($a, $b)"; exit 1; }
per=$(awk -v a="$a" -v b="$b" -v n=$((n2 - n1)) 'BEGIN { printf "%.1f", (b - a) / n }')
if awk -v p="$per" -v bound=$BOUND 'BEGIN { exit !(p <= bound) }'; then
  echo "ok    the libuv adapter's own instructions per exchange (read + write request): $per (bound $BOUND)"
else
  echo "FAIL  the libuv adapter's own instructions per exchange (read + write request): $per > $BOUND"
  { callgrind_annotate "$dir/cg.$n2-01" 2>/dev/null | sed -n '/file:function/,$p' | head -16; } || true
  exit 1
fi
echo "PASS"
