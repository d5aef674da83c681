#!/usr/bin/env python3
"""The recorder's cost per request, counted rather than timed.

    bench/e2e/counted_cost.py [--build DIR] [--targets uv,memcached,redis,nginx] [--clock monotonic] [--short] [--env NAME=VALUE]
                              [--think-us N] [--syscalls]

On a shared 2-vCPU host CPU time cannot see 1-2 % (bench/e2e/README.md: identical work varies
by 2-3 %), so this counts what a request costs and converts the counts with unit costs measured
on the same host. For each target and arm (off, the defaults, polls/parks/wakes alone):

- user instructions per request, all threads, by callgrind: the server answers N1 and N2
  sequential requests on one connection in two runs and the difference is divided by N2 - N1,
  so start-up and shutdown cancel. A third run answers N1 and then idles for a few seconds:
  the idle work per second (the recorder's drains, memcached's clock tick), times the
  difference in the two runs' lifetimes, is taken off, since under valgrind a request lasts
  ~50x longer than natively. The recorder's threads (those that start in its thread entries)
  are counted apart, and so are the clock reads (calls of clock_gettime, with the
  instructions inside them, which the model prices as clock reads instead);
- system calls and context switches per request, all threads, natively: perf's
  raw_syscalls:sys_enter tracepoint and context-switches software event (exact, no PMU
  needed), over windows of N1 and N2 requests in one server process, idle rate taken off;
  back to back (the client's next request is there before the server's next poller call), or
  with --think-us N of client idle after each answer (the server's poller sleeps in between);
  with --syscalls, also per thread and call (perf's syscalls:sys_enter_* tracepoints), the
  added ones printed per request after the table: where each added system call comes from;
- the server's CPU time per request natively (schedstat, all threads) in the `off` arm, and the
  user share of it (/proc/PID/stat): the denominator, and ns per user instruction of the
  server's own code (user CPU per request / user instructions per request);
- unit costs (`d9_bench --only units`): a read of the clock the hooks read, a system call, a
  context switch; and (`d9_bench_switch_ring`) what a recorded thread's perf events add to
  each of its context switches in the kernel: the task-clock page alone or with its switch
  ring, the off-CPU source's switch events, the two together (what a thread carries is the
  native run's metadata: `thread_cpu_clock`, `source.off_cpu`).

The model: added ns per request = (added instructions - added clock_gettime instructions) x ns
per instruction + added clock reads x ns per read + added system calls x ns per call + added
context switches x ns per switch + the arm's context switches x the kernel's added ns per switch
of a recorded thread: its task-clock event's (page, or page + ring; 0 by system call) and the
off-CPU source's (the defaults; the page then at what it adds beside the source), the latter for
the share of the request windows its inherited events were open (the governor closes them when
paused and, where cheaper, between a sampled level's windows: the native trace's CoverageEvents
and its metadata's governor.between_windows; the native recordings rotate their segment every
second so that the metadata says it); share = added ns / the server's CPU ns per request (off).
What follows time or context switches rather than requests is priced at its native rate, since
under callgrind a request lasts ~50x longer: the reads after a switch (SWITCH_FNS) and
schedstat's (SCHEDSTAT_FNS) at their instructions per call x the added native read / pread64
calls per request; the kernel sources' work (the defaults' instructions beyond the
polls/parks/wakes arm's) x their native events per request (SOURCE_EVENTS in the native run's
trace, in its windows) over their events per request under callgrind. A line per target gives
the defaults as callgrind's pace priced them, beside the verdict.
Targets (issue 32): the defaults <= 2 %, polls/parks/wakes <= 1 % of the server's CPU per
request; memcached and redis also <= +10 % / +5 % of their own user instructions; no added system call or
context switch per request (at most 0.05 per request: what rounding of the idle correction
leaves). nginx (a master and one worker serving a static file on a keep-alive connection) counts
its worker process. --short runs small counts and checks only that the table is well formed.
"""
import argparse
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from instructions import free_port, requests as uv_requests  # noqa: E402  (one HTTP client)

PPW = {"DIAL9_SCHEDSTAT": "0", "DIAL9_SCHEDULE_PROFILE_ENABLED": "0", "DIAL9_TASK_DUMPS": "0",
       "DIAL9_CPU_PROFILE_ENABLED": "0"}
ARMS = {"off": None, "on": {}, "ppw": PPW}  # None: not recording
ARM_NAMES = {"off": "off", "on": "defaults", "ppw": "polls/parks/wakes"}
TARGET_SHARE = {"on": 2.0, "ppw": 1.0}       # % of the server's CPU per request
TARGET_MC_INSTR = {"on": 10.0, "ppw": 5.0}   # % of memcached's own user instructions
MAX_ADDED_PER_REQ = 0.05                     # system calls, context switches: "none added"
# Where the recorder's threads start (core/recorder.c, sinks/pipeline.c, preload/): a thread
# whose callgrind profile holds one of these is the recorder's.
RECORDER_ENTRIES = ("background_main", "prepare_main", "upload_main", "stopper_main", "starter_main")
# The server's threads that answer requests run its event loop; its others (memcached's LRU
# maintainer and crawler, hash expansion, logger) work by the clock, in bursts that differ by
# ~1.6 M instructions between two identical runs: they are counted apart ("background"), so
# their noise stays out of the per-request figure (shown, not priced).
LOOP_ENTRIES = ("event_base_loop", "uv_run")
LOOP_ENTRIES += ("aeMain",)  # redis' main thread; its bio threads are background
LOOP_ENTRIES += ("ngx_process_events_and_timers",)  # an nginx worker's loop (exported by nginx)
# Work of the loop's thread that runs by the clock, not per request: counted apart ("timer",
# shown, not priced), with everything it calls. redis' serverCron (hz 10) refreshes jemalloc's
# statistics (mallctl "epoch": ~0.5 M instructions a call) among others; under callgrind a run
# lasts 7-60 s depending on the host's load, so its calls were 28 % of the loop thread's count
# and swung the per-request figure by thousands of instructions (-5137 .. +9266 in one table).
TIMER_ENTRIES = ("serverCron",)
FD_LIMIT = 1024  # the servers' soft RLIMIT_NOFILE, natively and under valgrind alike
# The zero-code shim's objects (libdial9-preload.so, libdial9-preload-heap.so): their functions'
# own instructions on the server's threads are shown apart (the recorder's hooks they call are not
# theirs: libdial9-preload.so holds the recorder too, so "shim" is an upper bound of the
# interposers' share).
SHIM_OBJECT = re.compile(r"/libdial9-preload[^/]*\.so$")
CLOCK_FN = re.compile(r"(^|[^a-z_])(__)?clock_gettime")
# The recorder's work after the kernel switched the thread out (core/thread_cpu_clock.h,
# core/poll_cpu.h): a park whose task-clock page moved reads the task clock by read(), a poll
# with a switch inside checks its length. How often depends on the host's load, not on the
# request: under callgrind 14 261 of 20 005 memcached parks took it (valgrind runs one thread
# at a time, so the worker is switched out in most requests), natively ~0.3 a request (the
# read() is counted by perf as a system call). Counted apart, with everything they call, and
# priced at the native rate: their instructions per call x the added system calls per request.
SWITCH_FNS = ("d9_thread_cpu_clock_slow", "d9_poll_cpu_end_slow", "d9_poll_cpu_begin_slow",
              "d9_poll_cpu_end_begin_slow")
# schedstat's read (core/schedstat.c: one pread at a park or unpark once DIAL9_SCHEDSTAT_RESOLUTION_US
# has passed since the thread's last): a rate per time, so under callgrind ~50x more of them a
# request than natively. Counted apart likewise, priced at the native pread64 calls per request.
SCHEDSTAT_FNS = ("d9_schedstat_read",)
# Functions counted apart (calls and instructions, with everything they call) and priced at a
# native rate: name -> (functions, the native system call that counts their calls).
PRICED_FNS = {"switch": (SWITCH_FNS, "read"), "sched": (SCHEDSTAT_FNS, "pread64")}
# What the kernel sources write (sources/sources.c), which follows time and context switches, not
# requests: off-CPU intervals, context-switch stacks and CPU samples (CpuSampleEvent), the
# governor's coverage, task dumps. The defaults arm's work beyond polls/parks/wakes is priced at
# these events' native rate per request (counted in the native run's trace, in its windows)
# over their rate under callgrind, where a request lasts ~50x longer.
SOURCE_EVENTS = ("SchedSwitchEvent", "CpuSampleEvent", "CoverageEvent", "TaskDumpEvent")


