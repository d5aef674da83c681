/* The runs page (runs.html): the runs of the directory `dial9 serve` serves, from its
 * /api/index, newest first, with what a person picks a run by (service, start, length, size,
 * drops, task dumps when any run has some), filtered as one types. A run's name opens it in
 * the viewer. body[data-state] is loading, ready, empty or error (for the browser tests). */
(function (D9) {
  'use strict';

  const F = D9.format;
  const $ = (id) => document.getElementById(id);

  /* When the run started, in ms since the epoch: its first event on the wall clock (a clock
   * sync), else its first S3 key's time, else when its newest segment was written. */
  function startMs(r) {
    if (r.start_epoch_ms != null) return r.start_epoch_ms;
    if (r.first_epoch_s != null) return r.first_epoch_s * 1000;
    if (r.modified_epoch_s != null) return r.modified_epoch_s * 1000;
    return null;
  }

  function pad2(n) {
    return String(n).padStart(2, '0');
  }

  /* Local time "2026-05-15 17:55:10" (the UTC time in the cell's title). */
  function localTime(ms) {
    const d = new Date(ms);
    return d.getFullYear() + '-' + pad2(d.getMonth() + 1) + '-' + pad2(d.getDate()) + ' ' +
      pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }

  function cell(tr, text, cls, title) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    if (title) td.title = title;
    tr.appendChild(td);
    return td;
  }

  function row(r, showDumps) {
    const tr = document.createElement('tr');
    tr.dataset.run = r.run;
    const start = startMs(r);
    tr.dataset.start = start == null ? '' : String(start);
    const name = document.createElement('td');
    const a = document.createElement('a');
    a.href = r.viewer_url;
    a.textContent = r.run;
    a.className = 'run-link';
    name.appendChild(a);
    const dump = r.flight_dump; /* a flight recorder's dump: its trigger and window, or incomplete */
    if (dump) {
      const tag = document.createElement('div');
      tag.className = 'flight-dump' + (dump.complete ? '' : ' warn');
      tag.textContent = dump.complete ? 'dump: ' + dump.summary : 'INCOMPLETE dump: ' + dump.summary;
      name.appendChild(tag);
    }
    tr.appendChild(name);
    cell(tr, r.service || '–', 'service');
    if (start == null) cell(tr, '–', 'start');
    else cell(tr, localTime(start), 'start mono', new Date(start).toISOString() +
      (r.start_epoch_ms != null ? ' (first event)' : r.first_epoch_s != null ? ' (from the S3 keys)' : ' (last written)'));
    cell(tr, r.first_ns != null && r.last_ns != null ? F.duration(r.last_ns - r.first_ns) : '–', 'num length');
    cell(tr, F.bytes(r.bytes), 'num size', r.bytes + ' bytes' +
      (r.cached_segments < r.segments ? ', ' + r.cached_segments + ' of ' + r.segments + ' segments here' : ''));
    cell(tr, F.count(r.events), 'num events');
    cell(tr, F.count(r.drops || 0), 'num drops' + (r.drops ? ' bad' : ''), r.drops ? 'events the recorder lost' : '');
    cell(tr, F.count(r.dumps || 0), 'num dumps', '').hidden = !showDumps;
    const bad = (r.files || []).filter((f) => f.status === 'error' || f.status === 'too_large').length;
    cell(tr, String(r.segments) + (bad ? ' (' + bad + ' not read whole)' : ''), 'num segments' + (bad ? ' warn' : ''),
      (r.files || []).map((f) => f.name + ': ' + f.status + (f.message ? ' — ' + f.message : '')).join('\n'));
    tr.dataset.text = (r.run + ' ' + (r.service || '') + (dump ? ' dump ' + (dump.summary || '') : '')).toLowerCase();
    return tr;
  }

  function applyFilter() {
    const q = $('runs-filter').value.trim().toLowerCase();
    const rows = $('runs').tBodies[0].rows;
    let shown = 0;
    for (const tr of rows) {
      const on = !q || q.split(/\s+/).every((w) => tr.dataset.text.includes(w));
      tr.hidden = !on;
      shown += on;
    }
    $('runs-count').textContent = q ? shown + ' of ' + rows.length + ' runs' : rows.length + (rows.length === 1 ? ' run' : ' runs');
    const msg = $('runs-message');
    msg.hidden = !(rows.length && !shown);
    if (rows.length && !shown) msg.textContent = 'No run matches “' + q + '”.';
  }

  function fail(text) {
    const msg = $('runs-message');
    msg.textContent = text;
    msg.hidden = false;
    msg.classList.add('error');
    document.body.dataset.state = 'error';
  }

  async function start() {
    let index;
    try {
      const res = await fetch('api/index', { cache: 'no-store' });
      if (!res.ok) throw new Error('HTTP ' + res.status + ': ' + (await res.text()).trim());
      index = await res.json();
    } catch (e) {
      fail('The list of runs could not be read from this server (' + e.message + '). ' +
        'This page works under `dial9 serve TRACE_DIR`; the viewer opens files with “Open files…”.');
      return;
    }
    $('runs-root').textContent = index.root;
    const runs = (index.runs || []).slice();
    // newest first; runs without any time last, by name
    runs.sort((a, b) => {
      const x = startMs(a), y = startMs(b);
      if (x != null && y != null && x !== y) return y - x;
      if ((x == null) !== (y == null)) return x == null ? 1 : -1;
      return a.run < b.run ? -1 : a.run > b.run ? 1 : 0;
    });
    const showDumps = runs.some((r) => r.dumps > 0);
    for (const th of document.querySelectorAll('#runs th.dumps')) th.hidden = !showDumps;
    const body = $('runs').tBodies[0];
    for (const r of runs) body.appendChild(row(r, showDumps));
    $('runs').hidden = runs.length === 0;
    if (!runs.length) {
      const msg = $('runs-message');
      msg.textContent = 'No traces under ' + index.root + ' yet: runs appear here as the recorder writes them (reload).';
      msg.hidden = false;
    }
    $('runs-filter').addEventListener('input', applyFilter);
    applyFilter();
    document.title = 'dial9 runs — ' + index.root;
    document.body.dataset.state = runs.length ? 'ready' : 'empty';
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})(window.D9 = window.D9 || {});
