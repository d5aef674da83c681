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
    local name=$1; shift
    mkdir -p "$T/$name/data"
    : >"$T/$name/log"
    env "$@" node "$CHECK/proxy.mjs" "$T/$name/data" "$BUCKET" "$T/$name/log" >"$T/$name/port" 2>"$T/$name/proxy.err" &
    PROXY_PIDS+=($!)
    for _ in $(seq 600); do
        grep -q port "$T/$name/port" 2>/dev/null && break
        kill -0 "${PROXY_PIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$T/$name/port")
    [ -n "$PORT" ] || { echo "$0: proxy $name did not start: $(cat "$T/$name/proxy.err")"; exit 1; }
}

# read_back NAME: objects into $T/NAME/objects, one JSON line each in $T/NAME/objects.jsonl
read_back() {
    mkdir -p "$T/$1/objects"
    node "$CHECK/read_back.mjs" "http://127.0.0.1:$PORT" "$BUCKET" dial9-traces/ "$T/$1/objects" \
        >"$T/$1/objects.jsonl" 2>"$T/$1/read.err"
}

# spawn_ids FILE...: the TaskSpawnEvent task ids in the files, one per line
spawn_ids() {
    for f in "$@"; do "$DIAL9" dump --jsonl "$f"; done | grep '"event":"TaskSpawnEvent"' |
        sed -n 's/.*"task_id":\([0-9]*\).*/\1/p'
}

# every_event_once FILE...: ids 1..N each exactly once
every_event_once() {
    spawn_ids "$@" | sort -n >"$T/ids"
    ids_once
}
# every_event_once_jsonl FILE: the same in `dial9 dump --jsonl` output
every_event_once_jsonl() {
    grep '"event":"TaskSpawnEvent"' "$1" | sed -n 's/.*"task_id":\([0-9]*\).*/\1/p' | sort -n >"$T/ids"
    ids_once
}
ids_once() {
    [ "$(wc -l <"$T/ids")" = "$N" ] && [ "$(uniq "$T/ids" | wc -l)" = "$N" ] &&
        [ "$(head -1 "$T/ids")" = 1 ] && [ "$(tail -1 "$T/ids")" = "$N" ]
}
# every_event_times K FILE...: ids 1..N each exactly K times
every_event_times() {
    local k=$1; shift
    spawn_ids "$@" | sort -n | uniq -c | awk -v k="$k" '$1 != k { bad++ } END { exit bad || NR == 0 }' &&
        [ "$(spawn_ids "$@" | sort -un | wc -l)" = "$N" ]
}
stored_keys() { grep '"code":"stored"' "$T/$1/log" | sed 's/.*"key":"\([^"]*\)".*/\1/'; }
no_key_twice() { [ -z "$(stored_keys "$1" | sort | uniq -d)" ]; }
local_segments() { find "$T/$1/traces" -name 'trace.*.bin*' | sort; }

