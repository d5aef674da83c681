// The sampled heap on a trace recorded here: tests/preload/d9p_heap's leak (4 KiB blocks from
// leak_inner <- leak_middle <- leak_outer, among churn of mixed sizes) under the preload shim and
// its heap library with DIAL9_MEMORY_PROFILE_ENABLED=1, one sample per 64 KiB, seeded. The
// viewer shows a Heap button;
// its panel draws the in-use line and a flame graph; its totals and every site's allocated and
// in-use bytes equal what the C model computes on the same files (`dial9 analyze --json`); the
// site holding the most at the end is leak_inner, as analyze says. Skips, saying so, when the
// build (D9_BUILD_DIR, else ./build) has no shim, helper or CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startBrowser, openPage, settled, writeArtifact, screenshot, repoRoot } from './harness.mjs';

const build = path.resolve(process.env.D9_BUILD_DIR || path.join(repoRoot, 'build'));
const dial9 = path.join(build, 'dial9');
const shim = path.join(build, 'libdial9-preload.so');
const heapShim = path.join(build, 'libdial9-preload-heap.so'); // the allocator's interposers: heap profiling only
const helper = path.join(build, 'tests', 'preload', 'd9p_heap');
const missing = [dial9, shim, heapShim, helper].filter((f) => !fs.existsSync(f));

