#!/usr/bin/env python3
"""Where a recorded thread's context switch spends its time in the kernel (issue 32), without
kprobes, fentry or a filtered function tracer (this guest refuses all three): CPU 0's trace
while d9_bench_switch_ring runs one arm (`--one`), from a CPU-wide perf session, so that no
event of the tracer's sits in the bench's task contexts. Marks of one switch, in order:

  sched:sched_switch        (__schedule, before context_switch)
  PERF_RECORD_SWITCH out    (__perf_event_task_sched_out, before the outgoing task's perf context is scheduled out)
  x86_fpu_regs_deactivated  (__switch_to: the outgoing task's perf context is out by now)
  PERF_RECORD_SWITCH in     (__perf_event_task_sched_in, after the incoming task's perf context is in)
  raw_syscalls:sys_exit     (the incoming task leaves its read())

so "out" (switch record out -> fpu) holds the perf context's sched-out of the thread switched
out, and "in" (fpu -> switch record in) its sched-in of the thread switched in. Medians per arm,
over the switches out of and into the recorded thread; each segment also holds the tracer's own
cost (~1 us a mark here), the same in every arm, so read the differences from `none`.

    bench/switch_ring/switch_segments.py [--build DIR] [--arms none,page,disabled] [--rounds 4000] [--repeat 3]

Needs root (or perf_event_paranoid -1) for the CPU-wide tracepoints.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

MARKS = ["sched:sched_switch", "SWITCH_OUT", "x86_fpu:x86_fpu_regs_deactivated", "SWITCH_IN", "raw_syscalls:sys_exit"]
# (sys_exit is traced so that the next program's mark after the switch is its own; the
# segments end at the switch record in)
LINE = re.compile(r"^\s*(\d+)\s+([\d.]+):\s+(\S+?):?\s+(.*)$")


def trace(bench, arm, rounds, tmp):
    data = os.path.join(tmp, "perf.data")
    rec = subprocess.run(["perf", "record", "-a", "-C", "0", "-m", "8192", "--switch-events", "-q", "-o", data, "-e",
                          "sched:sched_switch,x86_fpu:x86_fpu_regs_deactivated,raw_syscalls:sys_exit", "--",
                          bench, "--one", arm, str(rounds)], capture_output=True, text=True)
    if rec.returncode != 0:
        sys.exit(f"perf record: {rec.stderr.strip()[-300:]}")
    out = subprocess.run(["perf", "script", "-i", data, "--ns", "--show-switch-events", "-F", "tid,time,event,trace"],
                         capture_output=True, text=True).stdout
    m = re.search(r"recorded thread (\d+)", rec.stdout)
    if not m:
        sys.exit(f"d9_bench_switch_ring --one said no recorded thread: {rec.stdout.strip()[-300:]}")
    recorded = int(m.group(1))
    marks = []
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        tid, t, name, rest = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
        if name == "PERF_RECORD_SWITCH_CPU_WIDE":
            name = "SWITCH_OUT" if rest.startswith("OUT") else "SWITCH_IN"
        marks.append((tid, t, name))
    out_ns, in_ns = [], []
    for i in range(len(marks) - len(MARKS) + 2):
        seg = marks[i:i + len(MARKS) - 1]  # the switch's marks up to the switch record in
        if [m[2] for m in seg] != MARKS[:-1]:
            continue
        if seg[0][0] == recorded:
            out_ns.append((seg[2][1] - seg[1][1]) * 1e9)
        if seg[3][0] == recorded:
            in_ns.append((seg[3][1] - seg[2][1]) * 1e9)
    return out_ns, in_ns


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--arms", default="none,page,disabled")
    ap.add_argument("--rounds", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bench = os.path.join(os.path.abspath(args.build), "bench", "switch_ring", "d9_bench_switch_ring")
    arms = args.arms.split(",")
    got = {a: ([], []) for a in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):  # interleaved, so the host's load falls on every arm alike
            for a in arms:
                o, i = trace(bench, a, args.rounds, tmp)
                got[a][0].extend(o)
                got[a][1].extend(i)
    base = None
    print("median ns of a switch of the recorded thread: out (its perf context scheduled out), in (scheduled in)")
    for a in arms:
        o, i = got[a]
        if not o or not i:
            print(f"{a:12} no complete switch marks (n out {len(o)}, in {len(i)})")
            continue
        mo, mi = statistics.median(o), statistics.median(i)
        if base is None:
            base = (mo, mi)
        print(f"{a:12} out {mo:6.0f} ({mo - base[0]:+5.0f})  in {mi:6.0f} ({mi - base[1]:+5.0f})  "
              f"both {mo + mi - base[0] - base[1]:+5.0f} over {arms[0]}  (n {len(o)}, {len(i)})")


if __name__ == "__main__":
    main()
