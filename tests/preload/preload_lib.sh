# Shared by tests/scripts/test_preload*.sh and test_server_*.sh (sourced, not run).
# Sets BUILD, SRC, D9 (the dial9 CLI), SHIM (libdial9-preload.so), HEAP_SHIM (its heap library,
# libdial9-preload-heap.so: preloaded beside it for heap profiling), HELPERS (tests/preload
# binaries) and WORK (a temporary directory removed on exit, with every process the test
# started), and provides small helpers.

BUILD=${D9_BUILD_DIR:?D9_BUILD_DIR is not set}
SRC=${D9_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
D9="$BUILD/dial9"
SHIM="$BUILD/libdial9-preload.so"
HEAP_SHIM="$BUILD/libdial9-preload-heap.so"
HELPERS="$BUILD/tests/preload"
FACTS="$SRC/tests/preload/trace_facts.py"

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 0; }

[ -x "$D9" ] || fail "$D9 not built"
[ -f "$SHIM" ] || fail "$SHIM not built"
[ -f "$HEAP_SHIM" ] || fail "$HEAP_SHIM not built"
# A sanitizer build's shim needs its runtime loaded first, which an uninstrumented program
# does not do: the shim is tested in plain builds only.
if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$SHIM" 2>/dev/null)"; then # whole, not piped: see test_run_disk_full.sh
    skip "the preload shim is built with a sanitizer (it cannot be preloaded into plain programs)"
fi
command -v python3 >/dev/null || skip "python3 not installed"

WORK=$(mktemp -d /tmp/d9test-preload-XXXXXX)
D9T_PIDS=()
d9t_cleanup() {
    local p
    for p in "${D9T_PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    sleep 0.2
    for p in "${D9T_PIDS[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
    if [ -n "${D9T_KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap d9t_cleanup EXIT
trap 'exit 130' INT TERM

# apt_need PKG...: install missing Debian packages, or skip the test cleanly.
apt_need() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        skip "needs ${missing[*]} (not installed, cannot install)"
    fi
    echo "installing ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$WORK/apt.log" 2>&1; then
        apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$WORK/apt.log" 2>&1 ||
            skip "cannot install ${missing[*]}: $(tail -1 "$WORK/apt.log")"
    fi
}

# free_port: a TCP/UDP port on 127.0.0.1 that nothing listens on.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_port PORT [tcp|udp] [SECONDS]: until something listens there.
wait_port() {
    local port=$1 proto=${2:-tcp} secs=${3:-15} i
    local flag=-ltn
    [ "$proto" = udp ] && flag=-lun
    for ((i = 0; i < secs * 10; i++)); do
        ss $flag 2>/dev/null | grep -q "127.0.0.1:$port " && return 0
        sleep 0.1
    done
    return 1
}

# stop_server PID: SIGTERM, wait up to 120 s (then SIGKILL); the exit status is left in
# STATUS (not a command substitution: only this shell can wait for its child). The bound is a
# safety net for a hung server, not a speed limit: a recorder may spend 5 s at exit adding
# symbols (STOP_BUDGET_NS), and the program's shutdown plus dial9 run's summary came on top;
# 10 s was exceeded (SIGKILL, status 137) at load 28-74 on 2 CPUs.
stop_server() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 1200; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    STATUS=$?
}