def fd_limit():
    """Soft and hard: memcached sets both, and valgrind allows no other hard limit than its own."""
    import resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


# The native runs' recordings rotate their segment every second: the metadata is written at a
# segment's start, so a run of a few seconds would say only what held at its start, not how the
# governor kept its sampled levels' gaps (governor.between_windows, read by switch_event_states).
# A rotation's work is per second, not per request: the idle rate takes it off.
NATIVE_RECORDING_ENV = {"DIAL9_ROTATION_SECS": "1"}
EXTRA_ENV = {}  # --env NAME=VALUE: every run's, under the arms' own (a before/after of one build)


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIAL9_")}
    env.update(EXTRA_ENV)
    env.update(extra)
    return env


def wait_connect(port, proc, timeout=180.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("the server exited: " + (proc.stderr.read() or ""))
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=60)
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not start")


def stop(proc, sig, timeout=180.0):
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def child_pid(pid, timeout=60.0):
    end = time.time() + timeout
    while time.time() < end:
        kids = []
        for task in glob.glob(f"/proc/{pid}/task/*/children"):  # any thread may have spawned it
            try:
                with open(task) as f:
                    kids += f.read().split()
            except OSError:
                pass
        if kids:
            return int(kids[0])
        time.sleep(0.02)
    raise RuntimeError(f"no child of {pid}")


# ------------------------------------------------------------------ targets

class UvTarget:
    """examples/uv-server, one loop, the libuv adapter; recording by DIAL9_ENABLED."""
    name = "uv-server"
    stop_signal = signal.SIGINT

    def __init__(self, args):
        self.server = os.path.join(args.build, "examples", "uv-server", "d9-uv-server")

    def missing(self):
        return None if os.access(self.server, os.X_OK) else f"{self.server} is not built"

    def command(self, arm, port, trace_dir):
        env = {"DIAL9_ENABLED": "0"} if ARMS[arm] is None else dict(ARMS[arm], DIAL9_ENABLED="1")
        cmd = [self.server, "--port", str(port), "--loops", "1", "--quiet", "--trace-dir", trace_dir]
        return cmd, env, False  # False: the server is the process started

    @staticmethod
    def prepare(sock):
        pass

    @staticmethod
    def requests(sock, n):
        uv_requests(sock, n)


class ZeroCodeTarget:
    """A server from Debian under `dial9 run` when recording: what it needs to run."""
    program = None      # the executable on PATH
    package = None      # what apt-get installs it from

    def __init__(self, args):
        self.dial9 = os.path.join(args.build, "dial9")

    def missing(self):
        if not shutil.which(self.program):
            return f"{self.program} is not installed (apt-get install {self.package})"
        if not os.access(self.dial9, os.X_OK):
            return f"{self.dial9} is not built"
        return None


class MemcachedTarget(ZeroCodeTarget):
    """memcached from Debian, -t 2 (-u nobody as root), under `dial9 run` when recording."""
    name = "memcached"
    program = "memcached"
    package = "memcached"
    stop_signal = signal.SIGTERM

    def command(self, arm, port, trace_dir):
        # memcached sets its descriptor limit (soft and hard) to -c, which valgrind allows only
        # at its own limit: FD_LIMIT (set in every run) less the 12 valgrind keeps. Natively
        # the same -c: it sizes a table at start, nothing a request does.
        mc = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-t", "2", "-U", "0",
              "-c", str(FD_LIMIT - 12)]
        if os.geteuid() == 0:
            mc += ["-u", "nobody"]
        if ARMS[arm] is None:
            return mc, {}, False
        cmd = [self.dial9, "run", "-q", "-d", trace_dir]
        for k, v in ARMS[arm].items():
            cmd += ["-e", f"{k}={v}"]
        return cmd + ["--"] + mc, {}, False  # -q: dial9 run execs memcached (same process)

    @staticmethod
    def prepare(sock):
        sock.sendall(b"set k 0 0 5\r\nhello\r\n")
        if read_until(sock, b"\r\n") != b"STORED\r\n":
            raise RuntimeError("memcached did not store the key")

    @staticmethod
    def requests(sock, n):
        for _ in range(n):
            sock.sendall(b"get k\r\n")
            if not read_until(sock, b"END\r\n").startswith(b"VALUE k 0 5\r\nhello\r\n"):
                raise RuntimeError("bad answer from memcached")


class RedisTarget(ZeroCodeTarget):
    """redis-server from Debian (its own ae loop on epoll, no loop library: recorded as a
    home-grown loop), under `dial9 run` when recording. No persistence, so nothing forks."""
    name = "redis"
    program = "redis-server"
    package = "redis-server"
    stop_signal = signal.SIGTERM

    def command(self, arm, port, trace_dir):
        # --maxclients under FD_LIMIT: redis asks for no larger descriptor limit, which
        # valgrind would refuse
        rs = [shutil.which("redis-server"), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
              "--appendonly", "no", "--daemonize", "no", "--maxclients", str(FD_LIMIT - 64),
              ]
        if ARMS[arm] is None:
            return rs, {}, False
        cmd = [self.dial9, "run", "-q", "-d", trace_dir]
        for k, v in ARMS[arm].items():
            cmd += ["-e", f"{k}={v}"]
        return cmd + ["--"] + rs, {}, False  # -q: dial9 run execs redis-server (same process)

    @staticmethod
    def prepare(sock):
        sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n")
        if read_until(sock, b"\r\n") != b"+OK\r\n":
            raise RuntimeError("redis did not store the key")

    @staticmethod
    def requests(sock, n):
        for _ in range(n):
            sock.sendall(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
            if read_until(sock, b"hello\r\n") != b"$5\r\nhello\r\n":
                raise RuntimeError("bad answer from redis")


NGINX_CONF = """worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 512; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/www;
    }}
}}
"""


class NginxTarget(ZeroCodeTarget):
    """nginx from Debian serving a static file: a master and one worker process (forked, no
    exec), under `dial9 run` when recording (the worker starts a run of its own once it is a
    loop: docs/zero-code.md). Requests on one keep-alive connection; the worker is the process
    counted (the master only waits for signals)."""
    name = "nginx"
    program = "nginx"
    package = "nginx-light or nginx"
    stop_signal = signal.SIGTERM  # fast shutdown: the master stops its worker first

    def command(self, arm, port, trace_dir):
        # beside the trace directory, in the work directory (1777): readable by the worker,
        # which runs as nobody when started as root
        d = os.path.join(os.path.dirname(trace_dir), f"nginx.{port}")
        os.makedirs(os.path.join(d, "www"))
        for path in (d, os.path.join(d, "www")):
            os.chmod(path, 0o755)
        with open(os.path.join(d, "www", "hello.txt"), "w") as f:
            f.write("hello\n")
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(dir=d, port=port))
        ng = [shutil.which("nginx"), "-p", d, "-e", os.path.join(d, "error.log"), "-c", os.path.join(d, "nginx.conf")]
        if ARMS[arm] is None:
            return ng, {}, True
        cmd = [self.dial9, "run", "-q", "-d", trace_dir]
        for k, v in ARMS[arm].items():
            cmd += ["-e", f"{k}={v}"]
        return cmd + ["--"] + ng, {}, True  # -q: dial9 run execs the master; its child is the worker

    @staticmethod
    def prepare(sock):
        NginxTarget.requests(sock, 1)

    @staticmethod
    def requests(sock, n):
        for _ in range(n):
            sock.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
            if not read_until(sock, b"\r\n\r\nhello\n").startswith(b"HTTP/1.1 200"):
                raise RuntimeError("bad answer from nginx")


def read_until(sock, end):
    buf = b""
    while not buf.endswith(end):
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    return buf


def trace_events(dial9, trace_dir):
    """{schema name: events} in the traces under trace_dir (dial9 stats: 'N SomethingEvent' lines)."""
    if not glob.glob(os.path.join(trace_dir, "**", "*.bin*"), recursive=True):
        return {}
    out = subprocess.run([dial9, "stats", trace_dir], capture_output=True, text=True).stdout
    counts = {}
    for n, name in re.findall(r"^\s+(\d+)\s+(\w+Event)\b", out, re.M):
        counts[name] = counts.get(name, 0) + int(n)
    return counts


