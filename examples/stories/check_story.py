#!/usr/bin/env python3
"""Check that a story's trace shows its diagnosis, from `dial9 dump --jsonl`.

    check_story.py STORY DIAL9 RUN_DIR

STORY is 1..5. Prints what it measured; exits 0 when the signal is there, 1 when it is not,
and 0 with "SKIP: why" when the host cannot produce the signal (a kernel source refused).
Bounds are generous: the stories must never flake on a loaded 2-vCPU machine.
"""
import bisect
import json
import os
import subprocess
import sys
from collections import defaultdict

MS = 1_000_000
GOV_WINDOW_NS = 50 * MS  # the cost governor's sampling window (D9_GOV_WINDOW_NS)


class Trace:
    """The parts of a trace the checks need, read in one pass (stream order per worker)."""

    def __init__(self, dial9, run_dir):
        self.meta = {}
        self.workers = {}            # worker id -> (runtime, index, tid)
        self.polls = []              # (worker, task, loc, start, end)
        self.unparks = []            # (worker, ts, sched_wait_ns)
        self.switches = defaultdict(list)  # tid -> [(ts, switch_out, preempted)]
        self.samples = []            # off-CPU samples: (ts, tid, worker, [addr...])
        self.symbols = {}            # addr -> name (inline depth 0)
        self.spawns = []             # (ts, task, loc)
        self.events = []             # (ts, kind, task, worker) for per-task histories
        open_polls = {}
        proc = subprocess.Popen([dial9, "dump", "--jsonl", run_dir], stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            ev = json.loads(line)
            name, ts, f = ev["event"], ev["ts"], ev["fields"]
            if name == "PollStartEvent":
                open_polls[f["worker_id"]] = (f["task_id"], f["spawn_loc"], ts)
            elif name == "PollEndEvent":
                p = open_polls.pop(f["worker_id"], None)
                if p:
                    self.polls.append((f["worker_id"], p[0], p[1], p[2], ts))
                    self.events.append((p[2], "poll", p[0], f["worker_id"]))
            elif name == "WorkerUnparkEvent":
                self.unparks.append((f["worker_id"], ts, f.get("sched_wait_ns") or 0))
            elif name == "WorkerRegisteredEvent":
                self.workers[f["worker_id"]] = (f["runtime"], f["index"], f["tid"])
            elif name == "SchedSwitchEvent":
                self.switches[f["tid"]].append((ts, f["switch_out"], f["preempted"]))
            elif name == "CpuSampleEvent" and f["source"] == 1:
                chain = [int(a, 16) for a in (f.get("callchain") or []) if a]
                self.samples.append((ts, f["tid"], f["worker_id"], chain))
            elif name == "SymbolTableEntry" and f["inline_depth"] == 0:
                self.symbols[f["addr"]] = f["symbol_name"]
            elif name == "TaskSpawnEvent":
                self.spawns.append((ts, f["task_id"], f["spawn_loc"]))
                self.events.append((ts, "spawn", f["task_id"], None))
            elif name == "SegmentMetadataEvent" and not self.meta:
                self.meta = f["entries"]
        if proc.wait() != 0:
            fail(f"dial9 dump failed on {run_dir} (status {proc.returncode})")
        self.events.sort()

    def source_active(self, name):
        return self.meta.get(f"source.{name}", "").startswith("active")

    def kernel_stacks(self):
        """Context-switch stacks with kernel frames, and symbols to name them."""
        return ("kernel and user frames" in self.meta.get("source.switch_stacks", "")
                and self.source_active("switch_stacks") and bool(self.symbols))

    def worker_ids(self, runtime):
        return sorted(w for w, (rt, _, _) in self.workers.items() if rt == runtime)

    def stack_names(self, chain):
        return [self.symbols.get(a, hex(a)) for a in chain]

    def stacks_at_sleep_in(self, polls):
        """Context-switch stacks taken inside `polls` at a switch-out that is not a preemption.
        A stack is sampled as its thread switches out, a few us before the switch record of
        the off-CPU source: its switch is the thread's next switch record."""
        spans = defaultdict(list)
        for w, _, _, s, e in polls:
            spans[self.workers.get(w, (None, None, None))[2]].append((s, e))
        for own in spans.values():
            own.sort()
        switches = {tid: sorted(v) for tid, v in self.switches.items()}
        found = []
        for sample in self.samples:
            ts, tid = sample[0], sample[1]
            own = spans.get(tid)
            if not own:
                continue
            i = bisect.bisect_right(own, (ts, float("inf"))) - 1
            if i < 0 or own[i][1] < ts:
                continue
            sw = switches.get(tid, [])
            j = bisect.bisect_left(sw, (ts,))
            if j < len(sw) and sw[j][1] and not sw[j][2]:
                found.append(sample)
        return found

    def recorded_polls(self, polls):
        """The polls that lie in time the off-CPU source recorded. Under the cost governor a
        sampled trace has switch records in one 50 ms window of N (docs/kernel-sources.md, "Cost
        governor"): a share of off-CPU time must be taken over the polls of those windows, not
        over every poll. A window counts as recorded when it holds any switch record (the
        stories' threads switch thousands of times a second); with full coverage that is all."""
        slots = {ts // GOV_WINDOW_NS for v in self.switches.values() for ts, _, _ in v}
        return [p for p in polls if p[3] // GOV_WINDOW_NS in slots and p[4] // GOV_WINDOW_NS in slots]

    def blocked_inside(self, polls):
        """Off-CPU time inside `polls` from SchedSwitchEvents: (blocked ns, preempted ns)."""
        by_worker = defaultdict(list)
        for w, _, _, s, e in polls:
            by_worker[w].append((s, e))
        blocked = preempted = 0
        for w, spans in by_worker.items():
            tid = self.workers.get(w, (None, None, None))[2]
            offs, out = [], None
            for ts, switch_out, was_preempted in self.switches.get(tid, []):
                if switch_out:
                    out = (ts, was_preempted)
                elif out:
                    offs.append((out[0], ts, out[1]))
                    out = None
            spans.sort()
            offs.sort()
            j = 0
            for s, e in spans:
                while j < len(offs) and offs[j][1] <= s:
                    j += 1
                k = j
                while k < len(offs) and offs[k][0] < e:
                    overlap = min(e, offs[k][1]) - max(s, offs[k][0])
                    if overlap > 0:
                        if offs[k][2]:
                            preempted += overlap
                        else:
                            blocked += overlap
                    k += 1
        return blocked, preempted


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(0)


def check(cond, msg):
    print(("ok    " if cond else "FAIL  ") + msg)
    return cond


def story1(t):
    """Kernel scheduling delay: unparks whose sched_wait_ns is several ms."""
    if not t.source_active("schedstat"):
        skip(f"schedstat is not active: {t.meta.get('source.schedstat', 'not in metadata')}")
    api = set(t.worker_ids("api"))
    waits = sorted(w for wk, _, w in t.unparks if wk in api)
    over_1ms = sum(1 for w in waits if w >= 1 * MS)
    worst = waits[-1] if waits else 0
    print(f"      {len(waits)} unparks of the api loops; {over_1ms} waited >= 1 ms; worst {worst / MS:.3f} ms")
    ok = check(len(api) == 2, f"2 api loops registered (got {len(api)})")
    ok &= check(worst >= 2 * MS, "the worst scheduling delay is >= 2 ms")
    ok &= check(over_1ms >= 5, "at least 5 unparks waited >= 1 ms on the run queue")
    return ok


def story2(t):
    """A global mutex: the request polls sleep (not preempted) for much of their time."""
    api = set(t.worker_ids("api"))
    polls = [p for p in t.polls if p[0] in api and p[2] == "on_request_bytes"]
    total = sum(e - s for _, _, _, s, e in polls)
    ok = check(len(api) == 4, f"4 api loops registered (got {len(api)})")
    # How many requests a run serves depends on the machine's load (472 request polls at load 25,
    # where 500 were expected); each of the 8 clients makes one at least in each phase (story_load.c).
    ok &= check(len(polls) >= 16, f"at least 16 request polls, one per client and phase (got {len(polls)})")
    if not t.source_active("off_cpu"):
        skip(f"off-CPU intervals are not recorded: {t.meta.get('source.off_cpu', 'not in metadata')}")
    recorded = t.recorded_polls(polls)
    rec_total = sum(e - s for _, _, _, s, e in recorded)
    blocked, preempted = t.blocked_inside(recorded)
    share = rec_total / total if total else 0
    print(f"      request polls: {total / MS:.1f} ms in all, {rec_total / MS:.1f} ms ({share * 100:.0f} %) "
          f"in recorded off-CPU windows; off-CPU inside those: blocked {blocked / MS:.1f} ms, "
          f"preempted {preempted / MS:.1f} ms")
    # Uncontended locks never sleep: any real blocked time is the lock. Preemption (4 loops and 8
    # clients on 2 CPUs) dilutes the share and varies from run to run (2-5 % seen), hence the low bar;
    # the floor of 20 ms is for the whole run, so it scales with the share recorded.
    ok &= check(blocked >= 0.01 * rec_total and blocked >= 20 * MS * share,
                "blocked (not preempted) >= 1 % of the recorded request polls' time and >= 20 ms x the share recorded")
    if t.kernel_stacks():
        # Which stacks to expect in futex is read from the trace, not from a fixed count: how
        # many contended waits a run gets, and which switches the paced stack sampler catches,
        # depend on the machine's load (16 futex stacks in a heavily loaded run, ~200 in a calm one).
        # A request poll sleeps (a switch-out that is not a preemption) only on the lock, so
        # every stack taken at such a switch must be in futex.
        at_sleep = t.stacks_at_sleep_in(polls)
        futex = [s for s in at_sleep if any("futex" in n for n in t.stack_names(s[3]))]
        print(f"      {len(at_sleep)} context-switch stacks taken where a request poll sleeps; "
              f"{len(futex)} of them in futex")
        ok &= check(len(at_sleep) >= 1, "at least 1 context-switch stack where a request poll sleeps")
        ok &= check(len(futex) * 10 >= len(at_sleep) * 9,
                    "at least 90 % of those stacks are in futex (the lock)")
    else:
        print("      (no kernel frames in context-switch stacks: futex stacks not checked)")
    return ok


def story3(t):
    """A connection storm: a burst of connections and accept4 stalls growing the fd table."""
    api = set(t.worker_ids("api"))
    conns = sorted(ts for ts, _, loc in t.spawns if loc == "on_request_bytes")
    best, j = 0, 0
    for i, ts in enumerate(conns):  # the most connections spawned within one second
        while conns[j] < ts - 1000 * MS:
            j += 1
        best = max(best, i - j + 1)
    accepts = [e - s for w, _, loc, s, e in t.polls if loc == "accept_pending" and w in api]
    longest = max(accepts, default=0)
    print(f"      {len(conns)} connections; at most {best} within one second; "
          f"{len(accepts)} accept polls, the longest {longest / MS:.3f} ms")
    ok = check(best >= 200, "at least 200 connections spawned within one second (the storm)")
    ok &= check(longest >= 1 * MS, "an accept poll lasted >= 1 ms")
    if t.kernel_stacks() and (os.cpu_count() or 1) >= 2:
        growth = ("expand_files", "expand_fdtable", "synchronize_rcu")
        hits = [s for s in t.samples if s[2] in api
                and any(n.startswith(growth) for n in t.stack_names(s[3]))]
        print(f"      {len(hits)} context-switch stacks of the api loops in fd table growth")
        ok &= check(len(hits) >= 1, "a loop slept in the kernel growing the fd table (expand_files / synchronize_rcu)")
    else:
        print("      (no kernel frames in context-switch stacks, or one CPU: fd table growth not checked)")
    return ok


def story4(t):
    """Tasks migrating across the thread pool: a job's stages run on different pool threads."""
    pool = set(t.worker_ids("uv-threadpool"))
    lives = {}        # task -> list of pool workers of its current life
    finished = []
    job_tasks = {task for _, task, loc in t.spawns if loc == "run_stage"}
    for ts, kind, task, worker in t.events:
        if task not in job_tasks:
            continue
        if kind == "spawn":
            if task in lives:
                finished.append(lives[task])
            lives[task] = []
        elif kind == "poll" and worker in pool and task in lives:
            lives[task].append(worker)
    finished.extend(lives.values())
    full = [l for l in finished if len(l) >= 3]
    moved = [l for l in full if len(set(l)) >= 2]
    print(f"      {len(pool)} pool threads; {len(full)} jobs with >= 3 pool polls, "
          f"{len(moved)} of them on >= 2 pool threads")
    ok = check(len(pool) >= 2, "at least 2 pool threads recorded")
    ok &= check(len(full) >= 20, "at least 20 jobs ran all their stages")
    ok &= check(len(moved) >= 0.3 * max(len(full), 1), ">= 30 % of the jobs ran on more than one pool thread")
    # Lookups (informational): from uv_getaddrinfo to the start of its pool work.
    lookup_tasks = {task for _, task, loc in t.spawns if loc == "lookup_done"}
    submitted, waits = {}, []
    for ts, kind, task, worker in t.events:
        if task not in lookup_tasks:
            continue
        if kind == "spawn":
            submitted[task] = ts
        elif worker in pool and task in submitted:
            waits.append(ts - submitted.pop(task))
    if waits:
        waits.sort()
        print(f"      {len(waits)} lookups waited for a pool thread: p50 {waits[len(waits) // 2] / MS:.3f} ms, "
              f"max {waits[-1] / MS:.3f} ms")
    return ok


def story5(t):
    """A blocking callback: polls at reload_config as long as the blocking read."""
    reloads = [e - s for _, _, loc, s, e in t.polls if loc == "reload_config"]
    long_ones = [d for d in reloads if d >= 29 * MS]
    print(f"      {len(reloads)} reload_config polls, {len(long_ones)} >= 29 ms; "
          f"shortest {min(reloads, default=0) / MS:.3f} ms, longest {max(reloads, default=0) / MS:.3f} ms")
    ok = check(len(long_ones) >= 3, "at least 3 reload_config polls of >= 29 ms (the 30 ms blocking read)")
    ok &= check(len(long_ones) == len(reloads), "every reload_config poll includes the blocking read")
    others = [e - s for _, _, loc, s, e in t.polls if loc == "on_request_bytes"]
    ok &= check(len(others) >= 100, f"requests were served meanwhile ({len(others)} request polls)")
    return ok


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    story, dial9, run_dir = sys.argv[1:]
    checks = {"1": story1, "2": story2, "3": story3, "4": story4, "5": story5}
    if story not in checks:
        fail(f"unknown story {story}")
    t = Trace(dial9, run_dir)
    print(f"story {story}: {len(t.polls)} polls, {len(t.unparks)} unparks, {len(t.samples)} "
          f"context-switch stacks, {len(t.spawns)} spawns in {run_dir}")
    if not checks[story](t):
        fail(f"the trace does not show story {story}'s signal")
    print(f"PASS: story {story}")


if __name__ == "__main__":
    main()
