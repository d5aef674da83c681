#!/usr/bin/env bash
# `dial9 serve` with curl on 127.0.0.1: the index lists the runs and segments that are there
# (and not a symlink that leads out), a run's segments come back concatenated into a trace
# that `dial9 stats` decodes (torn tails cut, gzip inflated, zstd decompressed), traversal attempts (/../,
# %2e%2e, %2f, absolute paths, dot files, symlinks out of the viewer or trace directory) are
# refused with 403/404, only GET/HEAD without a body are accepted, oversized headers and too
# many query parameters get 431, %00 gets 400, the log escapes what the client sent, foreign
# Host names get 421 (DNS rebinding), a non-loopback --bind warns, SIGTERM stops it cleanly; the server is a separate executable (dial9-serve) that
# `dial9` does not link. Skips when dial9 was built without libmicrohttpd or curl
# is missing.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/serve_harness.sh"

[ -x "$DIAL9" ] || { echo "$DIAL9 not built"; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 0; }
# (a bad --bind makes a dial9 with libmicrohttpd stop at once; one without it says so)
if "$DIAL9" serve --bind not-an-address "$T" 2>&1 </dev/null | grep -q 'without libmicrohttpd'; then
    echo "SKIP: dial9 was built without libmicrohttpd (apt-get install libmicrohttpd-dev)"
    exit 0
fi

