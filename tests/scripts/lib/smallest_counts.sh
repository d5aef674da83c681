# The retry that the counted tests share (test_poll_instructions.sh, and through
# adapter_counted.sh the adapters' ones): a count of N1 and one of N2 operations, each the smallest
# of up to three runs. Why: a switch of the host thread (valgrind hands its lock to the collector
# when that wakes by time: more of them the longer a run takes, so under load) moves the
# task-clock page, and the hooks after it take their page-moved paths: instructions are only ever
# added (test_poll_instructions' mcrequest once 294.7 where 272.9 is undisturbed, the libuv
# adapter's all-in count once 1 209.4 where ~1 090 is). A count over its bound is measured again,
# twice at most; a regression fails all three. Sourced.

# smallest_counts COUNT_FN N1 N2 FITS_FN: runs `COUNT_FN N` for N1 and N2 (its output: the
# instructions first, then any other counts of that run, space-separated; empty when the run
# failed) until `FITS_FN A B` says that the smallest outputs so far fit their bounds, three times
# at most. Sets sc_a and sc_b to the smallest output of each (by instructions; a run's other
# counts stay with its instructions).
smallest_counts() {
  local fn=$1 n1=$2 n2=$3 fits=$4 try ta tb
  sc_a= sc_b=
  for try in 1 2 3; do
    ta=$("$fn" "$n1") || ta=
    tb=$("$fn" "$n2") || tb=
    if [ -n "$ta" ] && { [ -z "$sc_a" ] || [ "${ta%% *}" -lt "${sc_a%% *}" ]; }; then sc_a=$ta; fi
    if [ -n "$tb" ] && { [ -z "$sc_b" ] || [ "${tb%% *}" -lt "${sc_b%% *}" ]; }; then sc_b=$tb; fi
    [ -n "$sc_a" ] && [ -n "$sc_b" ] && "$fits" "$sc_a" "$sc_b" && return 0
  done
  return 0
}