def source_events(dial9, trace_dir):
    """From the trace under trace_dir (dial9 dump): the timestamps (CLOCK_MONOTONIC ns) of the
    SOURCE_EVENTS, the off-CPU source's level changes (CoverageEvent: [(ns, one in N: 1 full,
    0 paused)]) and its sampled levels' gaps (gaps_from_text: the last metadata that says)."""
    if not glob.glob(os.path.join(trace_dir, "**", "*.bin*"), recursive=True):
        return [], [], None
    out = subprocess.run([dial9, "dump", trace_dir], capture_output=True, text=True).stdout
    wanted = set(SOURCE_EVENTS)
    times, levels = [], []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) > 1 and parts[1] in wanted and parts[0].isdigit():
            times.append(int(parts[0]))
        if len(parts) > 2 and parts[1] == "CoverageEvent" and parts[0].isdigit():
            m = COVERAGE_LEVEL.search(parts[2])
            if m:
                levels.append((int(parts[0]), int(m.group(1))))
    return times, sorted(levels), gaps_from_text(out)


# A CoverageEvent of the off-CPU source (its fields: source, mode, previous_mode, ..., one_in)
COVERAGE_LEVEL = re.compile(r'\bsource="?off_cpu\b.*?\bone_in=(\d+)')
# What the source's metadata says of its sampled levels' gaps between windows (sources/perf_events.c)
GAPS_KEY = re.compile(r"governor\.between_windows\W+((?:1 in \d+: events closed [\d.]+ s, open \(disabled\) [\d.]+ s(?:; )?)+)")
GAPS_LEVEL = re.compile(r"1 in (\d+): events closed ([\d.]+) s, open \(disabled\) ([\d.]+) s")


def gaps_from_text(text):
    """Per sampled level (1 in N), the share of its gaps between windows in which the off-CPU
    source's events were closed (the governor closes them there when that is cheaper:
    d9_gov_closes_between), from the last `governor.between_windows` in text (`dial9 dump`):
    {N: share}, or None when the trace does not say (a segment's start writes the metadata: a
    run shorter than its rotation has only the start's, before any gap)."""
    found = GAPS_KEY.findall(text)
    if not found:
        return None
    shares = {}
    for n, closed, opened in GAPS_LEVEL.findall(found[-1]):
        if float(closed) + float(opened) > 0:
            shares[int(n)] = float(closed) / (float(closed) + float(opened))
    return shares


def switch_event_states(levels, windows, gaps_closed):
    """The shares of the windows' time (summed over them) in which the off-CPU source's
    inherited switch events (and its stacks event, opened and closed with them) were open and
    enabled, open and disabled, and closed: levels = [(ns, one in N)] of the governor's changes
    (full before the first); full: enabled; paused: closed; sampled 1 in N: enabled one N-th
    of the time, and its gaps closed for the share gaps_closed[N], open (disabled) for the
    rest (not recorded: all open, an upper bound of their price)."""
    enabled = disabled = closed = unsaid = total = 0.0
    for t0, t1 in windows:
        n = 1
        for ts, one_in in levels:
            if ts <= t0:
                n = one_in
        cuts = [(ts, one_in) for ts, one_in in levels if t0 < ts < t1] + [(t1, None)]
        at = t0
        for ts, one_in in cuts:
            span = float(ts - at)
            total += span
            if n == 1:
                enabled += span
            elif n == 0:
                closed += span
            else:
                shut = (gaps_closed or {}).get(n, 0.0)
                if n not in (gaps_closed or {}):
                    unsaid += span * (1 - 1 / n)
                enabled += span / n
                closed += span * (1 - 1 / n) * shut
                disabled += span * (1 - 1 / n) * (1 - shut)
            at, n = ts, one_in
    if total <= 0:
        return {"enabled": 1.0, "disabled": 0.0, "closed": 0.0, "unsaid": 0.0}
    return {"enabled": enabled / total, "disabled": disabled / total, "closed": closed / total,
            "unsaid": unsaid / total}  # unsaid: gaps counted in disabled, their state not recorded


# ------------------------------------------------------------------ callgrind

def parse_callgrind(path):
    """(instructions, clock_gettime calls, instructions inside them, whose thread: "rec", "app"
    (runs the event loop) or "bg", instructions inside TIMER_ENTRIES, {group: [calls, instructions
    inside them]} of PRICED_FNS, instructions of the shim's own code (SHIM_OBJECT: the functions'
    self cost), the part of those in its heap interposers (preload_heap.c)) of one callgrind file
    (one thread: --separate-threads=yes)."""
    names, objs, files, fn, cfn, fl = {}, {}, {}, "", "", ""
    total = calls = clock_ir = timer_ir = shim_ir = heap_ir = 0
    priced = {g: [0, 0] for g in PRICED_FNS}
    recorder = loop = in_shim = in_heap = shim_object = False
    pending_call = 0
    with open(path, errors="replace") as f:
        for line in f:
            if pending_call:  # the line after calls=: position and inclusive cost of the calls
                parts = line.split()
                if CLOCK_FN.search(cfn) and not CLOCK_FN.search(fn) and len(parts) > 1:
                    calls += pending_call
                    clock_ir += int(parts[1])
                base = lambda n: n.split(" ")[0].split("'")[0]  # noqa: E731
                if base(cfn) in TIMER_ENTRIES and base(fn) not in TIMER_ENTRIES and len(parts) > 1:
                    timer_ir += int(parts[1])
                for g, (fns, _) in PRICED_FNS.items():
                    if base(cfn) in fns and base(fn) not in fns and len(parts) > 1:
                        priced[g][0] += pending_call
                        priced[g][1] += int(parts[1])
                pending_call = 0
                continue
            if in_shim and (line[:1].isdigit() or line[:1] in "+-"):  # fn's self cost
                parts = line.split()
                if len(parts) > 1:
                    shim_ir += int(parts[1])
                    heap_ir += int(parts[1]) if in_heap else 0
                continue
            if line.startswith(("fl=", "fi=", "fe=", "cfi=", "cfl=")):  # one table of file names
                m = re.match(r"\((\d+)\)(?: (.*))?", line.rstrip("\n").split("=", 1)[1])
                name = (m.group(2) if m.group(2) is not None else files.get(m.group(1), "")) if m else ""
                if m and m.group(2) is not None:
                    files[m.group(1)] = m.group(2)
                if line.startswith("fl="):
                    fl = name
            if line.startswith("ob="):
                val = line.rstrip("\n").split("=", 1)[1]
                m = re.match(r"\((\d+)\)(?: (.*))?", val)
                obj = val
                if m:
                    obj = m.group(2) if m.group(2) is not None else objs.get(m.group(1), "")
                    if m.group(2) is not None:
                        objs[m.group(1)] = m.group(2)
                shim_object = SHIM_OBJECT.search(obj) is not None
            elif line.startswith("cob="):  # the callee's object, named once for later ob= lines
                m = re.match(r"\((\d+)\) (.*)", line.rstrip("\n").split("=", 1)[1])
                if m:
                    objs[m.group(1)] = m.group(2)
            if line.startswith("fn="):  # its self cost follows, and again after each call
                in_shim = shim_object
                in_heap = in_shim and fl.endswith("preload_heap.c")
            if line.startswith(("fn=", "cfn=")):
                key, val = line.rstrip("\n").split("=", 1)
                m = re.match(r"\((\d+)\)(?: (.*))?", val)
                name = val
                if m:
                    name = m.group(2) if m.group(2) is not None else names.get(m.group(1), "")
                    if m.group(2) is not None:
                        names[m.group(1)] = m.group(2)
                base = name.split(" ")[0].split("'")[0]
                recorder = recorder or (key == "fn" and base in RECORDER_ENTRIES)
                loop = loop or base in LOOP_ENTRIES
                if key == "fn":
                    fn = name
                else:
                    cfn = name
            elif line.startswith("calls="):
                pending_call = int(line.split("=", 1)[1].split()[0])
            elif line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return (total, calls, clock_ir, "rec" if recorder else "app" if loop else "bg", timer_ir,
            priced, shim_ir, heap_ir)


