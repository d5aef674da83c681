// What the viewer writes, in Chromium: signed times in the status bar and the flame graph, no
// tooltip or cursor readout left behind, summary chips that stay readable on a small screen,
// traces named after the run and segment under `dial9 serve`, and real ranks of polls.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startBrowser, openPage, settled, idle, writeArtifact, screenshot, repoRoot, viewerDir } from './harness.mjs';
import { runtimeTrace } from '../test/synthetic.mjs';
import { TraceWriter, declareBuiltins } from '../test/encoder.mjs';

let browser;
before(async () => {
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

const traceFile = () => writeArtifact('formatting.bin', Buffer.concat(runtimeTrace(2).map((f) => Buffer.from(f.bytes))));

async function openTrace(viewport) {
  const file = traceFile();
  const p = await openPage(browser);
  if (viewport) await p.page.setViewportSize(viewport);
  await p.page.goto(browser.base + '/viewer/index.html');
  assert.equal(await settled(p.page), 'empty');
  await p.page.setInputFiles('#file-input', file);
  assert.equal(await settled(p.page), 'ready');
  await idle(p.page);
  return p;
}

test('the status bar starts at view 0, and says negative times with a minus', async () => {
  const { page, errors } = await openTrace();
  const status = await page.locator('#status-view').textContent();
  assert.match(status, /^view 0\.0 ms → 293\.4 ms · 293\.4 ms wide$/);
  // Panned before the start, the times there are negative: "−", never "+−".
  await page.keyboard.press('w');
  for (let k = 0; k < 3; k++) await page.keyboard.press('a');
  await idle(page);
  assert.match(await page.locator('#status-view').textContent(), /^view −[\d.]+ ms → [\d.]+ ms/);
  await page.close();
  assert.deepEqual(errors, []);
});

test('the flame graph of the starting view says its range as +0.0 ms … +293.4 ms', async () => {
  const { page, errors } = await openTrace();
  await page.keyboard.press('g');
  await idle(page);
  const summary = await page.locator('#fg-summary').textContent();
  assert.doesNotMatch(summary, /\+−/);
  assert.match(summary, /^\d+ samples in \+0\.0 ms … \+293\.4 ms · /);
  await page.close();
  assert.deepEqual(errors, []);
});

/* Puts the pointer on the trace's slowest poll (12 ms) and waits for its tooltip. */
async function hoverSlowPoll(page) {
  const i = await page.evaluate(() => window.dial9Viewer.state.model.longestPolls[0].index);
  const pt = await page.evaluate((i) => window.dial9Viewer.timeline.clientPointOfPoll(i), i);
  await page.mouse.move(pt.x, pt.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  assert.match(await page.locator('#tooltip').textContent(), /12\.00 ms/);
}

test('a hovered tooltip goes on 0 and on G', async () => {
  const { page, errors } = await openTrace();
  await page.evaluate(() => { // zoomed in on the slowest poll: a view that 0 changes
    const v = window.dial9Viewer;
    const i = v.state.model.longestPolls[0].index;
    v.timeline.reveal(v.state.model.trace.polls.start[i], v.state.model.trace.polls.end[i]);
  });
  await idle(page);
  await hoverSlowPoll(page);
  await page.keyboard.press('0');
  await idle(page);
  assert.equal(await page.locator('#tooltip').isVisible(), false, 'no tooltip after 0');
  await hoverSlowPoll(page);
  await page.keyboard.press('g');
  assert.equal(await page.locator('#flame').isVisible(), true);
  assert.equal(await page.locator('#tooltip').isVisible(), false, 'no tooltip after G');
  await page.close();
  assert.deepEqual(errors, []);
});

test('the cursor readout goes when the pointer leaves the lanes', async () => {
  const { page, errors } = await openTrace();
  await hoverSlowPoll(page);
  assert.match(await page.locator('#status-cursor').textContent(), /^cursor [\d.]+ ms$/);
  const side = await page.locator('#details').boundingBox();
  await page.mouse.move(side.x + 40, side.y + 40); // out of the lanes, onto the sidebar
  assert.equal(await page.locator('#status-cursor').textContent(), '', 'no cursor readout outside the lanes');
  assert.equal(await page.locator('#tooltip').isVisible(), false);
  await page.close();
  assert.deepEqual(errors, []);
});

test('at 1024×640 every summary chip is readable in full and clear of the buttons', async () => {
  const { page, errors } = await openTrace({ width: 1024, height: 640 });
  const chips = await page.evaluate(() => [...document.querySelectorAll('#trace-summary .chip')].map((c) => {
    const r = c.getBoundingClientRect();
    return { text: c.textContent, scrollW: c.scrollWidth, clientW: c.clientWidth, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  }));
  const buttons = await page.evaluate(() => [...document.querySelectorAll('.topbar .btn, .topbar .seg')].filter((b) => b.offsetParent).map((b) => {
    const r = b.getBoundingClientRect();
    return { id: b.id || b.className, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  }));
  const sum = await page.locator('#trace-summary').boundingBox();
  assert.ok(chips.length >= 4, 'chips: ' + chips.map((c) => c.text).join(' | '));
  for (const c of chips) {
    assert.ok(c.scrollW <= c.clientW, `"${c.text}" is cut (${c.clientW} of ${c.scrollW} px)`);
    assert.ok(c.left >= sum.x - 0.5 && c.right <= sum.x + sum.width + 0.5 && c.right <= 1024, `"${c.text}" lies inside the summary and the window`);
    for (const b of buttons) {
      const overlap = c.left < b.right && b.left < c.right && c.top < b.bottom && b.top < c.bottom;
      assert.ok(!overlap, `"${c.text}" overlaps ${b.id}`);
    }
  }
  assert.match(chips.map((c) => c.text).join(' '), /formatting\.bin service synthetic-service 424 events 293\.4 ms 3 workers/);
  await screenshot(page, 'summary-1024x640');
  await page.close();
  assert.deepEqual(errors, []);
});

/* 500 polls of one worker, poll k taking 1 + k % 250 µs: more polls than the 200 longest listed. */
function manyPolls() {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.stringPool([[1, 'src/many.c:1']]);
  let t = 1000000000n;
  for (let k = 0; k < 500; k++) {
    w.event(id.PollStartEvent, t, [0, 0, 1 + (k % 9), 1]);
    t += BigInt(1000 * (1 + (k % 250)));
    w.event(id.PollEndEvent, t, [0]);
    t += 5000n;
  }
  return w.bytes();
}

test('a poll outside the 200 longest gets its real rank', async () => {
  const file = writeArtifact('many-polls.bin', manyPolls());
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  await page.setInputFiles('#file-input', file);
  assert.equal(await settled(page), 'ready');
  // The shortest poll of the trace: every other poll took longer, or as long.
  const expected = await page.evaluate(() => {
    const P = window.dial9Viewer.state.model.trace.polls;
    let shortest = 0;
    for (let i = 1; i < P.count; i++) if (P.end[i] - P.start[i] < P.end[shortest] - P.start[shortest]) shortest = i;
    let longer = 0;
    for (let i = 0; i < P.count; i++) if (P.end[i] - P.start[i] > P.end[shortest] - P.start[shortest]) longer++;
    window.dial9Viewer.select({ kind: 'poll', index: shortest });
    return { rank: longer + 1, count: P.count };
  });
  assert.equal(expected.count, 500);
  assert.equal(expected.rank, 499, 'two polls of 1 µs, 498 longer ones');
  const note = await page.locator('.rank-note').textContent();
  assert.match(note, new RegExp('^#' + expected.rank + ' longest of ' + expected.count + ' polls'));
  await page.close();
  assert.deepEqual(errors, []);
});

/* `dial9 serve` from the build, when there is one: DIAL9 or build/dial9 at the repository root. */
function dial9Binary() {
  const p = process.env.DIAL9 || path.join(repoRoot, 'build', 'dial9');
  return fs.existsSync(p) ? p : null;
}

async function startServe(bin, dir) {
  const child = spawn(bin, ['serve', '--port', '0', '--viewer-dir', viewerDir, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const port = await new Promise((ok, fail) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) ok(Number(m[1]));
    });
    child.on('exit', (code) => fail(new Error('dial9 serve exited (' + code + '): ' + out + err)));
  });
  return { port, out: () => out + err, stop: () => new Promise((ok) => { child.once('exit', ok); child.kill('SIGTERM'); }) };
}

test('under dial9 serve, the file chip and the title name the run and the segment', async (t) => {
  const bin = dial9Binary();
  if (!bin) {
    t.skip('no dial9 build (set DIAL9 or build into build/): ' + path.join(repoRoot, 'build', 'dial9'));
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'd9-viewer-serve-'));
  fs.mkdirSync(path.join(dir, 'run-42'));
  for (const f of runtimeTrace(2)) fs.writeFileSync(path.join(dir, 'run-42', f.name), f.bytes);
  let serve;
  try {
    serve = await startServe(bin, dir);
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    if (/without libmicrohttpd/.test(e.message)) {
      t.skip('dial9 was built without libmicrohttpd');
      return;
    }
    throw e;
  }
  try {
    const cases = [
      ['/api/trace?run=run-42&seg=1', 'run-42 · segment 1'],
      ['/api/trace?run=run-42&seg=0&seg=1', 'run-42 · segments 0, 1'],
      ['/api/trace?run=run-42', 'run-42 · all segments'],
    ];
    for (const [api, name] of cases) {
      const { page, errors } = await openPage(browser, `http://127.0.0.1:${serve.port}/?trace=` + encodeURIComponent(api));
      assert.equal(await settled(page), 'ready', serve.out());
      assert.equal(await page.locator('#trace-summary .chip').first().textContent(), name);
      assert.equal(await page.title(), name + ' — dial9 trace viewer');
      if (api.endsWith('seg=1')) await screenshot(page, 'serve-named');
      await page.close();
      assert.deepEqual(errors, []);
    }
  } finally {
    await serve.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