let browser;
let recorded = null; // {files, c: analyze --json}
before(async () => {
  if (missing.length) return;
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-viewer-heap-'));
  const traces = path.join(dir, 'traces');
  const run = spawnSync(helper, ['leak', '4000'], {
    env: {
      ...process.env, LD_PRELOAD: `${shim}:${heapShim}`, DIAL9_TRACE_DIR: traces, DIAL9_MEMORY_PROFILE_ENABLED: '1',
      DIAL9_MEMORY_SAMPLE_BYTES: '65536', DIAL9_MEMORY_SEED: '1',
    },
    encoding: 'utf8', timeout: 180000,
  });
  assert.equal(run.status, 0, 'd9p_heap leak: ' + run.stdout + run.stderr);
  const runs = fs.readdirSync(traces).filter((f) => !f.startsWith('.')); // .dial9-spare-reserve: the disk budget's
  assert.equal(runs.length, 1, 'one run: ' + runs);
  const runDir = path.join(traces, runs[0]);
  const sym = spawnSync(dial9, ['symbolize', runDir], { encoding: 'utf8' });
  assert.equal(sym.status, 0, 'dial9 symbolize: ' + sym.stderr);
  const an = spawnSync(dial9, ['analyze', '--json', '--top', '10000', runDir], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(an.status, 0, 'dial9 analyze: ' + an.stderr);
  const segs = fs.readdirSync(runDir).filter((f) => /\.bin(\.gz)?$/.test(f));
  assert.ok(segs.length > 0, 'segments in ' + runDir + ': ' + fs.readdirSync(runDir));
  const files = segs.map((f) => writeArtifact('heap-' + f, fs.readFileSync(path.join(runDir, f))));
  recorded = { files, c: JSON.parse(an.stdout) };
  fs.rmSync(dir, { recursive: true, force: true });
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

const close = (x, y) => Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(y));

test('heap panel: a recorded leak\'s in-use line and flame graph, its sites\' totals equal C\'s', async (t) => {
  if (missing.length) {
    t.skip('not built: ' + missing.join(', '));
    return;
  }
  const c = recorded.c.heap;
  assert.ok(c && c.samples > 20, 'C: heap samples in the recording: ' + JSON.stringify(c && c.samples));

  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  assert.equal(await page.isVisible('#heap-btn'), false, 'no Heap button before a trace with samples');
  await page.setInputFiles('#file-input', recorded.files);
  assert.equal(await settled(page), 'ready');
  assert.equal(await page.isVisible('#heap-btn'), true, 'the Heap button shows');
  await page.click('#heap-btn');
  await page.waitForSelector('#heap-boxes .fg-box');

  const js = await page.evaluate(() => {
    const h = window.D9.heap.view.heap;
    const tr = window.dial9Viewer.state.model.trace;
    const addrs = (stack) => {
      const w = tr.stacks[stack];
      const out = [];
      for (let i = 0; i < w.length; i += 2) out.push('0x' + window.Dial9Decoder.addrHex(w[i], w[i + 1]));
      return out.join(',');
    };
    // the chart drew something: pixels of the line's colour
    const cv = document.getElementById('heap-chart');
    const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    let lit = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i + 1] > 150 && px[i + 2] > 120 && px[i] < 140) lit++;
    return {
      samples: h.samples, frees: h.frees, freesUnmatched: h.freesUnmatched, rate: h.rate,
      allocBytes: h.allocBytes, inuseBytes: h.inuseBytes,
      sites: h.sites.map((s) => ({ addrs: addrs(s.stack), alloc: s.allocBytes, inuse: s.inuseBytes, samples: s.samples, frees: s.frees })),
      lit,
      boxes: Array.from(document.querySelectorAll('#heap-boxes .fg-box')).map((b) => b.textContent),
      firstRow: (document.querySelector('#heap-sites tbody tr td:last-child') || {}).textContent,
      summary: document.getElementById('heap-summary').textContent,
    };
  });
  assert.equal(js.samples, c.samples);
  assert.equal(js.frees, c.frees);
  assert.equal(js.freesUnmatched, c.frees_unmatched);
  assert.equal(js.rate, 65536);
  assert.ok(close(js.allocBytes, c.alloc_bytes), `allocated: viewer ${js.allocBytes}, C ${c.alloc_bytes}`);
  assert.ok(close(js.inuseBytes, c.inuse_bytes), `in use: viewer ${js.inuseBytes}, C ${c.inuse_bytes}`);
  const bySite = new Map(js.sites.map((s) => [s.addrs, s]));
  assert.equal(c.by_alloc.length, js.sites.length, 'as many sites');
  for (const e of c.by_alloc) {
    const k = recorded.c.stacks[String(e.stack)].frames.map((f) => f.addr).join(',');
    const s = bySite.get(k);
    assert.ok(s, 'C\'s site ' + k + ' is one of the viewer\'s');
    assert.ok(close(s.alloc, e.alloc_bytes) && close(s.inuse, e.inuse_bytes), `${k}: viewer ${s.alloc}/${s.inuse}, C ${e.alloc_bytes}/${e.inuse_bytes}`);
    assert.equal(s.samples, e.samples);
    assert.equal(s.frees, e.frees);
  }
  const top = recorded.c.stacks[String(c.by_inuse[0].stack)].function;
  assert.equal(top, 'leak_inner', 'C: the most in use at the end');
  assert.equal(js.firstRow, 'leak_inner', 'the panel\'s first site by bytes in use');
  assert.ok(js.boxes.includes('leak_inner') && js.boxes.includes('leak_outer'), 'the flame graph has the leak\'s frames: ' + js.boxes.slice(0, 20));
  assert.ok(js.lit > 50, 'the in-use line is drawn (' + js.lit + ' pixels)');
  assert.match(js.summary, new RegExp('^' + c.samples + ' samples'));

  // a click on the leak's row draws its own in-use line (orange) over the total
  const orange = () => page.evaluate(() => {
    const cv = document.getElementById('heap-chart');
    const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i] > 200 && px[i + 1] > 120 && px[i + 1] < 190 && px[i + 2] < 90) n++;
    return n;
  });
  assert.equal(await orange(), 0, 'no site line before a site is picked');
  await page.click('#heap-sites tbody tr:first-child td:last-child');
  assert.ok(await orange() > 50, 'the leak\'s own line is drawn');
  assert.equal(await page.evaluate(() => document.querySelector('#heap-sites tbody tr.on td:last-child').textContent), 'leak_inner');

  // allocated bytes: the churn's sites weigh in too; the table follows
  await page.selectOption('#heap-kind', 'alloc');
  const allocTop = await page.evaluate(() => document.querySelector('#heap-sites tbody tr td:last-child').textContent);
  assert.equal(allocTop, recorded.c.stacks[String(c.by_alloc[0].stack)].function, 'the first site by bytes allocated, as C ranks it');
  await screenshot(page, 'heap-panel');
  assert.deepEqual(errors, []);
});