def callgrind_run(args, target, arm, n, idle_s, work, tag):
    """One run under callgrind: n requests, idle_s seconds idle, stop. Counts of the server
    process: app and recorder instructions, clock reads and their instructions, lifetime."""
    port = free_port()
    out = os.path.join(work, f"cg.{target.name}.{arm}.{tag}")
    trace_dir = os.path.join(work, f"traces.{target.name}.{arm}.{tag}")
    os.makedirs(trace_dir)
    os.chmod(trace_dir, 0o1777)  # memcached writes it after dropping to nobody
    cmd, env, child = target.command(arm, port, trace_dir)
    vg = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--quiet",
          "--vgdb=no", f"--callgrind-out-file={out}.%p", "--trace-children=yes"]  # dial9 run execs the server
    proc = subprocess.Popen(vg + cmd, env=clean_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=fd_limit)
    try:
        sock = wait_connect(port, proc)
        server = child_pid(proc.pid) if child else proc.pid
        # The window whose length differs between the runs; start-up and shutdown take about
        # as long in each, so the idle work in them cancels with their other work.
        t0 = time.monotonic()
        target.prepare(sock)
        target.requests(sock, n)
        time.sleep(idle_s)
        life = time.monotonic() - t0
        sock.close()
    finally:
        _, err = stop(proc, target.stop_signal)
    files = glob.glob(f"{out}.{server}-*")
    if not files:
        raise RuntimeError(f"no callgrind output for {target.name} {arm}: {err[-2000:]}")
    by_name = trace_events(args.dial9, trace_dir) if ARMS[arm] is not None else {}
    r = {"app": 0, "rec": 0, "bg": 0, "timer": 0, "clock": 0, "clock_ir": 0, "shim": 0, "heap": 0, "life": life,
         "events": sum(by_name.values()), "src": sum(by_name.get(k, 0) for k in SOURCE_EVENTS)}
    for g in PRICED_FNS:
        r[g] = r[g + "_ir"] = 0
    for path in files:
        ir, calls, clock_ir, kind, timer_ir, priced, shim_ir, heap_ir = parse_callgrind(path)
        r[kind] += ir
        if kind == "app":  # the shim's own code on the server's loop thread (within "app")
            r["shim"] += shim_ir
            r["heap"] += heap_ir
        if kind == "app":  # the loop thread's clock-driven work: apart, with the background
            r["app"] -= timer_ir
            r["timer"] += timer_ir
        if kind in ("app", "rec"):  # the recorder's switch- and time-driven work: apart (PRICED_FNS)
            for g, (n_calls, g_ir) in priced.items():
                r[kind] -= g_ir
                r[g] += n_calls
                r[g + "_ir"] += g_ir
        r["clock"] += calls
        r["clock_ir"] += clock_ir
    print(f"    {target.name} {arm} {tag}: {n} requests, {life:.2f} s: {r}", file=sys.stderr, flush=True)
    for path in glob.glob(f"{out}.*"):
        os.unlink(path)
    shutil.rmtree(trace_dir, ignore_errors=True)
    return r


def per_request(small, large, idle, n1, n2, keys, idle_s):
    """(large - small - idle rate x extra lifetime) / (n2 - n1), for each key. The idle rate is
    the idle run's extra work over its idle_s seconds of sleep: the two runs' lifetimes also
    differ by how long their n1 requests took under the host's load (seen: an nginx small run of
    6.26 s against its idle run's 6.27 s, so 0.01 s of "idle" priced a difference of noise, and
    the requests came out at -1 851 instructions of the shim's)."""
    extra_life = large["life"] - small["life"]
    idle_life = idle_s
    out = {}
    for k in keys:
        rate = max(0.0, (idle[k] - small[k]) / idle_life) if idle_life > 0 else 0.0
        out[k] = (large[k] - small[k] - rate * extra_life) / (n2 - n1)
        out[k + "_idle_per_s"] = rate
    return out


# ------------------------------------------------------------------ native: perf and CPU time

def thread_cpu(pid):
    """(all threads' CPU ns from schedstat, user ticks, system ticks) of a process."""
    ns = 0
    for task in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(task) as f:
                ns += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return ns, int(fields[11]), int(fields[12])


