#!/usr/bin/env python3
"""What a short program pays for being recorded, start to exit: runs /bin/true (or CMD) plain,
under `dial9 run -q`, and with the shim alone in LD_PRELOAD (what the recorder costs without
the CLI's process and summary), interleaved, and prints the median wall and CPU time of each,
the median extra over plain, and in how many runs the program ended before the recorder's
start reached the perf events (which it then skips). It prints numbers, never a verdict.

    bench/startup_bench.py BUILD_DIR [--runs N] [--short] [--before OTHER_BUILD_DIR] [--kept N] [-- CMD ARGS...]

--before adds the same two variants from another build (say, main before a change), interleaved
with this one's, so that both see the same load. --short (CI): 15 runs each. --kept N: each
trace directory holds N earlier runs (one 2.6 KB segment each, an hour old) throughout, as a trace
directory does in use: the disk budget lists every run kept there at each start (the first start
after each refill, every 20 rounds, reads them all and writes them down in the trace directory's
ledger; the others take them from it).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ENDING_NOTE = b"not started: the program was ending"


def count_runs(trace_dir, counts):
    """Adds to counts [runs, runs whose kernel sources were skipped because the program was
    already ending] from the runs in trace_dir (the note is a plain string in the metadata)."""
    if not os.path.isdir(trace_dir):
        return
    for run in os.listdir(trace_dir):
        run_dir = os.path.join(trace_dir, run)
        if not os.path.isdir(run_dir) or run.endswith("-kept"):  # --kept's stand-ins
            continue
        data = b""
        for f in os.listdir(run_dir):
            if f.startswith("trace."):
                with open(os.path.join(run_dir, f), "rb") as fh:
                    data += fh.read()
        counts[0] += 1
        counts[1] += ENDING_NOTE in data


def timed(argv, env):
    """(wall ms, CPU ms of the process and all its threads and children, user + system)"""
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    p.returncode = 0
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--short", action="store_true", help="15 runs each (CI)")
    ap.add_argument("--before", metavar="OTHER_BUILD_DIR", help="also time this build's dial9 and shim")
    ap.add_argument("--kept", type=int, default=0, metavar="N", help="earlier runs in each trace dir")
    ap.add_argument("cmd", nargs="*", default=["/bin/true"])
    a = ap.parse_args()
    if a.short:
        a.runs = 15
    cmd = a.cmd or ["/bin/true"]
    work = tempfile.mkdtemp(prefix="d9-startup-")
    try:
        base_env = dict(os.environ)
        variants = {"plain": (cmd, base_env)}
        dirs = {}  # each variant's own trace directory
        builds = [("", a.build_dir)] + ([(" (before)", a.before)] if a.before else [])
        for tag, build in builds:
            dial9 = os.path.join(build, "dial9")
            shim = os.path.join(build, "libdial9-preload.so")
            for f in (dial9, shim):
                if not os.path.exists(f):
                    sys.exit(f"startup_bench: {f} is missing (build first)")
            dirs["dial9 run -q" + tag] = os.path.join(work, "run" + tag.strip(" ()"))
            dirs["LD_PRELOAD shim" + tag] = os.path.join(work, "shim" + tag.strip(" ()"))
            variants["dial9 run -q" + tag] = (
                [dial9, "run", "-q", "-d", dirs["dial9 run -q" + tag], "--"] + cmd, base_env)
            variants["LD_PRELOAD shim" + tag] = (
                cmd, dict(base_env, LD_PRELOAD=shim, DIAL9_TRACE_DIR=dirs["LD_PRELOAD shim" + tag]))
        times = {k: [] for k in variants}
        skipped = {k: [0, 0] for k in dirs}
        for _ in range(3):  # warm the page cache
            for argv, env in variants.values():
                timed(argv, env)
        def refill(d):
            shutil.rmtree(d, ignore_errors=True)
            for n in range(a.kept):
                run = os.path.join(d, f"20200101T000000Z-{n}-kept")
                os.makedirs(run)
                with open(os.path.join(run, "trace.0.bin"), "wb") as f:
                    f.write(b"\0" * 2600)
                # left by earlier runs: an hour old, as kept runs are (the trace dir's ledger
                # of settled runs takes only directories unchanged for 2 s)
                old = time.time() - 3600
                os.utime(os.path.join(run, "trace.0.bin"), (old, old))
                os.utime(run, (old, old))

        for d in dirs.values():
            refill(d)
        for i in range(a.runs):
            for k, (argv, env) in variants.items():
                times[k].append(timed(argv, env))
            if i % 20 == 19 or i == a.runs - 1:  # keep the trace dirs small: the disk budget is not what we measure
                for k, d in dirs.items():
                    count_runs(d, skipped[k])
                    refill(d)
        load = os.getloadavg()[0]
        print(f"{' '.join(cmd)}: {a.runs} runs each, interleaved"
              + (f", {a.kept} earlier runs kept in each trace dir" if a.kept else "")
              + f"; load average {load:.2f}"
              + ("  (busy machine: wall times are noisy, CPU times less so)" if load > 0.5 else ""))
        for col, name in ((0, "wall time, start to exit"), (1, "CPU time (user+sys, all threads)")):
            plain = statistics.median(t[col] for t in times["plain"])
            print(f"\n{name}")
            print(f"{'variant':<27} {'median ms':>10} {'p10':>8} {'p90':>8} {'extra vs plain':>15}")
            for k, v in times.items():
                v = sorted(t[col] for t in v)
                med = statistics.median(v)
                p10, p90 = v[len(v) // 10], v[len(v) * 9 // 10]
                extra = "" if k == "plain" else f"{med - plain:+.2f} ms"
                print(f"{k:<27} {med:>10.2f} {p10:>8.2f} {p90:>8.2f} {extra:>15}")
        print("\nruns that ended before the recorder's start reached the perf events (skipped, noted "
              "'not started'):")
        for k, (n, ending) in skipped.items():
            print(f"{k:<27} {ending} of {n}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
