#!/usr/bin/env bash
# bench/e2e/counted_cost.py prices what a recorded thread carries into each context switch by
# what the run's metadata says it carried: the task-clock page (or page + ring) at the switch
# bench's price; with the off-CPU source, the thread's whole set measured together (one perf
# context: prices do not add) with the source's stacks event beside it: the inherited switch
# events and the page, or one event per recorded thread (the page and its ring read as the
# source's records), the page's row at its own price and the source's at the rest; without a
# page, the source's events alone. So the defaults arm is not priced as if the page's context
# were empty, nor the source left out, nor the one-event design at the inherited events' price.
# Made-up prices and stats text; no server is run.
set -euo pipefail
src=${D9_SOURCE_DIR:?}
python3 - "$src/bench/e2e" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import counted_cost as cc

units = {"tcc_page_switch_ns": 2000.0, "tcc_ring_switch_ns": 2600.0, "offcpu_source_switch_ns": 2400.0,
         "defaults_switch_ns": 3000.0, "defaults_stacks_switch_ns": 3400.0, "oneevent_stacks_switch_ns": 2800.0}
fails = []
def priced(tcc, offcpu, switches=1.5):
    d = {}
    cc.price_thread_cpu_switches(d, {"tcc": tcc, "offcpu": offcpu, "switches": switches}, units)
    return d["ns_tcc"], d["ns_offcpu"]
for (tcc, offcpu), want in {("page", False): (3000.0, 0.0),       # polls/parks/wakes: the page alone
                            ("page", "events"): (3000.0, 2100.0), # inherited events: the page, the source over it
                            ("ring", "rings"): (3000.0, 1200.0),  # one event: the page, its ring and stacks over it
                            ("syscall", "events"): (0.0, 3600.0), # no page: the source alone
                            ("ring", False): (3900.0, 0.0),
                            ("syscall", False): (0.0, 0.0)}.items():
    got = priced(tcc, offcpu)
    if any(abs(g - w) > 1e-6 for g, w in zip(got, want)):
        fails.append(f"{tcc}, source {offcpu}: priced (page, source) {got}, want {want}")

stats = ("  thread_cpu_clock = perf: a task-clock page per thread (up to 256 threads; no switch ring (not asked for))\n"
         "  source.off_cpu = active: perf context-switch records (per-CPU events inherited by every thread)\n")
rings = stats.replace("no switch ring", "a switch ring").replace(
    "records (per-CPU events inherited by every thread)", "records from each recorded thread's own task-clock event")
for text, want in {stats: ("page", "events"),
                   stats.replace("no switch ring", "a switch ring"): ("ring", "events"),
                   rings: ("ring", "rings"),
                   stats.replace("= active", "= inactive"): ("page", False),
                   "  thread_cpu_clock = syscall: DIAL9_THREAD_CPU=syscall\n": ("syscall", False)}.items():
    if cc.carriers_from_stats(text) != want:
        fails.append(f"carriers_from_stats: {cc.carriers_from_stats(text)}, want {want} from {text!r}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "PASS"
