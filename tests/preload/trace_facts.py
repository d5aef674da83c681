"""What a dial9 trace says, read with `dial9 dump --jsonl`, for the preload and server tests.

    t = Trace(dial9_binary, run_dir)
    t.meta["source.libevent"], t.workers_of("libevent"), t.polls, t.parks, t.wakes ...
    check(condition, message)   # prints FAIL and exits 1 when false
"""
import json
import subprocess
import sys
from collections import Counter, defaultdict


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        sys.exit(1)
    print("ok: " + msg)


class Trace:
    def __init__(self, dial9, path):
        out = subprocess.run([dial9, "dump", "--jsonl", path], capture_output=True, text=True)
        if out.returncode != 0:
            print("FAIL: dial9 dump %s exited %d: %s" % (path, out.returncode, out.stderr.strip()))
            sys.exit(1)
        self.events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        self.counts = Counter(e["event"] for e in self.events)
        self.meta = {}
        for e in self.events:
            if e["event"] == "SegmentMetadataEvent":
                self.meta = e["fields"]["entries"]
                break
        # worker id -> (runtime, index, tid, thread name)
        self.workers = {}
        for e in self.of("WorkerRegisteredEvent"):
            f = e["fields"]
            self.workers[f["worker_id"]] = (f["runtime"], f["index"], f["tid"], f.get("thread_name", ""))
        # a worker that began before the recorder was running has no WorkerRegisteredEvent: its
        # runtime is in the metadata (runtime.<name> = ids) and its thread in its parks
        park_tid = {}
        for e in self.events:
            if e["event"] in ("WorkerParkEvent", "WorkerUnparkEvent"):
                park_tid.setdefault(e["fields"]["worker_id"], e["fields"]["tid"])
        for key, ids in self.meta.items():
            if not key.startswith("runtime."):
                continue
            for w in (int(x) for x in ids.split(",") if x.strip().isdigit()):
                if w not in self.workers:
                    self.workers[w] = (key[len("runtime."):], -1, park_tid.get(w, 0), "")
        self.polls = [e["fields"] | {"ts": e["ts"]} for e in self.of("PollStartEvent")]
        self.parks = [e["fields"] | {"ts": e["ts"]} for e in self.of("WorkerParkEvent")]
        self.unparks = [e["fields"] | {"ts": e["ts"]} for e in self.of("WorkerUnparkEvent")]
        self.wakes = [e["fields"] | {"ts": e["ts"]} for e in self.of("WakeEventEvent")]
        self.spawns = [e["fields"] | {"ts": e["ts"]} for e in self.of("TaskSpawnEvent")]

    def of(self, name):
        return [e for e in self.events if e["event"] == name]

    def workers_of(self, runtime):
        return sorted(w for w, (rt, _, _, _) in self.workers.items() if rt == runtime)

    def workers_blocking_in(self, poller):
        """Workers the shim took at their poller ("epoll", "poll", "select"): runtime
        `poller`, or, for a home-grown loop, the loop's name whose LoopEvent names `poller`."""
        loops = {e["fields"]["worker_id"] for e in self.of("LoopEvent")
                 if e["fields"]["poller"] == poller}
        return sorted(w for w, (rt, _, _, _) in self.workers.items()
                      if rt == poller or w in loops)

    def polls_by_worker(self):
        by = defaultdict(list)
        for p in self.polls:
            by[p["worker_id"]].append(p)
        return by

    def unparks_by_worker(self):
        by = defaultdict(list)
        for u in self.unparks:
            by[u["worker_id"]].append(u)
        return by

    def summary(self):
        return "%d events: %s; workers %s" % (
            len(self.events),
            ", ".join("%s %d" % kv for kv in sorted(self.counts.items())),
            ", ".join("%d=%s/%d" % (w, rt, ix) for w, (rt, ix, _, _) in sorted(self.workers.items())),
        )
