# Shared by the S3 script tests (sourced after lib/harness.sh, with CHECK, BUCKET and N set):
# the npm packages installed once (lib/npm_ci.sh), a verifying proxy in front of s3rver
# started per case, objects read back with the AWS SDK, and checks on the events in trace files.

[ -x "$DIAL9" ] || { echo "$0: $DIAL9 not built"; exit 1; }
command -v node >/dev/null || { echo "SKIP: node is not installed (s3rver and the SDK are npm packages)"; exit 0; }
source "$SOURCE/tests/scripts/lib/npm_ci.sh"
npm_ci_or_skip "$CHECK"
export NODE_NO_WARNINGS=1 # the SDK's notice about future Node versions

PROXY_PIDS=()
trap 'for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT

# start_proxy NAME [VAR=VALUE...]: a fresh store and proxy; sets PORT. Waits for its port line
# (a readiness wait, not a timing assertion).
start_proxy() {
    spawn_proxy "$@"
    proxy_port "$1"
}
# spawn_proxy NAME [VAR=VALUE...]: the same without waiting (node starting up while a test
# waits on something else); proxy_port NAME then waits for it and sets PORT. Its pid is
# PROXY_PID[NAME].
declare -A PROXY_PID
spawn_proxy() {
    local name=$1; shift
    mkdir -p "$T/$name/data"
    : >"$T/$name/log"
    env "$@" node "$CHECK/proxy.mjs" "$T/$name/data" "$BUCKET" "$T/$name/log" >"$T/$name/port" 2>"$T/$name/proxy.err" &
    PROXY_PIDS+=($!)
    PROXY_PID[$name]=$!
}
proxy_port() {
    local name=$1
    for _ in $(seq 600); do
        grep -q port "$T/$name/port" 2>/dev/null && break
        kill -0 "${PROXY_PID[$name]}" 2>/dev/null || break
        sleep 0.1
    done
    PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$T/$name/port")
    [ -n "$PORT" ] || { echo "$0: proxy $name did not start: $(cat "$T/$name/proxy.err")"; exit 1; }
}

# s3env: the env(1) words of a client of the loopback server: none of the caller's profile,
# session token or bucket, s3rver's keys, HOME, the cache and TMPDIR in $T (a later
# DIAL9_S3_CACHE_DIR=... after them wins); d9s3 ARGS...: dial9 so, against the proxy at PORT
s3env=(env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u DIAL9_S3_BUCKET AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
       HOME="$T/home" AWS_REGION=us-east-1 DIAL9_S3_CACHE_DIR="$T/cache" TMPDIR="$T")
mkdir -p "$T/home"
d9s3() { "${s3env[@]}" AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" "$DIAL9" "$@"; }

# read_back NAME: objects into $T/NAME/objects, one JSON line each in $T/NAME/objects.jsonl
read_back() {
    mkdir -p "$T/$1/objects"
    node "$CHECK/read_back.mjs" "http://127.0.0.1:$PORT" "$BUCKET" dial9-traces/ "$T/$1/objects" \
        >"$T/$1/objects.jsonl" 2>"$T/$1/read.err"
}

# task_ids: the TaskSpawnEvent task ids in `dial9 dump --jsonl` lines on stdin, one per line.
# awk, not sed: sed's leading .* backtracks through every line (~30 us an event, minutes for
# the millions of events a recording run uploads)
task_ids() {
    LC_ALL=C awk '/"event":"TaskSpawnEvent"/ { if (match($0, /"task_id":[0-9]+/)) print substr($0, RSTART + 10, RLENGTH - 10) }'
}
# spawn_ids FILE...: the TaskSpawnEvent task ids in the files, one per line (one decode for all)
spawn_ids() { "$DIAL9" dump --jsonl "$@" | task_ids; }

# every_event_once FILE...: ids 1..N each exactly once
every_event_once() {
    spawn_ids "$@" | LC_ALL=C sort -n >"$T/ids"
    ids_once
}
# every_event_once_jsonl FILE: the same in `dial9 dump --jsonl` output
every_event_once_jsonl() {
    task_ids <"$1" | LC_ALL=C sort -n >"$T/ids"
    ids_once
}
# ids_once: the sorted ids in $T/ids are 1, 2, ... N (so each once, none missing, none else)
ids_once() {
    LC_ALL=C awk -v n="$N" '$1 != NR { bad = 1; exit } END { exit bad || NR != n || n < 1 }' "$T/ids"
}
# every_event_times K FILE...: ids 1..N each exactly K times
every_event_times() {
    local k=$1; shift
    spawn_ids "$@" | LC_ALL=C sort -n |
        LC_ALL=C awk -v k="$k" -v n="$N" '$1 != int((NR - 1) / k) + 1 { bad = 1; exit } END { exit bad || NR != n * k || n < 1 }'
}
stored_keys() { grep '"code":"stored"' "$T/$1/log" | sed 's/.*"key":"\([^"]*\)".*/\1/'; }
no_key_twice() { [ -z "$(stored_keys "$1" | sort | uniq -d)" ]; }
local_segments() { find "$T/$1/traces" -name 'trace.*.bin*' | sort; }

