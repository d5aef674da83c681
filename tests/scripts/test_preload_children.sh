#!/bin/bash
# Children are traced only on request (`dial9 run --children`, DIAL9_TRACE_CHILDREN=1),
# whatever starts them: bash (which has its own setenv/unsetenv and builds its children's
# environment from the array main received), dash (vfork + execve), python3 subprocess (fork +
# execve, and posix_spawn), posix_spawn, fork or vfork + execve with an explicit environment
# copied from /proc/self/environ, which still holds the LD_PRELOAD the process started with.
# Each launcher runs `grep -c libdial9-preload.so /proc/self/maps` (prints whether that child
# has the shim loaded) and /bin/true three times. Without --children: no child has the shim,
# there is exactly one run (the launcher's), none from another process. With --children:
# every child has the shim and writes its own run. Then, printed and not checked (timings on a
# shared machine are no pass/fail): what a 200-command bash loop costs under dial9 run.
set -u
source "${D9_SOURCE_DIR:?D9_SOURCE_DIR is not set}/tests/preload/preload_lib.sh"
SPAWN="$HELPERS/d9p_spawn"
[ -x "$SPAWN" ] || fail "$SPAWN not built"
command -v dash >/dev/null || skip "dash not installed"
cd "$WORK"
# the interpreter itself, not a wrapper script in PATH (pyenv's shims are bash scripts,
# whose own children would be traced with --children)
PYTHON=$(python3 -c 'import sys; print(sys.executable)')

GREP='grep -c libdial9-preload.so /proc/self/maps'
PYENV='env = dict(e.split("=", 1) for e in open("/proc/self/environ").read().split("\0") if "=" in e)'

# the launchers: NAME, then the command (each prints "launcher <pid>" first)
names=() cmds=()
add() { names+=("$1"); shift; cmds+=("$(printf '%q ' "$@")"); }
add bash bash -c "echo launcher \$\$; $GREP; for i in 1 2 3; do /bin/true; done; echo end"
add dash dash -c "echo launcher \$\$; $GREP; for i in 1 2 3; do /bin/true; done; echo end"
add python-subprocess "$PYTHON" -c "
import os, subprocess
print('launcher', os.getpid(), flush=True)
subprocess.run('$GREP'.split())
for _ in range(3): subprocess.run(['/bin/true'])"
add python-subprocess-env-copy "$PYTHON" -c "
import os, subprocess
print('launcher', os.getpid(), flush=True)
$PYENV
subprocess.run('$GREP'.split(), env=env)
for _ in range(3): subprocess.run(['/bin/true'], env=env, close_fds=False)  # posix_spawn"
for mode in posix_spawn posix_spawn-copy fork-execve-copy vfork-execve-copy; do
    add "$mode" "$SPAWN" "$mode" /bin/grep -c libdial9-preload.so /proc/self/maps
done

# check NAME CHILDREN(0|1): run launcher NAME under dial9 run, check the shim in its children
# and the runs written
check() {
    local i=$1 children=$2 name=${names[$1]}
    local dir="$WORK/runs-$name-$children" opt=()
    [ "$children" = 1 ] && opt=(--children)
    eval "\"\$D9\" run -q ${opt[*]:-} -d \"\$dir\" -- ${cmds[$i]}" >"$WORK/out" 2>"$WORK/err" ||
        true # grep -c exits 1 when it counts 0
    local pid
    pid=$(sed -n 's/^launcher \([0-9]*\)$/\1/p' "$WORK/out")
    [ -n "$pid" ] || fail "$name: no launcher line: $(cat "$WORK/out" "$WORK/err")"
    local maps
    maps=$(grep -vE '^(launcher|end)' "$WORK/out" | head -1)
    local own=0 others=0 r
    for r in "$dir"/*/; do
        [ -d "$r" ] || continue
        case "$(basename "$r")" in *"-$pid-"*) own=$((own + 1)) ;; *) others=$((others + 1)) ;; esac
    done
    # the children: grep, and three /bin/true but for d9p_spawn's single child
    local kids=4
    case $name in posix_spawn* | *execve*) kids=1 ;; esac
    if [ "$children" = 0 ]; then
        [ "$maps" = 0 ] || fail "$name: a child has the shim loaded ($maps lines of its maps): $(cat "$WORK/err")"
        [ $others -eq 0 ] || fail "$name: $others runs from child processes without --children"
    else
        [ "${maps:-0}" -gt 0 ] || fail "$name --children: the child has no shim: $(cat "$WORK/out" "$WORK/err")"
        [ $others -eq $kids ] || fail "$name --children: $others runs from child processes, expected $kids"
    fi
    # dash ends with _exit: its own run exists only if the recorder had started by then
    if [ "$name" != dash ] && [ $own -ne 1 ]; then
        fail "$name: $own runs of the launcher itself, expected 1"
    fi
    echo "ok: $name$([ "$children" = 1 ] && echo " --children"): $([ "$children" = 1 ] && echo "every child traced" || echo "no child traced"), $own + $others runs"
}

for i in "${!names[@]}"; do
    check "$i" 0
    check "$i" 1
done

# LD_PRELOAD inside bash: the shim is gone, what was preloaded before stays
out=$(LD_PRELOAD=libm.so.6 "$D9" run -q -d "$WORK/runs-var" -- bash -c 'echo "[$LD_PRELOAD]"; true')
[ "$out" = "[libm.so.6]" ] || fail "bash sees LD_PRELOAD='$out', expected [libm.so.6]"
out=$("$D9" run -q --children -d "$WORK/runs-var2" -- bash -c 'echo "[$LD_PRELOAD]"; true')
case $out in "[$SHIM]"*) ;; *) fail "--children: bash sees LD_PRELOAD='$out', expected the shim" ;; esac
echo "ok: bash sees LD_PRELOAD without the shim (with it under --children)"

# a relative DIAL9_TRACE_DIR is made absolute for bash too (its setenv did not reach it)
out=$(cd "$WORK" && LD_PRELOAD="$SHIM" DIAL9_TRACE_DIR=rel bash -c 'cd /; echo "$DIAL9_TRACE_DIR"; true')
[ "$out" = "$WORK/rel" ] || fail "bash sees DIAL9_TRACE_DIR='$out', expected $WORK/rel"
echo "ok: bash sees DIAL9_TRACE_DIR made absolute"

# ---- benchmark (printed): a bash loop of 200 commands, plain and under dial9 run
python3 - "$D9" "$WORK/bench" <<'PY'
import shutil, subprocess, sys, time
d9, tdir = sys.argv[1:3]
loop = ["bash", "-c", "for i in $(seq 200); do /bin/true; done"]
cases = {"plain": loop, "dial9 run": [d9, "run", "-q", "-d", tdir, "--"] + loop}
best = {k: float("inf") for k in cases}
for _ in range(3):
    for k, cmd in cases.items():
        shutil.rmtree(tdir, ignore_errors=True)
        t0 = time.monotonic()
        subprocess.run(cmd, check=True)
        best[k] = min(best[k], time.monotonic() - t0)
import os
print("  bash loop of 200 /bin/true: plain %.2f s, under dial9 run %.2f s (best of 3), %d run(s)"
      % (best["plain"], best["dial9 run"], len([r for r in os.listdir(tdir) if not r.startswith(".")])))
PY
echo PASS
