#!/usr/bin/env python3
"""bench_e2e_smoke: runs `e2e_bench.py --short` and checks that its table is printed and well
formed (every target that ran has a row per arm and metric, numbers where numbers belong, a
known verdict). It asserts nothing about the numbers themselves: timing is not tested.

    bench/e2e/check_short.py --build DIR [e2e_bench.py options]
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_bench  # noqa: E402  (the arms, metrics and verdicts the table must show)

NUM = r"[+-]?\d+(?:\.\d+)?"
PCT = NUM + "%"
CI = r"\[\s*" + NUM + r",\s*" + NUM + r"\]%"
ROW = re.compile(r"^(\S+)\s+(on|ppw)\s+(.+?)\s+(" + NUM + r")\s+(" + NUM + r")\s+(" + PCT + r")\s+(" + CI
                 + r")\s+(" + PCT + r")\s+(" + CI + r")\s+(" + PCT + r")\s+(" + PCT + r")\s+(.+)$")
REC = re.compile(r"^(\S+)\s+(on|ppw)\s+recorder us\s+-\s+(" + NUM + r")\s+(" + PCT + r") ")
HOST = re.compile(r"^(\S+)\s+host fixed work\s+(" + NUM + r") ms A/A\s+(" + PCT + r") (" + CI + r")\s+("
                  + NUM + r")% wide, runs spread (" + NUM + r") % ")


def check(stdout, stderr, targets="uv,memcached"):
    """A list of what is wrong with the table (empty: well formed)."""
    lines = stdout.splitlines()
    if lines and lines[-1].startswith("SKIP"):
        return []  # no target could run here: nothing to check
    problems = []
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("target ") and "verdict" in l)
    except StopIteration:
        return ["no table header in the output"]
    skipped = set(re.findall(r"e2e: skipping (\S+):", stderr))
    names = {"uv": "uv-server", "memcached": "memcached"}
    ran = [names[t] for t in targets.split(",") if names[t] not in skipped]
    seen = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        m, r, h = ROW.match(line), REC.match(line), HOST.match(line)
        if h:
            seen.setdefault((h.group(1), "host"), []).append("host")
        elif m:
            verdict = m.group(12)
            if verdict not in e2e_bench.VERDICTS:
                problems.append(f"unknown verdict {verdict!r} in: {line}")
            seen.setdefault((m.group(1), m.group(2)), []).append(m.group(3))
        elif r:
            seen.setdefault((r.group(1), r.group(2)), []).append("recorder us")
        else:
            problems.append(f"malformed row: {line!r}")
    want = [label + " " + unit for label, unit, _ in e2e_bench.METRICS.values()] + ["recorder us"]
    for t in ran:
        for arm in ("on", "ppw"):
            if seen.get((t, arm)) != want:
                problems.append(f"{t} {arm}: rows {seen.get((t, arm))}, expected {want}")
    for t in ran:  # the host control, once per target (fixed_work is built with the bench)
        if seen.get((t, "host")) != ["host"]:
            problems.append(f"{t}: host control rows {seen.get((t, 'host'))}, expected one")
    for t in ran:
        for arm in ("on", "ppw"):
            if not any(l.startswith(f"{t} {arm}: CPU per request ") for l in lines):
                problems.append(f"{t} {arm}: no verdict line")
    return problems


def main():
    cmd = [sys.executable, os.path.join(HERE, "e2e_bench.py"), "--short"] + sys.argv[1:]
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        print(f"check_short: e2e_bench.py exited with {r.returncode}", file=sys.stderr)
        return 1
    targets = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--targets=")),
                   next((b for a, b in zip(sys.argv[1:], sys.argv[2:]) if a == "--targets"), "uv,memcached"))
    problems = check(r.stdout, r.stderr, targets)
    for p in problems:
        print("check_short: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
