# Sourced by run.sh and run_trace.sh (not run on its own).
# best_user DIR: the lowest user CPU seconds of $runs runs of `$dial9 analyze DIR` ($out holds
# /usr/bin/time's output).
best_user() {
    local b= v i
    for ((i = 0; i < runs; i++)); do
        /usr/bin/time -f %U -o "$out/time" "$dial9" analyze "$1" >/dev/null 2>&1
        v=$(tail -n 1 "$out/time")
        if [ -z "$b" ] || awk -v v="$v" -v b="$b" 'BEGIN { exit !(v < b) }'; then b=$v; fi
    done
    echo "$b"
}
