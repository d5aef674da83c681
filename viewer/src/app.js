/*
 * The viewer application: loading (picker, drop, ?trace= URLs, demo), states (empty, loading,
 * error, ready), selection and points of interest, keyboard shortcuts.
 */
(function (D9) {
  'use strict';

  const F = D9.format;
  const P = D9.panels;
  const $ = (id) => document.getElementById(id);

  // The demo recorded by this project; else dial9's own demo trace when the page is served by
  // viewer/tools/serve.mjs, which maps ../shared/ to /shared/.
  const DEMO_URLS = ['demo/demo-trace.bin', 'demo/demo-trace.bin.gz', '../shared/fixtures/dial9-demo-trace.bin'];

  const state = {
    status: 'empty',
    model: null,
    info: null,
    poiKind: 'polls',
    poiActive: -1,
    selection: null,
    loadSeq: 0,
  };
  let timeline = null;

  function setStatus(s) {
    state.status = s;
    document.body.dataset.state = s;
    $('empty').hidden = s !== 'empty';
    $('loading').hidden = s !== 'loading';
    $('error').hidden = s !== 'error';
  }

  /* ---------- loading ---------- */

  async function load(getFiles, label) {
    const seq = ++state.loadSeq;
    setStatus('loading');
    $('loading-title').textContent = 'Loading ' + label + '…';
    $('loading-detail').textContent = '';
    $('loading-bar').style.width = '2%';
    let files;
    try {
      files = await getFiles();
    } catch (e) {
      if (seq !== state.loadSeq) return;
      showError('Could not load ' + label, e.message || String(e), '', null);
      return;
    }
    if (!files.length) {
      setStatus(state.model ? 'ready' : 'empty');
      return;
    }
    const totalBytes = files.reduce((a, f) => a + f.bytes.byteLength, 0);
    const names = files.map((f) => f.name);
    $('loading-title').textContent = 'Decoding ' + (names.length === 1 ? names[0] : names.length + ' files') + '…';
    $('loading-detail').textContent = F.bytes(totalBytes);
    try {
      const r = await D9.loader.decodeFiles(files, {
        onProgress(done, total) {
          if (seq !== state.loadSeq) return;
          $('loading-bar').style.width = Math.max(2, Math.round(100 * done / Math.max(1, total))) + '%';
          $('loading-detail').textContent = F.bytes(done) + ' of ' + F.bytes(total) + ' decoded';
        },
        onStage(text) {
          if (seq === state.loadSeq) $('loading-detail').textContent = text + '…';
        },
      });
      if (seq !== state.loadSeq) return;
      showTrace(r.trace, { timings: r.timings, where: r.where });
    } catch (e) {
      if (seq !== state.loadSeq) return;
      if (e && e.decodeError) {
        const where = e.file ? e.file : names.length === 1 ? names[0] : '';
        const notTrace = /bad magic/.test(e.message);
        showError(notTrace ? 'This is not a dial9 trace' : 'This trace could not be read', e.message,
          (where ? 'File: ' + where + '. ' : '') +
          (notTrace ? 'dial9 trace files start with the bytes 54 52 43 00 ("TRC\\0"), or are gzip files holding such data.'
            : 'The data is corrupt from the byte offset given above on; frames carry no length, so reading cannot go on past it.'),
          e.partial);
      } else {
        showError('Could not load ' + label, (e && e.message) || String(e), '', null);
      }
    }
  }

  function showError(title, message, hint, partial) {
    const usable = partial && partial.counts && partial.counts.events > 0;
    const showPartial = () => showTrace(partial, { partial: true, error: message });
    // With a trace on screen, a failed load of another one keeps it: the error is a banner.
    if (state.model) {
      setStatus('ready');
      banner('error', [title + ': ' + message + (hint ? ' ' + hint : '')],
        usable ? { label: 'Show the ' + F.count(partial.counts.events) + ' events read before the error', run: showPartial } : null);
      return;
    }
    setStatus('error');
    $('error-title').textContent = title;
    $('error-message').textContent = message;
    $('error-hint').textContent = hint || '';
    const btn = $('error-partial');
    btn.hidden = !usable;
    btn.textContent = usable ? 'Show the ' + F.count(partial.counts.events) + ' events read before the error' : '';
    btn.onclick = usable ? showPartial : null;
    document.title = 'dial9 trace viewer — error';
  }

  /* A banner above the workspace (lines of text; an optional {label, run} button), dismissable. */
  function banner(kind, lines, action) {
    const el = $('banner');
    if (!lines || !lines.length) {
      el.hidden = true;
      el.innerHTML = '';
      return;
    }
    el.className = 'banner' + (kind === 'error' ? ' error' : '');
    el.innerHTML = '<span class="banner-icon">' + (kind === 'error' ? '✖' : '⚠') + '</span><div id="banner-text">' +
      (lines.length === 1 ? F.escapeHtml(lines[0]) : '<ul>' + lines.map((l) => '<li>' + F.escapeHtml(l) + '</li>').join('') + '</ul>') +
      '</div>' + (action ? '<button class="btn tiny" id="banner-action">' + F.escapeHtml(action.label) + '</button>' : '') +
      '<button class="btn tiny" id="banner-close" title="Dismiss">✕</button>';
    el.hidden = false;
    $('banner-close').onclick = () => banner(null, null);
    if (action) $('banner-action').onclick = action.run;
    if (timeline) requestAnimationFrame(() => timeline.resize());
  }

  function showTrace(trace, info) {
    const t0 = performance.now();
    const model = D9.model.build(trace);
    info.modelMs = performance.now() - t0;
    state.model = model;
    state.info = info;
    if (D9.ab) D9.ab.traceChanged();
    state.selection = null;
    state.poiActive = -1;
    timeline.setModel(model);
    setStatus('ready');
    const notes = [];
    if (info.partial) notes.push('Stopped at an error — ' + info.error + '. Showing the ' + F.count(trace.counts.events) + ' events read before it.');
    for (const n of trace.notes) {
      if (/the data ends/.test(n)) notes.push('This trace is truncated: ' + n + '. Showing the ' + F.count(trace.counts.events) + ' events before it.');
      else notes.push(n);
    }
    if (!model.lanes.length) {
      notes.push(trace.counts.events
        ? 'No worker activity (PollStart/PollEnd or WorkerPark/WorkerUnpark events) in this trace: ' + F.count(trace.counts.events) + ' events of other kinds. See Trace info.'
        : 'This trace holds no events.');
    }
    for (const c of model.coverage) {
      if (!c.partial) continue;
      const parts = Object.keys(c.byMode).filter((m) => m !== 'full').map((m) => m.replace('_', ' ') + ' ' + F.duration(c.byMode[m]));
      notes.push('Partial coverage: ' + c.source + ' was not fully recorded for ' + F.duration(c.partialNs) + ' of ' +
        F.duration(c.coveredNs) + ' (' + parts.join(', ') + ') by the cost governor (DIAL9_OVERHEAD_BUDGET_PCT). ' +
        'No blocking shown there means not recorded, not "no blocking"; the timeline hatches those periods.');
    }
    banner(info.partial ? 'error' : 'warn', notes);
    P.renderSummary(model, info);
    fitSummary();
    // A sensible first tab: sched delays only when there are no polls at all.
    state.poiKind = model.longestPolls.length || !model.largestSchedWaits.length ? 'polls' : 'sched';
    syncPoiKindButtons();
    P.renderPoi(model, state.poiKind, state.poiActive);
    renderDetails();
    P.renderInfo(model, info);
    $('heap-btn').hidden = !D9.heap.present(trace);
    if (!$('heap').hidden) D9.heap.render(model);
    const names = trace.files.map((f) => f.name).filter(Boolean);
    document.title = (names.length ? names.join(', ') + ' — ' : '') + 'dial9 trace viewer';
    window.dial9Viewer.loaded = {
      events: trace.counts.events,
      decodeMs: info.timings ? info.timings.decodeMs : null,
      gunzipMs: info.timings ? info.timings.gunzipMs : null,
      modelMs: info.modelMs,
      where: info.where,
    };
    timeline.els.lanes.focus({ preventScroll: true });
  }

  /* The summary chips on the top bar's row when they fit there whole, else on a row of their own. */
  function fitSummary() {
    const bar = document.querySelector('.topbar');
    const sum = $('trace-summary');
    bar.classList.remove('two-rows');
    if (sum.scrollWidth > sum.clientWidth + 1) bar.classList.add('two-rows');
  }

  /* ---------- selection ---------- */

  function renderDetails() {
    if (!state.model) return;
    P.renderDetails(state.model, state.selection, {
      task: timeline.task,
      taskPolls: timeline.taskPolls,
      taskWakes: timeline.taskWakes,
    });
  }

  function select(sel, opts) {
    opts = opts || {};
    state.selection = sel;
    timeline.select(sel && (sel.kind === 'poll' || sel.kind === 'park' || sel.kind === 'span') ? sel : null);
    // Keep the points-of-interest cursor on the selection when it is in the list.
    if (!sel) {
      state.poiActive = -1;
      P.renderPoi(state.model, state.poiKind, -1);
    } else if (!opts.keepPoi) {
      const items = P.poiItems(state.model, state.poiKind);
      const want = state.poiKind === 'sched' ? sel.kind === 'park' : sel.kind === 'poll';
      const r = want ? items.findIndex((it) => it.index === sel.index) : -1;
      state.poiActive = r;
      P.renderPoi(state.model, state.poiKind, state.poiActive);
    }
    renderDetails();
    if (sel && opts.reveal) revealSelection();
  }

  function revealSelection() {
    const sel = state.selection;
    if (!sel || !state.model) return;
    const tr = state.model.trace;
    if (sel.kind === 'sample') {
      const S = tr.cpuSamples;
      timeline.reveal(S.ts[sel.index] - 5e5, S.ts[sel.index] + 5e5, S.worker[sel.index]);
      return;
    }
    if (sel.kind === 'span') {
      const s = state.model.spans.spans[sel.index];
      timeline.reveal(s.begin, s.end);
      return;
    }
    const tab = sel.kind === 'poll' ? tr.polls : tr.parks;
    // A poll picked for its wake delay: frame the wake too, not only the poll.
    const from = sel.wake >= 0 ? Math.min(tr.wakes.ts[sel.wake], tab.start[sel.index]) : tab.start[sel.index];
    timeline.reveal(from, tab.end[sel.index], tab.worker[sel.index]);
  }

  function selectTask(task) {
    timeline.selectTask(task);
    renderDetails();
  }

  function stepPoi(dir) {
    if (!state.model) return;
    const items = P.poiItems(state.model, state.poiKind);
    if (!items.length) return;
    let r = state.poiActive + dir;
    if (state.poiActive < 0) r = dir > 0 ? 0 : items.length - 1;
    r = Math.max(0, Math.min(items.length - 1, r));
    gotoPoi(r);
  }

  function gotoPoi(r) {
    const items = P.poiItems(state.model, state.poiKind);
    const it = items[r];
    if (!it) return;
    state.poiActive = r;
    P.renderPoi(state.model, state.poiKind, r);
    const sel = { kind: state.poiKind === 'sched' ? 'park' : 'poll', index: it.index };
    if (state.poiKind === 'wake') sel.wake = it.wake;
    select(sel, { keepPoi: true, reveal: true });
  }

  function syncPoiKindButtons() {
    for (const b of $('poi-kind').querySelectorAll('button')) b.classList.toggle('on', b.dataset.kind === state.poiKind);
  }

  /* ---------- UI wiring ---------- */

  function openPicker() {
    $('file-input').value = '';
    $('file-input').click();
  }

  function loadDemo() {
    load(async () => {
      let lastErr = null;
      for (const url of DEMO_URLS) {
        try {
          return await D9.loader.fetchUrls([url]);
        } catch (e) {
          lastErr = e;
          if (location.protocol === 'file:') break;
        }
      }
      if (location.protocol === 'file:') {
        throw new Error('The demo trace can only be fetched when the viewer is served over HTTP (e.g. `dial9 serve`). ' +
          'From file://, open viewer/demo/demo-trace.bin with the Open button instead.');
      }
      throw new Error('The demo trace is missing: viewer/demo/demo-trace.bin is not there yet (' + (lastErr ? lastErr.message : '') +
        '). Record one with `make demo`, or open any trace file with the Open button.');
    }, 'the demo trace');
  }

  function updateStatusBar() {
    if (!state.model) return;
    const tr = state.model.trace;
    const a = timeline.t0;
    const b = timeline.t1;
    const step = (b - a) / 1000;
    $('status-view').innerHTML = 'view <b>' + F.relTime(a - tr.timeStart, step) + '</b> → <b>' + F.relTime(b - tr.timeStart, step) + '</b> · ' + F.duration(b - a) + ' wide';
    updateCursorReadout();
  }

  /* The time under the pointer, only while the pointer is over the lanes. */
  function updateCursorReadout() {
    const m = timeline.mouse;
    if (!state.model || !m || m.x < D9.timelineConst.GUTTER) {
      $('status-cursor').innerHTML = '';
      return;
    }
    const t = timeline.tOf(m.x);
    const text = timeline.timeMode === 'absolute' ? F.escapeHtml(state.model.clock.absolute(t)) : F.relTime(t - state.model.trace.timeStart, timeline.nsPerPx);
    $('status-cursor').innerHTML = 'cursor <b>' + text + '</b>';
  }

  function bind() {
    $('legend-bar').style.background = D9.model.legendGradient();
    timeline = new D9.Timeline({
      lanes: $('lanes'),
      lanesWrap: $('lanes-wrap'),
      axis: $('axis'),
      overview: $('overview'),
    }, {
      onDraw: updateStatusBar,
      onHover(hit, cx, cy) {
        const tip = $('tooltip');
        updateCursorReadout();
        if (!hit || !state.model || hit.kind === 'lane') {
          tip.hidden = true;
          return;
        }
        tip.innerHTML = P.tooltipHtml(state.model, hit);
        tip.hidden = false;
        const r = tip.getBoundingClientRect();
        let x = cx + 14;
        let y = cy + 16;
        if (x + r.width > window.innerWidth - 8) x = cx - r.width - 14;
        if (y + r.height > window.innerHeight - 8) y = cy - r.height - 12;
        tip.style.left = x + 'px';
        tip.style.top = y + 'px';
      },
      onClick(hit, e) {
        if (!hit || hit.kind === 'lane') {
          select(null);
          return;
        }
        select({ kind: hit.kind, index: hit.index });
        if (hit.kind === 'poll' && (e.altKey || e.metaKey)) selectTask(state.model.trace.polls.task[hit.index]);
      },
      onRangeDrag(a, b) {
        if (a === null || !state.model) return updateStatusBar();
        $('status-view').innerHTML = 'range <b>' + F.duration(Math.abs(b - a)) + '</b> — release to zoom';
      },
    });

    $('open-btn').onclick = openPicker;
    $('demo-btn').onclick = loadDemo;
    $('file-input').addEventListener('change', (e) => {
      const files = e.target.files;
      if (files && files.length) load(() => D9.loader.readFiles(files), files.length === 1 ? files[0].name : files.length + ' files');
    });
    for (const el of document.querySelectorAll('[data-action="open"]')) el.onclick = openPicker;
    for (const el of document.querySelectorAll('[data-action="demo"]')) el.onclick = loadDemo;

    for (const b of $('time-mode').querySelectorAll('button')) {
      b.onclick = () => setTimeMode(b.dataset.mode);
    }
    $('info-btn').onclick = () => toggle('info');
    $('fg-btn').onclick = () => toggleFlame();
    $('fg-kind').onchange = () => renderFlame(true);
    $('fg-loc').onchange = () => renderFlame(false);
    $('fg-refresh').onclick = () => renderFlame(true);
    $('fg-boxes').addEventListener('click', (e) => {
      const box = e.target.closest('.fg-box');
      if (!box || !flame.drawn) return;
      const node = flame.drawn.nodes[Number(box.dataset.i)];
      flame.focus = node === flame.focus ? null : node; // click the top box to zoom back out
      drawFlame();
    });
    $('heap-btn').onclick = () => toggleHeap();
    $('heap-kind').onchange = () => D9.heap.render(state.model);
    $('heap-boxes').addEventListener('click', (e) => D9.heap.clickBox(e.target.closest('.fg-box')));
    $('heap-sites').addEventListener('click', (e) => D9.heap.clickSite(e.target.closest('tr[data-site]')));
    $('help-btn').onclick = () => toggle('help');
    if (D9.ab) D9.ab.init({ model: () => state.model, view: () => [timeline.t0, timeline.t1] });
    for (const el of document.querySelectorAll('[data-close]')) el.onclick = () => { $(el.dataset.close).hidden = true; };
    $('help').addEventListener('click', (e) => { if (e.target === $('help')) $('help').hidden = true; });

    for (const b of $('poi-kind').querySelectorAll('button')) {
      b.onclick = () => {
        state.poiKind = b.dataset.kind;
        state.poiActive = -1;
        syncPoiKindButtons();
        if (state.model) P.renderPoi(state.model, state.poiKind, -1);
      };
    }
    $('poi-prev').onclick = () => stepPoi(-1);
    $('poi-next').onclick = () => stepPoi(1);
    $('poi-list').addEventListener('click', (e) => {
      const li = e.target.closest('li[data-rank]');
      if (li) gotoPoi(Number(li.dataset.rank));
    });
    $('details-body').addEventListener('click', (e) => {
      const el = e.target.closest('[data-act]');
      if (!el || !state.model) return;
      const act = el.dataset.act;
      if (act === 'task') selectTask(Number(el.dataset.task));
      else if (act === 'clear-task') selectTask(null);
      else if (act === 'zoom') revealSelection();
      else if (act === 'poll') select({ kind: 'poll', index: Number(el.dataset.index) }, { reveal: true });
      else if (act === 'neighbour') neighbour(Number(el.dataset.dir));
    });

    bindDrop();
    bindKeys();
    window.addEventListener('resize', () => {
      fitSummary();
      timeline.resize();
    });
  }

  function neighbour(dir) {
    const sel = state.selection;
    if (!sel || (sel.kind !== 'poll' && sel.kind !== 'park')) return;
    const tab = sel.kind === 'poll' ? state.model.trace.polls : state.model.trace.parks;
    const j = sel.index + dir;
    if (j < 0 || j >= tab.count || tab.worker[j] !== tab.worker[sel.index]) return;
    select({ kind: sel.kind, index: j });
    const d = timeline.t1 - timeline.t0;
    if (tab.end[j] < timeline.t0 || tab.start[j] > timeline.t1) timeline.setView(tab.start[j] - d / 2, tab.start[j] + d / 2, true);
  }

  function setTimeMode(mode) {
    for (const b of $('time-mode').querySelectorAll('button')) b.classList.toggle('on', b.dataset.mode === mode);
    timeline.setTimeMode(mode);
  }

  function toggle(id) {
    $(id).hidden = !$(id).hidden;
  }

  /* ---- flame graph of the visible range ---- */
  const flame = { root: null, focus: null, drawn: null, t0: 0, t1: 0 };

  function toggleFlame() {
    $('flame').hidden = !$('flame').hidden;
    if (!$('flame').hidden) renderFlame(true);
  }

  function renderFlame(newRange) {
    if (!state.model || !timeline || $('flame').hidden) return;
    const FG = D9.flamegraph;
    const kind = $('fg-kind').value;
    if (newRange || !flame.t1) {
      flame.t0 = timeline.t0;
      flame.t1 = timeline.t1;
      const sel = $('fg-loc');
      const keep = sel.value;
      const locs = FG.locations(state.model, flame.t0, flame.t1, kind);
      sel.innerHTML = '<option value="">all spawn locations</option>' +
        locs.map(([l, n]) => '<option value="' + D9.format.escapeHtml(l) + '">' + D9.format.escapeHtml(l) + ' (' + n + ')</option>').join('');
      if (locs.some(([l]) => l === keep)) sel.value = keep;
    }
    flame.root = FG.build(state.model, flame.t0, flame.t1, kind, $('fg-loc').value);
    flame.focus = null;
    drawFlame();
  }

  function drawFlame() {
    const box = $('fg-boxes');
    const tr = state.model.trace;
    // Samples exist only inside the trace: the range is said as the part of the trace it covers.
    const a = Math.max(flame.t0, tr.timeStart) - tr.timeStart;
    const b = Math.min(flame.t1, tr.timeEnd) - tr.timeStart;
    const step = Math.max(1, (b - a) / 1000);
    const range = F.offset(a, step) + ' … ' + F.offset(b, step);
    if (!flame.root.value) {
      flame.drawn = null;
      box.innerHTML = '';
      box.style.height = '0px';
      $('fg-summary').textContent = 'No ' + ($('fg-kind').value === 'offcpu' ? 'off-CPU' : 'CPU') +
        ' samples in ' + range + ($('fg-loc').value ? ' inside polls of ' + $('fg-loc').value : '') +
        '. Record with DIAL9_CPU_PROFILE_ENABLED=1 (CPU) or where context-switch stacks are allowed (off-CPU).';
      return;
    }
    flame.drawn = D9.flamegraph.render(flame.root, flame.focus, box.clientWidth || 900);
    box.innerHTML = flame.drawn.html;
    box.style.height = flame.drawn.height + 'px';
    $('fg-summary').textContent = flame.root.value + ' samples in ' + range +
      (flame.focus ? ' · zoomed on ' + flame.focus.name + ' (click it to zoom out)' : ' · click a frame to zoom in');
  }

  /* ---- the sampled heap (viewer/src/heap.js) ---- */
  function toggleHeap() {
    $('heap').hidden = !$('heap').hidden;
    if (!$('heap').hidden && state.model) D9.heap.render(state.model);
  }

  function bindDrop() {
    let depth = 0;
    const overlay = $('drop-overlay');
    const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');
    window.addEventListener('dragenter', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      overlay.hidden = false;
    });
    window.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    });
    window.addEventListener('dragleave', () => {
      depth = Math.max(0, depth - 1);
      if (!depth) overlay.hidden = true;
    });
    window.addEventListener('drop', (e) => {
      e.preventDefault();
      depth = 0;
      overlay.hidden = true;
      const files = e.dataTransfer && e.dataTransfer.files;
      if (files && files.length) load(() => D9.loader.readFiles(files), files.length === 1 ? files[0].name : files.length + ' files');
    });
  }

  function bindKeys() {
    document.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const tag = (e.target && e.target.tagName) || '';
      if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') return;
      const k = e.key;
      // A shortcut changes the view or covers it: a tooltip would describe what is no longer there.
      if (k === 'Escape' || k === '?' || k === 'o' || k === 'O') timeline.clearHover();
      if (k === 'Escape') {
        if (!$('help').hidden) $('help').hidden = true;
        else if (!$('info').hidden) $('info').hidden = true;
        else if (!$('flame').hidden) $('flame').hidden = true;
        else if (!$('heap').hidden) $('heap').hidden = true;
        else if ($('ab') && !$('ab').hidden) $('ab').hidden = true;
        else if (state.selection) select(null);
        else if (timeline.task !== null) selectTask(null);
        return;
      }
      if (k === '?') { toggle('help'); e.preventDefault(); return; }
      if (k === 'o' || k === 'O') { openPicker(); return; }
      if (!state.model || state.status !== 'ready') return;
      const cx = timeline.mouse && timeline.mouse.x >= D9.timelineConst.GUTTER ? timeline.mouse.x : D9.timelineConst.GUTTER + timeline.plotW / 2;
      let handled = true;
      switch (k) {
        case '+': case '=': case 'w': case 'W': timeline.zoomAt(0.6, cx, true); break;
        case '-': case '_': case 's': case 'S': timeline.zoomAt(1 / 0.6, cx, true); break;
        case 'ArrowLeft': case 'a': case 'A': timeline.pan(-0.2, true); break;
        case 'ArrowRight': case 'd': case 'D': timeline.pan(0.2, true); break;
        case 'ArrowUp': timeline.scrollBy(-D9.timelineConst.LANE_H); break;
        case 'ArrowDown': timeline.scrollBy(D9.timelineConst.LANE_H); break;
        case '0': case 'Home': timeline.fitAll(true); break;
        case 'n': case 'N': case ']': stepPoi(1); break;
        case 'p': case 'P': case '[': stepPoi(-1); break;
        case 'f': case 'F': revealSelection(); break;
        case 'k': case 'K':
          if (state.selection && state.selection.kind === 'poll') selectTask(state.model.trace.polls.task[state.selection.index]);
          break;
        case 't': case 'T': setTimeMode(timeline.timeMode === 'relative' ? 'absolute' : 'relative'); break;
        case 'i': case 'I': toggle('info'); break;
        case 'g': case 'G': toggleFlame(); break;
        case 'h': case 'H': toggleHeap(); break;
        default: handled = false;
      }
      if (handled) {
        e.preventDefault();
        timeline.clearHover();
      }
    });
  }

  function start() {
    window.dial9Viewer = {
      state,
      get timeline() { return timeline; },
      loaded: null,
      select: (sel) => select(sel, { reveal: true }),
      selectTask,
      gotoPoi,
    };
    bind();
    const urls = new URLSearchParams(location.search).getAll('trace').filter(Boolean);
    if (urls.length) {
      load(() => D9.loader.fetchUrls(urls), urls.length === 1 ? D9.loader.nameOfUrl(urls[0]) : urls.length + ' traces');
    } else {
      setStatus('empty');
    }
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})(window.D9 = window.D9 || {});
