#!/usr/bin/env python3
"""Fleet tables benchmark (prints numbers; no timed assertion anywhere):

  fold speed     `dial9 fold` of a recorded run of the example executor: events per CPU second
                 (user + system of the fold process: one core), and wall time (with fsyncs)
  bytes/poll     the polls table's file size over its rows, and per column
  fleet queries  a synthetic fleet (bench/fleet/fleet_gen.c: INSTANCES x POLLS polls, written
                 with our Parquet writer) queried by DuckDB (tests/parquet's npm install):
                 p99 poll time by service and spawn location from poll_hist (the query of
                 docs/fleet-tables.md) and exactly from polls (quantile_disc)

Targets of issue 35: >= 20 M events/s/core, <= 4 bytes/poll, < 1 s (poll_hist), < 10 s (polls)
for 1 000 instances x 100 k polls. `--short`: 20 instances x 10 k polls and a 1 s recording.

usage: fleet_bench.py [--build build] [--short] [--instances N] [--polls N] [--keep DIR]
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, **kw):
    t0, c0 = time.monotonic(), child_cpu()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p, time.monotonic() - t0, child_cpu() - c0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--instances", type=int)
    ap.add_argument("--polls", type=int)
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--keep")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    instances = a.instances or (20 if a.short else 1000)
    polls = a.polls or (10000 if a.short else 100000)
    seconds = a.seconds or (1 if a.short else 5)
    work = a.keep or tempfile.mkdtemp(prefix="fleet-bench-")
    try:
        print(f"== fold ({'short' if a.short else 'full'} mode; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs) ==")
        rec = os.path.join(work, "rec")
        shutil.rmtree(rec, ignore_errors=True)  # a --keep directory's earlier recording would be folded too
        env = dict(os.environ, DIAL9_SERVICE="bench", DIAL9_SYMBOLIZE="0", DIAL9_MAX_FILE_SIZE_MB="1024")
        run([os.path.join(build, "examples/executor/executor_demo"), "--workers", "2", "--seconds",
             str(seconds), "--trace-dir", rec], env=env)
        best = None
        for i in range(3):
            out = os.path.join(work, f"fold{i}")
            p, wall, cpu = run([os.path.join(build, "dial9"), "fold", rec, "--to", out])
            m = re.search(r"(\d+) segment\(s\), (\d+) events, (\d+) polls", p.stderr)
            events, npolls = int(m.group(2)), int(m.group(3))
            if best is None or cpu < best[1]:
                best = (wall, cpu, out)
        wall, cpu, out = best
        print(f"events {events}, polls {npolls}; best of 3: {cpu:.3f} s CPU, {wall:.3f} s wall")
        print(f"fold speed: {events / max(cpu, 1e-6) / 1e6:.2f} M events/s per core "
              f"(CPU time; target >= 20), {events / wall / 1e6:.2f} M events/s wall")
        files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(out, "polls")) for f in fs
                 if f.endswith(".parquet") and not f.startswith(".")]
        size = sum(os.path.getsize(f) for f in files)
        print(f"polls table: {size} bytes for {npolls} polls = {size / max(npolls, 1):.3f} bytes/poll")
        cols = node("columns", os.path.join(out, "polls"))
        print("  per column: " + ", ".join(f"{c['column']} {int(c['bytes']) / max(npolls, 1):.2f}" for c in cols))
        # the target was set before polls had the attribution's parts (on_cpu_ns ... off_cpu_uncaptured_ns)
        attribution = {"on_cpu_ns", "lock_ns", "io_ns", "sleep_ns", "fault_ns", "blocked_other_ns", "runnable_ns", "unknown_ns",
                       "off_cpu_uncaptured_ns"}
        base = sum(int(c["bytes"]) for c in cols if c["column"] not in attribution)
        print(f"  columns before the attribution: {base / max(npolls, 1):.3f} bytes/poll (target <= 4; "
              f"column chunks, without the footer)")

        print(f"== synthetic fleet: {instances} instances x {polls} polls ==")
        fleet = os.path.join(work, "fleet")
        _, wall, cpu = run([os.path.join(build, "bench/fleet/fleet_gen"), fleet, str(instances), str(polls)])
        total = instances * polls
        psize = dirsize(os.path.join(fleet, "polls"))
        hsize = dirsize(os.path.join(fleet, "poll_hist"))
        print(f"generated {total} polls in {wall:.1f} s ({cpu:.1f} s CPU): polls {psize / 1e6:.1f} MB "
              f"({psize / total:.2f} bytes/poll, random task ids and durations), poll_hist {hsize / 1e6:.1f} MB")
        for r in node("queries", fleet):
            print(f"{r['name']}: {r['seconds']:.3f} s wall, {r['cpu']:.3f} s CPU ({r['rows']} rows; target {r['target']})")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def dirsize(d):
    return sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)


def node(what, path):
    p = subprocess.run(["node", os.path.join(SRC, "bench/fleet/fleet_queries.mjs"), what, path],
                       capture_output=True, text=True, env=dict(os.environ, D9_SOURCE_DIR=SRC))
    if p.returncode != 0:
        sys.exit(f"fleet_queries.mjs {what}: {p.stderr}")
    return json.loads(p.stdout)


if __name__ == "__main__":
    main()
