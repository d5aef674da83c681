/*
 * The timeline: a time axis, one lane per worker (grouped by runtime) and an overview strip
 * that is also the time range selector. Everything is drawn on <canvas>; spans narrower than
 * a pixel are merged per pixel column (with chunk summaries to skip whole runs of them), so
 * the view stays responsive with millions of polls.
 */
(function (D9) {
  'use strict';

  const M = D9.model;
  const F = D9.format;

  const GUTTER = 148; // lane labels
  const GROUP_H = 24;
  const LANE_H = 50; // the smallest lane; lanes grow to fill the view when there are few
  const LANE_H_MAX = 86;
  const BAR_TOP = 13; // poll bar inside a lane
  const QUEUE_H = 56;
  const SPAN_H = 22; // a sub-lane of a span name
  const SPAN_COLOR = '#6fa8ff';
  const SPAN_UNENDED = '#c59bff';
  const MIN_SPAN_NS = 100;

  const C = {
    bg: '#12151c',
    laneA: '#161a22',
    laneB: '#191e27',
    group: '#1f2531',
    groupText: '#9fb0c8',
    gutter: '#151922',
    gutterLine: '#2a3140',
    label: '#d8e0ec',
    sublabel: '#7d8aa0',
    grid: 'rgba(255,255,255,0.045)',
    park: '#4a5468',
    schedTail: '#ff8a3d',
    tickCpu: '#8fc7ff',
    tickSwitch: '#ff6fd0',
    selected: '#ffffff',
    highlight: '#ffd84d',
    wakeIn: '#54e0ff',
    wakeOut: '#c59bff',
    cursor: 'rgba(255,255,255,0.35)',
    rangeFill: 'rgba(120,170,255,0.14)',
    rangeEdge: 'rgba(140,185,255,0.9)',
    axisText: '#a9b6ca',
    axisLine: '#2c3444',
  };

  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  class Timeline {
    constructor(els, hooks) {
      this.els = els;
      this.hooks = hooks || {};
      this.model = null;
      this.t0 = 0;
      this.t1 = 1;
      this.scrollY = 0;
      this.selection = null; // {kind: 'poll'|'park', index}
      this.task = null; // selected task id
      this.taskPolls = [];
      this.taskWakes = { incoming: [], outgoing: [] };
      this.hover = null;
      this.mouse = null; // {x, y} over the lanes canvas
      this.rangeDrag = null;
      this.timeMode = 'relative';
      this.stats = { lanesDrawn: 0, highlightedByWorker: {}, wakesDrawn: 0, frames: 0, lastFrameMs: 0 };
      this.anim = null;
      this.pending = false;
      this.bindEvents();
      this.resizeObserver = new ResizeObserver(() => this.resize());
      this.resizeObserver.observe(els.lanesWrap);
      this.resize();
    }

    /* ---------- model and view ---------- */

    setModel(model) {
      this.model = model;
      this.selection = null;
      this.task = null;
      this.taskPolls = [];
      this.taskWakes = { incoming: [], outgoing: [] };
      this.scrollY = 0;
      this.queueMax = 0;
      this.layout();
      this.fitAll(false);
    }

    layout() {
      const rows = [];
      let y = 0;
      this.laneH = LANE_H;
      if (this.model) {
        const groups = this.model.groups;
        const headers = groups.filter((g) => groups.length > 1 || g.name).length;
        const hasQueue = this.model.trace.queueSamples.count > 0;
        const spanLanes = this.model.spanLanes || [];
        let spanH = 0;
        for (const sl of spanLanes) spanH += GROUP_H + sl.rows.length * SPAN_H;
        const free = (this.h || 400) - headers * GROUP_H - (hasQueue ? QUEUE_H : 0) - spanH - 4;
        this.laneH = Math.max(LANE_H, Math.min(LANE_H_MAX, Math.floor(free / Math.max(1, this.model.lanes.length))));
        for (const g of groups) {
          if (groups.length > 1 || g.name) {
            rows.push({ kind: 'group', group: g, y, h: GROUP_H });
            y += GROUP_H;
          }
          for (const lane of g.lanes) {
            rows.push({ kind: 'lane', lane, y, h: this.laneH });
            y += this.laneH;
          }
        }
        // A lane group per span name, a sub-lane per overlap (viewer/src/spans.js).
        for (const sl of spanLanes) {
          rows.push({ kind: 'spangroup', spanLane: sl, y, h: GROUP_H });
          y += GROUP_H;
          sl.rows.forEach((list, k) => {
            rows.push({ kind: 'span', spanLane: sl, sub: k, list, y, h: SPAN_H });
            y += SPAN_H;
          });
        }
        if (hasQueue) {
          rows.push({ kind: 'queue', y, h: QUEUE_H });
          y += QUEUE_H;
        }
      }
      this.barH = this.laneH - BAR_TOP - 11;
      this.rows = rows;
      this.contentH = y;
    }

    get plotW() {
      return Math.max(10, this.w - GUTTER);
    }
    get nsPerPx() {
      return (this.t1 - this.t0) / this.plotW;
    }
    xOf(t) {
      return GUTTER + (t - this.t0) / this.nsPerPx;
    }
    tOf(x) {
      return this.t0 + (x - GUTTER) * this.nsPerPx;
    }

    clampView(t0, t1) {
      const tr = this.model ? this.model.trace : { timeStart: 0, timeEnd: 1 };
      const pad = Math.max(1, (tr.timeEnd - tr.timeStart) * 0.02);
      const lo = tr.timeStart - pad;
      const hi = tr.timeEnd + pad;
      let span = Math.max(MIN_SPAN_NS, Math.min(t1 - t0, hi - lo));
      let a = t0;
      if (t1 - t0 !== span) a = (t0 + t1) / 2 - span / 2;
      if (a < lo) a = lo;
      if (a + span > hi) a = hi - span;
      return [a, a + span];
    }

    setView(t0, t1, animate) {
      [t0, t1] = this.clampView(t0, t1);
      if (animate) {
        this.anim = { from: [this.t0, this.t1], to: [t0, t1], start: performance.now(), dur: 180 };
      } else {
        this.anim = null;
        this.t0 = t0;
        this.t1 = t1;
      }
      this.requestDraw();
      if (this.hooks.onViewChange) this.hooks.onViewChange(t0, t1);
    }

    /* Exactly the trace: the view starts at 0, as the status bar and the flame graph say. */
    fitAll(animate) {
      if (!this.model) return;
      const tr = this.model.trace;
      this.setView(tr.timeStart, Math.max(tr.timeEnd, tr.timeStart + MIN_SPAN_NS), animate);
    }

    zoomAt(factor, x, animate) {
      const tx = this.tOf(x);
      const base = this.anim ? this.anim.to : [this.t0, this.t1];
      const [a, b] = base;
      const f = (tx - a) / (b - a);
      const span = (b - a) * factor;
      this.setView(tx - f * span, tx - f * span + span, animate);
    }

    pan(fraction, animate) {
      const base = this.anim ? this.anim.to : [this.t0, this.t1];
      const d = (base[1] - base[0]) * fraction;
      this.setView(base[0] + d, base[1] + d, animate);
    }

    scrollBy(dy) {
      const max = Math.max(0, this.contentH - this.h);
      this.scrollY = Math.max(0, Math.min(max, this.scrollY + dy));
      this.requestDraw();
    }

    /* Show [a, b] with some context around it. */
    reveal(a, b, worker) {
      const d = Math.max(b - a, MIN_SPAN_NS);
      this.setView(a - d * 1.5, b + d * 1.5, true);
      if (worker !== undefined) this.scrollToWorker(worker);
    }

    scrollToWorker(worker) {
      const row = this.rows.find((r) => r.kind === 'lane' && r.lane.worker === worker);
      if (!row) return;
      if (row.y < this.scrollY || row.y + row.h > this.scrollY + this.h) {
        this.scrollY = Math.max(0, Math.min(Math.max(0, this.contentH - this.h), row.y - this.h / 3));
      }
    }

    setTimeMode(mode) {
      this.timeMode = mode;
      this.requestDraw();
    }

    /* ---------- selection ---------- */

    select(sel) {
      this.selection = sel;
      this.requestDraw();
    }

    selectTask(task) {
      this.task = task;
      if (task === null || task === undefined || !this.model) {
        this.task = null;
        this.taskPolls = [];
        this.taskWakes = { incoming: [], outgoing: [] };
      } else {
        this.taskPolls = M.pollsOfTask(this.model, task);
        this.taskWakes = M.wakesOfTask(this.model, task);
      }
      this.requestDraw();
    }

    /* Forget what the pointer hovers (its tooltip goes): the view or the page changed under it. */
    clearHover() {
      if (!this.hover) return;
      this.hover = null;
      if (this.hooks.onHover) this.hooks.onHover(null);
      this.requestDraw();
    }

    /* Screen position (client coordinates) of the middle of a poll: for tests and links. */
    clientPointOfPoll(index) {
      const P = this.model.trace.polls;
      const row = this.rows.find((r) => r.kind === 'lane' && r.lane.worker === P.worker[index]);
      if (!row) return null;
      const x0 = Math.max(GUTTER, this.xOf(P.start[index]));
      const x1 = Math.min(this.w, this.xOf(P.end[index]));
      const rect = this.els.lanes.getBoundingClientRect();
      return { x: rect.left + (x0 + x1) / 2, y: rect.top + row.y - this.scrollY + BAR_TOP + this.barH / 2 };
    }

    /* ---------- canvas plumbing ---------- */

    resize() {
      const wrap = this.els.lanesWrap;
      const dpr = window.devicePixelRatio || 1;
      this.dpr = dpr;
      this.w = Math.max(50, wrap.clientWidth);
      this.h = Math.max(50, wrap.clientHeight);
      for (const [cv, h] of [[this.els.lanes, this.h], [this.els.axis, this.els.axis.clientHeight || 30], [this.els.overview, this.els.overview.clientHeight || 56]]) {
        cv.width = Math.round(this.w * dpr);
        cv.height = Math.round(h * dpr);
        cv.style.width = this.w + 'px';
        cv.style.height = h + 'px';
      }
      this.axisH = this.els.axis.clientHeight || 30;
      this.overH = this.els.overview.clientHeight || 56;
      this.layout();
      this.scrollBy(0);
      this.requestDraw();
    }

    requestDraw() {
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.draw();
      });
    }

    draw() {
      const t = performance.now();
      if (this.anim) {
        const a = this.anim;
        const k = Math.min(1, (t - a.start) / a.dur);
        const e = 1 - Math.pow(1 - k, 3);
        this.t0 = a.from[0] + (a.to[0] - a.from[0]) * e;
        this.t1 = a.from[1] + (a.to[1] - a.from[1]) * e;
        if (k >= 1) this.anim = null;
        else this.requestDraw();
      }
      this.drawLanes();
      this.drawAxis();
      this.drawOverview();
      if (this.hooks.onDraw && (this.t0 !== this.drawnT0 || this.t1 !== this.drawnT1)) {
        this.drawnT0 = this.t0;
        this.drawnT1 = this.t1;
        this.hooks.onDraw(this.t0, this.t1);
      }
      this.stats.frames++;
      this.stats.lastFrameMs = performance.now() - t;
    }

    /* ---------- lanes ---------- */

    drawLanes() {
      const cv = this.els.lanes;
      const ctx = cv.getContext('2d');
      const dpr = this.dpr;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = C.bg;
      ctx.fillRect(0, 0, this.w, this.h);
      this.stats.highlightedByWorker = {};
      this.stats.lanesDrawn = 0;
      this.stats.wakesDrawn = 0;
      this.stats.spansDrawn = 0;
      if (!this.model) return;

      this.drawGrid(ctx);
      this.drawPartialCoverage(ctx);
      for (const row of this.rows) {
        const y = row.y - this.scrollY;
        if (y + row.h < 0 || y > this.h) continue;
        if (row.kind === 'group' || row.kind === 'spangroup') this.drawGroupHeader(ctx, row.group, y);
        else if (row.kind === 'span') this.drawSpanRow(ctx, row, y);
        else if (row.kind === 'queue') this.drawQueueRow(ctx, y, row.h);
        else this.drawLane(ctx, row.lane, y, row);
      }
      this.drawWakes(ctx);
      this.drawRangeDrag(ctx);
      this.drawCursor(ctx);
      // Gutter on top, so that spans never draw over the labels.
      for (const row of this.rows) {
        const y = row.y - this.scrollY;
        if (y + row.h < 0 || y > this.h) continue;
        if (row.kind === 'lane') this.drawLaneLabel(ctx, row.lane, y, row);
        else if (row.kind === 'spangroup') this.drawSpanGroupLabel(ctx, row.spanLane, y);
        else if (row.kind === 'span') this.drawSpanLabel(ctx, row, y);
        else if (row.kind === 'queue') this.drawQueueLabel(ctx, y, row.h);
        else this.drawGroupLabel(ctx, row.group, y);
      }
      ctx.fillStyle = C.gutterLine;
      for (const row of this.rows) {
        if (row.kind !== 'group' && row.kind !== 'spangroup') ctx.fillRect(GUTTER - 1, row.y - this.scrollY, 1, row.h);
      }
      ctx.fillRect(GUTTER - 1, this.contentH - this.scrollY, 1, Math.max(0, this.h - this.contentH + this.scrollY));
      if (this.contentH > this.h) this.drawScrollbar(ctx);
    }

    /* The first tick at or after t0: round numbers of the clock that the axis shows. */
    firstTick(step) {
      let base = this.model.trace.timeStart;
      if (this.timeMode === 'absolute') base = -this.model.clock.phase(step);
      return base + Math.ceil((this.t0 - base) / step) * step;
    }

    drawGrid(ctx) {
      const step = niceStep(this.nsPerPx * 110);
      ctx.fillStyle = C.grid;
      const first = this.firstTick(step);
      for (let t = first; t <= this.t1; t += step) ctx.fillRect(Math.round(this.xOf(t)), 0, 1, this.h);
    }

    /* Periods the cost governor recorded partially (model.coverage): a hatched background,
     * so an empty stretch there reads "not recorded", not "nothing happened". */
    drawPartialCoverage(ctx) {
      this.stats.partialCoverageDrawn = 0;
      const cov = this.model.coverage || [];
      ctx.save();
      ctx.fillStyle = 'rgba(200, 120, 40, 0.10)';
      ctx.strokeStyle = 'rgba(200, 120, 40, 0.25)';
      for (const c of cov) {
        for (const p of c.periods) {
          if (p.to < this.t0 || p.from > this.t1) continue;
          const a = Math.max(GUTTER, this.xOf(p.from)), b = Math.min(this.w, this.xOf(p.to));
          if (b <= a) continue;
          ctx.fillRect(a, 0, b - a, this.h);
          ctx.beginPath();
          ctx.rect(a, 0, b - a, this.h);
          ctx.clip();
          ctx.beginPath();
          for (let x = a - this.h; x < b; x += 12) {
            ctx.moveTo(x, this.h);
            ctx.lineTo(x + this.h, 0);
          }
          ctx.stroke();
          ctx.restore();
          ctx.save();
          ctx.fillStyle = 'rgba(200, 120, 40, 0.10)';
          ctx.strokeStyle = 'rgba(200, 120, 40, 0.25)';
          this.stats.partialCoverageDrawn++;
        }
      }
      ctx.restore();
    }

    drawGroupHeader(ctx, group, y) {
      ctx.fillStyle = C.group;
      ctx.fillRect(GUTTER, y, this.w - GUTTER, GROUP_H);
    }

    /* ---------- span lanes ---------- */

    drawSpanGroupLabel(ctx, sl, y) {
      ctx.fillStyle = C.group;
      ctx.fillRect(0, y, GUTTER, GROUP_H);
      ctx.fillStyle = C.groupText;
      ctx.font = '600 11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.fillText(('span ' + sl.name).toUpperCase() + '  ·  ' + F.count(sl.count), 10, y + GROUP_H / 2 + 1, GUTTER - 14);
    }

    drawSpanLabel(ctx, row, y) {
      ctx.fillStyle = C.gutter;
      ctx.fillRect(0, y, GUTTER - 1, SPAN_H);
      ctx.fillStyle = C.sublabel;
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.fillText(row.sub === 0 ? row.spanLane.name : '#' + (row.sub + 1), 12, y + SPAN_H / 2, GUTTER - 20);
    }

    /* The spans of one sub-lane (they do not overlap, in begin order): a bar each, violet when
     * unended, a pixel wide at least; the selected one outlined. */
    drawSpanRow(ctx, row, y) {
      const spans = this.model.spans.spans;
      ctx.fillStyle = (this.rows.indexOf(row) % 2) ? C.laneA : C.laneB;
      ctx.fillRect(GUTTER, y, this.w - GUTTER, SPAN_H);
      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER, y, this.w - GUTTER, SPAN_H);
      ctx.clip();
      const sel = this.selection && this.selection.kind === 'span' ? this.selection.index : -1;
      ctx.font = '10px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      let lastPx = -1;
      // A sub-lane's spans do not overlap: their ends ascend, so the first in view is found by bisection.
      const list = row.list;
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (spans[list[mid]].end < this.t0) lo = mid + 1;
        else hi = mid;
      }
      for (let k = lo; k < list.length; k++) {
        const i = list[k];
        const s = spans[i];
        if (s.begin > this.t1) break;
        const x0 = Math.max(GUTTER - 2, this.xOf(s.begin));
        const x1 = Math.min(this.w + 2, this.xOf(s.end));
        const w = Math.max(1, x1 - x0);
        if (w < 1.5 && Math.floor(x0) === lastPx && i !== sel) continue; // one per pixel column
        lastPx = Math.floor(x0);
        ctx.fillStyle = s.ended ? SPAN_COLOR : SPAN_UNENDED;
        ctx.fillRect(x0, y + 3, w, SPAN_H - 6);
        if (w > 40) {
          ctx.fillStyle = '#0d1118';
          ctx.fillText(s.id + ' · ' + F.duration(s.end - s.begin), x0 + 4, y + SPAN_H / 2, w - 8);
        }
        if (i === sel) {
          ctx.strokeStyle = C.selected;
          ctx.lineWidth = 2;
          ctx.strokeRect(x0, y + 2, w, SPAN_H - 4);
        }
        this.stats.spansDrawn++;
      }
      ctx.restore();
    }

    /* Screen position (client coordinates) of the middle of a span: for tests and links. */
    clientPointOfSpan(index) {
      const row = this.rows.find((r) => r.kind === 'span' && r.list.includes(index));
      if (!row) return null;
      const s = this.model.spans.spans[index];
      const a = Math.max(this.t0, s.begin);
      const b = Math.min(this.t1, s.end);
      const r = this.els.lanes.getBoundingClientRect();
      return { x: r.left + this.xOf((a + b) / 2), y: r.top + row.y - this.scrollY + SPAN_H / 2 };
    }

    drawGroupLabel(ctx, group, y) {
      ctx.fillStyle = C.group;
      ctx.fillRect(0, y, GUTTER, GROUP_H);
      ctx.fillStyle = C.groupText;
      ctx.font = '600 11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      const ws = group.lanes.map((l) => l.worker);
      const name = group.name ? 'runtime ' + group.name : 'workers';
      ctx.fillText(name.toUpperCase() + '  ·  ' + ws.length + (ws.length === 1 ? ' worker' : ' workers'), 10, y + GROUP_H / 2 + 1);
    }

    drawLaneLabel(ctx, lane, y, row) {
      ctx.fillStyle = C.gutter;
      ctx.fillRect(0, y, GUTTER - 1, this.laneH);
      ctx.fillStyle = C.gutterLine;
      ctx.fillRect(0, y + this.laneH - 1, GUTTER, 1);
      ctx.textBaseline = 'alphabetic';
      ctx.fillStyle = C.label;
      ctx.font = '600 13px system-ui, sans-serif';
      ctx.fillText(lane.label, 12, y + 21);
      ctx.fillStyle = C.sublabel;
      ctx.font = '11px system-ui, sans-serif';
      if (this.laneH >= 64) {
        ctx.fillText((lane.busyFraction * 100).toFixed(1) + '% busy', 12, y + 37);
        ctx.fillText(F.count(lane.pollCount) + ' polls', 12, y + 52);
      } else {
        ctx.fillText((lane.busyFraction * 100).toFixed(1) + '% busy', 12, y + 37);
      }
      // A small busy meter.
      ctx.fillStyle = '#262d3a';
      ctx.fillRect(GUTTER - 12, y + 10, 4, this.laneH - 20);
      ctx.fillStyle = '#58c4a8';
      const hh = Math.max(1, (this.laneH - 20) * Math.min(1, lane.busyFraction));
      ctx.fillRect(GUTTER - 12, y + this.laneH - 10 - hh, 4, hh);
    }

    drawLane(ctx, lane, y, row) {
      const tr = this.model.trace;
      ctx.fillStyle = (this.rows.indexOf(row) % 2) ? C.laneA : C.laneB;
      ctx.fillRect(GUTTER, y, this.w - GUTTER, this.laneH);
      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER, y, this.w - GUTTER, this.laneH);
      ctx.clip();
      this.drawParks(ctx, lane, y + BAR_TOP, tr.parks);
      const dim = this.task !== null;
      this.drawPolls(ctx, lane, y + BAR_TOP, tr.polls, dim);
      this.drawSampleTicks(ctx, lane, y, tr.cpuSamples);
      if (this.task !== null) this.drawTaskHighlights(ctx, lane, y + BAR_TOP);
      this.drawHover(ctx, lane, y + BAR_TOP);
      this.drawSelection(ctx, lane, y + BAR_TOP);
      ctx.restore();
      this.stats.lanesDrawn++;
    }

    /* Visit the spans of a lane in view, merging those narrower than a pixel per pixel column. */
    forEachSpan(tab, spans, visitWide, visitColumn) {
      const { from, to } = spans;
      if (to <= from) return;
      const t0 = this.t0;
      const t1 = this.t1;
      const npp = this.nsPerPx;
      const start = tab.start;
      const end = tab.end;
      let i = M.lowerBound(end, from, to, t0);
      let colPx = -1;
      let colBusy = 0;
      let colMax = 0;
      let colFirst = -1;
      const flush = () => {
        if (colPx >= 0 && colBusy > 0) visitColumn(colPx, colBusy / npp, colMax, colFirst);
        colPx = -1;
        colBusy = 0;
        colMax = 0;
      };
      const small = spans.small;
      const large = spans.large;
      while (i < to && start[i] <= t1) {
        const rel = i - from;
        // Whole chunks narrower than half a pixel: take their summary, skip their spans.
        if (rel % large.size === 0 && i + large.size <= to) {
          const c = rel / large.size;
          if (large.last[c] - large.first[c] < npp * 0.5) {
            const px = Math.floor(this.xOf(large.first[c]));
            if (px !== colPx) { flush(); colPx = px; colFirst = i; }
            colBusy += large.busy[c];
            if (large.max[c] > colMax) colMax = large.max[c];
            i += large.size;
            continue;
          }
        }
        if (rel % small.size === 0 && i + small.size <= to) {
          const c = rel / small.size;
          if (small.last[c] - small.first[c] < npp * 0.5) {
            const px = Math.floor(this.xOf(small.first[c]));
            if (px !== colPx) { flush(); colPx = px; colFirst = i; }
            colBusy += small.busy[c];
            if (small.max[c] > colMax) colMax = small.max[c];
            i += small.size;
            continue;
          }
        }
        const s = start[i];
        const e = end[i];
        const x0 = this.xOf(s);
        const x1 = this.xOf(e);
        if (x1 - x0 >= 1.5) {
          flush();
          visitWide(i, x0, x1);
        } else {
          const px = Math.floor(x0);
          if (px !== colPx) { flush(); colPx = px; colFirst = i; }
          colBusy += e - s;
          const m = visitColumn.weight ? visitColumn.weight(i) : e - s;
          if (m > colMax) colMax = m;
        }
        i++;
      }
      flush();
    }

    drawPolls(ctx, lane, y, P, dim) {
      ctx.globalAlpha = dim ? 0.28 : 1;
      const showText = !dim;
      const tr = this.model.trace;
      this.forEachSpan(P, lane.polls, (i, x0, x1) => {
        const d = P.end[i] - P.start[i];
        ctx.fillStyle = M.colorOf(d);
        const a = Math.max(GUTTER - 2, x0);
        const b = Math.min(this.w + 2, x1);
        const w = b - a > 4 ? b - a - 1 : b - a; // a hairline gap tells neighbours apart
        ctx.fillRect(a, y, w, this.barH);
        if (showText && w > 70) {
          ctx.fillStyle = 'rgba(10,12,16,0.85)';
          ctx.font = '11px system-ui, sans-serif';
          ctx.textBaseline = 'middle';
          const loc = P.loc[i] >= 0 ? F.shortLocation(tr.strings[P.loc[i]]) : '';
          let text = F.duration(d) + '  task ' + P.task[i] + (loc ? '  ' + loc : '');
          const maxW = w - 8;
          if (ctx.measureText(text).width > maxW) text = F.duration(d) + '  task ' + P.task[i];
          if (ctx.measureText(text).width > maxW) text = F.duration(d);
          if (ctx.measureText(text).width <= maxW) ctx.fillText(text, a + 4, y + this.barH / 2 + 1);
        }
      }, (px, busyFrac, max) => {
        ctx.fillStyle = M.colorOf(max);
        const f = Math.min(1, busyFrac);
        // Height tells how busy the column is; colour tells its longest poll.
        const h = Math.max(4, this.barH * (0.35 + 0.65 * f));
        ctx.fillRect(px, y + this.barH - h, 1, h);
      });
      ctx.globalAlpha = 1;
    }

    drawParks(ctx, lane, y, K) {
      const mid = y + this.barH / 2;
      const tailH = 12;
      const npp = this.nsPerPx;
      const column = (px, busyFrac, maxWait) => {
        ctx.fillStyle = C.park;
        ctx.fillRect(px, mid - 1, 1, 2);
        if (maxWait > 0) {
          // A merged column: show the tail when the run-queue wait is at least ~a third of a pixel.
          const strength = Math.min(1, maxWait / (npp * 0.33));
          if (strength > 0.05) {
            ctx.globalAlpha = 0.35 + 0.65 * strength;
            ctx.fillStyle = C.schedTail;
            ctx.fillRect(px, mid - tailH / 2, 1, tailH);
            ctx.globalAlpha = 1;
          }
        }
      };
      column.weight = (i) => K.schedWait[i];
      this.forEachSpan(K, lane.parks, (i, x0, x1) => {
        const a = Math.max(GUTTER, x0);
        const b = Math.min(this.w, x1);
        ctx.fillStyle = C.park;
        ctx.fillRect(a, mid - 1, b - a, 2);
        // Park edges: small caps at both ends.
        ctx.fillRect(x0, mid - 4, 1, 8);
        const sw = K.schedWait[i];
        if (sw > 0) {
          // The thread was runnable but not running for the last sched_wait ns before the unpark.
          const ts = Math.max(x0, x1 - sw / npp);
          const wpx = Math.max(1, x1 - ts);
          ctx.fillStyle = C.schedTail;
          ctx.globalAlpha = 0.9;
          ctx.fillRect(x1 - wpx, mid - tailH / 2, wpx, tailH);
          ctx.globalAlpha = 1;
          if (wpx > 40) {
            ctx.fillStyle = '#1a1208';
            ctx.font = '10px system-ui, sans-serif';
            ctx.textBaseline = 'middle';
            let text = 'run queue ' + F.duration(sw);
            if (ctx.measureText(text).width > wpx - 8) text = F.duration(sw);
            if (ctx.measureText(text).width <= wpx - 8) ctx.fillText(text, x1 - wpx + 4, mid + 1);
          }
        }
      }, column);
    }

    drawSampleTicks(ctx, lane, y, S) {
      const { from, to } = lane.samples;
      if (to <= from) return;
      const a = M.lowerBound(S.ts, from, to, this.t0);
      const b = M.upperBound(S.ts, from, to, this.t1);
      // Lines through the polls only when samples are sparse enough to tell apart.
      const through = (b - a) < this.plotW / 6;
      let lastPx = [-10, -10];
      for (let i = a; i < b; i++) {
        const px = Math.round(this.xOf(S.ts[i]));
        const cs = S.source[i] === 1 ? 1 : 0;
        if (px === lastPx[cs]) continue;
        lastPx[cs] = px;
        if (cs && !through) {
          // Dense: a short line per pixel column, so that a run of them reads as a band.
          ctx.fillStyle = C.tickSwitch;
          ctx.globalAlpha = 0.75;
          ctx.fillRect(px, y + 2, 1, 6);
          ctx.globalAlpha = 1;
        } else if (cs) {
          ctx.fillStyle = C.tickSwitch;
          ctx.beginPath();
          ctx.moveTo(px - 3.5, y + 2);
          ctx.lineTo(px + 3.5, y + 2);
          ctx.lineTo(px, y + 9);
          ctx.closePath();
          ctx.fill();
        } else {
          ctx.fillStyle = C.tickCpu;
          ctx.fillRect(px, y + 3, 1, 7);
        }
        if (through) {
          ctx.globalAlpha = cs ? 0.85 : 0.6;
          ctx.fillStyle = cs ? C.tickSwitch : '#e8f3ff';
          ctx.fillRect(px, y + BAR_TOP, 1, this.barH);
          ctx.globalAlpha = 1;
        }
      }
    }

    drawQueueRow(ctx, y, h) {
      const Q = this.model.trace.queueSamples;
      ctx.fillStyle = '#141820';
      ctx.fillRect(GUTTER, y, this.w - GUTTER, h);
      ctx.fillStyle = C.gutterLine;
      ctx.fillRect(GUTTER, y, this.w - GUTTER, 1);
      if (!this.queueMax) {
        let m = 1;
        for (let i = 0; i < Q.count; i++) if (Q.value[i] > m) m = Q.value[i];
        this.queueMax = m;
      }
      const top = y + 8;
      const bottom = y + h - 6;
      const yOf = (v) => bottom - (v / this.queueMax) * (bottom - top);
      const a = Math.max(0, M.lowerBound(Q.ts, 0, Q.count, this.t0) - 1);
      const b = Math.min(Q.count, M.upperBound(Q.ts, 0, Q.count, this.t1) + 1);
      if (b <= a) return;
      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER, y, this.w - GUTTER, h);
      ctx.clip();
      ctx.beginPath();
      ctx.moveTo(this.xOf(Q.ts[a]), bottom);
      for (let i = a; i < b; i++) {
        const x = this.xOf(Q.ts[i]);
        ctx.lineTo(x, yOf(Q.value[i]));
        const next = i + 1 < b ? this.xOf(Q.ts[i + 1]) : x;
        ctx.lineTo(next, yOf(Q.value[i])); // a step: the depth holds until the next sample
      }
      ctx.lineTo(this.xOf(Q.ts[b - 1]), bottom);
      ctx.closePath();
      ctx.fillStyle = 'rgba(143,199,255,0.22)';
      ctx.fill();
      ctx.strokeStyle = '#8fc7ff';
      ctx.lineWidth = 1;
      ctx.stroke();
      ctx.restore();
    }

    drawQueueLabel(ctx, y, h) {
      ctx.fillStyle = C.gutter;
      ctx.fillRect(0, y, GUTTER - 1, h);
      ctx.fillStyle = C.gutterLine;
      ctx.fillRect(0, y, GUTTER, 1);
      ctx.textBaseline = 'alphabetic';
      ctx.fillStyle = C.label;
      ctx.font = '600 12px system-ui, sans-serif';
      ctx.fillText('global queue', 12, y + 22);
      ctx.fillStyle = C.sublabel;
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText('depth, max ' + (this.queueMax || '–'), 12, y + 38);
    }

    drawTaskHighlights(ctx, lane, y) {
      const P = this.model.trace.polls;
      let n = 0;
      ctx.fillStyle = C.highlight;
      ctx.strokeStyle = '#fff6c8';
      ctx.lineWidth = 1;
      let lastPx = -10;
      for (const i of this.taskPolls) {
        if (P.worker[i] !== lane.worker) continue;
        if (P.end[i] < this.t0 || P.start[i] > this.t1) continue;
        const x0 = this.xOf(P.start[i]);
        const x1 = this.xOf(P.end[i]);
        const w = Math.max(2, x1 - x0);
        if (w <= 2 && Math.round(x0) === lastPx) continue;
        lastPx = Math.round(x0);
        ctx.fillRect(x0, y - 2, w, this.barH + 4);
        if (w > 5) ctx.strokeRect(x0 + 0.5, y - 1.5, w - 1, this.barH + 3);
        n++;
      }
      this.stats.highlightedByWorker[lane.worker] = n;
    }

    drawHover(ctx, lane, y) {
      const h = this.hover;
      if (!h || h.worker !== lane.worker || (h.kind !== 'poll' && h.kind !== 'park') || this.drag) return;
      const tab = h.kind === 'poll' ? this.model.trace.polls : this.model.trace.parks;
      const x0 = this.xOf(tab.start[h.index]);
      const w = Math.max(1, this.xOf(tab.end[h.index]) - x0);
      ctx.strokeStyle = 'rgba(255,255,255,0.55)';
      ctx.lineWidth = 1;
      ctx.strokeRect(Math.round(x0) - 0.5, y - 1.5, Math.round(w) + 1, this.barH + 3);
    }

    drawSelection(ctx, lane, y) {
      const sel = this.selection;
      if (!sel || (sel.kind !== 'poll' && sel.kind !== 'park')) return;
      const tr = this.model.trace;
      const tab = sel.kind === 'poll' ? tr.polls : tr.parks;
      if (tab.worker[sel.index] !== lane.worker) return;
      const x0 = this.xOf(tab.start[sel.index]);
      const x1 = this.xOf(tab.end[sel.index]);
      const w = Math.max(3, x1 - x0);
      const xa = w === 3 ? (x0 + x1) / 2 - 1.5 : x0;
      ctx.strokeStyle = C.selected;
      ctx.lineWidth = 2;
      ctx.shadowColor = 'rgba(255,255,255,0.6)';
      ctx.shadowBlur = 6;
      ctx.strokeRect(xa - 1, y - 3, w + 2, this.barH + 6);
      ctx.shadowBlur = 0;
      if (w < 8) {
        // A marker above tiny selections so they can be found when zoomed out.
        ctx.fillStyle = C.selected;
        ctx.beginPath();
        ctx.moveTo(xa + w / 2 - 5, y - 12);
        ctx.lineTo(xa + w / 2 + 5, y - 12);
        ctx.lineTo(xa + w / 2, y - 5);
        ctx.closePath();
        ctx.fill();
      }
    }

    laneY(worker) {
      const row = this.rows.find((r) => r.kind === 'lane' && r.lane.worker === worker);
      return row ? row.y - this.scrollY + BAR_TOP + this.barH / 2 : null;
    }

    /* Where a wake came from: the waker's poll around that time, else the named worker. */
    wakeSource(w) {
      const W = this.model.trace.wakes;
      const P = this.model.trace.polls;
      const t = W.ts[w];
      const waker = W.waker[w];
      if (waker !== 0) {
        for (const lane of this.model.lanes) {
          const i = M.spanAt(P, lane.polls, t, 0);
          if (i >= 0 && P.task[i] === waker) return { worker: lane.worker, t };
        }
      }
      const tw = W.targetWorker[w];
      if (this.model.laneOf.has(tw)) return { worker: tw, t };
      return { worker: null, t };
    }

    /* The selected task's wakes; else the wake paired with a poll picked from the wake delays. */
    drawWakes(ctx) {
      const sel = this.selection;
      const selWake = sel && sel.kind === 'poll' && sel.wake >= 0 ? sel.wake : -1;
      if (this.task === null && selWake < 0) return;
      const W = this.model.trace.wakes;
      const P = this.model.trace.polls;
      const margin = (this.t1 - this.t0) * 0.5;
      let drawn = 0;
      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER, 0, this.w - GUTTER, this.h);
      ctx.clip();
      const draw = (w, destPoll, color) => {
        if (destPoll < 0) return;
        const src = this.wakeSource(w);
        const dx = this.xOf(P.start[destPoll]);
        const dy = this.laneY(P.worker[destPoll]);
        const sx = this.xOf(src.t);
        const external = src.worker === null;
        const sy = external ? 4 : this.laneY(src.worker);
        if (dy === null || sy === null) return;
        ctx.strokeStyle = color;
        ctx.fillStyle = color;
        ctx.lineWidth = 1.5;
        ctx.setLineDash(external ? [4, 3] : []);
        ctx.beginPath();
        ctx.moveTo(sx, sy);
        const bend = Math.max(18, Math.min(60, Math.abs(dx - sx) * 0.5));
        if (Math.abs(dy - sy) < 2) ctx.bezierCurveTo(sx + bend * 0.3, sy - bend, dx - bend * 0.3, dy - bend, dx, dy - this.barH / 2);
        else ctx.bezierCurveTo(sx, (sy + dy) / 2, dx, (sy + dy) / 2, dx, dy + (dy > sy ? -this.barH / 2 : this.barH / 2));
        ctx.stroke();
        ctx.setLineDash([]);
        const tipY = Math.abs(dy - sy) < 2 ? dy - this.barH / 2 : dy + (dy > sy ? -this.barH / 2 : this.barH / 2);
        const dir = Math.abs(dy - sy) < 2 ? 1 : (dy > sy ? 1 : -1);
        ctx.beginPath();
        ctx.moveTo(dx, tipY);
        ctx.lineTo(dx - 4, tipY - 7 * dir);
        ctx.lineTo(dx + 4, tipY - 7 * dir);
        ctx.closePath();
        ctx.fill();
        ctx.beginPath();
        ctx.arc(sx, sy, 3, 0, Math.PI * 2);
        ctx.fill();
        drawn++;
      };
      // Zoomed out, arrows closer than a few pixels would only draw a tangle: keep one of them.
      const visible = [];
      for (const w of this.taskWakes.incoming) {
        const t = W.ts[w];
        if (t >= this.t0 - margin && t <= this.t1 + margin) visible.push([w, true]);
      }
      for (const w of this.taskWakes.outgoing) {
        const t = W.ts[w];
        if (t >= this.t0 - margin && t <= this.t1 + margin) visible.push([w, false]);
      }
      const minGap = visible.length > 60 ? 12 : 0;
      let lastX = -Infinity;
      visible.sort((a, b) => W.ts[a[0]] - W.ts[b[0]]);
      for (const [w, incoming] of visible) {
        if (drawn > 600) break;
        const x = this.xOf(W.ts[w]);
        if (x - lastX < minGap) continue;
        lastX = x;
        const dest = incoming
          ? M.nextPollOf(this.model, this.taskPolls, W.ts[w])
          : M.nextPollOf(this.model, M.pollsOfTask(this.model, W.woken[w]), W.ts[w]);
        draw(w, dest, incoming ? C.wakeIn : C.wakeOut);
      }
      if (this.task === null) draw(selWake, sel.index, C.wakeIn);
      ctx.restore();
      this.stats.wakesDrawn = drawn;
    }

    drawCursor(ctx) {
      if (!this.mouse || this.mouse.x < GUTTER) return;
      ctx.fillStyle = C.cursor;
      ctx.fillRect(Math.round(this.mouse.x), 0, 1, this.h);
    }

    drawRangeDrag(ctx) {
      const r = this.rangeDrag;
      if (!r) return;
      const a = Math.min(r.x0, r.x1);
      const b = Math.max(r.x0, r.x1);
      ctx.fillStyle = C.rangeFill;
      ctx.fillRect(a, 0, b - a, this.h);
      ctx.fillStyle = C.rangeEdge;
      ctx.fillRect(a, 0, 1, this.h);
      ctx.fillRect(b, 0, 1, this.h);
      const text = F.duration(Math.abs(this.tOf(r.x1) - this.tOf(r.x0)));
      ctx.font = '600 12px system-ui, sans-serif';
      const tw = ctx.measureText(text).width + 12;
      ctx.fillStyle = 'rgba(20,30,50,0.9)';
      ctx.fillRect((a + b) / 2 - tw / 2, 8, tw, 20);
      ctx.fillStyle = '#dce8ff';
      ctx.textBaseline = 'middle';
      ctx.fillText(text, (a + b) / 2 - tw / 2 + 6, 18);
    }

    drawScrollbar(ctx) {
      const frac = this.h / this.contentH;
      const barH = Math.max(20, this.h * frac);
      const y = (this.scrollY / (this.contentH - this.h)) * (this.h - barH);
      ctx.fillStyle = 'rgba(255,255,255,0.18)';
      ctx.fillRect(this.w - 6, y, 4, barH);
    }

    /* ---------- axis ---------- */

    drawAxis() {
      const cv = this.els.axis;
      const ctx = cv.getContext('2d');
      ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
      const h = this.axisH;
      ctx.fillStyle = '#151922';
      ctx.fillRect(0, 0, this.w, h);
      ctx.fillStyle = C.axisLine;
      ctx.fillRect(0, h - 1, this.w, 1);
      if (!this.model) return;
      const tr = this.model.trace;
      const step = niceStep(this.nsPerPx * 110);
      const first = this.firstTick(step);
      ctx.font = '11px ui-monospace, SFMono-Regular, Menlo, monospace';
      ctx.textBaseline = 'middle';
      const abs = this.timeMode === 'absolute';
      for (let t = first; t <= this.t1; t += step) {
        const x = Math.round(this.xOf(t));
        if (x < GUTTER) continue;
        ctx.fillStyle = C.axisLine;
        ctx.fillRect(x, h - 8, 1, 8);
        ctx.fillStyle = C.axisText;
        const label = abs ? this.model.clock.absoluteTick(t, step) : (Math.abs(t - tr.timeStart) < step / 2 ? F.axisTime(0, step) : F.relTime(t - tr.timeStart, step));
        ctx.fillText(label, x + 4, h / 2 - 1);
      }
      // Minor ticks.
      ctx.fillStyle = C.axisLine;
      const minor = step / 5;
      for (let t = first - step; t <= this.t1; t += minor) {
        const x = Math.round(this.xOf(t));
        if (x >= GUTTER) ctx.fillRect(x, h - 4, 1, 4);
      }
      ctx.fillStyle = '#151922';
      ctx.fillRect(0, 0, GUTTER, h - 1);
      ctx.fillStyle = C.sublabel;
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText(abs ? (this.model.clock.hasWall ? 'UTC wall clock' : 'monotonic clock') : 'since trace start', 12, h / 2);
      if (this.mouse && this.mouse.x >= GUTTER) {
        const t = this.tOf(this.mouse.x);
        const label = abs ? this.model.clock.absoluteTick(t, this.nsPerPx) : F.relTime(t - tr.timeStart, this.nsPerPx);
        ctx.font = '600 11px ui-monospace, SFMono-Regular, Menlo, monospace';
        const tw = ctx.measureText(label).width + 10;
        const x = Math.min(this.w - tw, Math.max(GUTTER, this.mouse.x - tw / 2));
        ctx.fillStyle = '#3b82f6';
        ctx.fillRect(x, 3, tw, h - 8);
        ctx.fillStyle = '#fff';
        ctx.fillText(label, x + 5, h / 2 - 1);
      }
    }

    /* ---------- overview / range selector ---------- */

    overviewX(t) {
      const tr = this.model.trace;
      return GUTTER + (t - tr.timeStart) / Math.max(1, tr.timeEnd - tr.timeStart) * (this.w - GUTTER - 8);
    }
    overviewT(x) {
      const tr = this.model.trace;
      return tr.timeStart + (x - GUTTER) / (this.w - GUTTER - 8) * Math.max(1, tr.timeEnd - tr.timeStart);
    }

    drawOverview() {
      const cv = this.els.overview;
      const ctx = cv.getContext('2d');
      ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
      const h = this.overH;
      ctx.fillStyle = '#10131a';
      ctx.fillRect(0, 0, this.w, h);
      ctx.fillStyle = C.axisLine;
      ctx.fillRect(0, 0, this.w, 1);
      if (!this.model) return;
      const ov = this.model.overview;
      const x0 = GUTTER;
      const x1 = this.w - 8;
      const top = 6;
      const bottom = h - 12;
      // Busy fraction of all workers as an area.
      ctx.beginPath();
      ctx.moveTo(x0, bottom);
      for (let b = 0; b < ov.bins; b++) {
        const x = x0 + (b + 0.5) / ov.bins * (x1 - x0);
        ctx.lineTo(x, bottom - ov.busy[b] * (bottom - top));
      }
      ctx.lineTo(x1, bottom);
      ctx.closePath();
      const grad = ctx.createLinearGradient(0, top, 0, bottom);
      grad.addColorStop(0, 'rgba(88,196,168,0.75)');
      grad.addColorStop(1, 'rgba(88,196,168,0.12)');
      ctx.fillStyle = grad;
      ctx.fill();
      // Longest poll per bin, as a heat strip under the area.
      for (let b = 0; b < ov.bins; b++) {
        if (!(ov.maxDur[b] > 0)) continue;
        ctx.fillStyle = M.colorOf(ov.maxDur[b]);
        const xa = x0 + b / ov.bins * (x1 - x0);
        ctx.fillRect(xa, h - 9, Math.max(1, (x1 - x0) / ov.bins + 0.5), 5);
      }
      // The worst polls, marked.
      const P = this.model.trace.polls;
      ctx.fillStyle = '#ff5a5a';
      for (const p of this.model.longestPolls.slice(0, 10)) {
        const x = this.overviewX(P.start[p.index]);
        ctx.beginPath();
        ctx.moveTo(x - 3, top - 5);
        ctx.lineTo(x + 3, top - 5);
        ctx.lineTo(x, top + 1);
        ctx.closePath();
        ctx.fill();
      }
      // The brush: what the timeline shows.
      const bx0 = Math.max(x0, this.overviewX(this.t0));
      const bx1 = Math.min(x1, this.overviewX(this.t1));
      ctx.fillStyle = 'rgba(0,0,0,0.45)';
      ctx.fillRect(x0, 1, bx0 - x0, h - 1);
      ctx.fillRect(bx1, 1, x1 - bx1 + 8, h - 1);
      ctx.strokeStyle = C.rangeEdge;
      ctx.lineWidth = 1;
      ctx.strokeRect(bx0 + 0.5, 1.5, Math.max(2, bx1 - bx0 - 1), h - 3);
      ctx.fillStyle = C.rangeEdge;
      ctx.fillRect(bx0 - 1, h / 2 - 8, 3, 16);
      ctx.fillRect(bx1 - 2, h / 2 - 8, 3, 16);
      // Label in the gutter.
      ctx.fillStyle = '#10131a';
      ctx.fillRect(0, 1, GUTTER - 1, h - 1);
      ctx.fillStyle = C.sublabel;
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.fillText('overview · busy', 12, h / 2 - 7);
      ctx.fillText('drag to pick a range', 12, h / 2 + 8);
    }

    /* ---------- hit testing ---------- */

    hitTest(x, y) {
      if (!this.model || x < GUTTER) return null;
      const yy = y + this.scrollY;
      const row = this.rows.find((r) => yy >= r.y && yy < r.y + r.h);
      if (row && row.kind === 'span') return this.hitSpan(row, this.tOf(x), this.nsPerPx * 3);
      if (!row || row.kind !== 'lane') return null;
      const lane = row.lane;
      const tr = this.model.trace;
      const t = this.tOf(x);
      const slack = this.nsPerPx * 3;
      const local = yy - row.y;
      if (local < BAR_TOP - 2) {
        // The sample tick row.
        const S = tr.cpuSamples;
        const { from, to } = lane.samples;
        const i = M.lowerBound(S.ts, from, to, t - slack);
        let best = -1;
        for (let k = i; k < to && S.ts[k] <= t + slack; k++) {
          if (best < 0 || Math.abs(S.ts[k] - t) < Math.abs(S.ts[best] - t)) best = k;
        }
        if (best >= 0) return { kind: 'sample', index: best, worker: lane.worker };
      }
      const p = M.spanAt(tr.polls, lane.polls, t, slack);
      if (p >= 0 && t >= tr.polls.start[p] - slack && t <= tr.polls.end[p] + slack) {
        const k = M.spanAt(tr.parks, lane.parks, t, 0);
        // Prefer the park when the pointer is really inside it and the poll is only "near".
        if (k < 0 || (t >= tr.polls.start[p] && t <= tr.polls.end[p])) return { kind: 'poll', index: p, worker: lane.worker };
      }
      const k = M.spanAt(tr.parks, lane.parks, t, slack);
      if (k >= 0) return { kind: 'park', index: k, worker: lane.worker };
      return { kind: 'lane', worker: lane.worker, t };
    }

    /* The span of a sub-lane at t (within slack ns): the one whose interval holds t, else the
     * nearest within slack. */
    hitSpan(row, t, slack) {
      const spans = this.model.spans.spans;
      let best = -1;
      let bestD = Infinity;
      for (const i of row.list) {
        const s = spans[i];
        if (s.begin > t + slack) break;
        const d = t < s.begin ? s.begin - t : t > s.end ? t - s.end : 0;
        if (d <= slack && d < bestD) {
          best = i;
          bestD = d;
        }
      }
      return best >= 0 ? { kind: 'span', index: best } : null;
    }

    /* ---------- input ---------- */

    bindEvents() {
      const cv = this.els.lanes;
      cv.addEventListener('wheel', (e) => this.onWheel(e, cv), { passive: false });
      this.els.axis.addEventListener('wheel', (e) => this.onWheel(e, this.els.axis), { passive: false });
      cv.addEventListener('pointerdown', (e) => this.onPointerDown(e));
      cv.addEventListener('pointermove', (e) => this.onPointerMove(e));
      cv.addEventListener('pointerup', (e) => this.onPointerUp(e));
      cv.addEventListener('pointerleave', () => {
        this.mouse = null;
        this.hover = null;
        if (this.hooks.onHover) this.hooks.onHover(null);
        this.requestDraw();
      });
      cv.addEventListener('dblclick', (e) => {
        const hit = this.hitTest(e.offsetX, e.offsetY);
        if (hit && (hit.kind === 'poll' || hit.kind === 'park')) {
          const tab = hit.kind === 'poll' ? this.model.trace.polls : this.model.trace.parks;
          this.reveal(tab.start[hit.index], tab.end[hit.index]);
        } else {
          this.zoomAt(0.5, e.offsetX, true);
        }
      });
      const ov = this.els.overview;
      ov.addEventListener('pointerdown', (e) => this.onOverviewDown(e));
      ov.addEventListener('pointermove', (e) => this.onOverviewMove(e));
      ov.addEventListener('pointerup', (e) => this.onOverviewUp(e));
      ov.addEventListener('dblclick', () => this.fitAll(true));
      ov.addEventListener('wheel', (e) => {
        e.preventDefault();
        const x = GUTTER + (this.xFromOverview(e.offsetX) - GUTTER);
        this.zoomAt(Math.exp(e.deltaY * 0.002), x, false);
      }, { passive: false });
    }

    xFromOverview(ox) {
      return this.xOf(this.overviewT(ox));
    }

    onWheel(e, target) {
      if (!this.model) return;
      e.preventDefault();
      const x = e.offsetX;
      const scale = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.h : 1;
      const dx = e.deltaX * scale;
      const dy = e.deltaY * scale;
      if (target === this.els.lanes && x < GUTTER && !e.ctrlKey) {
        this.scrollBy(dy);
        return;
      }
      if (e.shiftKey && !e.ctrlKey) {
        // Shift + wheel: pan sideways.
        this.pan((dy || dx) / this.plotW, false);
        return;
      }
      if (Math.abs(dx) > Math.abs(dy) && !e.ctrlKey) {
        // Trackpad two-finger horizontal swipe.
        this.pan(dx / this.plotW, false);
        return;
      }
      // Wheel or pinch (ctrlKey): zoom around the pointer.
      const k = e.ctrlKey ? 0.01 : 0.0015;
      this.zoomAt(Math.exp(dy * k), Math.max(GUTTER, x), false);
    }

    onPointerDown(e) {
      if (!this.model || e.button !== 0) return;
      this.els.lanes.setPointerCapture(e.pointerId);
      this.drag = { x: e.offsetX, y: e.offsetY, t0: this.t0, t1: this.t1, scrollY: this.scrollY, moved: false, range: e.shiftKey && e.offsetX >= GUTTER };
      if (this.drag.range) this.rangeDrag = { x0: e.offsetX, x1: e.offsetX };
    }

    onPointerMove(e) {
      this.mouse = { x: e.offsetX, y: e.offsetY };
      const d = this.drag;
      if (d) {
        const dx = e.offsetX - d.x;
        const dy = e.offsetY - d.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
        if (d.range) {
          this.rangeDrag.x1 = Math.max(GUTTER, Math.min(this.w, e.offsetX));
          if (this.hooks.onRangeDrag) this.hooks.onRangeDrag(this.tOf(this.rangeDrag.x0), this.tOf(this.rangeDrag.x1));
        } else if (d.moved) {
          this.els.lanes.style.cursor = 'grabbing';
          const npp = (d.t1 - d.t0) / this.plotW;
          this.setView(d.t0 - dx * npp, d.t1 - dx * npp, false);
          const max = Math.max(0, this.contentH - this.h);
          this.scrollY = Math.max(0, Math.min(max, d.scrollY - dy));
        }
        this.requestDraw();
        return;
      }
      const hit = this.hitTest(e.offsetX, e.offsetY);
      this.hover = hit;
      this.els.lanes.style.cursor = hit && (hit.kind === 'poll' || hit.kind === 'park' || hit.kind === 'sample') ? 'pointer' : 'default';
      if (this.hooks.onHover) this.hooks.onHover(hit, e.clientX, e.clientY);
      this.requestDraw();
    }

    onPointerUp(e) {
      const d = this.drag;
      this.drag = null;
      this.els.lanes.style.cursor = 'default';
      if (!d) return;
      if (d.range) {
        const r = this.rangeDrag;
        this.rangeDrag = null;
        if (Math.abs(r.x1 - r.x0) > 3) {
          const a = this.tOf(Math.min(r.x0, r.x1));
          const b = this.tOf(Math.max(r.x0, r.x1));
          this.setView(a, b, true);
        }
        if (this.hooks.onRangeDrag) this.hooks.onRangeDrag(null);
        this.requestDraw();
        return;
      }
      if (d.moved) return;
      const hit = this.hitTest(e.offsetX, e.offsetY);
      if (this.hooks.onClick) this.hooks.onClick(hit, e);
    }

    /*
     * What a press on the overview at x does: a window edge that lies inside the strip resizes
     * the window, Shift inside the window moves it, anything else picks a new range. A plain drag
     * never moves the window, or a drag would do nothing at the starting view, where the window
     * covers the whole strip.
     */
    overviewMode(x, shift) {
      const bx0 = this.overviewX(this.t0);
      const bx1 = this.overviewX(this.t1);
      const inside0 = bx0 > GUTTER + 6;
      const inside1 = bx1 < this.w - 8 - 6;
      if (inside0 && Math.abs(x - bx0) < 6) return 'left';
      if (inside1 && Math.abs(x - bx1) < 6) return 'right';
      if (shift && x > bx0 && x < bx1) return 'move';
      return 'new';
    }

    onOverviewDown(e) {
      if (!this.model || e.button !== 0) return;
      this.els.overview.setPointerCapture(e.pointerId);
      const x = e.offsetX;
      this.ovDrag = { mode: this.overviewMode(x, e.shiftKey), x, t0: this.t0, t1: this.t1, anchor: this.overviewT(x) };
    }

    onOverviewMove(e) {
      const x = e.offsetX;
      const d = this.ovDrag;
      if (!d) {
        const mode = this.model ? this.overviewMode(x, e.shiftKey) : 'new';
        this.els.overview.style.cursor = mode === 'left' || mode === 'right' ? 'ew-resize' : mode === 'move' ? 'grab' : 'crosshair';
        return;
      }
      const t = this.overviewT(x);
      if (d.mode === 'move') {
        const dt = t - d.anchor;
        this.setView(d.t0 + dt, d.t1 + dt, false);
      } else if (d.mode === 'left') {
        this.setView(Math.min(t, d.t1 - MIN_SPAN_NS), d.t1, false);
      } else if (d.mode === 'right') {
        this.setView(d.t0, Math.max(t, d.t0 + MIN_SPAN_NS), false);
      } else if (Math.abs(x - d.x) > 2) {
        this.setView(Math.min(d.anchor, t), Math.max(d.anchor, t), false);
      }
    }

    onOverviewUp(e) {
      const d = this.ovDrag;
      this.ovDrag = null;
      if (d && d.mode === 'new' && Math.abs(e.offsetX - d.x) <= 2) {
        // A click: centre the view there.
        const span = this.t1 - this.t0;
        const t = this.overviewT(e.offsetX);
        this.setView(t - span / 2, t + span / 2, true);
      }
    }
  }

  D9.Timeline = Timeline;
  D9.timelineConst = { GUTTER, LANE_H, BAR_TOP, colors: C };
})(window.D9 = window.D9 || {});
