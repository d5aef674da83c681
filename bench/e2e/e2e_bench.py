#!/usr/bin/env python3
"""End-to-end overhead of recording: throughput, CPU per request and p99 latency, on vs off.

    bench/e2e/e2e_bench.py [--build DIR] [--short] [--rounds N] [--seconds S]
                           [--targets uv,memcached] [--arms off,on,...] [--full-arm] [--pin]
                           [--keep DIR]

Targets (each skipped, with the reason, when its tools are missing):
  uv         examples/uv-server (1 loop, linked with the libuv adapter) under
             `wrk -t1 -c16 --latency -s bench/e2e/bench_mix.lua`
  memcached  memcached 1.6 (-t 2), unmodified, under mc_latency (8 clients) and memcslap;
             recording through `dial9 run` (the preload shim)

Each round of each arm starts the server fresh and measures two phases:
  saturation  closed-loop load as fast as the server answers: throughput, and the server's
              CPU time per request (summed over its threads from /proc/PID/task/*/schedstat),
              which is what recording adds and is far less noisy than throughput on a shared
              machine; memcached also gets a memcslap run (get, 8 threads)
  paced       each connection pauses 1 ms after each answer (~50 % of capacity): p99 latency
              below saturation (at saturation p99 is queueing, not overhead), and CPU per
              request again, at a request rate that both arms share

Arms, run in alternating order round after round (off, on, full, then full, on, off...) so
that drift (other processes, caches) hits every arm alike:
  off   not recording (uv: DIAL9_ENABLED=0, the adapter still linked; memcached: no preload)
  on    polls, parks, wakes, spawns and schedstat; the kernel sources off
        (DIAL9_SCHEDULE_PROFILE_ENABLED=0 DIAL9_TASK_DUMPS=0 DIAL9_CPU_PROFILE_ENABLED=0)
  full  (--full-arm, or by default outside --short) the defaults: `on` plus off-CPU intervals,
        context-switch stacks and task dumps
  nosched (only with --arms) `on` without schedstat: what the two preads per park cost
  aa    (by default outside --short) a second `off`: how much two identical arms differ on
        this machine, the noise floor of every "vs off" figure

Results: the median over rounds of each arm, and "vs off": the median over rounds of each
arm's change against the `off` run of the same round. With --pin the server runs on the first
CPU and the load generator on the second (taskset); by default the kernel places them.
Targets: <= 2 % throughput loss and <= 5 % p99 increase for `on`.
"""
import argparse
import glob
import os
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
    "aa": {"DIAL9_ENABLED": "0"},  # a second `off`: the measurement's own noise (A/A test)
    "on": {"DIAL9_ENABLED": "1", "DIAL9_SCHEDSTAT": "1", "DIAL9_SCHEDULE_PROFILE_ENABLED": "0",
           "DIAL9_TASK_DUMPS": "0", "DIAL9_CPU_PROFILE_ENABLED": "0"},
    "full": {"DIAL9_ENABLED": "1"},
    "nosched": {"DIAL9_ENABLED": "1", "DIAL9_SCHEDSTAT": "0", "DIAL9_SCHEDULE_PROFILE_ENABLED": "0",
                "DIAL9_TASK_DUMPS": "0", "DIAL9_CPU_PROFILE_ENABLED": "0"},
}
TARGETS = {"throughput_loss_pct": 2.0, "p99_increase_pct": 5.0}
PACE_MS = 1


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=10.0):
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


def stop(proc, sig=signal.SIGINT, timeout=15.0):
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


