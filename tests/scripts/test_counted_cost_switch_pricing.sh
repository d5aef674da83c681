#!/usr/bin/env bash
# bench/e2e/counted_cost.py prices what a recorded thread carries into each context switch by
# what the run's metadata says it carried: the task-clock page (or page + ring) at the switch
# bench's price, the off-CPU source's inherited switch events at theirs, and the page beside
# the source at what it adds to them (one perf context: source + page - source), so the
# defaults arm is not priced as if the page's context were empty, nor the source left out.
# Made-up prices and stats text; no server is run.
set -euo pipefail
src=${D9_SOURCE_DIR:?}
python3 - "$src/bench/e2e" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import counted_cost as cc

units = {"tcc_page_switch_ns": 2000.0, "tcc_ring_switch_ns": 2600.0, "offcpu_source_switch_ns": 2400.0,
         "defaults_switch_ns": 3000.0}
fails = []
def priced(tcc, offcpu, switches=1.5):
    d = {}
    cc.price_thread_cpu_switches(d, {"tcc": tcc, "offcpu": offcpu, "switches": switches}, units)
    return d["ns_tcc"], d["ns_offcpu"]
for (tcc, offcpu), want in {("page", False): (3000.0, 0.0),       # polls/parks/wakes: the page alone
                            ("page", True): (900.0, 3600.0),      # the defaults: source, and the page over it
                            ("syscall", True): (0.0, 3600.0),     # no page: the source alone
                            ("ring", False): (3900.0, 0.0),
                            ("syscall", False): (0.0, 0.0)}.items():
    got = priced(tcc, offcpu)
    if any(abs(g - w) > 1e-6 for g, w in zip(got, want)):
        fails.append(f"{tcc}, source {offcpu}: priced (page, source) {got}, want {want}")

stats = ("  thread_cpu_clock = perf: a task-clock page per thread (up to 256 threads; no switch ring (not asked for))\n"
         "  source.off_cpu = active: perf context-switch records (per-CPU events inherited by every thread)\n")
for text, want in {stats: ("page", True),
                   stats.replace("no switch ring", "a switch ring"): ("ring", True),
                   stats.replace("= active", "= inactive"): ("page", False),
                   "  thread_cpu_clock = syscall: DIAL9_THREAD_CPU=syscall\n": ("syscall", False)}.items():
    if cc.carriers_from_stats(text) != want:
        fails.append(f"carriers_from_stats: {cc.carriers_from_stats(text)}, want {want} from {text!r}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "PASS"