def perf_window(pid, work, action, by_call=False):
    """Run action() with perf counting the process's system calls and context switches:
    perf starts with its counters disabled and enables them through its control fifo, so the
    window holds exactly the action. Returns (syscalls, switches, cpu ns, user share, seconds,
    {(thread name, system call): count}: every call with by_call, else PRICED_FNS' calls under the
    thread name "", (CLOCK_MONOTONIC ns at the window's start, at its end))."""
    ctl, ack, out = (os.path.join(work, n) for n in ("perf.ctl", "perf.ack", "perf.out"))
    for p in (ctl, ack):
        if os.path.exists(p):
            os.unlink(p)
        os.mkfifo(p)
    events = "raw_syscalls:sys_enter,context-switches" + (
        ",syscalls:sys_enter_*" if by_call else "".join(f",syscalls:sys_enter_{c}" for _, c in PRICED_FNS.values()))
    perf = subprocess.Popen(["perf", "stat", "-x,", "-o", out, "-D", "-1", "--control",
                             f"fifo:{ctl},{ack}", "-e", events, "-p", str(pid)]
                            + (["--per-thread"] if by_call else []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with open(ctl, "w") as c, open(ack, "rb", buffering=0) as a:
        def command(word):  # perf answers "ack\n\0"
            c.write(word + "\n")
            c.flush()
            if not a.read(16).startswith(b"ack"):
                raise RuntimeError("perf did not acknowledge " + word)
        command("enable")
        cpu0, u0, s0 = thread_cpu(pid)
        t0 = time.monotonic_ns()
        action()
        t1 = time.monotonic_ns()
        seconds = (t1 - t0) / 1e9
        cpu1, u1, s1 = thread_cpu(pid)
        command("disable")
    perf.send_signal(signal.SIGINT)
    _, err = perf.communicate(timeout=60)
    counts, calls = {}, {}
    with open(out) as f:
        for line in f:
            parts = line.strip().split(",")
            thread = parts.pop(0).rsplit("-", 1)[0] if by_call and parts else ""  # "comm-tid"
            if len(parts) > 2 and (parts[0].isdigit() or parts[0] == "<not counted>"):
                # not counted: no thread of the server ran in the window (a task's counters
                # advance only while it runs), so nothing happened
                n = int(parts[0]) if parts[0].isdigit() else 0
                if parts[2].startswith("syscalls:sys_enter_"):
                    key = (thread, parts[2][len("syscalls:sys_enter_"):])
                    calls[key] = calls.get(key, 0) + n
                else:
                    counts[parts[2]] = counts.get(parts[2], 0) + n
    if "raw_syscalls:sys_enter" not in counts or "context-switches" not in counts:
        raise RuntimeError("perf stat counted nothing: " + err[-1000:] + open(out).read())
    ticks = (u1 - u0) + (s1 - s0)
    return (counts["raw_syscalls:sys_enter"], counts["context-switches"], cpu1 - cpu0,
            (u1 - u0) / ticks if ticks else 1.0, seconds, calls, (t0, t1))


def native_requests(args, target, sock, n):
    """n requests back to back, or each after --think-us of the client's idle time: then the
    server's poller sleeps between requests, as a server not saturated by one client does."""
    if not args.think_us:
        target.requests(sock, n)
        return
    for _ in range(n):
        target.requests(sock, 1)
        time.sleep(args.think_us / 1e6)


def native_run(args, target, arm, work):
    """System calls, context switches and CPU ns per request, natively, idle rate taken off."""
    port = free_port()
    trace_dir = os.path.join(work, f"native.{target.name}.{arm}")
    os.makedirs(trace_dir)
    os.chmod(trace_dir, 0o1777)
    cmd, env, child = target.command(arm, port, trace_dir)
    if ARMS[arm] is not None:  # a segment a second: its start writes the metadata the pricing reads
        env = dict(env, **NATIVE_RECORDING_ENV)
    proc = subprocess.Popen(cmd, env=clean_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=fd_limit)
    n1, n2 = args.native_small, args.native_large
    try:
        sock = wait_connect(port, proc)
        server = child_pid(proc.pid) if child else proc.pid
        target.prepare(sock)
        target.requests(sock, args.native_warmup)
        idle = perf_window(server, work, lambda: time.sleep(args.idle), args.syscalls)
        small = perf_window(server, work, lambda: native_requests(args, target, sock, n1), args.syscalls)
        large = perf_window(server, work, lambda: native_requests(args, target, sock, n2), args.syscalls)
        sock.close()
    finally:
        stop(proc, target.stop_signal)
    # the kernel sources' events of each window, from the trace (written out at the stop)
    times, levels, gaps_closed = source_events(args.dial9, trace_dir) if ARMS[arm] is not None else ([], [], None)
    tcc, offcpu = switch_carriers(args.dial9, trace_dir) if ARMS[arm] is not None else ("none", False)
    lazy = ARMS[arm] is not None and thread_cpu_lazy(args.dial9, trace_dir)
    page_share = lazy_page_share(args.dial9, trace_dir) if lazy else 1.0
    shutil.rmtree(trace_dir, ignore_errors=True)
    src = [sum(1 for t in times if w[6][0] <= t < w[6][1]) for w in (idle, small, large)]
    r = {}
    for i, key in enumerate(("syscalls", "switches", "cpu_ns")):
        rate = idle[i] / idle[4]
        r[key] = (large[i] - small[i] - rate * (large[4] - small[4])) / (n2 - n1)
        r[key + "_idle_per_s"] = rate
    r["src_nat"] = (src[2] - src[1] - src[0] / idle[4] * (large[4] - small[4])) / (n2 - n1)
    r["src_nat_per_s"] = src[2] / large[4]  # while answering (back to back, or with --think-us)
    r["user_share"] = large[3]
    r["tcc"], r["offcpu"] = tcc, offcpu
    r["lazy"], r["page_share"] = lazy, page_share
    # the states of the source's switch events while the requests were answered
    r["offcpu_states"] = switch_event_states(levels, (small[6], large[6]), gaps_closed)
    # per thread and system call (--syscalls): the same difference, the idle rate taken off
    r["calls"] = {k: (large[5].get(k, 0) - small[5].get(k, 0) - idle[5].get(k, 0) / idle[4] * (large[4] - small[4]))
                  / (n2 - n1) for k in set(large[5]) | set(small[5])}
    return r


# ------------------------------------------------------------------ units, model, table

def unit_costs(args):
    out = subprocess.run([os.path.join(args.build, "bench", "d9_bench"), "--only", "units"]
                         + (["--short"] if args.short else []),
                         capture_output=True, text=True, env=clean_env({"DIAL9_CLOCK": args.clock}))
    units = {m.group(1): float(m.group(2)) for m in re.finditer(r"^unit (\w+) ([\d.]+)", out.stdout, re.M)}
    clock = re.search(r"^unit clock_read_ns [\d.]+ (\S+)", out.stdout, re.M)
    need = ("clock_read_ns", "syscall_ns", "context_switch_ns")
    if out.returncode != 0 or any(k not in units for k in need):
        raise RuntimeError("d9_bench --only units failed: " + out.stdout + out.stderr)
    units["clock"] = clock.group(1) if clock else "?"
    return units


def switch_carriers(dial9, trace_dir):
    """What the recorded threads carried into each context switch, from the metadata (dial9
    stats): how they took their CPU time (thread_cpu_clock: "ring", task-clock page and switch
    ring; "page", the page alone; "syscall", no event) and whether the off-CPU source's switch
    events were open on them (source.off_cpu active)."""
    if not glob.glob(os.path.join(trace_dir, "**", "*.bin*"), recursive=True):
        return "syscall", False
    return carriers_from_stats(subprocess.run([dial9, "stats", trace_dir], capture_output=True, text=True).stdout)


def thread_cpu_lazy(dial9, trace_dir):
    """Whether the recording's threads took their page lazily (thread_cpu_clock "lazy: ...",
    core/thread_cpu_clock_lazy.h): their polls then call poll_cpu's slow twins (SWITCH_FNS) at
    every poll until the page, work per request, not per switch."""
    if not glob.glob(os.path.join(trace_dir, "**", "*.bin*"), recursive=True):
        return False
    out = subprocess.run([dial9, "stats", trace_dir], capture_output=True, text=True).stdout
    return re.search(r"^\s+thread_cpu_clock = lazy:", out, re.M) is not None


def lazy_page_share(dial9, trace_dir):
    """A lazy recording's share of the recorded threads' parks (each a switch out and in of a
    worker sleeping in its poller) made while that worker had its page open (its
    ThreadCpuPageEvents, open true or false, before the park in the trace): the share of its
    switches the page's price applies to."""
    out = subprocess.run([dial9, "dump", trace_dir], capture_output=True, text=True).stdout
    return page_share_from_dump(out)


def page_share_from_dump(out):
    """lazy_page_share's answer from `dial9 dump`'s text."""
    is_open, parks, with_page = {}, 0, 0
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        w = re.search(r"\bworker_id=(\d+)", parts[2])
        if parts[1] == "ThreadCpuPageEvent" and w:
            is_open[w.group(1)] = re.search(r"\bopen=true\b", parts[2]) is not None
        elif parts[1] == "WorkerParkEvent" and w:
            parks += 1
            with_page += is_open.get(w.group(1), False)
    return with_page / parks if parks else 0.0


def carriers_from_stats(out):
    """switch_carriers' answer from `dial9 stats`' text: the off-CPU source is "rings" when its
    switch records came from the threads' own task-clock events (one event per recorded
    thread), "events" when from its inherited per-CPU events, False when off."""
    src = re.search(r"^\s+source\.off_cpu = active(.*)$", out, re.M)
    offcpu = False if not src else "rings" if "own task-clock event" in src.group(1) else "events"
    m = re.search(r"^\s+thread_cpu_clock = (.*)$", out, re.M)
    if m and m.group(1).startswith("lazy:"):  # a page on the threads that had a long poll (ThreadCpuPageEvent):
        pages = re.search(r"^\s+(\d+)\s+ThreadCpuPageEvent\b", out, re.M)  # any: all priced with it, an upper bound
        return ("page" if pages and int(pages.group(1)) > 0 else "syscall"), offcpu
    if not m or not m.group(1).startswith("perf:"):
        return "syscall", offcpu
    return ("page" if "no switch ring" in m.group(1) else "ring"), offcpu


SWITCH_UNITS = ("tcc_page_switch_ns", "tcc_ring_switch_ns", "offcpu_source_switch_ns", "defaults_switch_ns",
                "oneevent_switch_ns", "defaults_stacks_switch_ns", "oneevent_stacks_switch_ns", "switch_aa_ns")


def switch_unit_costs(args):
    """What a recorded thread's perf events add to each of its context switches (out and in):
    the task-clock page alone and with its switch ring, the off-CPU source's switch events, the
    source and the page together, and the A/A noise of that figure (bench/switch_ring: a
    ping-pong of a thread and a process on one CPU, the median of 15 paired differences with a
    no-event run, 10 000 round trips each; --short: a quick run, numbers rough). A bench that cannot run here (not built, perf refused) prices it at 0 and says so
    in units["switch_note"]."""
    units = {k: 0.0 for k in SWITCH_UNITS}
    bench = os.path.join(args.build, "bench", "switch_ring", "d9_bench_switch_ring")
    if not os.access(bench, os.X_OK):
        units["switch_note"] = f"not measured ({bench} is not built): priced 0"
        return units
    out = subprocess.run([bench] + (["2000", "5"] if args.short else ["10000", "15"]) + ["priced"],
                         capture_output=True, text=True)
    got = {m.group(1): float(m.group(2)) for m in re.finditer(r"^unit (\w+) (-?[\d.]+)", out.stdout, re.M)}
    if out.returncode != 0 or any(k not in got for k in SWITCH_UNITS):
        units["switch_note"] = ("not measured (d9_bench_switch_ring: " + (out.stderr.strip() or out.stdout.strip())[-200:]
                                + "): priced 0")
        return units
    units.update(got)
    units["switch_note"] = ("quick run, rough" if args.short else "median of 15 paired differences") + \
        f", A/A noise {got['switch_aa_ns']:.0f} ns"
    return units


def price_thread_cpu_switches(d, r, units):
    """The kernel's added work at every context switch of a recorded thread: the arm's own
    context switches a request (all its threads: those not recorded switch by the clock, and
    the idle rate takes them off) x ns added per switch, by what the threads carry, each whole
    set measured together (one perf context: the prices do not add). A task-clock event (page,
    or page + its switch ring) at its own price; with the off-CPU source on, the thread's whole
    set (with the source's context-switch stacks event beside it, off as its pacing mostly
    leaves it): its inherited switch events and the page (`defaults_stacks_switch_ns`), or,
    one event per recorded thread, the page and its switch ring read as the source's records
    (`oneevent_stacks_switch_ns`); the task-clock row then takes the page's own price and the
    source's row what the source adds to it. By system call no task-clock event is added.
    The source's price is paid only while its events are open: the governor closes the
    inherited ones when paused and, where cheaper, between a sampled level's windows (a closed
    event costs a switch nothing), so the row takes the share of the request windows in which
    they were open (r["offcpu_states"], from the trace: enabled, or disabled between windows,
    priced as enabled, an upper bound: no bench arm prices a disabled source beside the page);
    the rings (`DIAL9_THREAD_CPU=ring`) are not governed: always open."""
    d["tcc"] = r.get("tcc", "syscall")
    d["offcpu"] = r.get("offcpu", False)
    page_ns = units.get("tcc_page_switch_ns", 0.0)
    d["tcc_switch_ns"] = {"page": page_ns, "ring": units.get("tcc_ring_switch_ns", 0.0)}.get(d["tcc"], 0.0)
    whole = {"events": units.get("defaults_stacks_switch_ns", 0.0),
             "rings": units.get("oneevent_stacks_switch_ns", 0.0)}.get(d["offcpu"], 0.0)
    if d["offcpu"] and d["tcc"] == "syscall":  # no page: the source's events alone
        whole = units.get("offcpu_source_switch_ns", 0.0)
    if d["offcpu"]:
        d["tcc_switch_ns"] = page_ns if d["tcc"] != "syscall" else 0.0
    d["tcc_switches"] = r["switches"]
    d["page_share"] = r.get("page_share", 1.0) if r.get("lazy") else 1.0  # lazy: only while a page was open
    d["ns_tcc"] = d["tcc_switches"] * d["tcc_switch_ns"] * d["page_share"]
    d["offcpu_switch_ns"] = whole - d["tcc_switch_ns"] if d["offcpu"] else 0.0
    states = r.get("offcpu_states") if d["offcpu"] == "events" else None
    d["offcpu_states"] = states or {"enabled": 1.0, "disabled": 0.0, "closed": 0.0, "unsaid": 0.0}
    d["offcpu_open"] = d["offcpu_states"]["enabled"] + d["offcpu_states"]["disabled"] if d["offcpu"] else 0.0
    d["ns_offcpu"] = d["tcc_switches"] * d["offcpu_switch_ns"] * d["offcpu_open"]


def measure(args, target, arm, work):
    n1, n2 = args.small, args.large
    small = callgrind_run(args, target, arm, n1, 0, work, "small")
    large = callgrind_run(args, target, arm, n2, 0, work, "large")
    idle = callgrind_run(args, target, arm, n1, args.idle, work, "idle")
    # A start-up outlier only adds (seen once: redis' defaults, 170 M app instructions more in
    # one small run than in the others, which made its requests cost less than nothing): where
    # the small run holds more than the large or the idle one, it is run again (twice at most)
    # and the run with fewer instructions is kept.
    for again in range(2):
        if all(small[k] <= min(large[k], idle[k]) for k in ("app", "rec")):
            break
        print(f"    {target.name} {arm}: the small run counted more than a longer one: again",
              file=sys.stderr, flush=True)
        retry = callgrind_run(args, target, arm, n1, 0, work, f"small{again + 2}")
        if retry["app"] + retry["rec"] < small["app"] + small["rec"]:
            small = retry
    row = per_request(small, large, idle, n1, n2, ("app", "rec", "bg", "timer", "clock", "clock_ir", "events", "src", "shim",
                                                    "heap") + tuple(k for g in PRICED_FNS for k in (g, g + "_ir")),
                      args.idle)
    # per second of callgrind's pace: a request lasts the large run's length over its requests
    row["src_cg_per_s"] = row["src"] * n2 / max(1e-9, large["life"])
    row.update(native_run(args, target, arm, work))
    print(f"  {target.name} {arm}: {row['app'] + row['rec']:.0f} instructions/req, "
          f"{row['syscalls']:.2f} syscalls/req, {row['switches']:.2f} switches/req, "
          f"{row['cpu_ns'] / 1000:.2f} us CPU/req", file=sys.stderr, flush=True)
    return row


def native_calls(row, call):
    """A system call's native count per request in an arm's row, over all threads."""
    return sum(v for (_, c), v in row.get("calls", {}).items() if c == call)


def model(rows, units):
    """Per arm, the added counts against off and the ns the model gives each. Work that follows
    time or context switches, not requests, is priced at its native rate: the reads after a
    switch (SWITCH_FNS) and schedstat's (SCHEDSTAT_FNS) at their instructions per call times
    the added native calls of their system call; the kernel sources' work (the defaults arm's
    instructions beyond the polls/parks/wakes arm's) times the sources' native events per
    request over their events per request under callgrind. The figures at valgrind's pace are
    kept beside them (d["cg"])."""
    off = rows["off"]
    ns_per_instr = off["cpu_ns"] * off["user_share"] / max(1.0, off["app"] + off["rec"])
    base_instr = max(1.0, off["app"] + off["rec"])
    out = {}
    for arm, r in rows.items():
        if arm == "off":
            continue
        d = {k: r[k] - off[k] for k in ("app", "rec", "clock", "clock_ir", "syscalls", "switches")}
        d["events"] = r["events"]
        d["ns_instr"] = (d["app"] + d["rec"] - d["clock_ir"]) * ns_per_instr
        for g, (_, call) in PRICED_FNS.items():
            d[g + "_ir"] = r[g + "_ir"]
            d[g + "_per_call"] = r[g + "_ir"] / r[g] if r[g] > 0 else 0.0
            d[g + "_calls"] = max(0.0, native_calls(r, call) - native_calls(off, call))
            d[g + "_native"] = d[g + "_per_call"] * d[g + "_calls"]
            if g == "switch" and r.get("lazy"):  # a lazy thread's polls call them per request: as counted
                d[g + "_native"] = max(d[g + "_native"], r[g + "_ir"] - off[g + "_ir"])
            d["ns_" + g] = d[g + "_native"] * ns_per_instr
        # the kernel sources: what the defaults add to polls/parks/wakes, at the sources' native rate
        d["src_cg_events"], d["src_nat_events"] = r["src"], r.get("src_nat", 0.0)
        d["src_ratio"] = d["src_nat_events"] / d["src_cg_events"] if d["src_cg_events"] > 0 else 1.0
        d["src_cg"] = 0.0
        if arm == "on" and "ppw" in rows:
            d["src_cg"] = (r["app"] + r["rec"]) - (rows["ppw"]["app"] + rows["ppw"]["rec"])
        # a difference below 0 is the two arms' noise, not work: none is scaled (scaled, it
        # put redis' defaults at -99.2 % of its own instructions in a --short run)
        d["src_native"] = max(0.0, d["src_cg"]) * d["src_ratio"]
        d["ns_src"] = (d["src_native"] - d["src_cg"]) * ns_per_instr  # the correction, usually < 0
        d["ns_clock"] = d["clock"] * units["clock_read_ns"]
        d["ns_sys"] = d["syscalls"] * units["syscall_ns"]
        d["ns_cs"] = d["switches"] * units["context_switch_ns"]
        price_thread_cpu_switches(d, r, units)
        fixed = d["ns_instr"] + d["ns_switch"] + d["ns_clock"] + d["ns_sys"] + d["ns_cs"] + d["ns_tcc"] + d["ns_offcpu"]
        d["ns"] = fixed + d["ns_sched"] + d["ns_src"]
        instr = d["app"] + d["rec"] + d["switch_native"]
        d["instr_pct"] = 100.0 * (instr + d["sched_native"] + d["src_native"] - d["src_cg"]) / base_instr
        # at valgrind's pace: schedstat's reads and the sources as callgrind counted them
        cg_ns = fixed + d["sched_ir"] * ns_per_instr
        d["cg"] = {"share": 100.0 * cg_ns / off["cpu_ns"] if off["cpu_ns"] > 0 else float("nan"),
                   "instr_pct": 100.0 * (instr + d["sched_ir"]) / base_instr}
        d["share"] = 100.0 * d["ns"] / off["cpu_ns"] if off["cpu_ns"] > 0 else float("nan")
        out[arm] = d
    return ns_per_instr, out


def verdict(target, arm, d):
    over = []
    if d["share"] > TARGET_SHARE[arm]:
        over.append(f"share {d['share']:.2f} % > {TARGET_SHARE[arm]:.0f} %")
    if target in ("memcached", "redis") and d["instr_pct"] > TARGET_MC_INSTR[arm]:
        over.append(f"instructions +{d['instr_pct']:.1f} % > +{TARGET_MC_INSTR[arm]:.0f} %")
    if d["syscalls"] > MAX_ADDED_PER_REQ:
        over.append(f"{d['syscalls']:+.2f} system calls/req")
    if d["switches"] > MAX_ADDED_PER_REQ:
        over.append(f"{d['switches']:+.2f} context switches/req")
    return "within target" if not over else "OVER TARGET: " + ", ".join(over)


HEADER = (f"{'target':10} {'arm':4} {'input':22} {'off':>10} {'arm':>10} {'added':>10} "
          f"{'unit':>12} {'model ns':>9} {'share %':>8}")


def offcpu_price_label(d, r):
    """The source's price a switch and the share of the request windows it was paid for: open
    (enabled + disabled between a sampled level's windows; "unsaid": of those gaps, the share
    the trace did not say were closed or open, counted open)."""
    if not d["offcpu"]:
        return "off"
    st = d["offcpu_states"]
    unsaid = f", unsaid {st['unsaid']:.2f}" if st.get("unsaid", 0.0) > 0 else ""
    return (f"{d['offcpu_switch_ns']:.0f} ns {d['offcpu']} x {d['offcpu_open']:.2f} open "
            f"(enabled {st['enabled']:.2f}, disabled {st['disabled']:.2f}, closed {st['closed']:.2f}{unsaid})")


def print_table(results, units):
    print(f"counted cost per request (unit costs on this host: clock read {units['clock_read_ns']:.1f} ns "
          f"({units['clock']}), system call {units['syscall_ns']:.0f} ns, context switch "
          f"{units['context_switch_ns']:.0f} ns)")
    print(f"a recorded thread's context switch, added in the kernel by its perf events: task-clock page "
          f"{units.get('tcc_page_switch_ns', 0.0):.0f} ns, page + switch ring {units.get('tcc_ring_switch_ns', 0.0):.0f} ns, "
          f"off-CPU source's switch events {units.get('offcpu_source_switch_ns', 0.0):.0f} ns, source + page "
          f"{units.get('defaults_switch_ns', 0.0):.0f} ns, with the stacks event (off) "
          f"{units.get('defaults_stacks_switch_ns', 0.0):.0f} ns; one event (page + ring as the source) "
          f"{units.get('oneevent_switch_ns', 0.0):.0f} ns, with the stacks event (off) "
          f"{units.get('oneevent_stacks_switch_ns', 0.0):.0f} ns ({units.get('switch_note', 'not measured')})")
    print(HEADER)
    lines = []
    for tname, (rows, ns_per_instr, deltas) in results.items():
        off = rows["off"]
        base = off["cpu_ns"]
        for arm, d in deltas.items():
            r = rows[arm]
            instr = lambda row: row["app"] + row["rec"] - row["clock_ir"]  # noqa: E731
            inputs = [
                ("app instructions", off["app"], r["app"], d["app"], "", None, None),
                ("recorder instructions", off["rec"], r["rec"], d["rec"], "", None, None),
                ("clock_gettime instr", off["clock_ir"], r["clock_ir"], d["clock_ir"], "(as reads)", None, None),
                ("instructions, priced", instr(off), instr(r), instr(r) - instr(off),
                 f"{ns_per_instr:.3f} ns/in", d["ns_instr"], None),
                ("after-switch instr", off["switch_ir"], r["switch_ir"], d["switch_native"],
                 f"{d['switch_per_call']:.0f}/read", d["ns_switch"], None),
                ("schedstat instr", off["sched_ir"], r["sched_ir"], d["sched_native"],
                 f"{d['sched_per_call']:.0f}/pread", d["ns_sched"], None),
                # the kernel sources' events a request: under callgrind, natively, and their ratio
                ("source events cg/nat", d["src_cg_events"], d["src_nat_events"],
                 d["src_nat_events"] - d["src_cg_events"], f"x{d['src_ratio']:.3f}", None, None),
                # the defaults' instructions beyond ppw: at valgrind's pace, natively; the ns correct
                ("source instr cg/nat", d["src_cg"], d["src_native"], d["src_native"] - d["src_cg"],
                 "at nat rate", d["ns_src"], None),
                ("clock reads", off["clock"], r["clock"], d["clock"], f"{units['clock_read_ns']:.1f} ns", d["ns_clock"], None),
                ("system calls", off["syscalls"], r["syscalls"], d["syscalls"], f"{units['syscall_ns']:.0f} ns", d["ns_sys"], None),
                ("context switches", off["switches"], r["switches"], d["switches"],
                 f"{units['context_switch_ns']:.0f} ns", d["ns_cs"], None),
                # every switch of a recorded thread costs the kernel more (not only the added ones)
                ("thread CPU ev switches", 0, d["tcc_switches"], d["tcc_switches"],
                 f"{d['tcc_switch_ns']:.0f} ns {d['tcc']}" + (f" x {d['page_share']:.2f}" if d["page_share"] < 1 else ""),
                 d["ns_tcc"], None),
                ("off-CPU src switches", 0, d["tcc_switches"] if d["offcpu"] else 0.0,
                 d["tcc_switches"] if d["offcpu"] else 0.0,
                 offcpu_price_label(d, r), d["ns_offcpu"], None),
                ("events", 0, d["events"], d["events"], "-", None, None),
                ("server CPU ns", base, base + d["ns"], d["ns"], "model", d["ns"], d["share"]),
            ]
            for name, a, b, added, unit, ns, share in inputs:
                lines.append(f"{tname:10} {arm:4} {name:22} {a:10.2f} {b:10.2f} {added:+10.2f} {unit:>12} "
                             f"{'' if ns is None else f'{ns:9.1f}':>9} {'' if share is None else f'{share:8.2f}':>8}")
    print("\n".join(lines))
    print()
    for tname, (rows, ns_per_instr, deltas) in results.items():
        off = rows["off"]
        print(f"{tname}: off {off['cpu_ns'] / 1000:.2f} us CPU per request, {off['user_share'] * 100:.0f} % of it "
              f"user time, over {off['app'] + off['rec']:.0f} user instructions: {ns_per_instr:.3f} ns per "
              f"instruction; the server's background threads (not priced): "
              + ", ".join(f"{arm} {rows[arm]['bg']:.0f}" for arm in rows) + " instructions per request; "
              f"the loop thread's clock-driven work ({', '.join(TIMER_ENTRIES)}, not priced): "
              + ", ".join(f"{arm} {rows[arm]['timer']:.0f}" for arm in rows) + " instructions per request; "
              f"idle work per second under callgrind (subtracted): "
              + ", ".join(f"{arm} {rows[arm]['app_idle_per_s'] / 1e6:.2f} M app + {rows[arm]['rec_idle_per_s'] / 1e6:.2f} M "
                          f"recorder instructions" for arm in rows) + "; "
              # within "app": the zero-code libraries' own functions on the loop thread (the
              # recorder's hooks included: they are in libdial9-preload.so)
              f"the shim's own code on the loop thread (libdial9-preload*.so, its hooks included; priced): "
              + ", ".join(f"{arm} {rows[arm]['shim']:.0f} instructions per request "
                          f"({100.0 * rows[arm]['shim'] * ns_per_instr / max(1.0, off['cpu_ns']):.2f} % of the server's CPU; "
                          f"heap interposers {rows[arm]['heap']:.0f})" for arm in rows))
    print()
    for tname, (rows, _, deltas) in results.items():
        for arm, d in deltas.items():
            print(f"{tname} {ARM_NAMES[arm]}: {d['share']:.2f} % of the server's CPU per request "
                  f"(target {TARGET_SHARE[arm]:.0f} %), instructions {d['instr_pct']:+.1f} %, "
                  f"{d['syscalls']:+.2f} system calls, {d['switches']:+.2f} context switches per request: "
                  f"{verdict(tname, arm, d)}")
            if arm == "on":  # the verdict prices the time-driven sources natively; what callgrind's pace gave
                print(f"{tname} {ARM_NAMES[arm]} at valgrind's pace: {d['cg']['share']:.2f} % of the server's CPU, "
                      f"instructions {d['cg']['instr_pct']:+.1f} % (kernel sources' events "
                      f"{rows[arm]['src_cg_per_s']:.0f}/s, {d['src_cg_events']:.3f} a request under callgrind; "
                      f"{rows[arm].get('src_nat_per_s', 0.0):.0f}/s, {d['src_nat_events']:.3f} a request natively; "
                      f"schedstat reads {rows[arm]['sched']:.3f} a request under callgrind, {d['sched_calls']:.3f} natively)")


def print_calls(results):
    """--syscalls: the added system calls per request by thread and call (arm minus off), so
    each one is traced to its source; rows under 0.01 a request are left out."""
    print()
    print("added system calls per request by thread and call (perf's syscalls:sys_enter_* "
          "tracepoints, natively; arm minus off):")
    for tname, (rows, _, deltas) in results.items():
        off = rows["off"]["calls"]
        for arm in deltas:
            calls = rows[arm]["calls"]
            added = {k: calls.get(k, 0.0) - off.get(k, 0.0) for k in set(calls) | set(off)}
            shown = sorted(((v, k) for k, v in added.items() if abs(v) >= 0.01), reverse=True)
            print(f"calls {tname} {ARM_NAMES[arm]}: " + (", ".join(f"{k[0]} {k[1]} {v:+.3f}" for v, k in shown)
                                                         or "none"))


ROW = re.compile(r"^(\S+)\s+(on|ppw)\s+(.{22})\s+(-?[\d.]+)\s+(-?[\d.]+)\s+([+-][\d.]+)(\s+\S.*?)?\s*$")
PACE = re.compile(r"^(\S+) defaults at valgrind's pace: -?[\d.]+ % of the server's CPU, instructions [+-][\d.]+ % "
                  r"\(kernel sources' events -?[\d.]+/s, -?[\d.]+ a request under callgrind; -?[\d.]+/s, -?[\d.]+ a "
                  r"request natively; schedstat reads -?[\d.]+ a request under callgrind, -?[\d.]+ natively\)$")
ROWS_PER_ARM = 15
VERDICT = re.compile(r"^(\S+) (defaults|polls/parks/wakes): -?[\d.]+ % of the server's CPU per request "
                     r"\(target \d %\), instructions [+-][\d.]+ %, [+-][\d.]+ system calls, [+-][\d.]+ "
                     r"context switches per request: (within target|OVER TARGET: .+)$")


def check_form(text, targets):
    """What is wrong with the printed table (empty: well formed). Numbers are not judged."""
    problems = []
    rows = [ROW.match(l) for l in text.splitlines() if l.split()[:2] and l.split()[1:2] in (["on"], ["ppw"])]
    seen = {}
    for m in rows:
        if not m:
            problems.append("a malformed row")
            continue
        seen.setdefault((m.group(1), m.group(2)), []).append(m.group(3).strip())
    verdicts = [VERDICT.match(l) for l in text.splitlines() if "of the server's CPU per request" in l]
    for t in targets:
        for arm in ("on", "ppw"):
            if len(seen.get((t, arm), [])) != ROWS_PER_ARM:
                problems.append(f"{t} {arm}: {len(seen.get((t, arm), []))} rows, not {ROWS_PER_ARM}")
        if sum(1 for v in verdicts if v and v.group(1) == t) != 2:
            problems.append(f"{t}: not one verdict line per arm")
        if sum(1 for l in text.splitlines() if PACE.match(l) and l.split()[0] == t) != 1:
            problems.append(f"{t}: no well-formed line for the defaults at valgrind's pace")
    if any(v is None for v in verdicts):
        problems.append("a malformed verdict line")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SOURCE, "build"))
    ap.add_argument("--targets", default="uv,memcached,redis,nginx")
    ap.add_argument("--short", action="store_true", help="small counts; check the table's form only")
    ap.add_argument("--small", type=int, default=2000, help="requests of the smaller callgrind run")
    ap.add_argument("--large", type=int, default=20000, help="requests of the larger callgrind run")
    ap.add_argument("--idle", type=float, default=4.0, help="seconds of idle for the idle rates")
    ap.add_argument("--native-small", type=int, default=5000)
    ap.add_argument("--native-large", type=int, default=25000)
    ap.add_argument("--native-warmup", type=int, default=2000)
    ap.add_argument("--think-us", type=int, default=0,
                    help="the client idles this long after each answer in the native windows (default 0: back to back)")
    ap.add_argument("--syscalls", action="store_true",
                    help="also count each system call per thread natively and print the added ones per request")
    ap.add_argument("--clock", default="monotonic", choices=("monotonic", "tsc", "auto"),
                    help="DIAL9_CLOCK of the recorded arms and of the unit costs (default: monotonic)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="set in every run (e.g. DIAL9_THREAD_CPU=syscall for the CPU time's system call)")
    args = ap.parse_args()
    for kv in args.env:
        name, sep, value = kv.partition("=")
        if not sep or not name:
            ap.error(f"--env {kv}: expected NAME=VALUE")
        EXTRA_ENV[name] = value
    # One clock for every run: under valgrind `auto`'s cross-CPU check passes or not by chance
    # (threads run one at a time), so the runs of one arm could read different clocks and their
    # difference would be no request's cost (seen: 1.1 clock_gettime calls a request in one
    # memcached run, 6.5 in the others).
    for arm in ("on", "ppw"):
        ARMS[arm] = dict(ARMS[arm], DIAL9_CLOCK=args.clock)
    if args.short:
        # idle 0.25 s: 18 idle windows (3 targets x 3 arms, callgrind and native) slept 18 s of
        # CI's serial benchmark step; the table's form does not depend on their length
        args.small, args.large, args.idle = 100, 300, 0.25
        args.native_small, args.native_large, args.native_warmup = 200, 600, 100
    args.build = os.path.abspath(args.build)
    args.dial9 = os.path.join(args.build, "dial9")
    for tool, pkg in (("valgrind", "valgrind"), ("perf", "linux-perf")):
        if not shutil.which(tool):
            print(f"SKIP: {tool} is not installed (apt-get install {pkg})")
            return 0
    probe = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP: perf cannot count the raw_syscalls tracepoint here (needs root or "
              "perf_event_paranoid -1 and tracefs): " + probe.stderr.strip()[-200:])
        return 0
    if not os.access(os.path.join(args.build, "bench", "d9_bench"), os.X_OK):
        print(f"SKIP: {args.build}/bench/d9_bench is not built")
        return 0
    classes = {"uv": UvTarget, "memcached": MemcachedTarget}
    classes["redis"] = RedisTarget
    classes["nginx"] = NginxTarget
    targets = []
    for t in args.targets.split(","):
        target = classes[t](args)
        why = target.missing()
        if why:
            print(f"counted: skipping {target.name}: {why}", file=sys.stderr)
        else:
            targets.append(target)
    if not targets:
        print("SKIP: no target can run here")
        return 0
    units = unit_costs(args)
    units.update(switch_unit_costs(args))
    work = tempfile.mkdtemp(prefix="d9-counted.")
    os.chmod(work, 0o1777)  # memcached, once nobody, writes its callgrind files and traces here
    results = {}
    try:
        for target in targets:
            rows = {arm: measure(args, target, arm, work) for arm in ARMS}
            ns_per_instr, deltas = model(rows, units)
            results[target.name] = (rows, ns_per_instr, deltas)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    import io
    buf = io.StringIO()
    real, sys.stdout = sys.stdout, buf
    try:
        print_table(results, units)
        if args.syscalls:
            print_calls(results)
    finally:
        sys.stdout = real
    print(buf.getvalue(), end="")
    if args.short:
        problems = check_form(buf.getvalue(), [t.name for t in targets])
        for p in problems:
            print("counted --short: " + p, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
