/*
 * Spans (d9_span_begin / d9_span_end) for the viewer: the decoder's span marks paired into
 * spans, and each span's elapsed time split into poll / queued / wait / unknown, by the same
 * definitions as the C model (src/model/spans.h), so the viewer and `dial9 analyze` agree:
 *
 *   pairing  an end closes the open span of the same name and id, on any thread; a second
 *            begin of an open (name, id) reports the first unended up to that begin
 *            ("reopened"); an end with nothing open is a stray end; spans still open when the
 *            trace ends run to its end, unended.
 *   split    over the span's tasks (the task polled where it began and where it ended), at
 *            each instant the first that holds: a poll runs (poll), the task was woken and
 *            waits for its poll (queued), it waits for a wake after its last poll (wait);
 *            else unknown. The parts add up to the elapsed time exactly.
 *   drops    a DroppedEventsEvent inside a span's window (begin, end] (of a worker or of the
 *            whole process: the drops the attribution's coverage keeps, viewer/src/attribution.js;
 *            any worker, since a lost wake of its task is as bad as a lost poll) makes the span
 *            unknown from its begin to the last such drop; its parts count from there
 *            (span.known: where the counted part starts, for its poll part by cause).
 *
 * Like the C model it sweeps the events in time order (a wake before a poll of the same
 * timestamp, a span mark after both), and a span is split with what was known when it ended.
 */