def cpu_ns(pid):
    """CPU time of every thread of process `pid` so far (ns), from schedstat."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return total


def child_pid(pid, timeout=5.0):
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


class Pinning:
    def __init__(self, wanted):
        cpus = sorted(os.sched_getaffinity(0))
        self.ok = wanted and shutil.which("taskset") is not None and len(cpus) >= 2
        self.server_cpu, self.load_cpu = (cpus[0], cpus[1]) if self.ok else (None, None)

    def server(self, cmd):
        return ["taskset", "-c", str(self.server_cpu)] + cmd if self.ok else cmd

    def load(self, cmd):
        return ["taskset", "-c", str(self.load_cpu)] + cmd if self.ok else cmd

    def describe(self):
        return f"server CPU {self.server_cpu}, load CPU {self.load_cpu}" if self.ok else "none"


def parse_duration_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value if unit == "ms" else value * 1000


# ------------------------------------------------------------------ targets

class UvTarget:
    name = "uv-server"

    def __init__(self, args, pin):
        self.server = os.path.join(args.build, "examples", "uv-server", "d9-uv-server")
        self.args, self.pin = args, pin

    def missing(self):
        if not os.access(self.server, os.X_OK):
            return f"{self.server} is not built (libuv1-dev)"
        if not shutil.which("wrk"):
            return "wrk is not installed (apt-get install wrk)"
        return None

    def wrk(self, url, pace_ms):
        seconds = max(1, round(self.args.seconds))  # wrk takes whole seconds
        cmd = ["wrk", "-t1", "-c16", "--latency", "-s", os.path.join(HERE, "bench_mix.lua"),
               f"-d{seconds}s", url]
        env = dict(os.environ, BENCH_PACE_MS=str(pace_ms))
        r = subprocess.run(self.pin.load(cmd), capture_output=True, text=True, timeout=seconds + 60, env=env)
        m = re.search(r"(\d+) requests in ([\d.]+)(ms|s)", r.stdout)
        if not m:
            raise RuntimeError("wrk failed: " + r.stdout + r.stderr)
        errors = re.search(r"Non-2xx or 3xx responses: \d+|Socket errors: .*", r.stdout)
        return {"requests": int(m.group(1)),
                "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", r.stdout).group(1)),
                "p99_ms": parse_duration_ms(re.search(r"^\s+99%\s+(\S+)", r.stdout, re.M).group(1)),
                "errors": errors.group(0) if errors else ""}

    def round(self, arm, trace_dir):
        port = free_port()
        cmd = self.pin.server([self.server, "--port", str(port), "--loops", "1", "--quiet",
                               "--trace-dir", trace_dir])
        proc = subprocess.Popen(cmd, env=clean_env(ARM_ENV[arm]), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            if not wait_port(port, proc):
                raise RuntimeError("d9-uv-server did not start: " + stop(proc)[1])
            url = f"http://127.0.0.1:{port}/"
            cpu0 = cpu_ns(proc.pid)
            sat = self.wrk(url, 0)
            cpu1 = cpu_ns(proc.pid)
            paced = self.wrk(url, PACE_MS)
            cpu2 = cpu_ns(proc.pid)
        finally:
            out, _ = stop(proc)
        rec = re.search(r"recorded\s+(\d+) events \((\d+) dropped\)", out)
        return {"throughput": sat["rps"], "cpu_us": (cpu1 - cpu0) / 1000 / max(sat["requests"], 1),
                "cpu_paced_us": (cpu2 - cpu1) / 1000 / max(paced["requests"], 1),
                "p99_ms": paced["p99_ms"], "p99_sat_ms": sat["p99_ms"],
                "events": int(rec.group(1)) if rec else 0, "dropped": int(rec.group(2)) if rec else 0,
                "errors": " ".join(e for e in (sat["errors"], paced["errors"]) if e)}


class MemcachedTarget:
    name = "memcached"

    def __init__(self, args, pin):
        self.args, self.pin = args, pin
        self.dial9 = os.path.join(args.build, "dial9")
        self.mc_latency = os.path.join(args.build, "bench", "e2e", "mc_latency")

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

    def load(self, port, pause_us):
        cmd = [self.mc_latency, "--port", str(port), "--clients", "8", "--warmup", str(self.args.warmup),
               "--seconds", str(self.args.mc_seconds), "--pause-us", str(pause_us)]
        r = subprocess.run(self.pin.load(cmd), capture_output=True, text=True,
                           timeout=self.args.mc_seconds + 60)
        if "ops_per_sec=" not in r.stdout:
            raise RuntimeError("mc_latency failed: " + r.stdout + r.stderr)
        m = dict(kv.split("=") for kv in r.stdout.split())
        return m

    def round(self, arm, trace_dir):
        port = free_port()
        mc = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-t", "2", "-U", "0", "-c", "1024"]
        if os.geteuid() == 0:
            mc += ["-u", "root"]
        cmd = mc
        if ARM_ENV[arm]["DIAL9_ENABLED"] == "1":
            cmd = [self.dial9, "run", "-d", trace_dir]
            for k, v in ARM_ENV[arm].items():
                cmd += ["-e", f"{k}={v}"]
            cmd += ["--"] + mc
        proc = subprocess.Popen(self.pin.server(cmd), env=clean_env({}), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        mcs = 0.0
        try:
            if not wait_port(port, proc):
                raise RuntimeError("memcached did not start: " + stop(proc, signal.SIGTERM)[1])
            server_pid = child_pid(proc.pid) if self.dial9 in cmd else proc.pid  # memcached itself
            cpu0 = cpu_ns(server_pid)
            sat = self.load(port, 0)
            cpu1 = cpu_ns(server_pid)
            if self.args.memcslap_ops:
                s = subprocess.run(self.pin.load(["memcslap", "-s", f"127.0.0.1:{port}", "-c", "8", "-e",
                                                  str(self.args.memcslap_ops), "-t", "get"]),
                                   capture_output=True, text=True, timeout=120)
                t = re.search(r"Time to get\s+(\d+) keys by\s+\d+ threads:\s+([\d.]+) seconds", s.stdout + s.stderr)
                mcs = int(t.group(1)) / float(t.group(2)) if t and float(t.group(2)) > 0 else 0.0
            cpu2 = cpu_ns(server_pid)
            paced = self.load(port, PACE_MS * 1000)
            cpu3 = cpu_ns(server_pid)
        finally:
            _, err = stop(proc, signal.SIGTERM)
        rec = re.search(r"(\d+) events,.* (\d+) dropped", err)
        ops = int(sat["ops_total"])  # the CPU delta covers the warm-up too
        return {"throughput": float(sat["ops_per_sec"]), "cpu_us": (cpu1 - cpu0) / 1000 / max(ops, 1),
                "cpu_paced_us": (cpu3 - cpu2) / 1000 / max(int(paced["ops_total"]), 1),
                "p99_ms": float(paced["p99_us"]) / 1000, "p99_sat_ms": float(sat["p99_us"]) / 1000,
                "memcslap": mcs, "events": int(rec.group(1)) if rec else 0,
                "dropped": int(rec.group(2)) if rec else 0,
                "errors": "" if sat.get("errors") == "0" and paced.get("errors") == "0" else "mc errors"}


# ------------------------------------------------------------------ driver

def pct(value, base):
    return (value - base) / base * 100 if base else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SOURCE, "build"))
    ap.add_argument("--short", action="store_true", help="2 rounds of 1 s phases, off and on only: < 20 s")
    ap.add_argument("--smoke", action="store_true", help="(tests) 1 round, off and on")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--seconds", type=float, help="length of each phase (default 3; --short 1)")
    ap.add_argument("--targets", default="uv,memcached")
    ap.add_argument("--arms", help="arms to run, off first (default off,on,full,aa; --short: off,on)")
    ap.add_argument("--full-arm", action="store_true")
    ap.add_argument("--pin", action="store_true",
                    help="server on the first CPU, load on the second (taskset); worse when other "
                         "processes share the machine: they cannot move the server elsewhere")
    ap.add_argument("--keep", help="keep the traces in this directory")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.smoke:
        args.short = True
    args.rounds = args.rounds or (1 if args.smoke else 2 if args.short else 6)
    args.seconds = args.seconds or (1.0 if args.short else 3.0)
    args.mc_seconds = 0.5 if args.short and args.seconds == 1.0 else args.seconds
    args.warmup = 0.1 if args.short else 0.5
    args.memcslap_ops = 0 if args.short else 10000
    if args.arms:
        arms = args.arms.split(",")
        if arms[0] != "off" or any(a not in ARM_ENV for a in arms):
            ap.error(f"--arms: a list starting with off, of {', '.join(ARM_ENV)}")
    else:
        arms = ["off", "on"] + (["full"] if args.full_arm or not args.short else []) \
            + ([] if args.short else ["aa"])

    pin = Pinning(args.pin)
    classes = {"uv": UvTarget, "memcached": MemcachedTarget}
    targets = []
    for name in args.targets.split(","):
        t = classes[name](args, pin)
        why = t.missing()
        if why:
            log(f"e2e: skipping {t.name}: {why}")
        else:
            targets.append(t)
    if not targets:
        print("SKIP: no target can run")
        return 0

    work = args.keep or tempfile.mkdtemp(prefix="d9-e2e.")
    os.makedirs(work, exist_ok=True)
    log(f"e2e: {args.rounds} rounds x {len(arms)} arms x 2 phases of {args.seconds} s per target "
        f"(memcached {args.mc_seconds} s); pinning: {pin.describe()}")
    results = {}
    started = time.time()
    try:
        for t in targets:
            for r in range(args.rounds):
                for arm in (arms if r % 2 == 0 else list(reversed(arms))):
                    res = t.round(arm, os.path.join(work, f"{t.name}-{arm}-{r}"))
                    results.setdefault((t.name, arm), []).append(res)
                    log(f"  {t.name:10} round {r + 1} {arm:7}: {res['throughput']:9.0f}/s  "
                        f"{res['cpu_us']:6.2f} us CPU/req (paced {res['cpu_paced_us']:6.2f})  "
                        f"p99 paced {res['p99_ms']:.3f} ms "
                        f"(saturated {res['p99_sat_ms']:.3f})"
                        + (f"  memcslap {res['memcslap']:.0f}/s" if res.get("memcslap") else "")
                        + (f"  {res['events']} events, {res['dropped']} dropped" if res["events"] else "")
                        + (f"  [{res['errors']}]" if res["errors"] else ""))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\nend-to-end overhead: {args.rounds} rounds, alternating arms, {time.time() - started:.0f} s in all")
    print("values: medians over rounds; 'vs off': median over rounds of (arm / off of the same round) - 1")
    print("throughput, CPU/request: closed-loop load; p99: paced load (each connection pauses "
          f"{PACE_MS} ms after each answer)")
    print("CPU/req: the server's CPU time (all threads) per request answered, at saturation and paced")
    head = (f"{'target':10} {'arm':7} {'throughput/s':>12} {'vs off':>7} {'CPU us/req':>10} {'vs off':>7} "
            f"{'paced':>6} {'vs off':>7} {'p99 ms':>7} {'vs off':>7} {'memcslap/s':>10} {'vs off':>7} "
            f"{'events/s':>9} {'dropped':>7}")
    print(head)
    verdicts = []
    for t in targets:
        base = results[(t.name, "off")]
        for arm in arms:
            rs = results[(t.name, arm)]

            def med(key):
                return statistics.median(x.get(key, 0) for x in rs)

            def rel(key):  # paired: each round against the same round's off
                return statistics.median(pct(x.get(key, 0), b.get(key, 0)) for x, b in zip(rs, base))

            off = arm == "off"
            recording = ARM_ENV[arm]["DIAL9_ENABLED"] == "1"
            d = {k: (0.0 if off else rel(k)) for k in ("throughput", "cpu_us", "cpu_paced_us", "p99_ms", "memcslap")}
            mcs = med("memcslap")
            ev = med("events") / args.seconds if recording else 0
            print(f"{t.name:10} {arm:7} {med('throughput'):12.0f} {d['throughput']:+6.1f}% "
                  f"{med('cpu_us'):10.2f} {d['cpu_us']:+6.1f}% {med('cpu_paced_us'):6.2f} {d['cpu_paced_us']:+6.1f}% "
                  f"{med('p99_ms'):7.3f} {d['p99_ms']:+6.1f}% "
                  + (f"{mcs:10.0f} {d['memcslap']:+6.1f}% " if mcs else f"{'-':>10} {'':>7} ")
                  + (f"{ev:9.0f} {sum(x['dropped'] for x in rs):7d}" if recording else f"{'-':>9} {'-':>7}"))
            if arm == "on":
                loss, inc = -d["throughput"], d["p99_ms"]
                ok = loss <= TARGETS["throughput_loss_pct"] and inc <= TARGETS["p99_increase_pct"]
                verdicts.append(f"{t.name}: throughput {-loss:+.1f} % (target >= -2 %), CPU per request "
                                f"{d['cpu_us']:+.1f} % saturated / {d['cpu_paced_us']:+.1f} % paced, "
                                f"p99 {inc:+.1f} % (target <= +5 %): "
                                f"{'within target' if ok else 'OVER TARGET'}")
    print()
    for v in verdicts:
        print(v)
    if args.keep:
        print(f"traces kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
