// Span lanes on a trace recorded here: the libuv demo server (examples/uv-server) under load for
// a second marks each request as an `http_request` span (scripts/demo-uv.sh). The viewer draws a
// lane group for it, a click on a span shows its name, id, duration and where it began and
// ended, and its split (poll / queued / wait / unknown) equals what the C model computes on the
// same bytes (`dial9 analyze --json`, per span name). A park there says whether its CPU time
// meanwhile is measured: with the default DIAL9_THREAD_CPU_TIME=park the system call's unpark
// carries the park's value (not measured), the task-clock page's has its own (measured); the
// recording's `thread_cpu_clock` metadata says which source it had (perf where allowed).
// Skips, saying so, when the build (D9_BUILD_DIR, else ./build) has no server or CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startBrowser, openPage, settled, idle, writeArtifact, screenshot, repoRoot } from './harness.mjs';

const build = path.resolve(process.env.D9_BUILD_DIR || path.join(repoRoot, 'build'));
const server = path.join(build, 'examples', 'uv-server', 'd9-uv-server');
const dial9 = path.join(build, 'dial9');
const missing = [server, dial9].filter((f) => !fs.existsSync(f));

let browser;
let recorded = null; // {file, c: analyze's spans}
before(async () => {
  if (missing.length) return;
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-viewer-spans-'));
  const gz = path.join(dir, 'spans.bin.gz');
  const run = spawnSync(path.join(repoRoot, 'scripts', 'demo-uv.sh'), [build, '--seconds', '1', '--export-demo', gz],
    { env: { ...process.env, DEMO_UV_TRACE_DIR: path.join(dir, 'traces') }, encoding: 'utf8', timeout: 180000 });
  assert.equal(run.status, 0, 'demo-uv.sh: ' + run.stdout + run.stderr);
  const an = spawnSync(dial9, ['analyze', '--json', gz], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(an.status, 0, 'dial9 analyze: ' + an.stderr);
  recorded = { file: writeArtifact('spans-uv.bin.gz', fs.readFileSync(gz)), c: JSON.parse(an.stdout).spans };
  fs.rmSync(dir, { recursive: true, force: true });
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

test('span lanes: the uv server\'s requests as a lane group, their split equal to C\'s, a span\'s details on click', async (t) => {
  if (missing.length) {
    t.skip('not built: ' + missing.join(', '));
    return;
  }
  assert.ok(recorded.c, 'dial9 analyze found spans in the recording');
  const cReq = recorded.c.by_name.find((s) => s.name === 'http_request');
  assert.ok(cReq && cReq.count > 10, 'C: http_request spans: ' + JSON.stringify(recorded.c));

  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  await page.setInputFiles('#file-input', recorded.file);
  assert.equal(await settled(page), 'ready');

  // The model's spans per name, as analyze sums them.
  const js = await page.evaluate(() => {
    const model = window.dial9Viewer.state.model;
    const r = model.spans;
    const A = window.D9.attribution;
    const by = {};
    const pa = {}; // the poll part by cause, per name (analyze's poll_attribution)
    let unsplit = 0;
    for (const s of r.spans) {
      const b = by[s.name] || (by[s.name] = { count: 0, unended: 0, poll: 0, queued: 0, wait: 0, unknown: 0 });
      if (!s.ended) { // analyze counts unended spans apart, their parts in no sum
        b.unended++;
        continue;
      }
      b.count++;
      const parts = A.spanPollParts(model, s);
      if (s.poll > 0 && !parts) unsplit++;
      const p = pa[s.name] || (pa[s.name] = Object.fromEntries(A.PARTS.map((n) => [n + '_ns', 0])));
      A.PARTS.forEach((n, k) => { p[n + '_ns'] += parts ? parts[k] : 0; });
      b.poll += s.poll;
      b.queued += s.queued;
      b.wait += s.wait;
      b.unknown += s.unknown;
    }
    return { by, pa, unsplit, strayEnds: r.strayEnds, reopened: r.reopened };
  });
  t.diagnostic('http_request, its poll part by cause (C): ' + JSON.stringify(cReq.poll_attribution));
  assert.equal(js.unsplit, 0, 'every span\'s poll part splits by cause exactly');
  for (const c of recorded.c.by_name) {
    assert.deepEqual(js.by[c.name], { count: c.count, unended: c.unended, ...c.parts_ns }, 'span ' + c.name + ': the viewer\'s split equals C\'s');
    assert.deepEqual(js.pa[c.name], c.poll_attribution, 'span ' + c.name + ': its poll part by cause equals C\'s');
  }
  assert.equal(Object.keys(js.by).length, recorded.c.by_name.length);
  assert.deepEqual([js.strayEnds, js.reopened], [recorded.c.stray_ends, recorded.c.reopened]);

  // The summary counts them; its tooltip says the unended and stray ones.
  const chip = page.locator('#chip-spans');
  assert.match(await chip.textContent(), /^[\d\s]+ spans$/);
  assert.match(await chip.getAttribute('title'), new RegExp('\n' + recorded.c.stray_ends + ' span ends closed nothing$'));

  // The lane group, and spans drawn in it.
  const rows = await page.evaluate(() => window.dial9Viewer.timeline.rows.filter((r) => r.kind === 'span' || r.kind === 'spangroup')
    .map((r) => [r.kind, r.spanLane.name, r.kind === 'span' ? r.list.length : 0]));
  assert.deepEqual(rows[0], ['spangroup', 'http_request', 0]);
  assert.ok(rows.some((r) => r[0] === 'span' && r[1] === 'http_request' && r[2] > 0), 'a sub-lane with spans: ' + JSON.stringify(rows));
  assert.ok(await page.evaluate(() => window.dial9Viewer.timeline.stats.spansDrawn) > 0, 'spans drawn');

  // The longest ended request that began and ended in a poll: zoom on it, click it.
  const pick = await page.evaluate(() => {
    const sp = window.dial9Viewer.state.model.spans.spans;
    let best = -1;
    sp.forEach((s, i) => {
      if (s.name === 'http_request' && s.ended && s.beginTask && s.endTask && (best < 0 || s.end - s.begin > sp[best].end - sp[best].begin)) best = i;
    });
    const s = sp[best];
    const d = s.end - s.begin;
    window.dial9Viewer.timeline.setView(s.begin - d, s.end + d, false);
    return { index: best, id: s.id, begin: s.begin, end: s.end, beginTask: D9.format.taskId(s.beginTask), endWorker: s.endWorker,
      dur: D9.format.duration(d), parts: [s.poll, s.queued, s.wait, s.unknown] };
  });
  assert.ok(pick.index >= 0, 'an ended request inside polls');
  await idle(page);
  const at = await page.evaluate((i) => window.dial9Viewer.timeline.clientPointOfSpan(i), pick.index);
  await page.mouse.click(at.x, at.y);
  const sel = await page.evaluate(() => window.dial9Viewer.state.selection);
  assert.deepEqual(sel && [sel.kind, sel.index], ['span', pick.index], 'the click selects the span');
  assert.equal(await page.locator('#detail-span-name').textContent(), 'http_request');
  assert.equal(await page.locator('#detail-span-id').textContent(), pick.id);
  assert.equal((await page.locator('#detail-duration').textContent()).trim(), pick.dur);
  assert.match(await page.locator('#detail-span-begin').textContent(), new RegExp('task ' + pick.beginTask));
  assert.match(await page.locator('#detail-span-end').textContent(), new RegExp('worker ' + pick.endWorker + '|not a worker'));
  const shown = await page.locator('#detail-span-split span[data-part]').evaluateAll((els) => els.map((e) => e.dataset.part));
  assert.deepEqual(shown, ['poll', 'queued', 'wait', 'unknown'].filter((_, k) => pick.parts[k] > 0), 'the bar has a segment per non-zero part');
  assert.ok(pick.parts[0] > 0, 'a request begun and ended in polls has poll time');
  await screenshot(page, 'spans-uv');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a park of the uv server: "CPU time meanwhile" is measured from the task-clock page, not from the system call in park mode', async (t) => {
  if (missing.length) {
    t.skip('not built: ' + missing.join(', '));
    return;
  }
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  await page.setInputFiles('#file-input', recorded.file);
  assert.equal(await settled(page), 'ready');
  const found = await page.evaluate(() => {
    const tr = window.dial9Viewer.state.model.trace;
    const said = (key) => tr.metadata.map((m) => m.entries.find(([k]) => k === key)).filter(Boolean).map((e) => String(e[1]));
    const K = tr.parks;
    const source = said('thread_cpu_clock');
    const pageSource = source.length > 0 && source.every((s) => s.startsWith('perf'));
    let i = 0; // a park whose CPU time was read; from the page, one whose unpark has its own value
    while (i < K.count && !(K.cpuAtPark[i] > 0 && (!pageSource || K.cpuAtUnpark[i] > K.cpuAtPark[i]))) i++;
    if (i < K.count) window.dial9Viewer.select({ kind: 'park', index: i });
    return { mode: said('thread_cpu_time'), source, pageSource, index: i < K.count ? i : -1,
             equal: i < K.count && K.cpuAtPark[i] === K.cpuAtUnpark[i] };
  });
  assert.ok(found.mode.length > 0 && found.mode.every((m) => m === 'park'), 'recorded in the default mode: ' + found.mode);
  assert.ok(found.source.length > 0, 'the metadata names the CPU time\'s source');
  const shown = (await page.locator('#detail-park-cpu').textContent()).trim();
  if (found.pageSource) {
    assert.ok(found.index >= 0 && !found.equal, 'a park whose unpark has its own CPU time (' + found.source[0] + ')');
    assert.notEqual(shown, 'not measured (park mode)');
    assert.match(shown, /\d/, 'a measured duration: ' + shown);
  } else {
    assert.ok(found.index >= 0 && found.equal, 'a park with its CPU time read, which its unpark carries (' + found.source[0] + ')');
    assert.equal(shown, 'not measured (park mode)');
  }
  assert.deepEqual(errors, []);
  await page.close();
});
