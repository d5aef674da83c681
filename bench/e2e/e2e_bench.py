#!/usr/bin/env python3
"""End-to-end cost of recording, measured so that a 2 % change can be seen or said to be hidden.

    bench/e2e/e2e_bench.py [--build DIR] [--short] [--pairs N] [--targets uv,memcached]
                           [--seed S] [--keep DIR]

The measure is the server's CPU time per request: every thread of the server process, read
from /proc/PID/task/*/schedstat (ns) before and after a fixed number of requests, with the
recorder's own threads (named dial9-*) reported apart. Throughput (requests / the time the
fixed work took) and p99 latency are reported beside it, by the same method.

Targets (each skipped, with the reason, when its tools are missing):
  uv         examples/uv-server (1 loop, linked with the libuv adapter) under
             `wrk -t1 -c16 --latency -s bench/e2e/bench_mix.lua`, stopped after N answers
  memcached  memcached -t 2 (-u nobody when run as root), unmodified, recorded through
             `dial9 run`; CPU/request and throughput from `memcslap -c 8 -t get`, p99 from
             `mc_latency --requests N` (memcslap reports no latency)

Arms (same binary; memcached: with and without `dial9 run`):
  off   not recording                                        A
  on    the defaults (polls, parks, wakes, schedstat, off-CPU intervals, task dumps), target 2 %
  aa    a second `off`: the A/A control, run in the same blocks
  ppw   polls, parks, wakes and spawns alone (no schedstat, no kernel sources), target 1 %

A block runs every arm once, in the order off, on, aa, ppw and reversed in the next block
(A/B/A/B, then B/A/B/A), so drift hits every arm alike. Each arm's change is taken against the
`off` round of the same block; the figure is the median over blocks, with a 95 % bootstrap
interval of that median (blocks resampled with replacement, seeded: the same rounds give the
same interval). A/A is the same figure for `aa`. A verdict is given only where the A/A interval
is narrower than the target; otherwise the row says "not measurable here" and why.
"""
import argparse
import glob
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

ARM_ENV = {
    "off": {"DIAL9_ENABLED": "0"},
    "on": {"DIAL9_ENABLED": "1"},  # the defaults
    "aa": {"DIAL9_ENABLED": "0"},  # a second `off`: the measurement's own noise
    "ppw": {"DIAL9_ENABLED": "1", "DIAL9_SCHEDSTAT": "0", "DIAL9_SCHEDULE_PROFILE_ENABLED": "0",
            "DIAL9_TASK_DUMPS": "0", "DIAL9_CPU_PROFILE_ENABLED": "0"},
}
BLOCK = ["off", "on", "aa", "ppw"]
# CPU per request and throughput loss: the issue's targets per arm; p99: the README's 5 %
TARGET_PCT = {"on": 2.0, "ppw": 1.0}
P99_TARGET_PCT = 5.0
RECORDER_PREFIX = "dial9-"  # pthread_setname_np in src/core/recorder.c, src/sinks, src/preload
BOOTSTRAP = 2000
MIN_BLOCKS = 10  # fewer blocks: a bootstrap interval too rough to judge by (--short)

