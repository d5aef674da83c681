// A/B mode (viewer/src/ab.js) on two recorded traces: tests/diff/workload.c recorded with its
// base build (A) and with handle_lookup 2 ms slower (B). Opened as two traces, the drawer shows
// per spawn location the poll counts of `dial9 diff --json A B`; as two windows of A (the first
// and the second half of its polls), those of `dial9 diff --json --a-from --a-to --b-from --b-to`.
// Counts, not durations: the machine is busy; the slow build's handle_lookup has a p50 of 2 ms
// or more in B, which holds however slow the machine is (its 2 ms are CPU time). Skips, saying so, when the
// build (D9_BUILD_DIR, else ./build) lacks the workloads or the CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startBrowser, openPage, settled, idle, screenshot, repoRoot } from './harness.mjs';

const build = path.resolve(process.env.D9_BUILD_DIR || path.join(repoRoot, 'build'));
const dial9 = path.join(build, 'dial9');
const fast = path.join(build, 'd9_diff_workload_fast');
const slow = path.join(build, 'd9_diff_workload_slow');
const missing = [dial9, fast, slow].filter((f) => !fs.existsSync(f));

let browser;
let dir;
let runA;
let runB;
const segments = (run) => fs.readdirSync(run).filter((f) => /\.bin(\.gz)?$/.test(f)).sort().map((f) => path.join(run, f));

function record(binary, name) {
  const r = spawnSync(binary, [path.join(dir, name)], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, name + ': ' + r.stderr);
  const run = r.stdout.split('\n')[0].trim();
  assert.ok(run && fs.existsSync(run), name + ': its run directory (' + run + ')');
  return run;
}

// dial9 diff --json: the spawn locations' poll counts per side
function diffCounts(args) {
  const r = spawnSync(dial9, ['diff', '--json', ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, 'dial9 diff ' + args.join(' ') + ': ' + r.stderr);
  const d = JSON.parse(r.stdout);
  const out = {};
  for (const g of d.groups) if (g.kind === 'spawn_location') out[g.name] = [g.a ? g.a.count : 0, g.b ? g.b.count : 0];
  return out;
}

before(async () => {
  if (missing.length) return;
  dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-viewer-ab-'));
  runA = record(fast, 'base');
  runB = record(slow, 'slow');
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function shownCounts(page) {
  await page.locator('#ab-table').waitFor();
  const rows = await page.locator('#ab-table tr[data-loc]').evaluateAll((els) =>
    els.map((e) => [e.dataset.loc, Number(e.dataset.countA), Number(e.dataset.countB)]));
  return Object.fromEntries(rows.map(([n, a, b]) => [n, [a, b]]));
}

test('A/B of two traces: per spawn location the poll counts of dial9 diff', async (t) => {
  if (missing.length) {
    t.skip('not built: ' + missing.join(', '));
    return;
  }
  const c = diffCounts([runA, runB]);
  assert.equal(Object.keys(c).length, 4, 'the workload\'s four handlers: ' + JSON.stringify(c));
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  await page.setInputFiles('#file-input', segments(runA));
  assert.equal(await settled(page), 'ready');
  await page.click('#ab-btn');
  assert.match(await page.locator('#ab-body').textContent(), /Open the trace B/);
  await page.setInputFiles('#ab-file-b', segments(runB));
  assert.deepEqual(await shownCounts(page), c);
  // the slower handler: each of its calls in B burns 2 ms of its thread's CPU time, so B's p50
  // is at least 2 ms however busy the machine (A's is not compared: load only lengthens it)
  const p50 = await page.evaluate(() => {
    const S = window.D9.ab.state;
    const rows = window.D9.ab.compare(window.D9.ab.groups(S.a.trace), window.D9.ab.groups(S.b.trace));
    return Object.fromEntries(rows.map((r) => [r.name, r.b.p50]));
  });
  assert.ok(p50.handle_lookup >= 2e6, 'handle_lookup takes 2 ms or more in B: ' + JSON.stringify(p50));
  assert.equal(await page.locator('#ab-table tr[data-loc="handle_lookup"] svg.ab-hist').count(), 1, 'its histograms');
  await screenshot(page, 'ab-two-traces');
  assert.deepEqual(errors, []);
  await page.close();
});

test('A/B of two windows of one trace: the counts of dial9 diff --a-from/--a-to/--b-from/--b-to', async (t) => {
  if (missing.length) {
    t.skip('not built: ' + missing.join(', '));
    return;
  }
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  await page.setInputFiles('#file-input', segments(runA));
  assert.equal(await settled(page), 'ready');
  await page.click('#ab-btn');
  await page.click('#ab-mode button[data-mode="windows"]');
  // A: up to the start of the middle poll; B: from there to the end
  const cut = await page.evaluate(() => {
    const tr = window.dial9Viewer.state.model.trace;
    const starts = Array.from(tr.polls.start).sort((x, y) => x - y);
    return { first: tr.timeStart, mid: starts[starts.length >> 1], end: tr.timeEnd + 1 };
  });
  const setWindow = async (from, to, button) => {
    await page.evaluate(([a, b]) => window.dial9Viewer.timeline.setView(a, b, false), [from, to]);
    await idle(page);
    await page.click(button);
  };
  await setWindow(cut.first, cut.mid, '#ab-set-a');
  await setWindow(cut.mid, cut.end, '#ab-set-b');
  const sides = await page.evaluate(() => {
    const S = window.D9.ab.state;
    const o = BigInt(S.a.trace.origin);
    const abs = (t) => '@' + (o + BigInt(Math.ceil(t))).toString(); // polls start at integer ns
    return [abs(S.a.from), abs(S.a.to), abs(S.b.from), abs(S.b.to)];
  });
  const c = diffCounts(['--a-from', sides[0], '--a-to', sides[1], '--b-from', sides[2], '--b-to', sides[3], runA]);
  const shown = await shownCounts(page);
  assert.deepEqual(shown, c);
  const total = Object.values(shown).reduce((s, [a, b]) => s + a + b, 0);
  assert.ok(Object.values(shown).some(([a, b]) => a > 0 && b > 0), 'both windows hold polls: ' + JSON.stringify(shown));
  assert.ok(total > 0);
  await screenshot(page, 'ab-two-windows');
  assert.deepEqual(errors, []);
  await page.close();
});
