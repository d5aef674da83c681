#!/usr/bin/env python3
"""`dial9 fold`'s CPU time (user + system of the fold process) for two binaries on the same
segments, in alternating rounds so that a busy host's load falls on both alike; prints each
binary's range, median and events per CPU second (the events: `dial9 stats`' count of the
segments, summed). Times are upper bounds on a shared host; instruction counts (callgrind,
bench/README.md) are what a change is judged by.

  bench/fleet/fold_cpu_rounds.py --base OLD/dial9 --this build/dial9 [--rounds 30] PATH...
"""
import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile


def events_of(dial9, paths):
    """The segments' events, as `dial9 stats` counts them (one `events N` line a file)."""
    total = 0
    for path in paths:
        out = subprocess.run([dial9, "stats", path], check=True, capture_output=True, text=True).stdout
        found = re.search(r"^events\s+(\d+)", out, re.M)
        if not found:
            sys.exit(f"fold_cpu_rounds: no event count in dial9 stats {path}")
        total += int(found.group(1))
    return total


def fold_cpu_seconds(dial9, paths, out):
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([dial9, "fold", "-q", *paths, "--to", out], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the dial9 binary to compare against (main's)")
    ap.add_argument("--this", required=True, help="the dial9 binary measured")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("paths", nargs="+", help="segments or run directories, folded together")
    a = ap.parse_args()
    events = events_of(a.this, a.paths)
    bins = [("base", a.base), ("this", a.this)]
    cpu = {name: [] for name, _ in bins}
    with tempfile.TemporaryDirectory(prefix="fold-rounds.") as tmp:
        for r in range(a.rounds):
            for name, dial9 in bins if r % 2 == 0 else reversed(bins):
                cpu[name].append(fold_cpu_seconds(dial9, a.paths, f"{tmp}/{name}"))
    print(f"{events} events, {a.rounds} rounds alternating")
    for name, dial9 in bins:
        v = cpu[name]
        m = statistics.median(v)
        print(f"{name} ({dial9}): {min(v):.3f}-{max(v):.3f} s, median {m:.3f} s: "
              f"{events / m / 1e6:.2f} M events/s per core")


if __name__ == "__main__":
    main()
