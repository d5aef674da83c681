/*
 * A/B mode: two traces (A and B opened apart), or two windows of one (A = a visible range,
 * B = another), compared per spawn location as `dial9 diff` groups them: how many polls, their
 * p50 and p99, and their durations as two overlaid histograms on log buckets (4 a decade).
 *
 * A window holds the polls that start in it, [from, to), as `dial9 diff --a-from/--a-to` and
 * `analyze --from/--to` count them; polls without a spawn location are the group "<unknown>",
 * as diff names it. Quantiles here are exact (nearest rank over the durations); diff's come from
 * analyze's histogram buckets, so they may differ in the last digits, the counts never.
 */
(function (D9) {
  'use strict';

  const UNKNOWN_LOC = '<unknown>';
  const PER_DECADE = 4;

  /* Per spawn location, the polls of `trace` that start in [from, to) (the whole trace when
   * from/to are not numbers): Map name -> {count, total, durations (sorted Float64Array)}. */
  function groups(trace, from, to) {
    const P = trace.polls;
    const lo = Number.isFinite(from) ? from : -Infinity;
    const hi = Number.isFinite(to) ? to : Infinity;
    const lists = new Map();
    for (let i = 0; i < P.count; i++) {
      if (P.start[i] < lo || P.start[i] >= hi) continue;
      const name = P.loc[i] >= 0 ? trace.strings[P.loc[i]] : UNKNOWN_LOC;
      let l = lists.get(name);
      if (!l) lists.set(name, (l = []));
      l.push(Math.max(0, P.end[i] - P.start[i]));
    }
    const out = new Map();
    for (const [name, l] of lists) {
      const d = Float64Array.from(l).sort();
      let total = 0;
      for (const v of d) total += v;
      out.set(name, { count: d.length, total, durations: d });
    }
    return out;
  }

  /* Nearest-rank quantile of sorted values; NaN when there are none. */
  function quantile(sorted, q) {
    if (!sorted.length) return NaN;
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  }

  /* The log bucket of a duration: [10^(k/4), 10^((k+1)/4)) ns; 0 ns in bucket 0 with 1 ns. */
  function bucketOf(ns) {
    return ns < 1 ? 0 : Math.floor(PER_DECADE * Math.log10(ns) + 1e-9);
  }

  function histogram(sorted) {
    const h = new Map();
    for (const v of sorted) {
      const b = bucketOf(v);
      h.set(b, (h.get(b) || 0) + 1);
    }
    return h;
  }

  /* The rows of the comparison: one per location of either side, the most time first. */
  function compare(a, b) {
    const names = new Set([...a.keys(), ...b.keys()]);
    const empty = { count: 0, total: 0, durations: new Float64Array(0) };
    const rows = [];
    for (const name of names) {
      const x = a.get(name) || empty;
      const y = b.get(name) || empty;
      rows.push({
        name,
        a: { count: x.count, total: x.total, p50: quantile(x.durations, 0.5), p99: quantile(x.durations, 0.99), hist: histogram(x.durations) },
        b: { count: y.count, total: y.total, p50: quantile(y.durations, 0.5), p99: quantile(y.durations, 0.99), hist: histogram(y.durations) },
      });
    }
    rows.sort((r, s) => Math.max(s.a.total, s.b.total) - Math.max(r.a.total, r.b.total) || (r.name < s.name ? -1 : 1));
    return rows;
  }

  /* Two overlaid histograms, each side's counts as fractions of its polls (sides of different
   * sizes compare by shape): A filled, B outlined. */
  function histSvg(row) {
    const W = 220;
    const H = 40;
    const keys = [...row.a.hist.keys(), ...row.b.hist.keys()];
    if (!keys.length) return '';
    const k0 = Math.min(...keys);
    const k1 = Math.max(...keys);
    const n = k1 - k0 + 1;
    const bw = W / Math.max(n, 8);
    const frac = (side, k) => (side.count ? (side.hist.get(k) || 0) / side.count : 0);
    let top = 0;
    for (let k = k0; k <= k1; k++) top = Math.max(top, frac(row.a, k), frac(row.b, k));
    const y = (f) => H - 2 - (H - 4) * (top ? f / top : 0);
    let bars = '';
    for (let k = k0; k <= k1; k++) {
      const f = frac(row.a, k);
      if (f > 0) bars += '<rect x="' + ((k - k0) * bw).toFixed(1) + '" y="' + y(f).toFixed(1) + '" width="' + Math.max(1, bw - 1).toFixed(1) + '" height="' + (H - 2 - y(f)).toFixed(1) + '"/>';
    }
    let line = '';
    if (row.b.count) {
      const pts = [];
      for (let k = k0; k <= k1; k++) {
        const yy = y(frac(row.b, k)).toFixed(1);
        pts.push(((k - k0) * bw).toFixed(1) + ',' + yy, ((k - k0 + 1) * bw).toFixed(1) + ',' + yy);
      }
      line = '<polyline points="' + pts.join(' ') + '"/>';
    }
    const F = D9.format;
    const edge = (k) => F.duration(Math.pow(10, k / PER_DECADE));
    return '<svg class="ab-hist" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '">' +
      '<title>poll durations, ' + edge(k0) + ' … ' + edge(k1 + 1) + ' (log scale); A filled, B outlined</title>' +
      '<g class="a">' + bars + '</g><g class="b">' + line + '</g></svg>' +
      '<div class="ab-axis muted"><span>' + edge(k0) + '</span><span>' + edge(k1 + 1) + '</span></div>';
  }

  function tableHtml(rows) {
    const F = D9.format;
    const esc = F.escapeHtml;
    const dur = (v) => (Number.isFinite(v) ? F.duration(v) : '–');
    const change = (r) => {
      if (!r.a.count) return '<span class="ab-new">only in B</span>';
      if (!r.b.count) return '<span class="muted">only in A</span>';
      const ratio = r.b.p50 / Math.max(1, r.a.p50);
      return 'p50 ×' + (ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2));
    };
    return '<table class="ab-table" id="ab-table"><thead><tr><th>spawn location</th><th class="num">polls A</th><th class="num">polls B</th>' +
      '<th class="num">p50 A</th><th class="num">p50 B</th><th class="num">p99 A</th><th class="num">p99 B</th><th>durations</th><th></th></tr></thead><tbody>' +
      rows.map((r) => '<tr data-loc="' + esc(r.name) + '" data-count-a="' + r.a.count + '" data-count-b="' + r.b.count + '">' +
        '<td class="mono" title="' + esc(r.name) + '">' + esc(r.name) + '</td>' +
        '<td class="num">' + F.count(r.a.count) + '</td><td class="num">' + F.count(r.b.count) + '</td>' +
        '<td class="num">' + dur(r.a.p50) + '</td><td class="num">' + dur(r.b.p50) + '</td>' +
        '<td class="num">' + dur(r.a.p99) + '</td><td class="num">' + dur(r.b.p99) + '</td>' +
        '<td>' + histSvg(r) + '</td><td class="small">' + change(r) + '</td></tr>').join('') +
      '</tbody></table>';
  }

  /* ---- the drawer (browser only) ---- */

  const state = { mode: 'traces', a: null, b: null, api: null }; // a, b: {label, trace, from, to}

  function $(id) {
    return document.getElementById(id);
  }

  function sideText(side, name) {
    const F = D9.format;
    if (!side) return '<b>' + name + '</b> <span class="muted">' + (name === 'A' ? 'not chosen' : 'not chosen: open a trace or pick a window') + '</span>';
    const tr = side.trace;
    const windowed = Number.isFinite(side.from);
    const range = windowed ? F.offset(side.from - tr.timeStart, 1e3) + ' … ' + F.offset(side.to - tr.timeStart, 1e3) : 'the whole trace';
    return '<b>' + name + '</b> <span class="mono">' + F.escapeHtml(side.label) + '</span> · ' + range;
  }

  function render() {
    const body = $('ab-body');
    if (!body) return;
    $('ab-side-a').innerHTML = sideText(state.a, 'A');
    $('ab-side-b').innerHTML = sideText(state.b, 'B');
    for (const b of $('ab-mode').querySelectorAll('button')) b.classList.toggle('on', b.dataset.mode === state.mode);
    $('ab-traces').hidden = state.mode !== 'traces';
    $('ab-windows').hidden = state.mode !== 'windows';
    if (!state.a || !state.b) {
      body.innerHTML = '<p class="muted">' + (state.mode === 'traces'
        ? 'Open the trace B to compare with A (A is the trace in the viewer unless you open another).'
        : 'Zoom the timeline to a time range and press "A = visible range", then to another and press "B = visible range".') + '</p>';
      return;
    }
    const ga = groups(state.a.trace, state.a.from, state.a.to);
    const gb = groups(state.b.trace, state.b.from, state.b.to);
    const count = (g) => { let n = 0; for (const v of g.values()) n += v.count; return n; };
    body.innerHTML = '<p class="small" id="ab-summary">A: ' + D9.format.count(count(ga)) + ' polls · B: ' + D9.format.count(count(gb)) +
      ' polls · <span class="ab-key a"></span>A <span class="ab-key b"></span>B: each side\'s share of its polls per duration bucket</p>' +
      tableHtml(compare(ga, gb));
  }

  async function openSide(which, fileList) {
    if (!fileList || !fileList.length) return;
    const files = await D9.loader.readFiles(fileList);
    const label = files.length === 1 ? files[0].name : files.length + ' files';
    $('ab-body').innerHTML = '<p class="muted">Decoding ' + D9.format.escapeHtml(label) + '…</p>';
    try {
      const r = await D9.loader.decodeFiles(files, {});
      state[which] = { label, trace: r.trace, from: NaN, to: NaN, opened: true };
    } catch (e) {
      state[which] = null;
      render();
      $('ab-body').innerHTML = '<p class="callout warn">Could not read ' + D9.format.escapeHtml(label) + ': ' + D9.format.escapeHtml(e.message || String(e)) + '</p>';
      return;
    }
    render();
  }

  function setWindow(which) {
    const model = state.api.model();
    if (!model) return;
    const [t0, t1] = state.api.view();
    state[which] = { label: viewerLabel(model), trace: model.trace, from: t0, to: t1 };
    render();
  }

  function setMode(mode) {
    if (mode === state.mode) return;
    state.mode = mode;
    state.a = null;
    state.b = null;
    if (mode === 'traces') useViewerTrace();
    render();
  }

  function viewerLabel(model) {
    const files = (model.trace.files || []).map((f) => f.name).filter(Boolean);
    return files.length === 1 ? files[0] : files.length ? files.length + ' files' : 'the trace in the viewer';
  }

  function useViewerTrace() {
    const model = state.api.model();
    if (model && !state.a) state.a = { label: viewerLabel(model), trace: model.trace, from: NaN, to: NaN };
  }

  /* api: {model() -> the viewer's model, view() -> [t0, t1] visible} */
  function init(api) {
    state.api = api;
    $('ab-btn').onclick = () => toggle();
    for (const b of $('ab-mode').querySelectorAll('button')) b.onclick = () => setMode(b.dataset.mode);
    $('ab-open-a').onclick = () => $('ab-file-a').click();
    $('ab-open-b').onclick = () => $('ab-file-b').click();
    $('ab-file-a').onchange = (e) => openSide('a', e.target.files);
    $('ab-file-b').onchange = (e) => openSide('b', e.target.files);
    $('ab-set-a').onclick = () => setWindow('a');
    $('ab-set-b').onclick = () => setWindow('b');
  }

  function toggle(show) {
    const el = $('ab');
    el.hidden = show === undefined ? !el.hidden : !show;
    if (!el.hidden) {
      if (state.mode === 'traces') useViewerTrace();
      render();
    }
  }

  /* A new trace in the viewer: the windows and a default A were of the old one. */
  function traceChanged() {
    if (state.mode === 'windows') state.a = state.b = null;
    else if (state.a && !state.a.opened) state.a = null;
    if ($('ab') && !$('ab').hidden) toggle(true);
  }

  D9.ab = { groups, quantile, bucketOf, compare, init, toggle, traceChanged, state, UNKNOWN_LOC };
})(typeof window !== 'undefined' ? (window.D9 = window.D9 || {}) : (globalThis.D9 = globalThis.D9 || {}));