# ---- a trace directory ----
# the known trace of the export tests, encoded here in bash to need nothing else: two polls
# printf -v, not $(printf ...): no fork per byte (a fork took ~40 ms at load 15; ~0.2 ms now)
b() { local x h; for x in "$@"; do printf -v h '\\x%02x' "$x"; printf "$h" >>"$OUT"; done; }
u16() { b $(($1 & 255)) $(($1 >> 8 & 255)); }
u24() { b $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)); }
u32() { b $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
u64() { u32 $(($1 & 0xffffffff)); u32 $(($1 >> 32)); }
name16() { u16 ${#1}; printf '%s' "$1" >>"$OUT"; }
make_trace() { # make_trace FILE BASE_NS: a stream with two polls of worker 0
    OUT=$1
    : >"$OUT"
    b 0x54 0x52 0x43 0x00 0x01
    b 1; u16 0; name16 PollStartEvent; b 1; u16 4
    name16 worker_id; b 9; name16 local_queue; b 11; name16 task_id; b 9; name16 spawn_loc; b 7
    b 1; u16 1; name16 PollEndEvent; b 1; u16 1; name16 worker_id; b 9
    b 3; u32 1; u32 1; u32 6; printf 'a.c:1:' >>"$OUT"
    b 5; u64 "$2"
    b 2; u16 0; u24 0; b 0 0 7; u32 1        # poll start, task 7
    b 2; u16 1; u24 1000; b 0                # poll end after 1 µs
    b 2; u16 0; u24 5000; b 0 0 8; u32 1     # poll start, task 8
    b 2; u16 1; u24 2000; b 0                # poll end
}
D="$T/traces"
mkdir -p "$D/run-a" "$D/run-b" "$D/a&b <c>" "$T/outside" "$T/viewer"
make_trace "$D/run-a/trace.0.bin" 1000000000
make_trace "$D/run-a/trace.1.bin" 2000000000
make_trace "$T/seg2" 3000000000 && gzip -c "$T/seg2" >"$D/run-a/trace.2.bin.gz"
make_trace "$D/run-a/trace.3.bin.active" 4000000000
head -c -3 "$D/run-a/trace.3.bin.active" >"$T/torn" && mv "$T/torn" "$D/run-a/trace.3.bin.active" # torn tail
make_trace "$T/outside/trace.0.bin" 5000000000
ln -s "$T/outside/trace.0.bin" "$D/run-a/trace.9.bin"        # a symlink out: never listed
ln -s "$T/outside" "$D/run-out"                               # a symlinked directory: not walked
make_trace "$D/a&b <c>/trace.0.bin" 6000000000
[ -f "$FIXTURE" ] && cp "$FIXTURE" "$D/run-b/trace.0.bin.gz"
# a zstd segment (DIAL9_COMPRESS=zstd), written with the zstd command when it is there
HAVE_ZSTD=0
if command -v zstd >/dev/null; then
    mkdir -p "$D/run-z"
    make_trace "$T/seg5" 7000000000 && zstd -q -c "$T/seg5" >"$D/run-z/trace.0.bin.zst" && HAVE_ZSTD=1
fi
# a viewer directory with a symlink out of it
echo '<!doctype html><title>viewer</title>' >"$T/viewer/index.html"
echo 'secret' >"$T/outside/secret.txt"
ln -s "$T/outside/secret.txt" "$T/viewer/leak.txt"
echo 'x' >"$T/viewer/.hidden"

# ---- start ----
serve_start serve "$DIAL9" serve --viewer-dir "$T/viewer" --allow-host traces.example "$D" || exit 1
U="http://127.0.0.1:$PORT"
check "binds 127.0.0.1 by default" grep -q 'listening on http://127.0.0.1:' "$T/serve.out"
status() { curl -s --path-as-is -o "$T/body" -w '%{http_code}' "$@"; }
expect_status() { # expect_status CODE(S) what curl-args...
    local want=$1 what=$2; shift 2
    local got; got=$(status "$@")
    if [[ " $want " == *" $got "* ]]; then ok; else bad "$what: HTTP $got, want $want"; fi
}

# ---- the index ----
expect_status 200 "index" "$U/api/index"
cp "$T/body" "$T/index.json"
if command -v python3 >/dev/null && python3 -c 'import json' 2>/dev/null; then
    python3 - "$T/index.json" "$([ -f "$FIXTURE" ] && echo 1 || echo 0)" "$HAVE_ZSTD" <<'EOF' && ok || bad "index contents"
import json, sys
ix = json.load(open(sys.argv[1]))
runs = {r["run"]: r for r in ix["runs"]}
want = {"run-a", "a&b <c>"} | ({"run-b"} if sys.argv[2] == "1" else set()) | ({"run-z"} if sys.argv[3] == "1" else set())
assert set(runs) == want, sorted(runs)
if sys.argv[3] == "1":
    z = runs["run-z"]["files"][0]
    assert z["name"] == "trace.0.bin.zst" and z["status"] == "ok" and z["events"] == 4, z
    assert z["first_ns"] == 7000000000, z
a = runs["run-a"]
names = [f["name"] for f in a["files"]]
assert names == ["trace.0.bin", "trace.1.bin", "trace.2.bin.gz", "trace.3.bin.active"], names
f = {x["name"]: x for x in a["files"]}
assert f["trace.0.bin"]["events"] == 4 and f["trace.0.bin"]["status"] == "ok"
assert f["trace.0.bin"]["first_ns"] == 1000000000 and f["trace.0.bin"]["last_ns"] == 1000008000
assert f["trace.2.bin.gz"]["gzip"] is True and f["trace.2.bin.gz"]["first_ns"] == 3000000000
assert f["trace.3.bin.active"]["active"] is True and f["trace.3.bin.active"]["status"] == "truncated"
assert f["trace.3.bin.active"]["events"] == 3
assert a["first_ns"] == 1000000000 and a["last_ns"] == 4000006000, (a["first_ns"], a["last_ns"])
assert a["trace_url"] == "/api/trace?run=run-a"
assert runs["a&b <c>"]["trace_url"] == "/api/trace?run=a%26b%20%3Cc%3E"
if sys.argv[2] == "1":
    assert runs["run-b"]["events"] == 210639 and runs["run-b"]["last_ns"] - runs["run-b"]["first_ns"] == 4809856406
EOF
else
    check "index lists run-a" grep -q '"run": "run-a"' "$T/index.json"
fi
check "symlink out of the trace directory is not listed" bash -c "! grep -q 'trace.9.bin' '$T/index.json'"
check "symlinked directory is not listed" bash -c "! grep -q 'run-out' '$T/index.json'"

# ---- concatenated downloads decode ----
expect_status 200 "whole run" "$U/api/trace?run=run-a"
cp "$T/body" "$T/run-a.bin"
"$DIAL9" stats --json "$T/run-a.bin" >"$T/stats.json" 2>"$T/stats.err"
check "concatenation decodes without error ($(cat "$T/stats.err"))" test $? = 0
# 4 + 4 + 4 events, and the 3 complete ones of the torn segment: its tail was cut, so the
# download ends cleanly
check "all events of the run" grep -q '^  "events": 15,' "$T/stats.json"
check "torn tail cut: the download is complete" bash -c "'$DIAL9' stats '$T/run-a.bin' | grep -q ': ok'"
expect_status 200 "two segments" "$U/api/trace?run=run-a&seg=0&seg=2"
"$DIAL9" stats --json "$T/body" >"$T/stats2.json" 2>/dev/null
check "segments 0 and 2: 8 events" grep -q '^  "events": 8,' "$T/stats2.json"
expect_status 200 "a segment named twice" "$U/api/trace?run=run-a&seg=0&seg=0"
"$DIAL9" stats --json "$T/body" >"$T/stats3.json" 2>/dev/null
check "a segment named twice comes once" grep -q '^  "events": 4,' "$T/stats3.json"
expect_status 404 "one of two segments unknown" "$U/api/trace?run=run-a&seg=0&seg=8"
expect_status 200 "by file name" "$U/api/trace?run=run-a&file=trace.2.bin.gz"
check "gzip segment served inflated" cmp -s "$T/body" "$T/seg2"
if [ "$HAVE_ZSTD" = 1 ]; then
    expect_status 200 "a zstd run" "$U/api/trace?run=run-z"
    check "zstd segment served decompressed" cmp -s "$T/body" "$T/seg5"
fi
expect_status 200 "escaped run name" "$U/api/trace?run=a%26b%20%3Cc%3E"
len_get=$(curl -s -o /dev/null -w '%{size_download}' "$U/api/trace?run=run-a")
len_head=$(curl -sI "$U/api/trace?run=run-a" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-length"{print $2}')
check "HEAD announces the GET length ($len_head vs $len_get)" test "$len_head" = "$len_get"
if [ -f "$FIXTURE" ]; then
    expect_status 200 "fixture run" "$U/api/trace?run=run-b"
    check "fixture run decodes to 210639 events" bash -c "'$DIAL9' stats --json '$T/body' | grep -q '\"events\": *210639'"
fi

# ---- what is refused ----
expect_status "400" "two runs" "$U/api/trace?run=run-a&run=run-b"
expect_status "400" "no run" "$U/api/trace"
expect_status "400" "bad seg" "$U/api/trace?run=run-a&seg=x"
expect_status "404" "unknown run" "$U/api/trace?run=nope"
expect_status "404" "run with .." "$U/api/trace?run=../outside"
expect_status "404" "run as absolute path" "$U/api/trace?run=$T/outside"
expect_status "404" "unknown segment" "$U/api/trace?run=run-a&seg=7"

# ---- a segment that is not a trace: said so, not served as an empty run ----
mkdir -p "$D/not-trace" "$D/mixed"
printf 'this is not a dial9 trace\n' >"$D/not-trace/trace.0.bin"
make_trace "$D/mixed/trace.0.bin" 8000000000
cp "$D/not-trace/trace.0.bin" "$D/mixed/trace.1.bin"
expect_status 422 "a run whose only segment is not a trace" "$U/api/trace?run=not-trace"
check "the answer names the segment and why ($(head -c 300 "$T/body"))" \
    grep -q '^trace.0.bin: .*not a dial9 trace' "$T/body"
expect_status 422 "the one bad segment of a run" "$U/api/trace?run=mixed&seg=1"
expect_status 200 "a run with a good segment beside a bad one" "$U/api/trace?run=mixed"
"$DIAL9" stats --json "$T/body" >"$T/stats-mixed.json" 2>/dev/null
check "its good segment's 4 events are served" grep -q '^  "events": 4,' "$T/stats-mixed.json"
rm -r "$D/not-trace" "$D/mixed"
expect_status "404" "symlinked segment" "$U/api/trace?run=run-a&file=trace.9.bin"
expect_status "404" "file with .." "$U/api/trace?run=run-a&file=../../outside/trace.0.bin"
expect_status "403 404" "/../" "$U/../outside/secret.txt"
expect_status "403 404" "/../../../etc/passwd" "$U/../../../../../../etc/passwd"
expect_status "403 404" "%2e%2e" "$U/%2e%2e/%2e%2e/%2e%2e/etc/passwd"
expect_status "403 404" "%2e%2e%2f" "$U/%2e%2e%2f%2e%2e%2fetc%2fpasswd"
expect_status "403 404" "absolute path" "$U//etc/passwd"
expect_status "403 404" "absolute-form request target" --request-target "http://127.0.0.1/../etc/passwd" "$U/"
expect_status "403" "symlink out of the viewer" "$U/leak.txt"
check "the secret is not in the answer" bash -c "! grep -q secret '$T/body'"
expect_status "403" "dot file" "$U/.hidden"
expect_status "404" "no such file" "$U/nope.js"
expect_status 200 "viewer index" "$U/"
check "viewer index served" grep -q '<title>viewer</title>' "$T/body"
expect_status 200 "runs page" "$U/runs"
check "runs page escapes names" grep -q 'a&amp;b &lt;c&gt;' "$T/body"
expect_status 405 "POST" -X POST "$U/api/index"
expect_status 405 "PUT" -X PUT --data x "$U/"
expect_status 405 "DELETE" -X DELETE "$U/api/trace?run=run-a"
expect_status 413 "GET with a body" -X GET --data x "$U/api/index"
big=$(head -c 100000 /dev/zero | tr '\0' a)
expect_status 431 "oversized headers" -m 20 -H "X-Big: $big" "$U/api/index"
expect_status 414 "oversized request target" -m 20 "$U/$big"
# ~1000 query parameters: libmicrohttpd alone queued a 431 it never sent (the client hung)
many=$(for i in $(seq 1000); do printf 'a%d=1&' "$i"; done)
expect_status 431 "1000 query parameters are answered" -m 20 "$U/api/trace?${many}run=run-a"
few=$(for i in $(seq 200); do printf 'a%d=1&' "$i"; done)
expect_status 200 "200 query parameters are fine" -m 20 "$U/api/trace?${few}run=run-a"

# ---- a NUL cuts nothing short ----
expect_status 400 "%00 in the path" "$U/index.html%00.txt"
expect_status 400 "%00 in a query value" "$U/api/trace?run=run-a%00"
expect_status 400 "%00 in a query name" "$U/api/trace?run=run-a&seg%00=1"
expect_status 200 "%2500 is a literal %00, not a NUL" "$U/api/trace?run=run-a&x=%2500"

# ---- the log cannot be forged ----
expect_status 403 "%0a in the path" "$U/a%0adial9%20serve:%20GET%20/forged%20200"
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /x\033[2J HTTP/1.0\r\n\r\n' >&3
timeout 10 cat <&3 >/dev/null
exec 3>&-
check "no forged log line" bash -c "! grep -q '^dial9 serve: GET /forged' '$T/serve.err'"
check "the target is logged as received" grep -qF 'GET /a%0adial9%20serve:%20GET%20/forged%20200 403' "$T/serve.err"
check "control bytes are escaped in the log" grep -qF 'GET /x\x1b[2J' "$T/serve.err"
check "no raw control byte in the log" bash -c "! LC_ALL=C grep -q \$'\\x1b' '$T/serve.err'"

# ---- Host: against DNS rebinding ----
expect_status 421 "a foreign Host" -H "Host: attacker.example" "$U/api/index"
expect_status 421 "a foreign Host with the port" -H "Host: attacker.example:$PORT" "$U/api/index"
expect_status 421 "localhost as a prefix" -H "Host: localhost.attacker.example" "$U/api/index"
expect_status 421 "the address as a prefix" -H "Host: 127.0.0.1.attacker.example" "$U/api/index"
expect_status 421 "another machine's address" -H "Host: 10.1.2.3" "$U/api/index"
expect_status 200 "Host: the bound address" -H "Host: 127.0.0.1:$PORT" "$U/api/index"
expect_status 200 "Host: localhost" -H "Host: localhost:$PORT" "$U/api/index"
expect_status 200 "Host: a .localhost name" -H "Host: viewer.localhost" "$U/api/index"
expect_status 200 "Host: [::1]" -H "Host: [::1]:$PORT" "$U/api/index"
expect_status 200 "Host: an --allow-host name" -H "Host: traces.example:$PORT" "$U/api/index"
expect_status 200 "Host: an --allow-host name, any case, trailing dot" -H "Host: TRACES.Example." "$U/api/index"
expect_status 400 "HTTP/1.1 without a Host" -H "Host:" "$U/api/index"
expect_status 200 "HTTP/1.0 without a Host" --http1.0 -H "Host:" "$U/api/index"
check "no bind warning on loopback" bash -c "! grep -q 'not a loopback address' '$T/serve.err'"

# ---- a new segment shows up ----
make_trace "$D/run-a/trace.4.bin" 7000000000
expect_status 200 "index after a new segment" "$U/api/index"
check "new segment listed" grep -q 'trace.4.bin' "$T/body"

# ---- stop ----
serve_stop 0

# ---- a stop sent more than once: timeout(1) and systemd signal the server and then its
# process group, so copies arrive while it stops. It must still end with status 0, not die of
# one (143). The copies are sent without pause until it is gone.
if serve_start repeated "$DIAL9" serve "$D"; then
    server=$(pgrep -P "$SERVER_PID" | head -1) # the server, timeout(1)'s child
    while kill -TERM "${server:-none}" 2>/dev/null; do :; done
    wait "$SERVER_PID"
    rc=$?
    SERVER_PID=
    check "SIGTERM sent again and again while it stops: status 0 ($rc)" [ "$rc" = 0 ]
    check "it said once that it stops" [ "$(grep -c 'stopping (Terminated)' "$T/repeated.err")" = 1 ]
fi

# ---- a non-loopback address warns (192.0.2.1 is TEST-NET-1, not on this machine: it cannot
# listen there, no traffic) ----
"$DIAL9" serve --port 0 --bind 192.0.2.1 "$D" >"$T/bind.out" 2>"$T/bind.err"
check "non-loopback bind: warns that the traces are readable from the network" \
    grep -q 'warning: 192.0.2.1 is not a loopback address: anyone who can reach it' "$T/bind.err"

# ---- usage ----
"$DIAL9" serve >/dev/null 2>&1; check "no directory: usage error" test $? = 2
"$DIAL9" serve --port 0 "$T/nope" >/dev/null 2>&1; check "missing directory: usage error" test $? = 2
"$DIAL9" serve --bind example.org "$D" >/dev/null 2>&1; check "non-numeric bind: usage error" test $? = 2
"$DIAL9" serve --port 70000 "$D" >/dev/null 2>&1; check "bad port: usage error" test $? = 2
printf 'dial9-serve-selection 1\nrun\t.\tsoon\t-1\n' >"$T/bad.selection"
"$DIAL9" serve --port 0 --selection "$T/bad.selection" "$D" >/dev/null 2>"$T/sel.err"
check "a bad --selection file: usage error ($?)" test $? = 2
check "a bad --selection file: the line named" grep -q "bad.selection: line 2 is not a selection record" "$T/sel.err"

# ---- the server is dial9-serve, which `dial9 serve` execs: dial9 itself does not load
# libmicrohttpd, and one without dial9-serve beside it says where it looked
if command -v readelf >/dev/null; then
    check "dial9 does not link libmicrohttpd" test "$(readelf -d "$DIAL9" | grep -c 'NEEDED.*microhttpd')" = 0
fi
mkdir -p "$T/alone" && cp "$DIAL9" "$T/alone/dial9"
"$T/alone/dial9" serve --port 0 "$D" >"$T/alone.out" 2>"$T/alone.err"
check "without dial9-serve: exit 1 ($?)" test $? = 1
check "without dial9-serve: says where it looked" grep -q "dial9-serve, is not in $T/alone/" "$T/alone.err"
"$T/alone/dial9" serve --help >"$T/alone.out" 2>&1
check "without dial9-serve: --help still works" grep -q "usage: dial9 serve" "$T/alone.out"

echo "test_serve: $pass passed, $fail failed"
[ "$fail" = 0 ]