(function (D9) {
  'use strict';

  const POLL = 0;
  const QUEUED = 1;
  const WAIT = 2;

  /* Union length of sorted intervals of kind <= upto. */
  function unionLen(iv, upto) {
    let total = 0;
    let open = false;
    let cs = 0;
    let ce = 0;
    for (const v of iv) {
      if (v.kind > upto) continue;
      if (open && v.start <= ce) {
        if (v.end > ce) ce = v.end;
        continue;
      }
      if (open) total += ce - cs;
      open = true;
      cs = v.start;
      ce = v.end;
    }
    if (open) total += ce - cs;
    return total;
  }

  /* The last drop in (lo, hi] of the sorted drop times, or lo when none. */
  function unknownUntil(drops, lo, hi) {
    let a = 0;
    let b = drops.length;
    while (a < b) { // the first drop after hi
      const mid = (a + b) >>> 1;
      if (drops[mid] <= hi) a = mid + 1;
      else b = mid;
    }
    return a > 0 && drops[a - 1] > lo ? drops[a - 1] : lo;
  }

  /*
   * pair(trace) -> { spans, names, strayEnds, reopened }
   *   spans: [{name, id, begin, end, ended, beginWorker, endWorker, beginTask, endTask,
   *            beginTid, endTid, poll, queued, wait, unknown, known}], in the order they were
   *            closed (known: the begin, or the last drop inside the span)
   *   names: the span names, in order of first begin
   */
  function pair(trace) {
    const marks = trace.spanMarks || [];
    const spans = [];
    const names = [];
    const nameSeen = new Set();
    let strayEnds = 0;
    let reopened = 0;
    if (!marks.length) return { spans, names, strayEnds, reopened };
    // the drops as the attribution's coverage reads them: one definition of which drops count
    if (!D9.attribution) throw new Error('spans.js: viewer/src/attribution.js is not loaded (the drops of the coverage)');
    const drops = D9.attribution.coverage(trace).drops.map((d) => d.ts);

    // The events in the C model's order: ts, then wake < poll < mark, then file order.
    const P = trace.polls;
    const W = trace.wakes;
    // Three streams, each sorted by time (stable), merged: no array per event.
    const byTime = (n, tsOf, keep) => {
      const idx = [];
      for (let i = 0; i < n; i++) if (keep(i)) idx.push(i);
      const out = Uint32Array.from(idx);
      let sorted = true;
      for (let k = 1; k < out.length && sorted; k++) sorted = tsOf(out[k - 1]) <= tsOf(out[k]);
      if (!sorted) out.sort((a, b) => tsOf(a) - tsOf(b) || a - b);
      return out;
    };
    const wOrder = byTime(W.count, (i) => W.ts[i], (i) => W.woken[i] !== 0);
    const pOrder = byTime(P.count, (i) => P.start[i], (i) => P.task[i] !== 0);
    const mOrder = byTime(marks.length, (i) => marks[i].ts, () => true);

    const tasks = new Map(); // task -> {firstWake, wakes, lastPollEnd, polled, iv: [{start,end,kind}]}
    const open = new Map(); // name + '\0' + id -> span
    const task = (id) => {
      let t = tasks.get(id);
      if (!t) tasks.set(id, (t = { firstWake: 0, wakes: 0, lastPollEnd: 0, polled: false, iv: [], maxEnd: [], pruneAt: 64 }));
      return t;
    };
    let oldest = Infinity; // the earliest begin of the open spans
    const closed = (s) => {
      if (s.begin !== oldest) return;
      oldest = Infinity;
      for (const o of open.values()) if (o.begin < oldest) oldest = o.begin;
    };
    let now = -Infinity;
    // Intervals that end before every open span began can no longer count in any span.
    const add = (t, start, end, kind) => {
      if (end <= start) return;
      const from = open.size ? oldest : now;
      if (end <= from) return;
      if (t.iv.length >= t.pruneAt) { // memory only: they never count; amortized, not per add
        t.iv = t.iv.filter((v) => v.end > from);
        let m = -Infinity;
        t.maxEnd = t.iv.map((v) => (m = Math.max(m, v.end)));
        t.pruneAt = Math.max(64, 2 * t.iv.length);
      }
      t.iv.push({ start, end, kind });
      t.maxEnd.push(Math.max(end, t.maxEnd.length ? t.maxEnd[t.maxEnd.length - 1] : -Infinity));
    };

    const collect = (out, id, lo, hi) => {
      const t = tasks.get(id);
      if (!t) return;
      const push = (kind, s, e) => {
        if (s < lo) s = lo;
        if (e > hi) e = hi;
        if (e > s) out.push({ start: s, end: e, kind });
      };
      // newest first, down to where every older interval ended by lo (maxEnd: their prefix max),
      // so a span costs what overlaps it, not its tasks' whole history
      for (let k = t.iv.length - 1; k >= 0 && t.maxEnd[k] > lo; k--) push(t.iv[k].kind, t.iv[k].start, t.iv[k].end);
      if (t.wakes > 0) { // woken, its poll not started by hi
        let since = t.firstWake;
        if (t.polled && t.lastPollEnd > since) since = t.lastPollEnd;
        if (t.polled) push(WAIT, t.lastPollEnd, since);
        push(QUEUED, since, hi);
      } else if (t.polled) {
        push(WAIT, t.lastPollEnd, hi);
      }
    };

    const report = (s) => {
      const hi = s.end > s.begin ? s.end : s.begin;
      const lo = unknownUntil(drops, s.begin, hi); // [begin, lo) unknown: events were lost
      s.known = lo;
      const iv = [];
      if (s.beginTask) collect(iv, s.beginTask, lo, hi);
      if (s.endTask && s.endTask !== s.beginTask) collect(iv, s.endTask, lo, hi);
      iv.sort((a, b) => a.start - b.start);
      const uPoll = unionLen(iv, POLL);
      const uQueued = unionLen(iv, QUEUED);
      const uWait = unionLen(iv, WAIT);
      s.poll = uPoll;
      s.queued = uQueued - uPoll;
      s.wait = uWait - uQueued;
      s.unknown = hi - s.begin - uWait;
      spans.push(s);
    };

    let wi = 0;
    let pi = 0;
    let mi = 0;
    const INF = Infinity;
    while (wi < wOrder.length || pi < pOrder.length || mi < mOrder.length) {
      // at equal times: a wake, then a poll, then a span mark
      const tw = wi < wOrder.length ? W.ts[wOrder[wi]] : INF;
      const tp = pi < pOrder.length ? P.start[pOrder[pi]] : INF;
      const tm = mi < mOrder.length ? marks[mOrder[mi]].ts : INF;
      let kind;
      let i;
      let ts;
      if (tw <= tp && tw <= tm) {
        kind = 0;
        i = wOrder[wi++];
        ts = tw;
      } else if (tp <= tm) {
        kind = 1;
        i = pOrder[pi++];
        ts = tp;
      } else {
        kind = 2;
        i = mOrder[mi++];
        ts = tm;
      }
      if (ts > now) now = ts;
      if (kind === 0) {
        const t = task(W.woken[i]);
        if (t.wakes++ === 0) t.firstWake = ts;
      } else if (kind === 1) {
        const t = task(P.task[i]);
        const start = P.start[i];
        const end = P.end[i];
        const prevEnd = t.lastPollEnd;
        const polled = t.polled;
        let since = start; // when it became runnable for this poll (model/wake_link.h)
        if (t.wakes > 0 && start >= t.firstWake) {
          since = t.firstWake > t.lastPollEnd ? t.firstWake : t.lastPollEnd;
          t.wakes = 0;
        }
        t.lastPollEnd = end;
        // before its first poll the task's state is unknown, but for the wake that led to it
        if (polled && prevEnd < since) add(t, prevEnd, since, WAIT);
        add(t, since, start, QUEUED);
        add(t, start, end, POLL);
        t.polled = true;
      } else {
        const m = marks[i];
        const key = m.name + '\0' + m.id;
        const prev = open.get(key);
        if (m.enter) {
          if (!nameSeen.has(m.name)) {
            nameSeen.add(m.name);
            names.push(m.name);
          }
          if (prev) { // its end never came: unended, up to this begin
            reopened++;
            open.delete(key);
            closed(prev);
            prev.end = ts;
            prev.reopened = true;
            report(prev);
          }
          if (ts < oldest) oldest = ts;
          open.set(key, {
            name: m.name, id: m.id, begin: ts, end: ts, ended: false, reopened: false,
            beginWorker: m.worker, beginTask: m.task, beginTid: m.tid,
            endWorker: NaN, endTask: 0, endTid: NaN,
          });
        } else if (!prev) {
          strayEnds++;
        } else {
          prev.end = ts;
          prev.ended = true;
          prev.endWorker = m.worker;
          prev.endTask = m.task;
          prev.endTid = m.tid;
          report(prev); // before closing: its intervals are still kept
          open.delete(key);
          closed(prev);
        }
      }
    }
    // The trace ended: the open spans run to its end, in order of begin.
    const end = Math.max(trace.timeEnd, now);
    const left = Array.from(open.values()).sort((a, b) => a.begin - b.begin);
    for (const s of left) {
      s.end = end;
      report(s);
    }
    return { spans, names, strayEnds, reopened };
  }

  /*
   * Lanes per span name: spans sorted by begin, each in the first sub-lane free at its begin
   * (overlapping spans side by side). -> [{name, rows: [[span index...] per sub-lane], count}]
   */
  function lanes(result) {
    const byName = new Map(result.names.map((n) => [n, []]));
    result.spans.forEach((s, i) => byName.get(s.name).push(i));
    const out = [];
    for (const [name, idx] of byName) {
      idx.sort((a, b) => result.spans[a].begin - result.spans[b].begin || a - b);
      const rows = [];
      const rowEnd = [];
      for (const i of idx) {
        const s = result.spans[i];
        let r = rowEnd.findIndex((e) => e <= s.begin);
        if (r < 0) {
          r = rows.length;
          rows.push([]);
          rowEnd.push(-Infinity);
        }
        rows[r].push(i);
        rowEnd[r] = Math.max(s.end, s.begin + 1);
      }
      out.push({ name, rows, count: idx.length });
    }
    return out;
  }

  D9.spans = { pair, lanes };
})(typeof window !== 'undefined' ? (window.D9 = window.D9 || {}) : (globalThis.D9 = globalThis.D9 || {}));
