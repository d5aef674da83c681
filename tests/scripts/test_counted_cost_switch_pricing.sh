#!/usr/bin/env bash
# bench/e2e/counted_cost.py prices what a recorded thread carries into each context switch by
# what the run's metadata says it carried: the task-clock page (or page + ring) at the switch
# bench's price; with the off-CPU source, the thread's whole set measured together (one perf
# context: prices do not add) with the source's stacks event beside it: the inherited switch
# events and the page, or one event per recorded thread (the page and its ring read as the
# source's records), the page's row at its own price and the source's at the rest; without a
# page, the source's events alone. So the defaults arm is not priced as if the page's context
# were empty, nor the source left out, nor the one-event design at the inherited events' price.
# The inherited events are priced only for the share of the request windows they were open (the
# governor closes them when paused and, where cheaper, between a sampled level's windows:
# CoverageEvents, governor.between_windows), the rings always. Made-up prices, levels and stats
# text; no server is run.
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
                   "  thread_cpu_clock = syscall: DIAL9_THREAD_CPU=syscall\n": ("syscall", False),
                   # DIAL9_THREAD_CPU=lazy: the page's price once any thread opened one
                   "  thread_cpu_clock = lazy: clock_gettime(...) until ...\n": ("syscall", False),
                   "  thread_cpu_clock = lazy: clock_gettime(...) until ...\n    2 ThreadCpuPageEvent\n": ("page", False)}.items():
    if cc.carriers_from_stats(text) != want:
        fails.append(f"carriers_from_stats: {cc.carriers_from_stats(text)}, want {want} from {text!r}")

# DIAL9_THREAD_CPU=lazy: the page's price only for the parks of a worker while its page was open
dump = ("10 ThreadCpuPageEvent worker_id=1 open=true\n11 WorkerParkEvent worker_id=1 cpu_time_ns=1\n"
        "12 WorkerParkEvent worker_id=2 cpu_time_ns=1\n13 ThreadCpuPageEvent worker_id=1 open=false\n"
        "14 WorkerParkEvent worker_id=1 cpu_time_ns=1\n15 WorkerParkEvent worker_id=1 cpu_time_ns=1\n")
if cc.page_share_from_dump(dump) != 0.25:
    fails.append(f"page_share_from_dump: {cc.page_share_from_dump(dump)}, want 0.25")
d = {}
cc.price_thread_cpu_switches(d, {"tcc": "page", "offcpu": False, "switches": 2.0, "lazy": True, "page_share": 0.25}, units)
if abs(d["ns_tcc"] - 0.25 * priced("page", False, 2.0)[0]) > 1e-6:
    fails.append(f"lazy at a page share of 0.25: priced {d['ns_tcc']}, want a quarter of the page's")

# The governor's states: the source's inherited events cost a switch only while open. Made-up
# request windows [0, 10 s) and [20 s, 30 s) over a made-up level history: full to 5 s, 1 in 4
# from 5 s, paused from 25 s (the events closed), and metadata saying the sampled gaps were
# closed 3 s, open 1 s (3/4 of the gaps closed).
S = 1_000_000_000
levels = [(5 * S, 4), (25 * S, 0)]
text = ("  governor.between_windows = 1 in 2: events closed 0.000 s, open (disabled) 2.000 s; "
        "1 in 4: events closed 3.000 s, open (disabled) 1.000 s\n")
gaps = cc.gaps_from_text(stats + text.replace("3.000", "9.000") + text)  # the last one says
if gaps != {2: 0.0, 4: 0.75}:
    fails.append(f"gaps_from_text: {gaps}, want {{2: 0.0, 4: 0.75}}")
if cc.gaps_from_text(stats) is not None:
    fails.append("gaps_from_text: a share where the metadata says nothing")
windows = [(0, 10 * S), (20 * S, 30 * S)]
# time: full 5 s (enabled); sampled 10 s (enabled 2.5, gaps 7.5: closed 5.625, disabled 1.875);
# paused 5 s (closed); of 20 s
want_states = {"enabled": 7.5 / 20, "disabled": 1.875 / 20, "closed": 10.625 / 20, "unsaid": 0.0}
states = cc.switch_event_states(levels, windows, gaps)
if any(abs(states[k] - v) > 1e-9 for k, v in want_states.items()):
    fails.append(f"switch_event_states: {states}, want {want_states}")
# gaps not said: counted open (an upper bound), the paused time still closed
unsaid = cc.switch_event_states(levels, windows, None)
if abs(unsaid["closed"] - 5 / 20) > 1e-9 or abs(unsaid["disabled"] - 7.5 / 20) > 1e-9 \
        or abs(unsaid["unsaid"] - 7.5 / 20) > 1e-9:
    fails.append(f"switch_event_states without the gaps: {unsaid}")
# no level change: full, all enabled
if cc.switch_event_states([], windows, None) != {"enabled": 1.0, "disabled": 0.0, "closed": 0.0, "unsaid": 0.0}:
    fails.append("switch_event_states: not all enabled without a level change")
# priced by the open share (the source over the page: 3400 - 2000 = 1400 ns a switch)
d = {}
cc.price_thread_cpu_switches(d, {"tcc": "page", "offcpu": "events", "switches": 1.5, "offcpu_states": states}, units)
want = 1.5 * 1400.0 * (7.5 + 1.875) / 20
if abs(d["ns_offcpu"] - want) > 1e-6 or abs(d["ns_tcc"] - 3000.0) > 1e-6:
    fails.append(f"governed source: priced {d['ns_offcpu']}, want {want} (the closed time unpriced), page {d['ns_tcc']}")
# the rings are not governed: always open, whatever the states say
d = {}
cc.price_thread_cpu_switches(d, {"tcc": "ring", "offcpu": "rings", "switches": 1.5, "offcpu_states": states}, units)
if abs(d["ns_offcpu"] - 1200.0) > 1e-6:
    fails.append(f"rings: priced {d['ns_offcpu']}, want 1200.0 (always open)")
if "x 0.47 open" not in cc.offcpu_price_label(dict(d, offcpu="events", offcpu_open=0.46875,
                                                   offcpu_states=states, offcpu_switch_ns=1400.0), {}):
    fails.append("the row does not print the open share it used")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "PASS"
