/*
 * The HTML around the timeline: trace summary chips, the points-of-interest list, the details
 * of a selection (poll, park, CPU sample, task), the trace info drawer and the hover tooltip.
 * Panels only render; clicks come back to app.js through data-act attributes.
 */
(function (D9) {
  'use strict';

  const F = D9.format;
  const M = D9.model;
  const esc = F.escapeHtml;

  function $(id) {
    return document.getElementById(id);
  }

  function rel(model, t, step) {
    return F.offset(t - model.trace.timeStart, step || 1);
  }

  function workerText(model, w) {
    const group = model.groups.find((g) => g.lanes.some((l) => l.worker === w));
    const lane = model.laneOf.get(w);
    const name = lane ? lane.label : 'worker ' + w;
    return esc(name) + (group && group.name ? ' <span class="muted">· runtime ' + esc(group.name) + '</span>' : '');
  }

  function locOf(model, id) {
    return id >= 0 ? model.trace.strings[id] : '';
  }

  /* Typical poll durations (from a sample of at most 200 000 polls), for "how unusual is it". */
  function pollStats(model) {
    if (model.pollStats) return model.pollStats;
    const P = model.trace.polls;
    const step = Math.max(1, Math.floor(P.count / 200000));
    const d = [];
    for (let i = 0; i < P.count; i += step) d.push(P.end[i] - P.start[i]);
    d.sort((a, b) => a - b);
    const q = (f) => (d.length ? d[Math.min(d.length - 1, Math.floor(f * d.length))] : 0);
    model.pollStats = { median: q(0.5), p99: q(0.99) };
    return model.pollStats;
  }

  /* ---------- top bar ---------- */

  function renderSummary(model, info) {
    const tr = model.trace;
    const chips = [];
    const names = tr.files.map((f) => f.name).filter(Boolean);
    if (names.length) chips.push('<span class="chip" title="' + esc(names.join('\n')) + '"><b>' + esc(names.length === 1 ? names[0] : names.length + ' files') + '</b></span>');
    if (model.service) chips.push('<span class="chip">service <b>' + esc(model.service) + '</b></span>');
    chips.push('<span class="chip"><b>' + F.count(tr.counts.events) + '</b> events</span>');
    chips.push('<span class="chip"><b>' + F.duration(tr.timeEnd - tr.timeStart) + '</b></span>');
    chips.push('<span class="chip"><b>' + model.lanes.length + '</b> ' + (model.lanes.length === 1 ? 'worker' : 'workers') + '</span>');
    const sp = model.spans;
    if (sp && (sp.spans.length || sp.strayEnds)) {
      const unended = sp.spans.filter((s) => !s.ended).length;
      chips.push('<span class="chip" id="chip-spans" title="' + esc(unended + ' unended (still open at the end, or begun again with the same name and id: ' + sp.reopened + ')\n' +
        sp.strayEnds + ' span ends closed nothing') + '"><b>' + F.count(sp.spans.length) + '</b> ' + (sp.spans.length === 1 ? 'span' : 'spans') + '</span>');
    }
    if (tr.truncated) chips.push('<span class="chip warn" title="The data ends in the middle of a frame">truncated</span>');
    if (info && info.partial) chips.push('<span class="chip warn">partial: stopped at an error</span>');
    $('trace-summary').innerHTML = chips.join('');
  }

  /* ---------- points of interest ---------- */

  function poiItems(model, kind) {
    if (kind === 'sched') return model.largestSchedWaits;
    if (kind === 'wake') return M.wakeDelays(model);
    if (kind === 'block') return M.blockedPolls(model);
    return model.longestPolls;
  }

  const POI_EMPTY = {
    sched: 'No scheduling delays recorded (no WorkerUnparkEvent with sched_wait_ns).',
    wake: 'No wakes followed by a poll of the woken task.',
    block: 'No poll was descheduled in this trace, or no context-switch stacks were recorded (see the trace info for the active sources; where the cost governor paused them, the banner says so and the timeline is hatched).',
    polls: 'No polls in this trace.',
  };
  const POI_TITLE = { sched: 'run-queue wait', wake: 'from the wake to the poll it caused', block: 'poll duration (descheduled inside)', polls: 'poll duration' };

  function renderPoi(model, kind, active) {
    const list = $('poi-list');
    const items = poiItems(model, kind);
    const tr = model.trace;
    if (!items.length) {
      list.innerHTML = '<li class="poi-empty">' + (POI_EMPTY[kind] || POI_EMPTY.polls) + '</li>';
      $('poi-pos').textContent = '–';
      return;
    }
    const html = [];
    items.forEach((it, r) => {
      const i = it.index;
      let what;
      if (kind === 'sched') {
        const K = tr.parks;
        what = '<b>' + esc(model.laneOf.get(K.worker[i]) ? model.laneOf.get(K.worker[i]).label : 'worker ' + K.worker[i]) + '</b> <span class="sub">unparked after ' +
          F.duration(K.end[i] - K.start[i]) + '</span><br><span class="sub">' + rel(model, K.end[i], 1e3) + '</span>';
      } else {
        const P = tr.polls;
        const loc = F.shortLocation(locOf(model, P.loc[i]));
        what = '<b>task ' + F.taskId(P.task[i]) + '</b> <span class="sub">on worker ' + P.worker[i] + '</span><br><span class="sub">' +
          esc(loc || 'no spawn location') + ' · ' + rel(model, P.start[i], 1e3) + '</span>';
      }
      html.push('<li data-act="poi" data-rank="' + r + '" class="' + (r === active ? 'on' : '') + '" title="' + (POI_TITLE[kind] || POI_TITLE.polls) + '">' +
        '<span class="rank">' + (r + 1) + '</span>' +
        '<span class="dur" style="background:' + (kind === 'sched' ? M.schedColorOf(it.value) : M.colorOf(it.value)) + '">' + F.duration(it.value) + '</span>' +
        '<span class="what">' + what + '</span></li>');
    });
    list.innerHTML = html.join('');
    $('poi-pos').textContent = (active >= 0 ? active + 1 : '–') + ' / ' + items.length;
    const on = list.querySelector('li.on');
    if (on) on.scrollIntoView({ block: 'nearest' });
  }

  /* ---------- details ---------- */

  function kv(rows) {
    return '<dl class="kv">' + rows.filter(Boolean).map(([k, v, cls]) => '<dt>' + k + '</dt><dd' + (cls ? ' class="' + cls + '"' : '') + '>' + v + '</dd>').join('') + '</dl>';
  }

  function timeRow(model, label, t) {
    return [label, rel(model, t, 1) + '<br><span class="muted small">' + esc(model.clock.absolute(t)) + '</span>'];
  }

  /* Long source paths: keep the part after the crate or project root, the full path in a title. */
  function shortPath(p) {
    const m = /(?:^|\/)(?:registry\/src\/[^/]+\/|rustlib\/src\/rust\/library\/|\.cargo\/git\/checkouts\/[^/]+\/)(.*)$/.exec(p);
    if (m) return m[1];
    const parts = p.split('/');
    return parts.length > 4 ? '…/' + parts.slice(-3).join('/') : p;
  }

  function frameHtml(f, k) {
    if (!f.names || !f.names.length) {
      return '<li><span class="n">' + k + '</span><span><span class="fn unknown">' + f.addr + '</span>' + (f.kernel ? ' <span class="muted">[kernel]</span>' : '') + '</span></li>';
    }
    const parts = f.names.map((n, j) => {
      const where = n.file ? '<span class="loc" title="' + esc(n.file) + '">' + esc(shortPath(n.file)) + (n.line ? ':' + n.line : '') + '</span>' : '';
      return '<span class="fn' + (f.kernel ? ' kernel' : '') + '">' + (j > 0 ? '<span class="inl">inlined into </span>' : '') + esc(n.name || f.addr) + '</span>' + where;
    });
    return '<li><span class="n">' + k + '</span><span title="' + f.addr + '">' + parts.join('') + '</span></li>';
  }

  const STACK_SHOWN = 14;

  function stackHtml(frames, truncated) {
    const cut = truncated && frames.length
      ? '<div class="muted small truncated-stack" style="padding:0 10px">truncated: its callers were not recorded</div>' : '';
    const head = frames.slice(0, STACK_SHOWN).map((f, k) => frameHtml(f, k)).join('');
    if (frames.length <= STACK_SHOWN) return '<ol class="stack">' + head + '</ol>' + cut;
    const rest = frames.slice(STACK_SHOWN).map((f, k) => frameHtml(f, k + STACK_SHOWN)).join('');
    return '<ol class="stack">' + head + '</ol><details class="more-frames"><summary>' + (frames.length - STACK_SHOWN) +
      ' more frames</summary><ol class="stack">' + rest + '</ol></details>' + cut;
  }

  function leafName(frames) {
    for (const f of frames) {
      if (f.names && f.names.length && f.names[0].name) return f.names[0].name;
    }
    return frames.length ? frames[0].addr : '(empty stack)';
  }

  function sampleHtml(model, s, open, t0) {
    const S = model.trace.cpuSamples;
    const frames = S.stack[s] >= 0 ? M.stackFrames(model, S.stack[s]) : [];
    const cs = S.source[s] === 1;
    const thread = S.threadName[s] >= 0 ? model.trace.strings[S.threadName[s]] : '';
    const when = t0 === undefined ? rel(model, S.ts[s], 1e3) : '+' + F.duration(S.ts[s] - t0) + ' in';
    return '<details class="sample"' + (open ? ' open' : '') + '><summary>' +
      '<span class="src ' + (cs ? 'cs' : 'cpu') + '">' + (cs ? 'context switch' : 'CPU') + '</span>' +
      '<span class="leaf">' + esc(leafName(frames)) + '</span><span class="when">' + when + '</span></summary>' +
      '<div class="muted small" style="padding:0 10px">' + [thread ? 'thread ' + esc(thread) : '', 'tid ' + S.tid[s], Number.isFinite(S.cpu[s]) ? 'cpu ' + S.cpu[s] : '', frames.length + ' frames, leaf first'].filter(Boolean).join(' · ') + '</div>' +
      stackHtml(frames, S.stack[s] >= 0 && M.stackTruncated(model, S.stack[s])) + '</details>';
  }

  /* The functions that appear most in a set of samples (each counted once per sample). */
  function hotFrames(model, samples) {
    const S = model.trace.cpuSamples;
    const counts = new Map();
    for (const s of samples) {
      if (S.stack[s] < 0) continue;
      const seen = new Set();
      for (const f of M.stackFrames(model, S.stack[s])) {
        const name = f.names && f.names.length ? f.names[f.names.length - 1].name : null;
        if (!name || seen.has(name)) continue;
        seen.add(name);
        counts.set(name, (counts.get(name) || 0) + 1);
      }
    }
    return Array.from(counts.entries()).sort((a, b) => b[1] - a[1]).slice(0, 6);
  }

  /* From spawn to terminate; a task spawned before the trace starts or alive at its end says
   * so (its first poll / the trace's end bound what is seen). */
  function lifetimeText(model, info, taskPolls) {
    const P = model.trace.polls;
    const spawned = Number.isFinite(info.spawnTs);
    const ended = Number.isFinite(info.terminateTs);
    if (spawned && ended) return F.duration(info.terminateTs - info.spawnTs);
    const from = spawned ? info.spawnTs : taskPolls.length ? P.start[taskPolls[0]] : NaN;
    const to = ended ? info.terminateTs : model.trace.timeEnd;
    const seen = Number.isFinite(from) && Number.isFinite(to) ? F.duration(to - from) + ' seen · ' : '';
    return seen + '<span class="muted">' + (spawned ? 'alive at the end of the trace' : ended ? 'spawned before the trace starts' : 'spawned before the trace, alive at its end') + '</span>';
  }

  function taskCard(model, task, taskPolls, wakes) {
    const P = model.trace.polls;
    const info = M.taskInfo(model, task);
    let busy = 0;
    let longest = 0;
    const workers = new Set();
    for (const i of taskPolls) {
      const d = P.end[i] - P.start[i];
      busy += d;
      if (d > longest) longest = d;
      workers.add(P.worker[i]);
    }
    const loc = info.spawnLoc || (taskPolls.length ? locOf(model, P.loc[taskPolls[0]]) : '');
    return '<div class="task-card" id="task-card"><h3><span>◆ Task ' + esc(F.taskId(task)) + ' highlighted</span><button class="btn tiny" data-act="clear-task" title="Esc">clear</button></h3>' +
      kv([
        ['Polls', F.count(taskPolls.length) + ' on ' + (workers.size === 1 ? 'worker ' : 'workers ') + Array.from(workers).sort((a, b) => a - b).join(', ')],
        ['Busy in total', F.duration(busy) + ' · longest ' + F.duration(longest)],
        loc ? ['Spawned at', esc(loc), 'mono'] : null,
        Number.isFinite(info.spawnTs) ? ['Spawn time', rel(model, info.spawnTs, 1e3)] : null,
        Number.isFinite(info.terminateTs) ? ['Terminated', rel(model, info.terminateTs, 1e3)] : null,
        ['Lifetime', lifetimeText(model, info, taskPolls)],
        ['Wakes', '<span style="color:#54e0ff">' + F.count(wakes.incoming.length) + ' received</span> · <span style="color:#c59bff">' + F.count(wakes.outgoing.length) + ' sent</span> <span class="muted">(arrows in the timeline)</span>'],
      ]) + '</div>';
  }

  function renderPollDetails(model, i, ctx) {
    const tr = model.trace;
    const P = tr.polls;
    const d = P.end[i] - P.start[i];
    const rank = M.pollRankOf(model, i);
    const stats = pollStats(model);
    const rankNote = (rank === 0 ? 'The longest of ' : '#' + F.count(rank + 1) + ' longest of ') + F.count(P.count) + ' polls';
    const ratio = stats.median > 0 ? d / stats.median : 0;
    const task = P.task[i];
    const loc = locOf(model, P.loc[i]);
    // Who made the task runnable for this poll: the same pairing as the wake-delay list.
    const w = M.wakeOfPoll(model, i);
    let wokenBy = null;
    if (w >= 0) {
      const W = tr.wakes;
      const from = W.waker[w] ? 'task <a class="link" data-act="task" data-task="' + W.waker[w] + '">' + F.taskId(W.waker[w]) + '</a>' : 'outside any task';
      const worker = W.targetWorker[w] === 255 ? '' : ' on worker ' + W.targetWorker[w];
      const since = M.runnableFrom(model, i);
      const origin = since > W.ts[w]
        ? ' from the end of its previous poll (' + rel(model, since, 1e3) + '; woken while it ran, at ' + rel(model, W.ts[w], 1e3) + ') to this poll'
        : ' from the wake (' + rel(model, W.ts[w], 1e3) + ') to this poll';
      wokenBy = ['Woken by', '<span id="detail-woken-by">' + from + worker + '</span><br><span class="muted small"><span id="detail-wake-delay">' +
        F.duration(P.start[i] - since) + '</span>' + origin + '</span>'];
    }
    const samples = M.samplesIn(model, P.worker[i], P.start[i], P.end[i]);
    const S = tr.cpuSamples;
    const switches = samples.filter((s) => S.source[s] === 1).length;
    let html = '<span class="kind-tag">Poll</span>' +
      '<div class="big-dur" id="detail-duration"><span class="dot" style="background:' + M.colorOf(d) + '"></span>' + F.duration(d) + '</div>' +
      '<div class="rank-note">' + rankNote + (ratio >= 2 ? ' · ' + (ratio >= 100 ? Math.round(ratio).toLocaleString('en') : ratio.toFixed(1)) + '× the median poll (' + F.duration(stats.median) + ')' : '') + '</div>' +
      kv([
        ['Worker', workerText(model, P.worker[i])],
        ['Task', '<a class="link" data-act="task" data-task="' + task + '" id="detail-task">task ' + F.taskId(task) + '</a>'],
        ['Spawn location', loc ? '<span id="detail-location">' + esc(loc) + '</span>' : '<span class="muted">not recorded</span>', loc ? 'mono' : ''],
        timeRow(model, 'Started', P.start[i]),
        ['Ended', rel(model, P.end[i], 1)],
        Number.isFinite(P.localQueue[i]) ? ['Local queue', P.localQueue[i] + ' task' + (P.localQueue[i] === 1 ? '' : 's') + ' waiting at the start'] : null,
        wokenBy,
      ]) +
      '<div class="actions">' +
      '<button class="btn tiny" data-act="zoom">Zoom to poll <kbd>F</kbd></button>' +
      (ctx.task === task ? '' : '<button class="btn tiny" data-act="task" data-task="' + task + '">Highlight task ' + F.taskId(task) + ' <kbd>K</kbd></button>') +
      '<button class="btn tiny" data-act="neighbour" data-dir="-1" title="Previous poll on this worker">◀ prev poll</button>' +
      '<button class="btn tiny" data-act="neighbour" data-dir="1" title="Next poll on this worker">next poll ▶</button>' +
      '</div>';
    if (D9.attribution) html += D9.attribution.pollHtml(model, i); // viewer/src/attribution.js
    if (ctx.task !== null) html += taskCard(model, ctx.task, ctx.taskPolls, ctx.taskWakes);
    html += '<div class="section-title">CPU samples in this poll <span class="count" id="detail-sample-count">' + samples.length + '</span></div>';
    if (!samples.length) {
      html += '<p class="muted small">No CPU or context-switch sample fell inside this poll.</p>';
    } else {
      if (switches) {
        html += '<div class="callout warn">' + switches + ' context-switch sample' + (switches === 1 ? '' : 's') +
          ': the thread was taken off the CPU inside this poll (blocked in the kernel or preempted), so the poll was slow without running your code. The stack shows where.</div>';
      }
      const hot = hotFrames(model, samples);
      if (hot.length && samples.length > 1) {
        const max = hot[0][1];
        html += '<ul class="hot-frames">' + hot.map(([name, n]) => '<li><span class="bar" style="width:' + Math.max(4, 60 * n / max) + 'px"></span><span class="name" title="' + esc(name) + '">' + esc(name) + '</span><span class="muted">' + n + '</span></li>').join('') + '</ul>';
      }
      html += samples.slice(0, 50).map((s, k) => sampleHtml(model, s, k < 2, P.start[i])).join('');
      if (samples.length > 50) html += '<p class="muted small">… and ' + (samples.length - 50) + ' more samples.</p>';
    }
    return html;
  }

  /* A segment metadata key (docs/kernel-sources.md) in effect at t: the last metadata event at
   * or before t that says it, else the first that does; '' when none says. */
  function metadataAt(model, key, t) {
    let value = '';
    for (const m of model.trace.metadata) {
      const e = m.entries.find(([k]) => k === key);
      if (!e) continue;
      if (value && m.ts > t) break;
      value = String(e[1]);
    }
    return value;
  }

  /* "CPU time meanwhile": with thread_cpu_time=park (the default) and the system call as the
   * source an unpark carries its park's value, so the difference is 0 by construction and says
   * nothing about the parked interval; from the task-clock page (thread_cpu_clock "perf: ...")
   * every unpark has its own value, as with `every`. */
  function cpuRow(model, parkTs, cpu) {
    const mode = metadataAt(model, 'thread_cpu_time', parkTs);
    const page = metadataAt(model, 'thread_cpu_clock', parkTs).startsWith('perf');
    if (mode === 'park' && !page && (cpu === 0 || !Number.isFinite(cpu))) {
      return ['CPU time meanwhile', '<span class="muted" id="detail-park-cpu" title="DIAL9_THREAD_CPU_TIME=park: the unpark carries the park\'s reading (docs/kernel-sources.md); record with DIAL9_THREAD_CPU_TIME=every to measure it">not measured (park mode)</span>'];
    }
    if (mode === 'off') return ['CPU time meanwhile', '<span class="muted" id="detail-park-cpu">not measured (off)</span>'];
    if (!Number.isFinite(cpu)) return null;
    const how = page ? 'task-clock page' : mode ? mode + ' mode' : '';
    return ['CPU time meanwhile', '<span id="detail-park-cpu">' + F.duration(cpu) + '</span>' + (how ? ' <span class="muted">(' + esc(how) + ')</span>' : '')];
  }

  /* A span (d9_span_begin/end): who began and ended it, and where its time went, as one bar. */
  function renderSpanDetails(model, i, ctx) {
    const s = model.spans.spans[i];
    const d = s.end - s.begin;
    const parts = [
      ['poll', s.poll, '#58c4a8', 'a poll of its task ran'],
      ['queued', s.queued, '#ff8a3d', 'woken, waiting for its poll'],
      ['wait', s.wait, '#6fa8ff', 'waiting for a wake (async wait)'],
      ['unknown', s.unknown, '#4a5468', 'no task state known'],
    ];
    const bar = '<div class="span-split" id="detail-span-split" style="display:flex;height:12px;border-radius:3px;overflow:hidden;margin:6px 0">' +
      parts.filter((p) => p[1] > 0).map((p) => '<span data-part="' + p[0] + '" title="' + p[0] + ' ' + F.duration(p[1]) + '" style="background:' + p[2] + ';flex:' + p[1] + ' 0 0"></span>').join('') + '</div>';
    const legend = '<ul class="span-parts" id="detail-span-parts">' + parts.map((p) =>
      '<li data-part="' + p[0] + '"><span class="dot" style="background:' + p[2] + '"></span>' + p[0] + ' <b>' + F.duration(p[1]) + '</b> <span class="muted">' +
      (d > 0 ? (100 * p[1] / d).toFixed(1) + ' %' : '') + ' · ' + p[3] + '</span></li>').join('') + '</ul>';
    const who = (worker, task, tid) => (Number.isFinite(worker) ? workerText(model, worker) : '<span class="muted">?</span>') +
      ' · ' + (task ? 'task ' + esc(F.taskId(task)) : '<span class="muted">outside any poll</span>') + (Number.isFinite(tid) ? ' <span class="muted">· tid ' + tid + '</span>' : '');
    let html = '<span class="kind-tag">Span</span>' +
      '<div class="big-dur" id="detail-duration"><span class="dot" style="background:' + (s.ended ? '#6fa8ff' : '#c59bff') + '"></span>' + F.duration(d) + '</div>' +
      kv([
        ['Name', '<span id="detail-span-name">' + esc(s.name) + '</span>', 'mono'],
        ['Id', '<span id="detail-span-id">' + esc(s.id) + '</span>', 'mono'],
        timeRow(model, 'Began', s.begin),
        ['Began on', '<span id="detail-span-begin">' + who(s.beginWorker, s.beginTask, s.beginTid) + '</span>'],
        s.ended ? timeRow(model, 'Ended', s.end) : ['Ended', '<span class="muted" id="detail-span-unended">' + (s.reopened ? 'never: begun again with the same name and id' : 'not by the end of the trace') + '</span>'],
        s.ended ? ['Ended on', '<span id="detail-span-end">' + who(s.endWorker, s.endTask, s.endTid) + '</span>'] : null,
      ]);
    html += '<div class="section-title">Where its time went</div>' + bar + legend;
    if (D9.attribution) html += D9.attribution.spanPollHtml(model, s);
    html += '<div class="actions"><button class="btn tiny" data-act="zoom">Zoom to span <kbd>F</kbd></button></div>';
    if (ctx.task !== null) html += taskCard(model, ctx.task, ctx.taskPolls, ctx.taskWakes);
    return html;
  }

  function renderParkDetails(model, i, ctx) {
    const K = model.trace.parks;
    const d = K.end[i] - K.start[i];
    const sw = K.schedWait[i];
    const cpu = K.cpuAtUnpark[i] - K.cpuAtPark[i];
    let html = '<span class="kind-tag">Park</span>' +
      '<div class="big-dur"><span class="dot" style="background:#4a5468"></span>' + F.duration(d) + '</div>' +
      '<div class="rank-note">The worker had nothing to run and waited for work (in its poller).</div>' +
      kv([
        ['Worker', workerText(model, K.worker[i])],
        timeRow(model, 'Parked', K.start[i]),
        ['Unparked', rel(model, K.end[i], 1)],
        ['Run-queue wait', Number.isFinite(sw) ? '<b style="color:#ff8a3d">' + F.duration(sw) + '</b> <span class="muted">(sched_wait_ns)</span>' : '<span class="muted">not recorded</span>'],
        cpuRow(model, K.start[i], cpu),
        Number.isFinite(K.tid[i]) ? ['Thread id', String(K.tid[i])] : null,
        Number.isFinite(K.localQueue[i]) ? ['Local queue', K.localQueue[i] + ' at unpark'] : null,
      ]);
    if (sw > 0) {
      html += '<div class="callout warn">After it was woken, the thread sat runnable in the kernel\'s run queue for ' + F.duration(sw) +
        ' before it got a CPU: that is time lost to CPU contention (other threads or processes), not to the runtime.</div>';
    }
    html += '<div class="actions"><button class="btn tiny" data-act="zoom">Zoom to park <kbd>F</kbd></button></div>';
    if (ctx.task !== null) html += taskCard(model, ctx.task, ctx.taskPolls, ctx.taskWakes);
    return html;
  }

  function renderSampleDetails(model, s, ctx) {
    const S = model.trace.cpuSamples;
    const P = model.trace.polls;
    const lane = model.laneOf.get(S.worker[s]);
    let poll = -1;
    if (lane) {
      const i = M.spanAt(P, lane.polls, S.ts[s], 0);
      if (i >= 0 && S.ts[s] >= P.start[i] && S.ts[s] <= P.end[i]) poll = i;
    }
    let html = '<span class="kind-tag">' + (S.source[s] === 1 ? 'Context-switch sample' : 'CPU sample') + '</span>' +
      kv([
        ['Worker', workerText(model, S.worker[s])],
        timeRow(model, 'Time', S.ts[s]),
        poll >= 0 ? ['Inside', '<a class="link" data-act="poll" data-index="' + poll + '">a ' + F.duration(P.end[poll] - P.start[poll]) + ' poll of task ' + F.taskId(P.task[poll]) + '</a>'] : ['Inside', '<span class="muted">no poll (runtime or idle)</span>'],
      ]);
    html += sampleHtml(model, s, true);
    if (ctx.task !== null) html += taskCard(model, ctx.task, ctx.taskPolls, ctx.taskWakes);
    return html;
  }

  function renderDetails(model, sel, ctx) {
    const body = $('details-body');
    if (!model) {
      body.innerHTML = '';
      return;
    }
    let html;
    if (sel && sel.kind === 'poll') html = renderPollDetails(model, sel.index, ctx);
    else if (sel && sel.kind === 'park') html = renderParkDetails(model, sel.index, ctx);
    else if (sel && sel.kind === 'sample') html = renderSampleDetails(model, sel.index, ctx);
    else if (sel && sel.kind === 'span') html = renderSpanDetails(model, sel.index, ctx);
    else if (ctx.task !== null) html = taskCard(model, ctx.task, ctx.taskPolls, ctx.taskWakes) + '<p class="muted small">Its polls are highlighted on every worker; cyan arrows show who woke it, violet ones whom it woke.</p>';
    else html = '<p class="muted">Click a poll or a park in the timeline, or pick a point of interest.</p>' +
      '<p class="muted small">Polls are coloured by duration. A grey line is a parked worker; its orange tail is the time the thread waited in the kernel\'s run queue before running again. Ticks above the polls are CPU samples (blue) and context switches (pink).</p>';
    body.innerHTML = html;
    body.scrollTop = 0;
  }

  /* ---------- trace info drawer ---------- */

  function renderInfo(model, info) {
    const tr = model.trace;
    const c = tr.counts;
    const rows = (list) => '<table>' + list.map(([k, v, num]) => '<tr><th>' + k + '</th><td' + (num ? ' class="num"' : '') + '>' + v + '</td></tr>').join('') + '</table>';
    let html = '';
    if (tr.notes.length) html += '<div class="callout warn">' + tr.notes.map(esc).join('<br>') + '</div>';
    html += '<h3>Files</h3><table><tr><th>name</th><th>size</th><th>streams</th><th></th></tr>' +
      tr.files.map((f) => '<tr><td>' + esc(f.name || '(data)') + '</td><td class="num">' + F.bytes(f.bytes) + '</td><td class="num">' + f.streams + '</td><td>' + (f.truncated ? '<span style="color:#ffb347">truncated</span>' : '') + '</td></tr>').join('') + '</table>';
    html += '<h3>Time</h3>' + rows([
      ['span', F.duration(tr.timeEnd - tr.timeStart)],
      ['start', esc(model.clock.absolute(tr.timeStart))],
      ['end', esc(model.clock.absolute(tr.timeEnd))],
      ['monotonic start', esc(model.clock.monotonic(tr.timeStart)) + ' ns'],
    ]);
    html += '<h3>Frames</h3>' + rows([
      ['streams', F.count(c.streams), 1], ['schemas', F.count(c.schemaFrames), 1], ['timestamp resets', F.count(c.resetFrames), 1],
      ['string pools', F.count(c.stringPoolFrames), 1], ['stack pools', F.count(c.stackPoolFrames), 1],
      ['annotations', F.count(c.annotationFrames), 1], ['events', F.count(c.events), 1],
    ]);
    html += '<h3>Events by schema</h3><table>' + Object.entries(c.byName).sort((a, b) => b[1] - a[1])
      .map(([k, v]) => '<tr><td class="mono" style="word-break:break-all">' + esc(k) + '</td><td class="num">' + F.count(v) + '</td></tr>').join('') + '</table>';
    html += '<h3>Derived</h3>' + rows([
      ['polls (start → end)', F.count(tr.polls.count) + (tr.polls.unmatchedStarts + tr.polls.unmatchedEnds ? ' <span class="muted">(' + tr.polls.unmatchedStarts + ' starts and ' + tr.polls.unmatchedEnds + ' ends unmatched)</span>' : ''), 0],
      ['parks (park → unpark)', F.count(tr.parks.count)],
      ['workers', tr.workers.join(', ') || '–'],
      ['runtimes', tr.runtimes.map((r) => esc(r.name || '(unnamed)') + ': ' + r.workers.join(', ')).join('<br>') || '–'],
      ['symbols', F.count(tr.symbols.count)],
    ]);
    for (const m of tr.metadata) {
      html += '<h3>Segment metadata</h3>' + rows(m.entries.map(([k, v]) => [esc(k), '<span class="mono">' + esc(v) + '</span>']));
    }
    if (info && info.timings) {
      const t = info.timings;
      html += '<h3>Loading</h3>' + rows([
        ['decoded', F.count(c.events) + ' events in ' + t.decodeMs.toFixed(0) + ' ms (' + (c.events / Math.max(1e-3, t.decodeMs) / 1000).toFixed(2) + ' M events/s) on the ' + esc(info.where || '')],
        t.gunzipMs > 1 ? ['gunzip', t.gunzipMs.toFixed(0) + ' ms'] : null,
        ['raw size', F.bytes(t.bytes)],
        info.modelMs !== undefined ? ['view model', info.modelMs.toFixed(0) + ' ms'] : null,
      ].filter(Boolean));
    }
    html += '<h3>Schemas</h3>' + tr.schemas.map((s) => '<div class="mono small" style="margin:4px 0"><b>' + esc(s.name) + '</b>' + (s.hasTimestamp ? '' : ' <span class="muted">(no timestamp)</span>') +
      '<div class="muted">' + s.fields.map((f) => esc(f.name) + ': ' + f.typeName).join(', ') + '</div></div>').join('');
    $('info-body').innerHTML = html;
  }

  /* ---------- tooltip ---------- */

  function tooltipHtml(model, hit) {
    const tr = model.trace;
    if (hit.kind === 'poll') {
      const P = tr.polls;
      const i = hit.index;
      const d = P.end[i] - P.start[i];
      const loc = locOf(model, P.loc[i]);
      return '<div class="t-title"><span class="dot" style="background:' + M.colorOf(d) + '"></span>Poll · ' + F.duration(d) + '</div>' +
        '<div class="t-row">task <b>' + F.taskId(P.task[i]) + '</b> on worker ' + P.worker[i] + '</div>' +
        (loc ? '<div class="t-row mono">' + esc(loc) + '</div>' : '') +
        '<div class="t-row">at ' + rel(model, P.start[i], 1e3) + '</div>';
    }
    if (hit.kind === 'park') {
      const K = tr.parks;
      const i = hit.index;
      const sw = K.schedWait[i];
      return '<div class="t-title"><span class="dot" style="background:#4a5468"></span>Parked · ' + F.duration(K.end[i] - K.start[i]) + '</div>' +
        (Number.isFinite(sw) ? '<div class="t-row">run-queue wait <b style="color:#ff8a3d">' + F.duration(sw) + '</b></div>' : '') +
        '<div class="t-row">worker ' + K.worker[i] + ' · at ' + rel(model, K.start[i], 1e3) + '</div>';
    }
    if (hit.kind === 'span') {
      const s = model.spans.spans[hit.index];
      return '<div class="t-title"><span class="dot" style="background:' + (s.ended ? '#6fa8ff' : '#c59bff') + '"></span>Span ' + esc(s.name) + ' · ' + F.duration(s.end - s.begin) + (s.ended ? '' : ' (unended)') + '</div>' +
        '<div class="t-row">id <b>' + esc(s.id) + '</b></div>' +
        '<div class="t-row">at ' + rel(model, s.begin, 1e3) + '</div>';
    }
    if (hit.kind === 'sample') {
      const S = tr.cpuSamples;
      const s = hit.index;
      const frames = S.stack[s] >= 0 ? M.stackFrames(model, S.stack[s]) : [];
      const top = frames.slice(0, 4).map((f) => esc(f.names && f.names.length ? f.names[0].name : f.addr));
      return '<div class="t-title"><span class="dot" style="background:' + (S.source[s] === 1 ? '#ff6fd0' : '#8fc7ff') + '"></span>' + (S.source[s] === 1 ? 'Context switch' : 'CPU sample') + '</div>' +
        '<div class="t-row mono">' + (top.join('<br>') || 'no stack') + (frames.length > 4 ? '<br>…' : '') + '</div>' +
        '<div class="t-row">at ' + rel(model, S.ts[s], 1e3) + '</div>';
    }
    return '';
  }

  D9.panels = { renderSummary, renderPoi, renderDetails, renderInfo, tooltipHtml, poiItems };
})(window.D9 = window.D9 || {});