# metric: (label, unit, higher is worse)
METRICS = {
    "cpu": ("CPU/req", "us", True),
    "app_cpu": ("app CPU/req", "us", True),
    "throughput": ("throughput", "/s", False),
    "p99": ("p99", "ms", True),
}
VERDICTS = ("within target", "OVER TARGET", "inconclusive", "not measurable here", "no recording")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=120.0):  # a safety net: returns once it answers
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def stop(proc, sig=signal.SIGINT, timeout=20.0):
    """Stop a server and return its (stdout, stderr)."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out or "", err or ""


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIAL9_")}
    env.update(extra)
    return env


def cpu_by_thread(pid):
    """{tid: (name, CPU ns so far)} for every thread of `pid`, from schedstat (ns, unlike the
    clock ticks of /proc/PID/task/*/stat)."""
    threads = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(task + "/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(task + "/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue  # a thread that just exited
        threads[os.path.basename(task)] = (name, ns)
    return threads


def cpu_delta(before, after):
    """(all threads, recorder threads) CPU ns between two cpu_by_thread() snapshots. A thread
    that exits in between loses its share: neither server starts threads under load."""
    total = recorder = 0
    for tid, (name, ns) in after.items():
        d = ns - before.get(tid, (name, 0))[1]
        total += d
        if name.startswith(RECORDER_PREFIX):
            recorder += d
    return total, recorder


def child_pid(pid, timeout=60.0):  # a safety net: returns once it exists
    """The first child of `pid` (the program `dial9 run` started)."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.02)
    return pid


def polls_recorded(dial9, trace_dir):
    """(polls, off-CPU coverage) of the run(s) under trace_dir, from `dial9 stats`: 0 polls
    when recording was off; coverage is stats' "off_cpu ..." line (the cost governor's doing)."""
    files = glob.glob(os.path.join(trace_dir, "**", "trace.*"), recursive=True)
    if not files:
        return 0, ""
    r = subprocess.run([dial9, "stats", trace_dir], capture_output=True, text=True, timeout=120)
    m = re.search(r"^\s*(\d+)\s+PollStartEvent$", r.stdout, re.M)
    c = re.search(r"^coverage\s+(off_cpu .*)$", r.stdout, re.M)
    return (int(m.group(1)) if m else 0), (c.group(1) if c else "")


def parse_duration_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value if unit == "ms" else value * 1000


# ------------------------------------------------------------------ targets

class UvTarget:
    name = "uv-server"

    def __init__(self, args):
        self.server = os.path.join(args.build, "examples", "uv-server", "d9-uv-server")
        self.dial9 = os.path.join(args.build, "dial9")
        self.requests = args.uv_requests
        self.warmup = args.uv_warmup

    def missing(self):
        if not os.access(self.server, os.X_OK):
            return f"{self.server} is not built (libuv1-dev)"
        if not shutil.which("wrk"):
            return "wrk is not installed (apt-get install wrk)"
        return None

    def round(self, arm, trace_dir):
        port = free_port()
        proc = subprocess.Popen([self.server, "--port", str(port), "--loops", "1", "--quiet",
                                 "--trace-dir", trace_dir],
                                env=clean_env(ARM_ENV[arm]), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            if not wait_port(port, proc):
                raise RuntimeError("d9-uv-server did not start: " + stop(proc)[1])
            cmd = ["wrk", "-t1", "-c16", "--latency", "-s", os.path.join(HERE, "bench_mix.lua"),
                   "-d120s", f"http://127.0.0.1:{port}/"]
            if self.warmup:  # what a fresh process pays once is not what a request costs
                subprocess.run(cmd, capture_output=True, timeout=180,
                               env=dict(os.environ, BENCH_REQUESTS=str(self.warmup)))
            env = dict(os.environ, BENCH_REQUESTS=str(self.requests))
            before = cpu_by_thread(proc.pid)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
            after = cpu_by_thread(proc.pid)
        finally:
            stop(proc)
        m = re.search(r"(\d+) requests in ", r.stdout)
        fixed = re.search(r"bench_answered=(\d+) bench_elapsed_ns=(\d+)", r.stdout)
        if not (m and fixed and int(fixed.group(2)) > 0):
            raise RuntimeError("wrk failed: " + r.stdout + r.stderr)
        requests = int(m.group(1))  # every answer, the few in flight at the Nth included
        total, recorder = cpu_delta(before, after)
        errors = re.search(r"Non-2xx or 3xx responses: \d+|Socket errors: .*", r.stdout)
        return {"requests": requests, "cpu_ns": total, "recorder_ns": recorder,
                "throughput": int(fixed.group(1)) / (int(fixed.group(2)) / 1e9),
                "p99": parse_duration_ms(re.search(r"^\s+99%\s+(\S+)", r.stdout, re.M).group(1)),
                "errors": errors.group(0) if errors else ""}


class MemcachedTarget:
    name = "memcached"

    def __init__(self, args):
        self.dial9 = os.path.join(args.build, "dial9")
        self.mc_latency = os.path.join(args.build, "bench", "e2e", "mc_latency")
        self.memcslap_per_thread = args.memcslap_per_thread
        self.latency_requests = args.mc_requests
        self.warmup = args.mc_warmup_per_thread

    def missing(self):
        for tool in ("memcached", "memcslap"):
            if not shutil.which(tool):
                return f"{tool} is not installed (apt-get install memcached libmemcached-tools)"
        if not os.access(self.mc_latency, os.X_OK):
            return f"{self.mc_latency} is not built"
        if not os.access(self.dial9, os.X_OK) or subprocess.run(
                [self.dial9, "run", "--help"], capture_output=True).returncode != 0:
            return "`dial9 run` is not available in this build"
        return None

    def round(self, arm, trace_dir):
        port = free_port()
        # as it is normally run: 2 worker threads, and root drops to nobody
        mc = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-t", "2", "-U", "0", "-c", "1024"]
        if os.geteuid() == 0:
            mc += ["-u", "nobody"]
        recording = ARM_ENV[arm]["DIAL9_ENABLED"] == "1"
        cmd = mc
        if recording:
            os.makedirs(trace_dir, exist_ok=True)
            os.chmod(trace_dir, 0o1777)  # memcached writes it after dropping to nobody
            cmd = [self.dial9, "run", "-d", trace_dir]
            for k, v in ARM_ENV[arm].items():
                cmd += ["-e", f"{k}={v}"]
            cmd += ["--"] + mc
        proc = subprocess.Popen(cmd, env=clean_env({}), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            if not wait_port(port, proc):
                raise RuntimeError("memcached did not start: " + stop(proc, signal.SIGTERM)[1])
            server = child_pid(proc.pid) if recording else proc.pid  # memcached itself
            if self.warmup:  # what a fresh process pays once is not what a request costs
                subprocess.run(["memcslap", "-s", f"127.0.0.1:{port}", "-c", "8", "-e",
                                str(self.warmup), "-t", "get"], capture_output=True, timeout=300)
            before = cpu_by_thread(server)
            s = subprocess.run(["memcslap", "-s", f"127.0.0.1:{port}", "-c", "8", "-e",
                                str(self.memcslap_per_thread), "-t", "get"],
                               capture_output=True, text=True, timeout=300)
            after = cpu_by_thread(server)
            lat = subprocess.run([self.mc_latency, "--port", str(port), "--clients", "8",
                                  "--requests", str(self.latency_requests)],
                                 capture_output=True, text=True, timeout=300)
        finally:
            _, err = stop(proc, signal.SIGTERM)
        out = s.stdout + s.stderr
        sets = re.search(r"Time to set\s+(\d+) keys", out)
        gets = re.search(r"Time to get\s+(\d+) keys by\s+\d+ threads:\s+([\d.]+) seconds", out)
        if not (sets and gets and float(gets.group(2)) > 0):
            raise RuntimeError("memcslap failed: " + out)
        if "p99_us=" not in lat.stdout:
            raise RuntimeError("mc_latency failed: " + lat.stdout + lat.stderr)
        m = dict(kv.split("=") for kv in lat.stdout.split())
        total, recorder = cpu_delta(before, after)
        return {"requests": int(sets.group(1)) + int(gets.group(1)), "cpu_ns": total,
                "recorder_ns": recorder, "throughput": int(gets.group(1)) / float(gets.group(2)),
                "p99": float(m["p99_us"]) / 1000,
                "disabled": next((l.strip() for l in err.splitlines() if "recording disabled" in l), ""),
                "errors": "" if m.get("errors") == "0" else "mc_latency errors " + m.get("errors", "?")}


# ------------------------------------------------------------------ statistics

def median_ci(values, rng, n=BOOTSTRAP):
    """(median, 2.5th and 97.5th percentiles of the bootstrapped median)."""
    med = statistics.median(values)
    boots = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    return med, boots[int(0.025 * n)], boots[min(n - 1, int(0.975 * n))]


def change_pct(rows, arm, metric):
    """Per block: (arm / off of the same block - 1) in %."""
    return [(b[arm][metric] / b["off"][metric] - 1) * 100 for b in rows if b["off"][metric] > 0]


def fixed_work_cpu_ns(build):
    """CPU ns of bench/e2e/fixed_work (identical work every time), or None when not built."""
    exe = os.path.join(build, "bench", "e2e", "fixed_work")
    if not os.access(exe, os.X_OK):
        return None
    r = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    m = re.search(r"cpu_ns=(\d+)", r.stdout)
    return int(m.group(1)) if r.returncode == 0 and m else None


def host_noise(rows, rng):
    """The A/A figure for identical CPU work: (median, CI low, CI high, width) of (the run
    before `aa` / the run before `off` - 1) in % over the blocks, and the spread (max / min - 1)
    in % of every run; None when fixed_work did not run."""
    changes = [(b / a - 1) * 100 for a, b in (r["host"] for r in rows) if a and b]
    runs = [x for r in rows for x in r["host_runs"] if x]
    if len(changes) < 2:
        return None
    med, lo, hi = median_ci(changes, rng)
    return med, lo, hi, hi - lo, (max(runs) / min(runs) - 1) * 100


def verdict(med_lo_hi, aa_lo_hi, target, worse_is_up, blocks):
    """A verdict only where the A/A interval is narrower than the target."""
    _, lo, hi = med_lo_hi
    width = aa_lo_hi[2] - aa_lo_hi[1]
    if blocks < MIN_BLOCKS:
        return "not measurable here", f"only {blocks} blocks (a verdict needs >= {MIN_BLOCKS})"
    if width >= target:
        return "not measurable here", f"A/A interval {width:.1f} % wide >= target {target:g} %"
    if not worse_is_up:  # throughput: a loss is a negative change
        lo, hi = -hi, -lo
    if hi <= target:
        return "within target", f"upper bound {hi:+.1f} % <= {target:g} %"
    if lo > target:
        return "OVER TARGET", f"lower bound {lo:+.1f} % > {target:g} %"
    return "inconclusive", f"interval [{lo:+.1f}, {hi:+.1f}] % holds the target {target:g} %"


# ------------------------------------------------------------------ driver

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SOURCE, "build"))
    ap.add_argument("--short", action="store_true",
                    help="2 blocks of small rounds (CI: proves the harness, judges nothing)")
    ap.add_argument("--smoke", action="store_true", help="same as --short (kept for old scripts)")
    ap.add_argument("--pairs", type=int, help="blocks of off/on/aa/ppw rounds (default 10; --short 2)")
    ap.add_argument("--uv-requests", type=int, help="wrk answers per uv-server round (default 40000)")
    ap.add_argument("--memcslap-per-thread", type=int,
                    help="memcslap -e (gets per thread, 8 threads; default 3000)")
    ap.add_argument("--mc-requests", type=int, help="mc_latency requests per round (default 16000)")
    ap.add_argument("--uv-warmup", type=int,
                    help="wrk answers before each uv-server round's measure (default 20000; 0: none)")
    ap.add_argument("--mc-warmup-per-thread", type=int,
                    help="memcslap -e before each memcached round's measure (default 1000; 0: none)")
    ap.add_argument("--targets", default="uv,memcached")
    ap.add_argument("--seed", type=int, default=13, help="bootstrap seed (default 13)")
    ap.add_argument("--keep", help="keep the traces in this directory")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.short = args.short or args.smoke
    args.pairs = args.pairs or (2 if args.short else 10)
    args.uv_requests = args.uv_requests or (3000 if args.short else 40000)
    args.memcslap_per_thread = args.memcslap_per_thread or (200 if args.short else 3000)
    args.mc_requests = args.mc_requests or (2000 if args.short else 16000)
    # a fresh server's first requests pay what a process pays once (rings growing to their
    # working size, callback names resolved, first pages touched): 1 s rounds without a warm-up
    # read +11-24 % for polls/parks/wakes on the uv-server where the steady state is +5-9 %
    if args.uv_warmup is None:
        args.uv_warmup = 1000 if args.short else 20000
    if args.mc_warmup_per_thread is None:
        args.mc_warmup_per_thread = 100 if args.short else 1000
    if args.pairs < 2:
        ap.error("--pairs: at least 2 (an interval needs more than one block)")

    classes = {"uv": UvTarget, "memcached": MemcachedTarget}
    targets = []
    for name in args.targets.split(","):
        if name not in classes:
            ap.error(f"--targets: a list of {', '.join(classes)}")
        t = classes[name](args)
        why = t.missing()
        if why:
            log(f"e2e: skipping {t.name}: {why}")
        else:
            targets.append(t)
    if not targets:
        print("SKIP: no target can run")
        return 0

    dial9 = os.path.join(args.build, "dial9")
    work = args.keep or tempfile.mkdtemp(prefix="d9-e2e.")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)  # mkdtemp's 0700 would shut memcached out once it runs as nobody
    log(f"e2e: {args.pairs} blocks of {'/'.join(BLOCK)} per target, fixed work per round "
        f"(uv {args.uv_requests} requests after {args.uv_warmup} not measured; memcached memcslap "
        f"8 x {args.memcslap_per_thread} gets after 8 x {args.mc_warmup_per_thread}, "
        f"mc_latency {args.mc_requests})")
    blocks = {}
    no_polls = {}  # (target, arm): rounds that recorded no poll
    started = time.time()
    load_before = os.getloadavg()
    try:
        for t in targets:
            for b in range(args.pairs):
                block = {}
                fixed_ns = {}  # the host control: identical CPU work right before each round
                for arm in (BLOCK if b % 2 == 0 else list(reversed(BLOCK))):
                    trace_dir = os.path.join(work, f"{t.name}-{arm}-{b}")
                    fixed_ns[arm] = fixed_work_cpu_ns(args.build)
                    res = t.round(arm, trace_dir)
                    res["cpu"] = res["cpu_ns"] / 1000 / max(res["requests"], 1)
                    res["recorder"] = res["recorder_ns"] / 1000 / max(res["requests"], 1)
                    res["app_cpu"] = res["cpu"] - res["recorder"]
                    res["polls"], res["coverage"] = (polls_recorded(dial9, trace_dir)
                                                     if ARM_ENV[arm]["DIAL9_ENABLED"] == "1" else (0, ""))
                    if ARM_ENV[arm]["DIAL9_ENABLED"] == "1" and res["polls"] == 0:
                        no_polls.setdefault((t.name, arm), []).append(res.get("disabled", ""))
                    block[arm] = res
                    log(f"  {t.name:10} block {b + 1:2} {arm:4}: {res['requests']:6d} req "
                        f"{res['cpu']:6.2f} us CPU/req (recorder {res['recorder']:5.2f}) "
                        f"{res['throughput']:8.0f}/s p99 {res['p99']:.3f} ms"
                        + (f" polls {res['polls']}" if ARM_ENV[arm]["DIAL9_ENABLED"] == "1" else "")
                        + (f" [{res['errors']}]" if res["errors"] else ""))
                block["host"] = (fixed_ns["off"], fixed_ns["aa"])  # spaced as the A/A's two rounds
                block["host_runs"] = list(fixed_ns.values())
                blocks.setdefault(t.name, []).append(block)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    load_after = os.getloadavg()
    print(f"\nend-to-end cost of recording: {args.pairs} blocks per target "
          f"({'/'.join(BLOCK)}, reversed every other block), {time.time() - started:.0f} s in all; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} CPUs")
    print("CPU/req: the server's CPU time, all threads, per request; app: without the recorder's "
          f"threads ({RECORDER_PREFIX}*); change: median over blocks of (arm / off of the same block) - 1")
    print(f"CI: bootstrap 95 % interval of that median ({BOOTSTRAP} resamples, seed {args.seed}); "
          "A/A: the same for a second off arm; verdict only where the A/A interval is narrower than the target")
    head = (f"{'target':10} {'arm':4} {'metric':12} {'off':>9} {'arm':>9} {'change':>8} "
            f"{'95% CI':>17} {'A/A':>7} {'A/A CI':>17} {'width':>6} {'target':>6}  verdict")
    print(head)
    notes = []
    host_widths = {}
    for t in targets:
        rows = blocks[t.name]
        for arm in ("on", "ppw"):
            for metric, (label, unit, up_is_worse) in METRICS.items():
                ch = median_ci(change_pct(rows, arm, metric), random.Random(f"{args.seed}-{t.name}-{arm}-{metric}"))
                aa = median_ci(change_pct(rows, "aa", metric), random.Random(f"{args.seed}-{t.name}-aa-{metric}"))
                target = P99_TARGET_PCT if metric == "p99" else TARGET_PCT[arm]
                if (t.name, arm) in no_polls:
                    v, why = "no recording", (f"no polls in the run dir in {len(no_polls[(t.name, arm)])} "
                                              f"of {len(rows)} blocks")
                else:
                    v, why = verdict(ch, aa, target, up_is_worse, len(rows))
                off_med = statistics.median(b["off"][metric] for b in rows)
                arm_med = statistics.median(b[arm][metric] for b in rows)
                fmt = "{:9.0f}" if metric == "throughput" else "{:9.3f}" if metric == "p99" else "{:9.2f}"
                print(f"{t.name:10} {arm:4} {label + ' ' + unit:12} {fmt.format(off_med)} "
                      f"{fmt.format(arm_med)} {ch[0]:+7.1f}% [{ch[1]:+6.1f},{ch[2]:+6.1f}]% "
                      f"{aa[0]:+6.1f}% [{aa[1]:+6.1f},{aa[2]:+6.1f}]% {aa[2] - aa[1]:5.1f}% "
                      f"{target:5.1f}%  {v}")
                if metric == "cpu":
                    notes.append((t.name, arm, v, f"{t.name} {arm}: CPU per request {v}: {why}"))
            rec = statistics.median(b[arm]["recorder"] for b in rows)
            off_cpu = statistics.median(b["off"]["cpu"] for b in rows)
            print(f"{t.name:10} {arm:4} {'recorder us':12} {'-':>9} {rec:9.2f} "
                  f"{rec / off_cpu * 100 if off_cpu else 0:+7.1f}% (the dial9-* threads' CPU per request, "
                  f"as a share of off's CPU/req)")
        host = host_noise(rows, random.Random(f"{args.seed}-{t.name}-host"))
        if host:
            med, lo, hi, width, spread = host
            ms = statistics.median(x for b in rows for x in b["host_runs"] if x) / 1e6
            print(f"{t.name:10} host fixed work  {ms:9.2f} ms A/A {med:+6.1f}% [{lo:+6.1f},{hi:+6.1f}]% "
                  f"{width:5.1f}% wide, runs spread {spread:.1f} % (bench/e2e/fixed_work: identical CPU "
                  "work before every round; A/A: the run before aa against the one before off)")
            host_widths[t.name] = width
    print()
    for tname, arm, v, n in notes:
        if v == "not measurable here" and "A/A interval" in n and tname in host_widths:
            if host_widths[tname] >= TARGET_PCT[arm]:
                n += (f"; identical CPU work alone varies by {host_widths[tname]:.1f} % here (host row):"
                      " this host's CPU time cannot resolve the target")
            else:
                n += (f"; identical CPU work varies by {host_widths[tname]:.1f} % here (host row): the rest"
                      " is the server's own round-to-round variation (how much work each wake-up finds)")
        print(n)
    for t in targets:  # what the cost governor did to off-CPU capture in the recording rounds
        for arm in ("on", "ppw"):
            covs = [b[arm].get("coverage", "") for b in blocks[t.name]]
            partial = [c for c in covs if "PARTIAL" in c]
            if any(covs):
                print(f"{t.name} {arm}: off-CPU coverage partial in {len(partial)} of {len(covs)} rounds"
                      + (f" (e.g. {partial[0]})" if partial else ""))
    for (tname, arm), reasons in sorted(no_polls.items()):
        said = next((r for r in reasons if r), "")
        print(f"{tname} {arm}: recording was disabled in the server (no polls in the run dir"
              + ("; memcached dropped to nobody (-u nobody): recording did not survive the privilege drop"
                 if tname == "memcached" and os.geteuid() == 0 else "")
              + (f"; it said: {said}" if said else "") + "): its figures are not a cost of recording")
    if args.keep:
        print(f"traces kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
