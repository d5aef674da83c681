/*
 * Where a poll's time went, in the viewer: the definition of the C model (src/model/attribution.h,
 * src/model/offcpu_cause.c; docs/analyze.md "Where the poll time went"), from the decoder's
 * switch records, context-switch samples, CoverageEvents and drops. The node test
 * viewer/test/attribution.test.mjs holds it equal to `dial9 analyze --json` on the shared vectors.
 *
 *   elapsed = on_cpu + lock + io + sleep + fault + blocked_other + runnable + unknown  (exact ns)
 *
 *   off-CPU intervals  a thread's SchedSwitchEvent switch-out .. next switch-in, on its worker
 *                      (the switch-in's: recordWorkers; a sample without one its thread's:
 *                      the decoder's cpuSamples.worker);
 *                      a poll counts those that start inside it, clipped to it
 *   cause              preempted -> runnable; else the context-switch sample (CpuSampleEvent
 *                      source 1) of its worker within 1 ms either side of the switch-out (and
 *                      taken before the switch-in: a sample after its interval had ended is
 *                      refused; the first sample wins; src/model/switch_stack_match.h) decides
 *                      by its frames' names:
 *                      lock, then sleep, then page fault, then system call; no sample or no
 *                      rule matched -> blocked_other
 *   unknown (gaps)     all of a poll when the trace has no switch records (source.off_cpu not
 *                      active, or unstated and no SchedSwitchEvent); the periods the governor
 *                      recorded off_cpu `sampled` or `paused` (modes other than full and
 *                      no_stacks); from a poll's start to the last drop inside it concerning its
 *                      worker (its worker_id, or the whole process: worker 255 and tid 0); all of
 *                      a poll whose intervals overlap (a broken trace). An interval's part inside
 *                      a gap is unknown, not its cause.
 *   CPU time (a whole  the rule of the C model (d9m_attr_poll_cpu): an exact PollCpuEvent gives
 *   poll's, with gaps) its CPU time; no PollCpuEvent at all while the metadata states poll_cpu
 *                      "on: polls over N us" and the poll is over N us: its CPU time is its
 *                      elapsed time (the recorder writes one for every such poll with a switch);
 *                      "not exact": none. With a CPU time, the off-CPU time the covered
 *                      intervals do not account for is off_cpu_uncaptured (at most the gaps), the
 *                      rest of the gaps on_cpu, nothing unknown. A span's piece of a poll keeps
 *                      its gaps unknown (as src/model/spans.c).
 *
 * Computed per poll on demand (a poll's intervals found by binary search), so a selection costs
 * nothing on a large trace; the intervals and their causes are built once per trace.
 */
