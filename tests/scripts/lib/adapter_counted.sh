# What the adapters' counted tests share (test_event_adapter_instructions.sh,
# test_ev_adapter_instructions.sh, test_uv_adapter_instructions.sh): a program makes N
# callbacks or exchanges while recording, callgrind collects inside the adapter only (the
# toggles each test names), two runs of N1 and N2 give one callback's count as the difference
# / (N2 - N1), and the trace must hold what the callbacks recorded. Sourced; uses $build.

source "$(dirname "${BASH_SOURCE[0]}")/smallest_counts.sh"

# Skip (exit 0, saying why) when the program, valgrind or a plain build is missing.
ac_require() { # program, the Debian package whose absence leaves it unbuilt
  [ -x "$1" ] || { echo "SKIP: $1 is not built ($2 missing)"; exit 0; }
  command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 0; }
  if grep -qE 'lib(asan|tsan|ubsan|lsan)' <<<"$(ldd "$1" 2>/dev/null)"; then
    echo "SKIP: built with a sanitizer (valgrind refuses its runtime)"; exit 0
  fi
  # the programs honour DIAL9_* (counted_program.h); the bounds here are the defaults'
  for v in $(env | sed -n 's/^\(DIAL9_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
}

# Run `program N trace_dir [mode]` under callgrind with --toggle-collect for each function
# named after `--`; its first stdout line must be "WHAT N", its second the run directory, whose
# `dial9 stats` goes to OUT.stats. Exits the test on failure.
ac_callgrind() { # out n trace_dir mode what program -- functions...
  local out=$1 n=$2 trace=$3 mode=$4 what=$5 prog=$6
  shift 7
  local toggles=() f
  for f in "$@"; do toggles+=("--toggle-collect=$f"); done
  mkdir -p "$trace"
  # shellcheck disable=SC2086 # mode: no word or one
  valgrind --tool=callgrind --quiet --separate-threads=yes --callgrind-out-file="$out" \
    "${toggles[@]}" "$prog" "$n" "$trace" $mode >"$out.stdout" 2>"$out.stderr" || {
      echo "FAIL: $(basename "$prog") $n under callgrind failed" >&2
      cat "$out.stdout" "$out.stderr" >&2; exit 1; }
  grep -q "^$what $n\$" "$out.stdout" || { echo "FAIL: $(cat "$out.stdout")" >&2; exit 1; }
  "$build/dial9" stats "$(sed -n 2p "$out.stdout")" >"$out.stats" 2>&1 ||
    { echo "FAIL: dial9 stats: $(cat "$out.stats")" >&2; exit 1; }
}

# Calls on record in a callgrind output of the functions whose names match an awk regex
# (callgrind's calls= lines under each cfn=; a name or file is given once, then its id alone,
# and a name's first reference may be an fn= line, a file's an fi=, fe= or cfi= line), leaving out the calls made by functions of
# the files matching the optional third regex. Exact, whatever valgrind's pace.
ac_calls() { # callgrind_output regex [callers' files left out]
  awk -v re="$2" -v out="${3:-^$}" '
       /^c?f[lie]=/ { id = $1; sub(/^c?f[lie]=/, "", id); if ($2 != "") file[id] = $2 } # one id space
       /^fl=/ { fl = file[id]; next }
       /^c?fn=/ { id = $1; sub(/^c?fn=/, "", id); if ($2 != "") name[id] = $2 }
       /^fn=/ { caller_out = fl ~ out; next }
       /^cfn=/ { hit = name[id] ~ re && !caller_out; next }
       /^calls=/ && hit { sub(/^calls=/, "", $1); n += $1 } { hit = 0 } END { print n + 0 }' "$1"
}

# How many events of a schema `dial9 stats` counted (0 when none).
ac_events() { # out schema
  local c
  c=$(awk -v s="$2" '$2 == s { print $1 }' "$1.stats")
  echo "${c:-0}"
}

# Instructions callgrind collected on the loop's thread (the program's first: -01).
ac_loop_total() { awk '/^(summary|totals):/ {print $2; exit}' "$1-01"; }

# One callback's count from the two runs, against the bound; on failure callgrind_annotate of
# the larger run. Exits the test on failure.
ac_verdict() { # a b n2-n1 bound label larger_out
  local a=$1 b=$2 n=$3 bound=$4 label=$5 per
  [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || { echo "FAIL: no instructions counted in the adapter ($a, $b)"; exit 1; }
  per=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
  if awk -v p="$per" -v bound="$bound" 'BEGIN { exit !(p <= bound) }'; then
    echo "ok    $label: $per (bound $bound)"
  else
    echo "FAIL  $label: $per > $bound"
    { callgrind_annotate "$6-01" 2>/dev/null | sed -n '/file:function/,$p' | head -16; } || true
    exit 1
  fi
}

# ac_verdict on counts made by `count_fn N` for N1 and N2, each the smallest of up to three runs
# (smallest_counts.sh says why).
ac_min_verdict() { # count_fn n1 n2 bound label larger_out
  ac_fits_n=$(($3 - $2)) ac_fits_bound=$4
  smallest_counts "$1" "$2" "$3" ac_fits
  ac_verdict "$sc_a" "$sc_b" $(($3 - $2)) "$4" "$5" "$6"
}

# smallest_counts' test: one callback's count within ac_fits_bound.
ac_fits() { # a b
  [ "$2" -gt "$1" ] && awk -v a="$1" -v b="$2" -v n="$ac_fits_n" -v bound="$ac_fits_bound" 'BEGIN { exit !((b - a) / n <= bound) }'
}

# The recorder's hook calls (d9__*) per callback or request, made by the adapter or the shim
# (the hooks' own slow paths, taken when valgrind switched the thread, call others: left out),
# from the two runs' callgrind outputs, against a bound: exact counts, so a bound between two
# designs' counts fails the one with more calls on any machine. Exits the test on failure.
ac_hook_calls_verdict() { # out_n1 out_n2 n2-n1 bound label
  local per
  per=$(awk -v a="$(ac_calls "$1" '^d9__' '/src/core/')" -v b="$(ac_calls "$2" '^d9__' '/src/core/')" -v n="$3" \
    'BEGIN { printf "%.2f", (b - a) / n }')
  if awk -v c="$per" -v bound="$4" 'BEGIN { exit !(c <= bound) }'; then
    echo "ok    $5: $per (bound $4)"
  else
    echo "FAIL  $5: $per > $4"
    exit 1
  fi
}
