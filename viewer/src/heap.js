/*
 * The sampled heap (docs/heap-profiling.md): AllocEvent and FreeEvent weighted and summed by
 * allocation site exactly as the C model does (src/model/heap_sites.c, src/common/heap_weight.h),
 * so the viewer's totals are analyze's: in-use bytes over time (following the sampled frees)
 * and flame graphs of the bytes in use at the end and of the bytes allocated.
 *
 * A sample of s bytes at a rate of R bytes per sample stands for s/(1 − e^(−s/R)) bytes and
 * 1/(1 − e^(−s/R)) blocks; R is memory_profile.sample_rate_bytes of the first
 * SegmentMetadataEvent, which describes the run (later segments repeat it), applied from where
 * that event is read (512 KiB before it, or when it has none), as the C readers take it.
 */
(function (D9) {
  'use strict';

  const RATE_KEY = 'memory_profile.sample_rate_bytes';
  const DEFAULT_RATE = 512 * 1024;
  const SIZE_MAX = 2 ** 40 - 1; // the C model keeps sizes in 40 bits
  const LN2 = 0.6931471805599453;

  /* 1 − e^(−x), computed as src/common/exp_log.h does (the same operations on doubles, so the
   * same bits): a series below 0.5, else x = k ln 2 + r and e^(−r) by its Taylor series. */
  function oneMinusExpNeg(x) {
    if (!(x > 0)) return 0;
    if (x < 0.5) {
      let term = x;
      let sum = x;
      for (let n = 2; n < 20; n++) {
        term *= -x / n;
        sum += term;
      }
      return sum;
    }
    if (x > 700) return 1;
    const k = Math.trunc(x / LN2 + 0.5);
    const r = x - k * LN2;
    let term = 1;
    let e = 1;
    for (let n = 1; n < 20; n++) {
      term *= -r / n;
      e += term;
    }
    return 1 - e * 2 ** -k;
  }

  /* A sample's weight: the allocations it stands for (rate 0 or 1: every one was recorded). */
  function weight(size, rate) {
    if (rate <= 1 || size === 0) return 1;
    const p = oneMinusExpNeg(size / rate);
    return p > 0 ? 1 / p : 1;
  }

  /* The metadata value as the C side reads it: decimal digits only, nonzero, else ignored. */
  function parseRate(value) {
    const s = String(value);
    if (!/^[0-9]+$/.test(s)) return 0;
    let v = 0;
    for (let i = 0; i < s.length; i++) {
      if (v >= 2 ** 50) return 0; // past what the C side reads
      v = v * 10 + (s.charCodeAt(i) - 48);
    }
    return v;
  }

  function addrKey(lo, hi) {
    return hi < 0x200000 ? hi * 4294967296 + lo : hi + ':' + lo;
  }

  /*
   * compute(trace) -> null when the trace has no AllocEvent, else
   *   {rate, samples, frees, freesUnmatched, allocBytes, inuseBytes,
   *    sites: [{stack, allocBytes, allocBlocks, inuseBytes, inuseBlocks, peakInuseBytes, samples, frees}]
   *           (one per stack id, in order of first sample),
   *    series: {ts: Float64Array, inuse: Float64Array} (total bytes in use after each event),
   *    changes: {site: [], ts: [], inuse: []} (a site's bytes in use after each change of them)}
   */
  function compute(trace) {
    const A = trace.heapAllocs;
    const F = trace.heapFrees;
    if (!A || !A.count) return null;
    const meta = trace.metadata || [];
    // the run's rate: the first metadata event's (src/analysis/ingest.c reads only that one)
    let runRate = 0;
    if (meta.length) for (const [k, v] of meta[0].entries) if (k === RATE_KEY) runRate = parseRate(v) || runRate;
    const rateAt = (metaSeen) => (metaSeen > 0 && runRate) || DEFAULT_RATE;
    const sites = [];
    const siteOf = new Map(); // stack id -> site
    const live = new Map(); // address -> {site, size}
    const n = A.count + (F ? F.count : 0);
    const series = { ts: new Float64Array(n), inuse: new Float64Array(n) };
    const changes = { site: [], ts: [], inuse: [] };
    const changed = (s, ts) => {
      changes.site.push(s.index);
      changes.ts.push(ts);
      changes.inuse.push(s.inuseBytes);
    };
    let total = 0; // in use, every site
    let samples = 0;
    let frees = 0;
    let freesUnmatched = 0;
    let ia = 0;
    let jf = 0;
    for (let e = 0; e < n; e++) {
      const isAlloc = !F || jf >= F.count || (ia < A.count && A.seq[ia] < F.seq[jf]);
      if (isAlloc) {
        const i = ia++;
        let site = siteOf.get(A.stack[i]);
        if (!site) {
          site = { index: sites.length, stack: A.stack[i], allocBytes: 0, allocBlocks: 0, inuseBytes: 0, inuseBlocks: 0, peakInuseBytes: 0, samples: 0, frees: 0 };
          siteOf.set(A.stack[i], site);
          sites.push(site);
        }
        const r = rateAt(A.meta[i]);
        const size = Math.min(A.size[i] || 0, SIZE_MAX);
        const w = weight(size, r);
        samples++;
        site.samples++;
        site.allocBytes += w * size;
        site.allocBlocks += w;
        if (A.addrLo[i] || A.addrHi[i]) { // 0: its free would not be recorded
          const key = addrKey(A.addrLo[i], A.addrHi[i]);
          const old = live.get(key);
          if (old) { // its free was lost: the newer block holds the address now
            const ow = weight(old.size, r);
            old.site.inuseBytes -= ow * old.size;
            old.site.inuseBlocks -= ow;
            total -= ow * old.size;
            changed(old.site, A.ts[i]);
          }
          live.set(key, { site, size });
          site.inuseBytes += w * size;
          site.inuseBlocks += w;
          total += w * size;
          if (site.inuseBytes > site.peakInuseBytes) site.peakInuseBytes = site.inuseBytes;
          changed(site, A.ts[i]);
        }
        series.ts[e] = A.ts[i];
      } else {
        const j = jf++;
        const key = addrKey(F.addrLo[j], F.addrHi[j]);
        const blk = live.get(key);
        if (!blk) {
          freesUnmatched++; // allocated before the trace, or its sample was lost
        } else {
          const s = blk.site;
          const w = weight(blk.size, rateAt(F.meta[j]));
          s.inuseBytes -= w * blk.size;
          s.inuseBlocks -= w;
          total -= w * blk.size;
          if (s.inuseBytes < 0.5) { // rounding, as the C model clears it
            total -= s.inuseBytes;
            s.inuseBytes = 0;
            s.inuseBlocks = 0;
          }
          s.frees++;
          frees++;
          live.delete(key);
          changed(s, F.ts[j]);
        }
        series.ts[e] = F.ts[j];
      }
      series.inuse[e] = total > 0 ? total : 0;
    }
    let allocBytes = 0;
    let inuseBytes = 0;
    for (const s of sites) {
      allocBytes += s.allocBytes;
      inuseBytes += s.inuseBytes;
    }
    return {
      rate: runRate || DEFAULT_RATE, samples, frees, freesUnmatched, allocBytes, inuseBytes, sites, series, changes,
    };
  }

  /* Sites in the order of analyze's lists: by allocated or in-use bytes, largest first. */
  function ranked(heap, which) {
    const key = which === 'alloc' ? 'allocBytes' : 'inuseBytes';
    return heap.sites.filter((s) => s[key] > 0).sort((a, b) => b[key] - a[key]);
  }

  /* A flame graph's tree ({name, value, children: Map}, as flamegraph.js draws) of the bytes in
   * use at the end (which = 'inuse') or allocated ('alloc'); labelsOf(stack id) gives a stack's
   * frame names, root first. */
  function tree(heap, which, labelsOf) {
    const key = which === 'alloc' ? 'allocBytes' : 'inuseBytes';
    const root = { name: which === 'alloc' ? 'all bytes allocated' : 'all bytes in use at the end', value: 0, children: new Map() };
    for (const s of heap.sites) {
      const v = s[key];
      if (!(v > 0)) continue;
      root.value += v;
      let node = root;
      for (const name of labelsOf(s.stack)) {
        let child = node.children.get(name);
        if (!child) {
          child = { name, value: 0, children: new Map() };
          node.children.set(name, child);
        }
        child.value += v;
        node = child;
      }
    }
    return root;
  }

  /* "12.3 MiB", as analyze writes bytes */
  function bytes(b) {
    const unit = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let u = 0;
    let v = Math.abs(b);
    while (v >= 1024 && u < 4) {
      v /= 1024;
      u++;
    }
    return (b < 0 ? '-' : '') + v.toFixed(u ? 1 : 0) + ' ' + unit[u];
  }

  /* ---------- the panel (browser only) ---------- */

  /* A stack's frame names, root first, as the CPU flame graph labels them. */
  function labelsFor(model) {
    const cache = new Map();
    return (stack) => {
      let labels = cache.get(stack);
      if (!labels) {
        const frames = stack >= 0 ? D9.model.stackFrames(model, stack) : [];
        labels = [];
        for (let k = frames.length - 1; k >= 0; k--) labels.push(...D9.flamegraph.frameLabels(frames[k]));
        cache.set(stack, labels);
      }
      return labels;
    };
  }

  /* In use over time: a step line of the total, on a canvas as wide as its box, and of one
   * site's (index `site`, -1: none) in orange. */
  function drawChart(canvas, heap, trace, site) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 900;
    const h = canvas.clientHeight || 140;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const S = heap.series;
    let max = 0;
    for (let i = 0; i < S.inuse.length; i++) if (S.inuse[i] > max) max = S.inuse[i];
    const t0 = trace.timeStart;
    const span = Math.max(1, trace.timeEnd - t0);
    const padL = 70;
    const padB = 16;
    const x = (t) => padL + ((t - t0) / span) * (w - padL - 4);
    const y = (v) => h - padB - (max > 0 ? (v / max) * (h - padB - 6) : 0);
    g.strokeStyle = '#3a4150';
    g.beginPath();
    g.moveTo(padL, 4);
    g.lineTo(padL, h - padB);
    g.lineTo(w - 4, h - padB);
    g.stroke();
    g.fillStyle = '#9aa4b2';
    g.font = '11px sans-serif';
    g.fillText(bytes(max), 4, 12);
    g.fillText('0 B', 4, h - padB);
    g.fillText(D9.format.offset(0, span / 1000), padL, h - 3);
    const endLabel = D9.format.offset(span, span / 1000);
    g.fillText(endLabel, w - 4 - g.measureText(endLabel).width, h - 3);
    g.strokeStyle = '#58c4a8';
    g.lineWidth = 1.5;
    g.beginPath();
    let prev = 0;
    g.moveTo(x(t0), y(0));
    for (let i = 0; i < S.ts.length; i++) {
      const xi = x(S.ts[i]);
      g.lineTo(xi, y(prev));
      g.lineTo(xi, y(S.inuse[i]));
      prev = S.inuse[i];
    }
    g.lineTo(x(trace.timeEnd), y(prev));
    g.stroke();
    if (site < 0) return;
    const C = heap.changes;
    g.strokeStyle = SITE_COLOUR;
    g.beginPath();
    g.moveTo(x(t0), y(0));
    prev = 0;
    for (let i = 0; i < C.site.length; i++) {
      if (C.site[i] !== site) continue;
      const xi = x(C.ts[i]);
      g.lineTo(xi, y(prev));
      g.lineTo(xi, y(C.inuse[i]));
      prev = C.inuse[i];
    }
    g.lineTo(x(trace.timeEnd), y(prev));
    g.stroke();
  }
  const SITE_COLOUR = '#f0a030';

  /* Events the recorder dropped (DroppedEventsEvent's counts): a lost sample makes the sums short,
   * a lost free leaves its block counted in use to the end. */
  function dropsNote(trace) {
    const d = trace.drops; // every DroppedEventsEvent, as the decoder keeps them (no cap)
    if (!d) return '';
    let n = 0;
    for (let i = 0; i < d.count; i++) n += d.lost[i] || 0;
    return n > 0 ? '. The recorder dropped ' + n +
      ' events: samples or frees among them leave these sums short, or blocks counted in use that were freed' : '';
  }

  const view = { model: null, heap: null, root: null, focus: null, drawn: null, site: -1 };

  /* Whether the trace has heap samples (the top bar's Heap button shows then). */
  function present(trace) {
    return !!(trace && trace.heapAllocs && trace.heapAllocs.count);
  }

  function render(model) {
    const $ = (id) => document.getElementById(id);
    if (view.model !== model) {
      view.model = model;
      view.heap = compute(model.trace);
      view.focus = null;
      view.root = null;
      view.site = -1;
    }
    const heap = view.heap;
    if (!heap) {
      $('heap-summary').textContent = 'No heap samples in this trace. Record with DIAL9_MEMORY_PROFILE_ENABLED=1.';
      $('heap-boxes').innerHTML = '';
      $('heap-sites').innerHTML = '';
      return;
    }
    $('heap-summary').textContent = heap.samples + ' samples (one per ' + heap.rate + ' bytes on average), ' +
      heap.frees + ' frees of sampled blocks, ' + heap.freesUnmatched + ' of blocks sampled before the trace; allocated ' +
      bytes(heap.allocBytes) + ', in use at the end ' + bytes(heap.inuseBytes) + ' (weighted estimates)' + dropsNote(model.trace);
    drawChart($('heap-chart'), heap, model.trace, view.site);
    drawFlame();
    const which = $('heap-kind').value;
    const labels = labelsFor(model);
    const esc = D9.format.escapeHtml;
    const rows = ranked(heap, which).slice(0, 20).map((s) => {
      const l = labels(s.stack);
      return '<tr data-site="' + s.index + '"' + (s.index === view.site ? ' class="on"' : '') +
        ' title="click: its bytes in use over time, in orange"><td class="num">' + bytes(s.inuseBytes) + '</td><td class="num">' + bytes(s.allocBytes) +
        '</td><td class="num">' + s.samples + '</td><td class="num">' + s.frees + '</td><td title="' + esc(l.slice().reverse().join(' ← ')) + '">' +
        esc(l.length ? l[l.length - 1] : '<no stack>') + '</td></tr>';
    });
    $('heap-sites').innerHTML = '<thead><tr><th>in use at end</th><th>allocated</th><th>samples</th><th>frees</th><th>site</th></tr></thead><tbody>' +
      rows.join('') + '</tbody>';
  }

  function drawFlame() {
    const $ = (id) => document.getElementById(id);
    const which = $('heap-kind').value;
    if (!view.root || view.root.which !== which) {
      view.root = tree(view.heap, which, labelsFor(view.model));
      view.root.which = which;
      view.focus = null;
    }
    const box = $('heap-boxes');
    if (!view.root.value) {
      view.drawn = null;
      box.innerHTML = '';
      box.style.height = '0px';
      $('heap-fg-summary').textContent = which === 'alloc' ? 'Nothing allocated.' : 'Nothing in use at the end of the trace.';
      return;
    }
    view.drawn = D9.flamegraph.render(view.root, view.focus, box.clientWidth || 900, bytes);
    box.innerHTML = view.drawn.html;
    box.style.height = view.drawn.height + 'px';
    $('heap-fg-summary').textContent = bytes(view.root.value) + (which === 'alloc' ? ' allocated' : ' in use at the end') +
      (view.focus ? ' · zoomed on ' + view.focus.name + ' (click it to zoom out)' : ' · click a frame to zoom in');
  }

  /* A click in the flame graph: zoom on that frame, or back out from the top one. */
  function clickBox(box) {
    if (!box || !view.drawn) return;
    const node = view.drawn.nodes[Number(box.dataset.i)];
    view.focus = node === view.focus ? null : node;
    drawFlame();
  }

  /* A click on a site's row: its own in-use line in the chart (again: the total alone). */
  function clickSite(row) {
    if (!row || !view.heap) return;
    const i = Number(row.dataset.site);
    view.site = i === view.site ? -1 : i;
    render(view.model);
  }

  D9.heap = { compute, dropsNote, weight, oneMinusExpNeg, parseRate, ranked, tree, bytes, present, render, clickBox, clickSite, RATE_KEY, DEFAULT_RATE, view };
})(typeof window !== 'undefined' ? (window.D9 = window.D9 || {}) : (globalThis.D9 = globalThis.D9 || {}));