(function (D9) {
  'use strict';

  /* off_cpu_uncaptured: off-CPU for certain by a long poll's CPU time (PollCpuEvent), where switch
   * records do not cover it */
  const PARTS = ['on_cpu', 'lock', 'io', 'sleep', 'fault', 'blocked_other', 'runnable', 'unknown', 'off_cpu_uncaptured'];
  const ON_CPU = 0;
  const LOCK = 1;
  const IO = 2;
  const SLEEP = 3;
  const FAULT = 4;
  const BLOCKED_OTHER = 5;
  const RUNNABLE = 6;
  const UNKNOWN = 7;
  const OFF_CPU_UNCAPTURED = 8;
  const POLL_CPU_EXACT = 1; // trace.polls.cpuEvent: 0 no PollCpuEvent, 1 exact, 2 not exact
  // A context-switch sample and its switch-out come from two perf events, either may carry the
  // earlier timestamp (the kernel copies the sample's stack before it stamps the switch record:
  // 2-63 us apart on a loaded guest): src/model/attribution.h's D9M_SWITCH_STACK_MATCH_NS.
  const MATCH_NS = 1000000;
  const WAITING = 8; // samples waiting for a switch-out: D9M_SWITCH_WAITING
  const MAX_GAPS = 8; // as the C model: more gaps in one poll are merged into their hull
  const WORKER_NONE = 255;

  /* ---- the cause of an off-CPU interval, from the names of its stack's frames ---- */

  /* The name a frame is compared by: leading underscores, glibc's "GI_" and "libc_" prefixes
   * and compiler clone suffixes (".isra.0") off, so __GI___libc_read, __read and read are one. */
  function baseName(symbol) {
    let s = symbol;
    for (;;) {
      s = s.replace(/^_+/, '');
      if (s.startsWith('GI_')) s = s.slice(3);
      else if (s.startsWith('libc_')) s = s.slice(5);
      else break;
    }
    const dot = s.indexOf('.');
    return (dot >= 0 ? s.slice(0, dot) : s).slice(0, 127);
  }

  const LOCK_EXACT = new Set(['pthread_mutex_lock', 'pthread_mutex_timedlock', 'pthread_mutex_clocklock',
    'pthread_mutex_lock_full', 'pthread_mutex_cond_lock', 'lll_lock_wait', 'lll_lock_wait_private',
    'pthread_rwlock_rdlock', 'pthread_rwlock_wrlock', 'pthread_rwlock_timedrdlock', 'pthread_rwlock_timedwrlock',
    'pthread_rwlock_clockrdlock', 'pthread_rwlock_clockwrlock', 'mtx_lock', 'mtx_timedlock', 'flockfile', 'IO_flockfile']);
  const LOCK_PREFIXES = ['pthread_rwlock_', 'pthread_mutex_lock', 'lll_lock'];
  const SLEEP_EXACT = new Set(['nanosleep', 'clock_nanosleep', 'usleep', 'sleep', 'thrd_sleep', 'hrtimer_nanosleep',
    'do_nanosleep', 'common_nsleep']);
  const FAULT_EXACT = new Set(['exc_page_fault', 'asm_exc_page_fault', 'do_page_fault', 'do_user_addr_fault',
    'handle_mm_fault', 'handle_page_fault', 'do_translation_fault', 'do_mem_abort', 'filemap_fault', 'do_fault',
    'do_read_fault', 'do_swap_page']);
  const SYSCALL_EXACT = new Set(['do_syscall_64', 'do_syscall_x64', 'entry_SYSCALL_64', 'entry_SYSCALL_64_after_hwframe',
    'do_fast_syscall_32', 'el0_svc', 'do_el0_svc', 'invoke_syscall',
    // the C library's wrappers of calls that block, for stacks without kernel frames
    'read', 'write', 'pread', 'pread64', 'pwrite', 'pwrite64', 'readv', 'writev', 'preadv', 'pwritev', 'recv',
    'recvfrom', 'recvmsg', 'recvmmsg', 'send', 'sendto', 'sendmsg', 'sendmmsg', 'accept', 'accept4', 'connect',
    'open', 'open64', 'openat', 'openat64', 'close', 'fsync', 'fdatasync', 'sync_file_range', 'poll', 'ppoll',
    'select', 'pselect', 'epoll_wait', 'epoll_pwait', 'epoll_pwait2', 'waitpid', 'wait4', 'waitid', 'futex',
    'syscall', 'ioctl', 'sendfile', 'splice', 'getrandom', 'flock', 'fcntl', 'fcntl64']);
  const SYSCALL_PREFIXES = ['x64_sys_', 'se_sys_', 'do_sys_', 'ia32_sys_', 'x32_sys_', 'arm64_sys_', 'ksys_'];

  const hasPrefix = (s, list) => list.some((p) => s.startsWith(p));

  function isLockFrame(symbol) {
    const b = baseName(symbol);
    return LOCK_EXACT.has(b) || hasPrefix(b, LOCK_PREFIXES);
  }

  /* The part of an off-CPU interval: `names` are its stack's frame names (null: no symbol). */
  function causeOf(preempted, names) {
    if (preempted) return RUNNABLE;
    let sleep = false;
    let fault = false;
    let io = false;
    for (const n of names) {
      if (!n) continue;
      const b = baseName(n);
      if (LOCK_EXACT.has(b) || hasPrefix(b, LOCK_PREFIXES)) return LOCK;
      sleep = sleep || SLEEP_EXACT.has(b) || b.includes('sys_nanosleep') || b.includes('sys_clock_nanosleep');
      fault = fault || FAULT_EXACT.has(b);
      io = io || SYSCALL_EXACT.has(b) || hasPrefix(b, SYSCALL_PREFIXES);
    }
    if (sleep) return SLEEP;
    if (fault) return FAULT;
    if (io) return IO;
    return BLOCKED_OTHER;
  }

  /* ---- the trace's coverage of switch records ---- */

  /* The metadata entry poll_cpu: "on: polls over N us ..." (N > 0) -> N in ns; else 0 (not on). */
  function pollCpuMinNs(value) {
    const m = /^on: polls over ([0-9]{1,9})/.exec(String(value));
    return m ? Number(m[1]) * 1000 : 0;
  }

  function coverage(trace) {
    let stated = ''; // '', 'active' or 'inactive': the last metadata that says
    let pollCpuMin = 0; // poll_cpu stated on: its threshold in ns (the last metadata that says)
    for (const m of trace.metadata || []) {
      for (const [k, v] of m.entries) {
        if (k === 'source.off_cpu') stated = String(v).startsWith('active') ? 'active' : 'inactive';
        if (k === 'poll_cpu') pollCpuMin = pollCpuMinNs(v);
      }
    }
    const switchSeen = !!(trace.switches && trace.switches.count);
    const any = stated === 'active' || (stated === '' && switchSeen);
    const changes = (trace.coverage || []).filter((c) => c.source === 'off_cpu')
      .map((c) => ({ ts: c.ts, covered: c.mode === 'full' || c.mode === 'no_stacks' }))
      .sort((a, b) => a.ts - b.ts); // stable: records of one time keep their order
    const drops = [];
    const D = trace.drops;
    for (let i = 0; D && i < D.count; i++) {
      const worker = Number.isFinite(D.worker[i]) ? D.worker[i] : WORKER_NONE;
      const tid = Number.isFinite(D.tid[i]) ? D.tid[i] : 0;
      if (worker === WORKER_NONE && tid !== 0) continue; // a thread that is no worker
      drops.push({ ts: D.ts[i], worker: worker === WORKER_NONE ? -1 : worker }); // -1: every worker
    }
    drops.sort((a, b) => a.ts - b.ts);
    return { any, stated, switchSeen, changes, drops, pollCpuOn: pollCpuMin > 0, pollCpuMinNs: pollCpuMin };
  }

  /* Add [from, to) (clipped to the poll) to its sorted disjoint gaps, merging what it touches. */
  function addGap(p, from, to) {
    if (from < p.start) from = p.start;
    if (to > p.end) to = p.end;
    if (to <= from) return;
    const out = [];
    let at = -1; // where the merged gap goes, among those kept in order
    for (const g of p.gaps) {
      if (g.to < from) out.push(g);
      else if (g.from > to) {
        if (at < 0) at = out.push(null) - 1;
        out.push(g);
      } else {
        if (g.from < from) from = g.from;
        if (g.to > to) to = g.to;
      }
    }
    if (at < 0) at = out.push(null) - 1;
    out[at] = { from, to };
    // too many: their hull, more unknown rather than a lost gap
    p.gaps = out.length > MAX_GAPS ? [{ from: out[0].from, to: out[out.length - 1].to }] : out;
  }

  function firstAfter(arr, t) { // the first index whose ts > t
    let lo = 0;
    let hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (arr[mid].ts <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function addCoverageGaps(cov, worker, p) {
    if (!cov.any) return addGap(p, p.start, p.end);
    let i = firstAfter(cov.changes, p.start);
    let covered = i === 0 || cov.changes[i - 1].covered; // covered before the governor's first record
    let since = p.start;
    for (; i < cov.changes.length && cov.changes[i].ts < p.end; i++) {
      if (!covered) addGap(p, since, cov.changes[i].ts);
      covered = cov.changes[i].covered;
      since = cov.changes[i].ts;
    }
    if (!covered) addGap(p, since, p.end);
    // drops inside the poll (or at its end): events are missing before them
    let upto = p.start;
    for (let k = lowerTs(cov.drops, p.start); k < cov.drops.length && cov.drops[k].ts <= p.end; k++) {
      const d = cov.drops[k];
      if (d.worker === worker || d.worker === -1) upto = d.ts;
    }
    if (upto > p.start) addGap(p, p.start, upto);
  }

  function lowerTs(arr, t) { // the first index whose ts >= t
    let lo = 0;
    let hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (arr[mid].ts < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  function coveredOf(p, from, to) {
    if (from < p.start) from = p.start;
    if (to > p.end) to = p.end;
    if (to <= from) return 0;
    let d = to - from;
    for (const g of p.gaps) {
      const a = Math.max(g.from, from);
      const b = Math.min(g.to, to);
      if (b > a) d -= b - a;
    }
    return d;
  }

  /* ---- off-CPU intervals per worker, with their causes ---- */

  function framesNames(trace, lookup, stackId) {
    const words = trace.stacks[stackId];
    const names = [];
    if (!words) return names;
    for (let i = 0; i + 1 < words.length; i += 2) {
      const hit = lookup ? lookup(words[i], words[i + 1]) : null;
      if (hit) for (const e of hit) names.push(e.name || null);
    }
    return names;
  }

  /* Whose worker each switch record is: the C model's rule (src/model/thread_worker.h). A
   * thread's worker is the latest worker id its records named in file order (switch records,
   * parks, unparks and its WorkerRegisteredEvent); a record without one is its thread's
   * worker's; an off-CPU interval is the switch-in's worker (it overrides the switch-out's).
   * A CPU sample's worker, timer or context switch, the decoder gives by the same rule
   * (cpuSamples.worker). {sw: per switch record}. */
  function recordWorkers(trace) {
    const W = trace.switches;
    const N = trace.threadWorkers;
    const nw = W ? W.count : 0;
    const nn = N ? N.count : 0;
    const named = (w) => Number.isFinite(w) && w !== WORKER_NONE;
    const sw = new Float64Array(nw).fill(WORKER_NONE);
    const of = new Map(); // tid -> its worker so far
    const seqOf = (i) => (W.seq ? W.seq[i] : i);
    let j = 0;
    for (let i = 0; i <= nw; i++) { // the two lists merged by their place in the data
      const at = i < nw ? seqOf(i) : Infinity;
      for (; j < nn && N.seq[j] < at; j++) if (named(N.worker[j])) of.set(N.tid[j], N.worker[j]);
      if (i === nw) break;
      if (named(W.worker[i])) {
        sw[i] = W.worker[i];
        of.set(W.tid[i], W.worker[i]);
      } else {
        const w = of.get(W.tid[i]);
        if (w !== undefined) sw[i] = w;
      }
    }
    return { sw };
  }

  /* worker id -> {out: Float64Array, in: Float64Array, cause: Uint8Array}, sorted by out.
   * Typed columns and sorts only where the records are out of order: a million switch records
   * take well under a second at the first selection. */
  function intervals(trace, lookup) {
    const W = trace.switches;
    const n = W ? W.count : 0;
    // each thread's records in time order (file order on ties): usually they are already
    const byTid = new Map();
    for (let i = 0; i < n; i++) {
      let l = byTid.get(W.tid[i]);
      if (!l) byTid.set(W.tid[i], (l = []));
      l.push(i);
    }
    const rw = recordWorkers(trace);
    const lists = new Map(); // worker -> {out, in, pre}: plain arrays while pairing
    for (const l of byTid.values()) {
      let sorted = true;
      for (let k = 1; k < l.length && sorted; k++) sorted = W.ts[l[k - 1]] <= W.ts[l[k]];
      if (!sorted) l.sort((a, b) => W.ts[a] - W.ts[b] || a - b);
      for (let k = 0; k < l.length; k++) {
        const a = l[k];
        // a switch-out and the next record of its thread, a switch-in: one off-CPU interval
        if (k + 1 >= l.length || !W.out[a] || W.out[l[k + 1]]) continue;
        const b = l[++k];
        const w = rw.sw[b] !== WORKER_NONE ? rw.sw[b] : rw.sw[a]; // the switch-in's overrides
        if (w === WORKER_NONE) continue;
        let o = lists.get(w);
        if (!o) lists.set(w, (o = { out: [], in: [], pre: [] }));
        o.out.push(W.ts[a]);
        o.in.push(W.ts[b]);
        o.pre.push(W.preempted[a]);
      }
    }
    const byWorker = new Map();
    for (const [w, o] of lists) {
      const m = o.out.length;
      let idx = null;
      for (let j = 1; j < m && !idx; j++) {
        if (o.out[j] < o.out[j - 1]) idx = Array.from({ length: m }, (_, x) => x).sort((x, y) => o.out[x] - o.out[y] || x - y);
      }
      const r = { out: new Float64Array(m), in: new Float64Array(m), pre: new Uint8Array(m), sample: new Int32Array(m).fill(-1), cause: new Uint8Array(m) };
      for (let j = 0; j < m; j++) {
        const x = idx ? idx[j] : j;
        r.out[j] = o.out[x];
        r.in[j] = o.in[x];
        r.pre[j] = o.pre[x];
      }
      byWorker.set(w, r);
    }
    // each context-switch sample to an interval of its worker by the C model's rule
    // (src/model/switch_stack_match.h): per worker, intervals and samples in time order (a
    // sample before a switch-out of the same time); a sample taken while the latest interval
    // has none, at most MATCH_NS after its switch-out and before its switch-in, is its; any other
    // waits for the next switch-out at most MATCH_NS after it (the oldest waiting first, at most
    // WAITING of them; older than MATCH_NS before a switch-out: dropped)
    const S = trace.cpuSamples;
    const byW = new Map(); // worker -> its samples, by time
    for (let i = 0; i < S.count; i++) {
      if (S.source[i] === 0) continue;
      const w = S.worker[i]; // without a worker id: its thread's worker (the decoder's)
      if (!Number.isFinite(w) || w === WORKER_NONE || !byWorker.has(w)) continue;
      let l = byW.get(w);
      if (!l) byW.set(w, (l = []));
      l.push(i);
    }
    for (const [w, l] of byW) {
      l.sort((a, b) => S.ts[a] - S.ts[b] || a - b);
      const L = byWorker.get(w);
      const wait = []; // sample indexes, oldest first
      let open = false; // the latest interval (j - 1) has no sample yet
      let j = 0;
      const interval = () => {
        while (wait.length && S.ts[wait[0]] + MATCH_NS < L.out[j]) wait.shift();
        open = wait.length === 0;
        if (!open) L.sample[j] = wait.shift();
        j++;
      };
      for (const i of l) {
        const ts = S.ts[i];
        while (j < L.out.length && L.out[j] < ts) interval();
        if (open && ts >= L.out[j - 1] && ts - L.out[j - 1] <= MATCH_NS && ts < L.in[j - 1]) {
          L.sample[j - 1] = i;
          open = false;
          continue;
        }
        if (wait.length === WAITING) wait.shift();
        wait.push(i);
      }
      while (j < L.out.length) interval();
    }
    const causeByStack = new Map();
    for (const L of byWorker.values()) {
      for (let j = 0; j < L.out.length; j++) {
        let c = BLOCKED_OTHER;
        if (L.pre[j]) c = RUNNABLE;
        else if (L.sample[j] >= 0) {
          const st = S.stack[L.sample[j]];
          c = causeByStack.get(st);
          if (c === undefined) causeByStack.set(st, (c = causeOf(false, framesNames(trace, lookup, st))));
        }
        L.cause[j] = c;
      }
    }
    return byWorker;
  }

  /*
   * attributor(trace, lookup) -> {parts(i, from?, to?), sum(indices)}
   *   lookup(lo, hi): the symbol entries [{name}] of an address (viewer/src/model.js's symbolizer)
   *   parts(i): Float64Array(PARTS.length) of poll i (trace.polls index), in PARTS order, adding up to its
   *   elapsed time; with [from, to): only the part of the poll inside that window (a span's).
   */
  function attributor(trace, lookup) {
    const cov = coverage(trace);
    let iv = null;
    const P = trace.polls;
    function parts(i, from, to) {
      const p = { start: P.start[i], end: Math.max(P.start[i], P.end[i]), gaps: [] };
      const lo = from === undefined ? p.start : Math.max(p.start, from);
      const hi = to === undefined ? p.end : Math.min(p.end, to);
      const res = new Float64Array(PARTS.length);
      if (hi <= lo) return res;
      addCoverageGaps(cov, P.worker[i], p);
      const off = new Float64Array(PARTS.length);
      let offTotal = 0;
      let lastEnd = -Infinity;
      if (cov.any) {
        if (!iv) iv = intervals(trace, lookup);
        const L = iv.get(P.worker[i]);
        if (L) {
          let a = 0;
          let b = L.out.length;
          while (a < b) { // the first interval that starts at or after the poll
            const m = (a + b) >>> 1;
            if (L.out[m] < p.start) a = m + 1;
            else b = m;
          }
          for (let k = a; k < L.out.length && L.out[k] < p.end; k++) {
            if (L.in[k] <= L.out[k]) continue;
            if (L.out[k] < lastEnd) { // one thread is off-CPU once at a time: a broken trace
              res[UNKNOWN] = hi - lo;
              return res;
            }
            lastEnd = L.in[k];
            const d = coveredOf(p, Math.max(L.out[k], lo), Math.min(L.in[k], hi));
            off[L.cause[k]] += d;
            offTotal += d;
          }
        }
      }
      const gaps = hi - lo - coveredOf(p, lo, hi);
      for (let k = LOCK; k <= RUNNABLE; k++) res[k] = off[k];
      const cpu = from === undefined && to === undefined ? cpuTime(i, hi - lo, gaps) : -1;
      if (cpu >= 0 && gaps > 0) { // the CPU time resolves the gaps: nothing unknown
        const elapsed = hi - lo;
        const offCpu = elapsed - Math.min(cpu, elapsed);
        const uncaptured = Math.min(offCpu > offTotal ? offCpu - offTotal : 0, gaps);
        res[OFF_CPU_UNCAPTURED] = uncaptured;
        res[ON_CPU] = elapsed - offTotal - uncaptured;
        return res;
      }
      res[UNKNOWN] = gaps;
      res[ON_CPU] = hi - lo - gaps - offTotal;
      return res;
    }
    /* Poll i's CPU time by the C model's rule (d9m_attr_poll_cpu), or -1 when it has none. */
    function cpuTime(i, elapsed, gaps) {
      const said = P.cpuEvent ? P.cpuEvent[i] : 0;
      if (said === POLL_CPU_EXACT) return P.cpuNs[i];
      if (said === 0 && cov.pollCpuOn && gaps > 0 && elapsed > cov.pollCpuMinNs) return elapsed; // no switch in it
      return -1;
    }
    function sum(indices) {
      const total = new Float64Array(PARTS.length);
      for (const i of indices) {
        const r = parts(i);
        for (let k = 0; k < PARTS.length; k++) total[k] += r[k];
      }
      return total;
    }
    return { parts, sum, coverage: cov };
  }

  /* Colours and one-line meanings of the parts, for the bar and its legend. */
  const STYLE = {
    on_cpu: ['#58c4a8', 'the thread ran'],
    lock: ['#ff5d73', 'blocked waiting for a lock'],
    io: ['#6fa8ff', 'blocked in I/O or another system call'],
    sleep: ['#c59bff', 'blocked in a sleep'],
    fault: ['#ffd166', 'blocked in a page fault'],
    blocked_other: ['#9aa5b8', 'blocked, cause not named by its stack (or no stack)'],
    runnable: ['#ff8a3d', 'preempted: runnable, waiting for a CPU'],
    unknown: ['#4a5468', 'not covered by the trace (no switch records, governor, drops)'],
    off_cpu_uncaptured: ['#7b6f99', 'off CPU for certain (the poll\'s exact CPU time), cause not captured'],
  };

  /* The model's attributor, built at the first selection that needs it. */
  function ofModel(model) {
    if (!model.attribution) model.attribution = attributor(model.trace, model.symbols ? model.symbols.lookup : null);
    return model.attribution;
  }

  /* One bar of the parts (coloured, each part's value in its tooltip) and its legend; `id` names
   * the bar (id) and the legend (id + '-parts'); data-part / data-ns carry the exact values. */
  function barHtml(id, parts, total) {
    const F = D9.format;
    const pct = (v) => (total > 0 ? (100 * v / total).toFixed(1) + ' %' : '');
    const shown = PARTS.map((name, k) => [name, parts[k]]);
    const bar = '<div class="attr-bar" id="' + id + '">' + shown.filter((p) => p[1] > 0).map(([name, v]) =>
      '<span data-part="' + name + '" data-ns="' + v + '" title="' + name + ' ' + F.duration(v) + ' (' + pct(v) + ')" style="background:' +
      STYLE[name][0] + ';flex:' + v + ' 0 0"></span>').join('') + '</div>';
    const legend = '<ul class="attr-parts" id="' + id + '-parts">' + shown.filter((p) => p[1] > 0).map(([name, v]) =>
      '<li data-part="' + name + '" data-ns="' + v + '"><span class="dot" style="background:' + STYLE[name][0] + '"></span>' + name +
      ' <b>' + F.duration(v) + '</b> <span class="muted">' + pct(v) + ' · ' + STYLE[name][1] + '</span></li>').join('') + '</ul>';
    return bar + legend;
  }

  /* The selected poll's section: its parts as one bar, and why a part is unknown. */
  function pollHtml(model, i) {
    const at = ofModel(model);
    const P = model.trace.polls;
    const parts = at.parts(i);
    const d = P.end[i] - P.start[i];
    let note = '';
    if (!at.coverage.any && parts[UNKNOWN] > 0) note = 'This trace has no switch records (source.off_cpu not active), so where the time went is unknown.';
    else if (parts[UNKNOWN] > 0) note = 'Unknown: the cost governor recorded context switches only partly here, or events of this worker were dropped.';
    else if (parts[OFF_CPU_UNCAPTURED] > 0) note = 'Off CPU for certain by the poll\'s exact CPU time, where context switches were not recorded: its cause was not captured.';
    return '<div class="section-title">Where its time went</div>' + barHtml('detail-attr', parts, d) +
      (note ? '<p class="muted small" id="detail-attr-note">' + note + '</p>' : '');
  }

  /* A span's "poll" part split by cause, as src/model/spans.c splits it: the polls of the task
   * it began in (else the one it ended in) clipped to the span's counted part [known, end), each
   * by its own attribution, then the other task's polls where the first is not polled (their
   * union is the poll part). Null when the sum is not the span's poll part (not expected: a
   * safety net, so that a bar is never wrong). */
  function spanPollParts(model, s) {
    if (!(s.poll > 0) || !D9.model) return null;
    const at = ofModel(model);
    const P = model.trace.polls;
    const lo = s.known !== undefined ? s.known : s.begin;
    const hi = Math.max(s.end, s.begin);
    const first = s.beginTask || s.endTask;
    const second = s.endTask && s.endTask !== first ? s.endTask : 0;
    const pieces = (task) => { // [poll, from, to) of the task's polls inside [lo, hi), by start
      const out = [];
      if (!task) return out;
      for (const i of D9.model.pollsOfTask(model, task)) {
        const a = Math.max(P.start[i], lo);
        const b = Math.min(Math.max(P.end[i], P.start[i]), hi);
        if (b > a) out.push([i, a, b]);
      }
      return out;
    };
    const total = new Float64Array(PARTS.length);
    const add = (i, a, b) => {
      if (b <= a) return;
      const r = at.parts(i, a, b);
      for (let k = 0; k < PARTS.length; k++) total[k] += r[k];
    };
    const A = pieces(first);
    for (const [i, a, b] of A) add(i, a, b);
    let j = 0;
    for (const [i, a, b] of pieces(second)) { // minus the first task's polls
      let cur = a;
      while (j < A.length && A[j][2] <= cur) j++;
      for (let k = j; cur < b;) {
        if (k < A.length && A[k][1] < b) {
          if (A[k][1] > cur) add(i, cur, A[k][1]);
          if (A[k][2] > cur) cur = A[k][2];
          k++;
        } else {
          add(i, cur, b);
          cur = b;
        }
      }
    }
    let sum = 0;
    for (let k = 0; k < PARTS.length; k++) sum += total[k];
    return sum === s.poll ? total : null;
  }

  function spanPollHtml(model, s) {
    const parts = spanPollParts(model, s);
    return parts ? '<div class="section-title">Its polls: where their time went</div>' + barHtml('detail-span-attr', parts, s.poll) : '';
  }

  D9.attribution = { PARTS, STYLE, attributor, causeOf, isLockFrame, baseName, coverage, ofModel, barHtml, pollHtml, spanPollParts, spanPollHtml };
})(typeof window !== 'undefined' ? (window.D9 = window.D9 || {}) : (globalThis.D9 = globalThis.D9 || {}));
