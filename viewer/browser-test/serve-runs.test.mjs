// `dial9 serve DIR` in Chromium: the address it prints opens on DIR's runs (runs.html, from
// /api/index), newest first, with service, start, length, size, drops and task dumps; the
// filter narrows them; a run opens in the viewer; and neither page logs a console error or
// gets any answer of 400 or more (the list of runs asked for /favicon.ico, a 404). Runs are
// written here with the test encoder; needs a dial9 build with libmicrohttpd (else skips).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startBrowser, openPage, settled, screenshot, repoRoot, viewerDir } from './harness.mjs';
import { TraceWriter, declareBuiltins, T } from '../test/encoder.mjs';

let browser;
before(async () => {
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

const S = 1000000000n;

/* One segment: a service's metadata and a clock sync (when given), `polls` polls of 100 ms
 * one after the other, `drops` lost events in one DroppedEventsEvent, `dumps` task dumps. */
function segment({ service, realtime, polls = 3, drops = 0, dumps = 0 }) {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  const dropId = Object.keys(id).length;
  w.schema(dropId, 'DroppedEventsEvent', true,
    [['count', T.VARINT], ['reason', T.POOLED_STRING], ['tid', T.U32], ['worker_id', T.VARINT]]);
  w.stringPool([[1, 'src/run.c:10'], [2, 'ring full']]);
  w.stackPool([[1, [0x401230n]]]);
  let t = 7000n * S;
  if (service) w.event(id.SegmentMetadataEvent, t, [[['service', service]]]);
  if (realtime != null) w.event(id.ClockSyncEvent, t, [realtime]);
  for (let k = 0; k < polls; k++) {
    w.event(id.PollStartEvent, t, [0, 0, k + 1, 1]);
    w.event(id.PollEndEvent, t + S / 10n, [0]);
    t += S / 10n;
  }
  if (drops) w.event(dropId, t, [drops, 2, 100, 0]);
  for (let k = 0; k < dumps; k++) w.event(id.TaskDumpEvent, t, [k + 1, 1]);
  return w.bytes();
}

const ms = (iso) => Date.parse(iso);
const RUNS = [ // newest first, as the page must list them
  { run: 'billing-7', service: 'billing', start: '2025-06-01T12:00:00.000Z', polls: 5 },
  { run: 'checkout-2', service: 'checkout-api', start: '2024-03-01T10:00:00.000Z', drops: 5, dumps: 2 },
  { run: 'checkout-1', service: 'checkout-api', start: '2023-01-01T08:30:00.000Z' },
  { run: 'legacy', mtime: '2022-02-02T00:00:00.000Z' }, // no clock sync: its file's mtime
];

/* `dial9 serve` from the build: DIAL9 or build/dial9 at the repository root. */
function dial9Binary() {
  const p = process.env.DIAL9 || path.join(repoRoot, 'build', 'dial9');
  return fs.existsSync(p) ? p : null;
}

async function startServe(bin, dir) {
  const child = spawn(bin, ['serve', '--port', '0', '--viewer-dir', viewerDir, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((ok, fail) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) ok(m[1]);
    });
    child.on('exit', (code) => fail(new Error('dial9 serve exited (' + code + '): ' + out + err)));
  });
  return { url, out: () => out + err, stop: () => new Promise((ok) => { child.once('exit', ok); child.kill('SIGTERM'); }) };
}

/* A page that also records every answer of 400 or more (a 404 logs only "Failed to load resource"). */
async function watchedPage(url) {
  const { page, errors } = await openPage(browser);
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push('HTTP ' + r.status() + ' ' + r.url());
  });
  page.on('requestfailed', (r) => errors.push('failed ' + r.url() + ': ' + (r.failure() || {}).errorText));
  await page.goto(url);
  return { page, errors };
}

const visibleRuns = (page) => page.$$eval('#runs tbody tr', (rows) => rows.filter((r) => !r.hidden).map((r) => r.dataset.run));

