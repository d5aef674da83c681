/*
 * The view model: what the timeline and the panels need on top of the decoded columns —
 * lanes grouped by runtime, level-of-detail summaries, points of interest, symbols and the
 * look-ups behind clicks (poll at a point, samples in a poll, who woke a task).
 */
(function (D9) {
  'use strict';

  const CHUNK_SMALL = 64;
  const CHUNK_LARGE = 4096;
  const POI_COUNT = 200;

  /* First index in [lo, hi) whose arr value is >= x (arr ascending there). */
  function lowerBound(arr, lo, hi, x) {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (arr[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  function upperBound(arr, lo, hi, x) {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (arr[mid] <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /*
   * Where the cost governor recorded a source partially (CoverageEvent, docs/schemas.md):
   * per source, the time in each mode and the partial periods {mode, oneIn, from, to}
   * (relative ns; the last mode lasts to the end of the trace). Segment restatements of the
   * same mode continue a period.
   */
  function coverageOf(trace) {
    const bySource = new Map();
    const recs = (trace.coverage || []).slice().sort((a, b) => a.ts - b.ts);
    for (const r of recs) {
      if (!bySource.has(r.source)) bySource.set(r.source, []);
      bySource.get(r.source).push(r);
    }
    const out = [];
    for (const [source, list] of bySource) {
      const c = { source, partial: false, partialNs: 0, coveredNs: 0, byMode: {}, periods: [] };
      for (let i = 0; i < list.length; i++) {
        const from = Math.max(list[i].ts, trace.timeStart);
        const to = i + 1 < list.length ? list[i + 1].ts : trace.timeEnd;
        if (to <= from) continue;
        const mode = list[i].mode;
        c.coveredNs += to - from;
        c.byMode[mode] = (c.byMode[mode] || 0) + (to - from);
        if (mode === 'full') continue;
        c.partial = true;
        c.partialNs += to - from;
        const last = c.periods[c.periods.length - 1];
        if (last && last.to === from && last.mode === mode && last.oneIn === list[i].oneIn) last.to = to;
        else c.periods.push({ mode, oneIn: list[i].oneIn, from, to });
      }
      out.push(c);
    }
    return out;
  }

  /* Ranges [from, to) of a table sorted by worker: worker -> {from, to}. */
  function rangesByWorker(tab) {
    const out = new Map();
    const n = tab.count;
    let i = 0;
    while (i < n) {
      const w = tab.worker[i];
      let j = i + 1;
      while (j < n && tab.worker[j] === w) j++;
      out.set(w, { from: i, to: j });
      i = j;
    }
    return out;
  }

  /*
   * Level-of-detail summaries of a lane's spans: for each chunk of 64 and of 4096 consecutive
   * spans, its extent, its longest span and its busy time, so that a zoomed-out view draws a
   * chunk narrower than a pixel as one unit instead of visiting every span.
   */
  function chunkSummaries(start, end, from, to, size, weight) {
    const n = Math.ceil((to - from) / size);
    const s = { size, first: new Float64Array(n), last: new Float64Array(n), max: new Float64Array(n), busy: new Float64Array(n) };
    for (let c = 0; c < n; c++) {
      const a = from + c * size;
      const b = Math.min(to, a + size);
      let max = 0;
      let busy = 0;
      for (let i = a; i < b; i++) {
        const d = end[i] - start[i];
        const w = weight ? weight[i] : d; // what "max" tells: the longest span, or the largest weight
        if (w > max) max = w;
        busy += d;
      }
      s.first[c] = start[a];
      s.last[c] = end[b - 1];
      s.max[c] = max;
      s.busy[c] = busy;
    }
    return s;
  }

  function spanLane(tab, range, key, weight) {
    const r = range.get(key) || { from: 0, to: 0 };
    return {
      from: r.from,
      to: r.to,
      small: chunkSummaries(tab.start, tab.end, r.from, r.to, CHUNK_SMALL, weight),
      large: chunkSummaries(tab.start, tab.end, r.from, r.to, CHUNK_LARGE, weight),
    };
  }

  /* The k largest values of score(i) for i in [0, n), largest first (a min-heap of size k). */
  function topK(n, k, score) {
    const heapIdx = new Int32Array(k);
    const heapVal = new Float64Array(k);
    let size = 0;
    const swap = (a, b) => {
      const ti = heapIdx[a]; heapIdx[a] = heapIdx[b]; heapIdx[b] = ti;
      const tv = heapVal[a]; heapVal[a] = heapVal[b]; heapVal[b] = tv;
    };
    for (let i = 0; i < n; i++) {
      const v = score(i);
      if (!(v > 0)) continue;
      if (size < k) {
        heapIdx[size] = i;
        heapVal[size] = v;
        let c = size++;
        while (c > 0) {
          const parent = (c - 1) >> 1;
          if (heapVal[parent] <= heapVal[c]) break;
          swap(parent, c);
          c = parent;
        }
      } else if (v > heapVal[0]) {
        heapIdx[0] = i;
        heapVal[0] = v;
        let c = 0;
        for (;;) {
          const l = 2 * c + 1;
          const r = l + 1;
          let m = c;
          if (l < size && heapVal[l] < heapVal[m]) m = l;
          if (r < size && heapVal[r] < heapVal[m]) m = r;
          if (m === c) break;
          swap(m, c);
          c = m;
        }
      }
    }
    const out = [];
    for (let i = 0; i < size; i++) out.push({ index: heapIdx[i], value: heapVal[i] });
    out.sort((a, b) => b.value - a.value || a.index - b.index);
    return out;
  }

  /* Symbols: exact address first (dial9 writes the callchain addresses), then the enclosing range. */
  function makeSymbolizer(trace) {
    const S = trace.symbols;
    const dec = window.Dial9Decoder;
    const exact = new Map();
    const ranges = [];
    for (let i = 0; i < S.count; i++) {
      const key = dec.addrHex(S.addrLo[i], S.addrHi[i]);
      const entry = {
        name: S.name[i] >= 0 ? trace.strings[S.name[i]] : '',
        file: S.file[i] >= 0 ? trace.strings[S.file[i]] : '',
        line: S.line[i],
        depth: S.inlineDepth[i],
      };
      let list = exact.get(key);
      if (!list) exact.set(key, (list = []));
      list.push(entry);
      if (S.size[i] > 0) ranges.push({ hi: S.addrHi[i], lo: S.addrLo[i], size: S.size[i], entry });
    }
    for (const list of exact.values()) list.sort((a, b) => b.depth - a.depth); // innermost inline frame first
    ranges.sort((a, b) => a.hi - b.hi || a.lo - b.lo);
    function lookup(lo, hi) {
      const key = dec.addrHex(lo, hi);
      const hit = exact.get(key);
      if (hit) return hit;
      // Largest start <= address, if the address falls inside its size.
      let a = 0;
      let b = ranges.length;
      while (a < b) {
        const m = (a + b) >>> 1;
        const r = ranges[m];
        if (r.hi < hi || (r.hi === hi && r.lo <= lo)) a = m + 1;
        else b = m;
      }
      const r = ranges[a - 1];
      if (r && r.hi === hi && lo - r.lo < r.size) return [r.entry];
      return null;
    }
    return { lookup, count: S.count };
  }

  /* Frames of a stack, leaf first: [{addr, kernel, names: [{name, file, line}] | null}]. */
  function stackFrames(model, stackId) {
    const words = model.trace.stacks[stackId];
    if (!words) return [];
    const out = [];
    for (let i = 0; i + 1 < words.length; i += 2) {
      const lo = words[i];
      const hi = words[i + 1];
      out.push({
        addr: '0x' + window.Dial9Decoder.addrHex(lo, hi),
        kernel: hi >= 0xffff0000,
        names: model.symbols.lookup(lo, hi),
      });
    }
    return out;
  }

  /* Whether unwinding stopped before the stack's outermost frame (its callers were not
   * recorded; dial9 stats says where such stacks end). */
  function stackTruncated(model, stackId) {
    return model.truncatedStacks.has(stackId);
  }

  function build(trace) {
    const polls = trace.polls;
    const parks = trace.parks;
    const samples = trace.cpuSamples;
    const pollRanges = rangesByWorker(polls);
    const parkRanges = rangesByWorker(parks);
    const sampleRanges = rangesByWorker(samples);
    const span = Math.max(1, trace.timeEnd - trace.timeStart);

    const workerLane = (w) => {
      const pl = spanLane(polls, pollRanges, w);
      let busy = 0;
      for (let i = pl.from; i < pl.to; i++) busy += polls.end[i] - polls.start[i];
      const sr = sampleRanges.get(w) || { from: 0, to: 0 };
      return {
        worker: w,
        label: w === 254 ? 'blocking pool' : w === 255 ? 'not a worker' : 'worker ' + w,
        polls: pl,
        parks: spanLane(parks, parkRanges, w, parks.schedWait),
        samples: sr,
        busyFraction: busy / span,
        pollCount: pl.to - pl.from,
      };
    };

    const groups = [];
    const laneOf = new Map();
    for (const r of trace.runtimes) {
      const lanes = r.workers.filter((w) => trace.workers.includes(w)).map(workerLane);
      if (!lanes.length) continue;
      for (const l of lanes) laneOf.set(l.worker, l);
      groups.push({ name: r.name, lanes });
    }
    const lanes = [];
    for (const g of groups) for (const l of g.lanes) lanes.push(l);

    const longestPolls = topK(polls.count, POI_COUNT, (i) => polls.end[i] - polls.start[i]);
    const largestSchedWaits = topK(parks.count, POI_COUNT, (i) => parks.schedWait[i]);

    const pollRank = new Map();
    longestPolls.forEach((p, r) => pollRank.set(p.index, r));

    const service = (() => {
      for (const m of trace.metadata) for (const [k, v] of m.entries) if (k === 'service') return v;
      return '';
    })();

    // Spans paired and split by viewer/src/spans.js (the C model's rules), a lane group per name.
    const spans = D9.spans ? D9.spans.pair(trace) : { spans: [], names: [], strayEnds: 0, reopened: 0 };

    return {
      trace,
      spans,
      spanLanes: D9.spans ? D9.spans.lanes(spans) : [],
      truncatedStacks: new Set(trace.truncatedStacks || []),
      coverage: coverageOf(trace),
      groups,
      lanes,
      laneOf,
      span,
      longestPolls,
      largestSchedWaits,
      pollRank,
      service,
      symbols: makeSymbolizer(trace),
      clock: D9.format.makeClock(trace),
      overview: overviewDensity(trace, lanes, 800),
    };
  }

  /* Busy fraction of all workers per bin over the whole trace, for the range selector. */
  function overviewDensity(trace, lanes, bins) {
    const polls = trace.polls;
    const t0 = trace.timeStart;
    const binNs = Math.max(1, (trace.timeEnd - t0) / bins);
    const busy = new Float64Array(bins);
    const maxDur = new Float64Array(bins);
    for (let i = 0; i < polls.count; i++) {
      let s = polls.start[i];
      const e = polls.end[i];
      const d = e - s;
      let b = Math.floor((s - t0) / binNs);
      if (b < 0) { b = 0; s = t0; }
      if (b < bins && d > maxDur[b]) maxDur[b] = d;
      while (b < bins && s < e) {
        const binEnd = t0 + (b + 1) * binNs;
        const part = Math.min(e, binEnd) - s;
        busy[b] += part;
        s = binEnd;
        b++;
      }
    }
    const workers = Math.max(1, lanes.length);
    for (let b = 0; b < bins; b++) busy[b] = Math.min(1, busy[b] / (binNs * workers));
    return { bins, binNs, busy, maxDur };
  }

  /* ---------- look-ups ---------- */

  /* Index of the span of a lane at time t (within slack ns), or -1. */
  function spanAt(tab, lane, t, slack) {
    if (lane.to <= lane.from) return -1;
    // Spans of a worker do not overlap, so ends are ascending too.
    const i = lowerBound(tab.end, lane.from, lane.to, t - slack);
    let best = -1;
    let bestDist = Infinity;
    for (let k = Math.max(lane.from, i - 1); k < Math.min(lane.to, i + 2); k++) {
      const dist = t < tab.start[k] ? tab.start[k] - t : t > tab.end[k] ? t - tab.end[k] : 0;
      if (dist <= slack && dist < bestDist) {
        best = k;
        bestDist = dist;
      }
    }
    return best;
  }

  function samplesIn(model, worker, t0, t1) {
    const S = model.trace.cpuSamples;
    const lane = model.laneOf.get(worker);
    if (!lane) return [];
    const a = lowerBound(S.ts, lane.samples.from, lane.samples.to, t0);
    const b = upperBound(S.ts, lane.samples.from, lane.samples.to, t1);
    const out = [];
    for (let i = a; i < b; i++) out.push(i);
    return out;
  }

  /* Every poll of a task, time-sorted. The index is built on first use (one pass). */
  function pollsOfTask(model, task) {
    if (!model.taskIndex) {
      const P = model.trace.polls;
      const index = new Map();
      for (let i = 0; i < P.count; i++) {
        const t = P.task[i];
        const list = index.get(t);
        if (list) list.push(i);
        else index.set(t, [i]);
      }
      // Polls are sorted by worker then time: a task that ran on several workers needs a sort.
      for (const list of index.values()) {
        for (let k = 1; k < list.length; k++) {
          if (P.start[list[k]] < P.start[list[k - 1]]) {
            list.sort((a, b) => P.start[a] - P.start[b]);
            break;
          }
        }
      }
      model.taskIndex = index;
    }
    return model.taskIndex.get(task) || [];
  }

  function wakesOfTask(model, task) {
    const W = model.trace.wakes;
    const incoming = [];
    const outgoing = [];
    for (let i = 0; i < W.count; i++) {
      if (W.woken[i] === task) incoming.push(i);
      else if (W.waker[i] === task) outgoing.push(i);
    }
    return { incoming, outgoing };
  }

  /*
   * The wake that made a poll's task runnable, for every poll (-1: none): the first wake of the
   * task after its previous poll started and at or before this poll started. Later wakes found
   * the task already queued. A wake that came while the previous poll ran left the task runnable
   * only from that poll's end, so the delay is measured from there (runnableFrom), as dial9 does
   * and as `dial9 analyze` does. The wake-delay list and the details panel both read this.
   */
  function pollWakes(model) {
    if (model.pollWakeIndex) return model.pollWakeIndex;
    const W = model.trace.wakes;
    const P = model.trace.polls;
    const first = new Int32Array(P.count).fill(-1);
    const from = new Float64Array(P.count);
    for (let w = 0; w < W.count; w++) {
      const list = pollsOfTask(model, W.woken[w]);
      const k = firstStartingAt(P, list, W.ts[w]);
      if (k >= list.length) continue; // never polled after this wake
      const p = list[k];
      if (first[p] >= 0 && W.ts[first[p]] <= W.ts[w]) continue;
      first[p] = w;
      from[p] = k > 0 ? Math.max(W.ts[w], P.end[list[k - 1]]) : W.ts[w];
    }
    model.pollWakeIndex = first;
    model.pollRunnableFrom = from;
    return first;
  }

  /* The wake paired with poll i (see pollWakes), or -1. */
  function wakeOfPoll(model, i) {
    return pollWakes(model)[i];
  }

  /* When poll i's task became runnable: its wake, or the end of its previous poll if the wake
   * came while that poll ran. Only for a poll with a wake. */
  function runnableFrom(model, i) {
    pollWakes(model);
    return model.pollRunnableFrom[i];
  }

  /* Position in a time-sorted list of polls of the first one starting at or after t. */
  function firstStartingAt(P, list, t) {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (P.start[list[m]] < t) lo = m + 1;
      else hi = m;
    }
    return lo;
  }

  /* The first poll of `task` starting at or after t, from a time-sorted list of its polls. */
  function nextPollOf(model, taskPolls, t) {
    const k = firstStartingAt(model.trace.polls, taskPolls, t);
    return k < taskPolls.length ? taskPolls[k] : -1;
  }

  /* 0-based rank of poll i by duration, longest first: from the list of the longest polls, else
   * the number of polls that took longer (one pass; only asked for the poll on display). */
  function pollRankOf(model, i) {
    const r = model.pollRank.get(i);
    if (r !== undefined) return r;
    const P = model.trace.polls;
    const d = P.end[i] - P.start[i];
    let longer = 0;
    for (let k = 0; k < P.count; k++) if (P.end[k] - P.start[k] > d) longer++;
    return longer;
  }

  function taskInfo(model, task) {
    const tr = model.trace;
    let spawnLoc = '';
    let spawnTs = NaN;
    for (let i = 0; i < tr.spawns.count; i++) {
      if (tr.spawns.task[i] === task) {
        spawnTs = tr.spawns.ts[i];
        if (tr.spawns.loc[i] >= 0) spawnLoc = tr.strings[tr.spawns.loc[i]];
        break;
      }
    }
    let terminateTs = NaN;
    for (let i = 0; i < tr.terminates.count; i++) {
      if (tr.terminates.task[i] === task) {
        terminateTs = tr.terminates.ts[i];
        break;
      }
    }
    return { spawnLoc, spawnTs, terminateTs };
  }

  /* Duration → colour: a log scale from cool (fast) to hot (slow), as a 256-entry table. */
  const COLOR_STOPS = [
    [2, [48, 88, 140]], // 100 ns
    [4, [38, 139, 160]], // 10 µs
    [5, [60, 170, 130]], // 100 µs
    [6, [222, 196, 86]], // 1 ms
    [7, [238, 128, 66]], // 10 ms
    [7.7, [228, 58, 58]], // 50 ms
  ];
  const LUT_MIN = 2;
  const LUT_MAX = 7.7;
  const lut = [];
  for (let i = 0; i < 256; i++) {
    const x = LUT_MIN + (LUT_MAX - LUT_MIN) * i / 255;
    let k = 0;
    while (k < COLOR_STOPS.length - 2 && x > COLOR_STOPS[k + 1][0]) k++;
    const [x0, c0] = COLOR_STOPS[k];
    const [x1, c1] = COLOR_STOPS[k + 1];
    const f = Math.max(0, Math.min(1, (x - x0) / (x1 - x0)));
    lut.push('rgb(' + c0.map((c, j) => Math.round(c + (c1[j] - c) * f)).join(',') + ')');
  }
  function colorOf(ns) {
    const x = Math.log10(Math.max(1, ns));
    const i = Math.max(0, Math.min(255, Math.round((x - LUT_MIN) / (LUT_MAX - LUT_MIN) * 255)));
    return lut[i];
  }
  /* Run-queue waits: the orange of the park tails, more vivid as the wait grows (1 µs → 10 ms). */
  function schedColorOf(ns) {
    const f = Math.max(0, Math.min(1, (Math.log10(Math.max(1, ns)) - 3) / 4));
    const a = [214, 168, 128];
    const b = [255, 112, 40];
    return 'rgb(' + a.map((c, j) => Math.round(c + (b[j] - c) * f)).join(',') + ')';
  }

  function legendGradient() {
    return 'linear-gradient(90deg, ' + COLOR_STOPS.map(([x, c]) => 'rgb(' + c.join(',') + ') ' + ((x - LUT_MIN) / (LUT_MAX - LUT_MIN) * 100).toFixed(1) + '%').join(', ') + ')';
  }

  /* Points of interest computed on first use: the worst wake-to-poll delays (from the wake paired
   * with a poll by pollWakes, from runnableFrom to that poll's start; item index = the poll, wake = the wake) and the
   * longest polls during which the thread was descheduled (off-CPU / context-switch samples
   * inside; index = the poll). */
  function wakeDelays(model) {
    if (model.wakeDelayItems) return model.wakeDelayItems;
    const W = model.trace.wakes;
    const P = model.trace.polls;
    const wakeOf = pollWakes(model);
    const polls = [];
    for (let i = 0; i < P.count; i++) if (wakeOf[i] >= 0) polls.push(i);
    model.wakeDelayItems = topK(polls.length, POI_COUNT, (k) => P.start[polls[k]] - runnableFrom(model, polls[k]))
      .map((it) => ({ index: polls[it.index], value: it.value, wake: wakeOf[polls[it.index]] }));
    return model.wakeDelayItems;
  }

  function blockedPolls(model) {
    if (model.blockedPollItems) return model.blockedPollItems;
    const S = model.trace.cpuSamples;
    const P = model.trace.polls;
    const hit = new Set();
    for (let s = 0; s < S.count; s++) {
      if (S.source[s] !== 1) continue;
      const lane = model.laneOf.get(S.worker[s]);
      const i = lane ? spanAt(P, lane.polls, S.ts[s], 0) : -1;
      if (i >= 0) hit.add(i);
    }
    const polls = Array.from(hit);
    model.blockedPollItems = topK(polls.length, 200, (i) => P.end[polls[i]] - P.start[polls[i]])
      .map((it) => ({ index: polls[it.index], value: it.value }));
    return model.blockedPollItems;
  }

  D9.model = {
    wakeDelays, blockedPolls, coverageOf,
    build, lowerBound, upperBound, spanAt, samplesIn, pollsOfTask, wakesOfTask, wakeOfPoll, runnableFrom, pollRankOf,
    nextPollOf, taskInfo, stackFrames, stackTruncated, colorOf, schedColorOf, legendGradient, topK,
    makeSymbolizer,
  };
})(window.D9 = window.D9 || {});