test('dial9 serve DIR opens on its runs, newest first, filterable, and a run opens in the viewer', async (t) => {
  const bin = dial9Binary();
  if (!bin) {
    t.skip('no dial9 build (set DIAL9 or build into build/): ' + path.join(repoRoot, 'build', 'dial9'));
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'd9-serve-runs-'));
  for (const r of RUNS) {
    fs.mkdirSync(path.join(dir, r.run));
    const file = path.join(dir, r.run, 'trace.0.bin');
    fs.writeFileSync(file, segment({ service: r.service, realtime: r.start ? BigInt(ms(r.start)) * 1000000n : null,
      polls: r.polls, drops: r.drops, dumps: r.dumps }));
    if (r.mtime) fs.utimesSync(file, new Date(r.mtime), new Date(r.mtime));
  }
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
    // the address printed, as a person opens it
    const { page, errors } = await watchedPage(serve.url);
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', serve.out());
    assert.deepEqual(await visibleRuns(page), RUNS.map((r) => r.run), 'newest first');
    const cells = (run) => page.$eval(`#runs tr[data-run="${run}"]`, (tr) => {
      const c = (k) => tr.querySelector('td.' + k);
      return { service: c('service').textContent, start: c('start').title, length: c('length').textContent,
        size: c('size').textContent, sizeTitle: c('size').title, drops: c('drops').textContent, dumps: c('dumps').textContent,
        dumpsShown: !c('dumps').hidden };
    });
    const billing = await cells('billing-7');
    assert.equal(billing.service, 'billing');
    assert.match(billing.start, /^2025-06-01T12:00:00\.000Z/);
    assert.equal(billing.length, '500.0 ms'); // 5 polls of 100 ms
    const billingBytes = fs.statSync(path.join(dir, 'billing-7', 'trace.0.bin')).size;
    assert.equal(billing.sizeTitle, billingBytes + ' bytes');
    assert.equal(billing.size, (billingBytes / 1024).toFixed(1) + ' KiB');
    assert.equal(billing.drops, '0');
    const checkout = await cells('checkout-2');
    assert.equal(checkout.service, 'checkout-api');
    assert.equal(checkout.drops, '5');
    assert.equal(checkout.dumps, '2');
    assert.ok(checkout.dumpsShown, 'a dumps column, since a run has dumps');
    const legacy = await cells('legacy');
    assert.equal(legacy.service, '–');
    assert.match(legacy.start, /^2022-02-02T00:00:00\.000Z/);
    assert.equal(await page.locator('#runs-count').textContent(), '4 runs');
    await screenshot(page, 'serve-runs');

    // the filter, on run names and services
    await page.fill('#runs-filter', 'checkout');
    assert.deepEqual(await visibleRuns(page), ['checkout-2', 'checkout-1']);
    assert.equal(await page.locator('#runs-count').textContent(), '2 of 4 runs');
    await page.fill('#runs-filter', 'BILLING');
    assert.deepEqual(await visibleRuns(page), ['billing-7']);
    await page.fill('#runs-filter', 'no-such-run');
    assert.deepEqual(await visibleRuns(page), []);
    assert.match(await page.locator('#runs-message').textContent(), /No run matches/);
    await page.fill('#runs-filter', '');
    assert.deepEqual(await visibleRuns(page), RUNS.map((r) => r.run));

    // opening a run: the viewer, with that run loaded
    await Promise.all([
      page.waitForURL((u) => u.pathname === '/' && u.searchParams.get('trace') === '/api/trace?run=checkout-2'),
      page.locator('#runs a.run-link', { hasText: 'checkout-2' }).click(),
    ]);
    assert.equal(await settled(page), 'ready', serve.out());
    assert.equal(await page.evaluate(() => window.dial9Viewer.state.model.trace.polls.count), 3);
    await page.close();

    // the plain list of runs too
    const plain = await watchedPage(serve.url + 'runs');
    assert.equal(await plain.page.locator('table tr td:first-child a').count(), 4);
    await plain.page.close();
    assert.deepEqual(errors.concat(plain.errors), []);
  } finally {
    await serve.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the runs page of an empty directory says there is nothing yet', async (t) => {
  const bin = dial9Binary();
  if (!bin) {
    t.skip('no dial9 build');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'd9-serve-empty-'));
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
    const { page, errors } = await watchedPage(serve.url);
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'empty');
    assert.match(await page.locator('#runs-message').textContent(), /No traces under .* yet/);
    await page.close();
    assert.deepEqual(errors, []);
  } finally {
    await serve.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/* A flight recorder's dump directory (docs/flight-recorder.md): its marker, a segment, and its
 * manifest unless interrupted. */
function writeDump(dir, name, manifest) {
  fs.mkdirSync(path.join(dir, name));
  fs.writeFileSync(path.join(dir, name, '.dial9-dump'), '');
  fs.writeFileSync(path.join(dir, name, 'trace.0.bin'), segment({ service: 'api', realtime: BigInt(ms('2026-12-06T09:00:00.000Z')) * 1000000n }));
  if (manifest) fs.writeFileSync(path.join(dir, name, 'manifest.json'), JSON.stringify(manifest, null, 2));
}

test('the runs page lists dumps with their trigger and window, and says when one is incomplete', async (t) => {
  const bin = dial9Binary();
  if (!bin) {
    t.skip('no dial9 build');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'd9-serve-dumps-'));
  const at = 7000n * S;
  writeDump(dir, 'run-1.dump1', {
    format: 'dial9-dump', version: 1, run_id: 'run-1', pid: 1, mode: 'memory',
    trigger: { kind: 'rule', rule: 'poll_ms>20', event: 'PollEndEvent: worker 0 polled 612.004 ms',
      at_unix_ns: 1796547600000000000, at_mono_ns: Number(at), merged_triggers: 0 },
    window: { lookback_ms: 30000, lookforward_ms: 5000, from_unix_ns: 1796547570000000000, to_unix_ns: 1796547605000000000,
      from_mono_ns: Number(at - 30n * S), to_mono_ns: Number(at + 5n * S) },
    holds: { segments: 1, bytes: 1, files: [] }, lacks: { lookback_ms: 0, lookforward_ms: 0, segments_missing: 0 },
  });
  writeDump(dir, 'run-1.dump2', null);
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
    const { page, errors } = await watchedPage(serve.url);
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', serve.out());
    const tag = (run) => page.$eval(`#runs tr[data-run="${run}"] .flight-dump`, (e) => ({ text: e.textContent, cls: e.className }));
    const done = await tag('run-1.dump1');
    assert.equal(done.text, 'dump: rule poll_ms>20 (PollEndEvent: worker 0 polled 612.004 ms) at 2026-12-06T09:00:00.000Z, ' +
      'window 30000 ms before to 5000 ms after, 1 segments');
    assert.equal(done.cls, 'flight-dump');
    const cut = await tag('run-1.dump2');
    assert.match(cut.text, /^INCOMPLETE dump: incomplete: no manifest\.json/);
    assert.equal(cut.cls, 'flight-dump warn');
    await page.fill('#runs-filter', 'poll_ms>20');
    assert.deepEqual(await visibleRuns(page), ['run-1.dump1'], 'the filter reads the trigger too');
    await screenshot(page, 'serve-runs-dumps');
    await page.close();
    assert.deepEqual(errors, []);
  } finally {
    await serve.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
