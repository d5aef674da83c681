// The viewer in a real browser (Debian's Chromium through playwright-core): `node --test browser-test/`.
// Screenshots go to viewer/test-artifacts/ (gitignored).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { pathToFileURL } from 'node:url';
import {
  startBrowser, openPage, settled, screenshot, writeArtifact, idle, fixturePath, viewerDir,
} from './harness.mjs';
import { runtimeTrace, millionEvents } from '../test/synthetic.mjs';

const haveFixture = fs.existsSync(fixturePath);
const FIXTURE_URL = '/shared/fixtures/dial9-demo-trace.bin';
const LONGEST_LOCATION = 'examples/metrics-service/src/axum_traced.rs:173:32';
let browser;
let fixture = null; // {page, errors}: the fixture page, shared by the tests that follow its loading

before(async () => {
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

function skipWithoutFixture(t) {
  if (haveFixture) return false;
  t.skip('fixture absent: ' + fixturePath);
  return true;
}

function viewerUrl(query) {
  return browser.base + '/viewer/index.html' + (query || '');
}

/* Pixels of a lane row of the timeline canvas close to `rgb`. */
async function lanePixels(page, worker, rgb, tol = 24) {
  return page.evaluate(({ worker, rgb, tol }) => {
    const tl = window.dial9Viewer.timeline;
    const row = tl.rows.find((r) => r.kind === 'lane' && r.lane.worker === worker);
    const cv = document.getElementById('lanes');
    const dpr = window.devicePixelRatio || 1;
    const y0 = Math.max(0, Math.round((row.y - tl.scrollY) * dpr));
    const h = Math.round(row.h * dpr);
    const x0 = Math.round(148 * dpr);
    const img = cv.getContext('2d').getImageData(x0, y0, cv.width - x0, h).data;
    let n = 0;
    for (let i = 0; i < img.length; i += 4) {
      if (Math.abs(img[i] - rgb[0]) <= tol && Math.abs(img[i + 1] - rgb[1]) <= tol && Math.abs(img[i + 2] - rgb[2]) <= tol) n++;
    }
    return n;
  }, { worker, rgb, tol });
}

/* Pixels of a lane that are not lane background: something was drawn there. */
async function drawnPixels(page, worker) {
  return page.evaluate((worker) => {
    const tl = window.dial9Viewer.timeline;
    const row = tl.rows.find((r) => r.kind === 'lane' && r.lane.worker === worker);
    const cv = document.getElementById('lanes');
    const dpr = window.devicePixelRatio || 1;
    const img = cv.getContext('2d').getImageData(Math.round(150 * dpr), Math.round((row.y - tl.scrollY) * dpr), cv.width - Math.round(150 * dpr), Math.round(row.h * dpr)).data;
    let n = 0;
    for (let i = 0; i < img.length; i += 4) if (img[i] + img[i + 1] + img[i + 2] > 150) n++;
    return n;
  }, worker);
}

async function viewSpan(page) {
  return page.evaluate(() => {
    const tl = window.dial9Viewer.timeline;
    return { t0: tl.t0, t1: tl.t1, span: tl.t1 - tl.t0 };
  });
}

test('the dial9 fixture by ?trace=: two worker lanes, points of interest start with the 50.28 ms poll', async (t) => {
  if (skipWithoutFixture(t)) return;
  fixture = await openPage(browser, viewerUrl('?trace=' + FIXTURE_URL));
  const { page, errors } = fixture;
  assert.equal(await settled(page), 'ready');
  const info = await page.evaluate(() => ({
    workers: window.dial9Viewer.state.model.lanes.map((l) => l.worker),
    lanesDrawn: window.dial9Viewer.timeline.stats.lanesDrawn,
    loaded: window.dial9Viewer.loaded,
  }));
  assert.deepEqual(info.workers, [0, 1]);
  assert.equal(info.lanesDrawn, 2);
  assert.equal(info.loaded.events, 210639);
  console.log(`# Chromium (${info.loaded.where}): fixture decoded in ${info.loaded.decodeMs.toFixed(0)} ms ` +
    `(${(210639 / info.loaded.decodeMs / 1000).toFixed(2)} M events/s), gunzip ${info.loaded.gunzipMs.toFixed(0)} ms, view model ${info.loaded.modelMs.toFixed(0)} ms`);
  for (const w of [0, 1]) assert.ok(await drawnPixels(page, w) > 2000, 'worker ' + w + ' lane has polls drawn');
  const first = page.locator('#poi-list li[data-rank="0"]');
  assert.equal(await first.locator('.dur').textContent(), '50.28 ms');
  assert.match(await first.textContent(), /task 0x70/);
  assert.match(await page.locator('#poi-list li[data-rank="1"] .dur').textContent(), /47\.67 ms/);
  assert.match(await page.locator('#trace-summary').textContent(), /210\u2009639 events/);
  await screenshot(page, 'fixture-overview');
  assert.deepEqual(errors, []);
});

test('clicking the longest poll shows its duration, task, location and the samples inside it', async (t) => {
  if (skipWithoutFixture(t) || !fixture) return;
  const { page, errors } = fixture;
  const idx = await page.evaluate(() => {
    const v = window.dial9Viewer;
    const i = v.state.model.longestPolls[0].index;
    const P = v.state.model.trace.polls;
    v.timeline.reveal(P.start[i], P.end[i], P.worker[i]);
    return i;
  });
  await idle(page);
  const pt = await page.evaluate((i) => window.dial9Viewer.timeline.clientPointOfPoll(i), idx);
  await page.mouse.move(pt.x, pt.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  assert.match(await page.locator('#tooltip').textContent(), /50\.28 ms/);
  await page.mouse.click(pt.x, pt.y);
  await page.waitForSelector('#detail-duration');
  assert.equal((await page.locator('#detail-duration').textContent()).trim(), '50.28 ms');
  assert.equal(await page.locator('#detail-task').textContent(), 'task 0x70'); // 112, in hex as dial9 shows it
  assert.equal(await page.locator('#detail-location').textContent(), LONGEST_LOCATION);
  assert.match(await page.locator('#details-body').textContent(), /worker 0/);
  const samples = Number(await page.locator('#detail-sample-count').textContent());
  assert.ok(samples > 0, 'CPU samples inside the longest poll');
  // dial9's headline finding: blocked in the kernel growing the file-descriptor table.
  assert.match(await page.locator('#details-body').textContent(), /expand_fdtable/);
  assert.equal(await page.locator('#poi-list li.on').getAttribute('data-rank'), '0');
  await screenshot(page, 'fixture-longest-poll');
  assert.deepEqual(errors, []);
});

test('selecting the task highlights its polls on every worker where it ran, with its wakes', async (t) => {
  if (skipWithoutFixture(t) || !fixture) return;
  const { page, errors } = fixture;
  await page.click('#detail-task');
  await page.waitForSelector('#task-card');
  const expected = await page.evaluate(() => {
    const v = window.dial9Viewer;
    const P = v.state.model.trace.polls;
    return [...new Set(v.timeline.taskPolls.map((i) => P.worker[i]))].sort();
  });
  assert.deepEqual(expected, [0, 1], 'task 112 ran on both workers');
  await page.keyboard.press('0'); // whole trace: every poll of the task is in view
  await idle(page);
  const stats = await page.evaluate(() => window.dial9Viewer.timeline.stats);
  for (const w of expected) {
    assert.ok(stats.highlightedByWorker[w] > 0, 'highlighted polls drawn on worker ' + w);
    assert.ok(await lanePixels(page, w, [255, 216, 77]) > 20, 'highlight colour visible on worker ' + w);
  }
  assert.ok(stats.wakesDrawn > 0, 'wake arrows drawn');
  assert.match(await page.locator('#task-card').textContent(), /Task 0x70 highlighted/);
  assert.match(await page.locator('#task-card').textContent(), /Lifetime/);
  await screenshot(page, 'fixture-task-highlight');
  // Zoom in on the task's slowest poll with its wakes around it.
  await page.evaluate(() => {
    const v = window.dial9Viewer;
    const i = v.state.model.longestPolls[0].index;
    const P = v.state.model.trace.polls;
    v.timeline.setView(P.start[i] - 3e6, P.end[i] + 3e6, false);
  });
  await idle(page);
  await screenshot(page, 'fixture-task-wakes');
  await page.keyboard.press('Escape'); // the selection
  await page.keyboard.press('Escape'); // the task
  assert.equal(await page.locator('#task-card').count(), 0);
  assert.deepEqual(errors, []);
});

test('flame graphs of the visible range: off-CPU shows the fd-table growth, CPU and location filters work', async (t) => {
  if (skipWithoutFixture(t)) return;
  const { page, errors } = fixture;
  // The range of the longest poll: its off-CPU samples are the fd-table growth.
  await page.evaluate(() => window.dial9Viewer.gotoPoi(0));
  await page.keyboard.press('f');
  await idle(page);
  await page.keyboard.press('g');
  assert.equal(await page.locator('#flame').isVisible(), true);
  await page.selectOption('#fg-kind', 'offcpu');
  await idle(page);
  const offcpu = await page.locator('#fg-boxes').textContent();
  assert.match(offcpu, /expand_fdtable/, 'the off-CPU flame graph names the fd-table growth');
  assert.match(await page.locator('#fg-summary').textContent(), /samples in/);
  await screenshot(page, 'fixture-flame-offcpu');
  // The whole trace from here on.
  await page.keyboard.press('Escape');
  await page.keyboard.press('0');
  await page.keyboard.press('g');
  await page.selectOption('#fg-kind', 'offcpu');
  await idle(page);
  // Only the polls of the location of the longest polls: fewer samples, still the same story.
  const locs = await page.locator('#fg-loc option').allTextContents();
  const axum = locs.find((l) => l.includes('axum_traced.rs:173:32'));
  assert.ok(axum, 'the spawn location filter lists axum_traced.rs:173:32: ' + locs.join(' | '));
  const all = Number((await page.locator('#fg-summary').textContent()).match(/^(\d+) samples/)[1]);
  await page.selectOption('#fg-loc', { label: axum });
  await idle(page);
  const some = Number((await page.locator('#fg-summary').textContent()).match(/^(\d+) samples/)[1]);
  assert.ok(some > 0 && some <= all, `filtered ${some} of ${all}`);
  // Click a frame to zoom in on it, click it again to zoom out.
  const boxes = page.locator('.fg-box[data-depth="1"]');
  assert.ok(await boxes.count() > 0);
  await boxes.first().click();
  assert.match(await page.locator('#fg-summary').textContent(), /zoomed on/);
  await page.locator('.fg-box[data-depth="0"]').first().click();
  assert.doesNotMatch(await page.locator('#fg-summary').textContent(), /zoomed on/);
  // The other points of interest: wake delays and polls that were descheduled.
  await page.keyboard.press('Escape');
  for (const kind of ['wake', 'block']) {
    await page.click('#poi-kind button[data-kind="' + kind + '"]');
    const first = page.locator('#poi-list li[data-rank="0"]');
    assert.equal(await first.count(), 1, kind + ': a first point of interest');
    await first.click();
    assert.match(await page.locator('#details').textContent(), /task/i, kind + ': the poll is shown');
  }
  await page.click('#poi-kind button[data-kind="polls"]');
  await page.keyboard.press('g');
  // CPU samples of the fixture.
  await page.selectOption('#fg-loc', '');
  await page.selectOption('#fg-kind', 'cpu');
  await idle(page);
  assert.ok(await page.locator('.fg-box').count() > 1, 'the CPU flame graph has frames');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('#flame').isVisible(), false);
  assert.deepEqual(errors, []);
});

test('keyboard, wheel, drag and the overview move the view', async () => {
  // A synthetic trace, so that this runs without the shared fixture too.
  const urls = runtimeTrace(2).map((f) => {
    writeArtifact('keys-' + f.name, f.bytes);
    return 'trace=/viewer/test-artifacts/keys-' + f.name;
  });
  const { page, errors } = await openPage(browser, viewerUrl('?' + urls.join('&')));
  assert.equal(await settled(page), 'ready');
  await page.keyboard.press('0');
  await idle(page);
  const whole = await viewSpan(page);
  await page.keyboard.press('w');
  await idle(page);
  const zoomed = await viewSpan(page);
  assert.ok(zoomed.span < whole.span * 0.8, 'W zooms in');
  await page.keyboard.press('=');
  await idle(page);
  assert.ok((await viewSpan(page)).span < zoomed.span, '+ zooms in');
  await page.keyboard.press('-');
  await idle(page);
  await page.keyboard.press('d');
  await idle(page);
  const right = await viewSpan(page);
  assert.ok(right.t0 > zoomed.t0, 'D pans right');
  await page.keyboard.press('ArrowLeft');
  await idle(page);
  assert.ok((await viewSpan(page)).t0 < right.t0, 'ArrowLeft pans left');
  const box = await page.locator('#lanes').boundingBox();
  const cx = box.x + box.width / 2;
  const cy = box.y + 60;
  await page.mouse.move(cx, cy);
  const beforeWheel = await viewSpan(page);
  await page.mouse.wheel(0, -400);
  await idle(page);
  assert.ok((await viewSpan(page)).span < beforeWheel.span, 'wheel up zooms in');
  const beforeDrag = await viewSpan(page);
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  await page.mouse.move(cx - 150, cy, { steps: 5 });
  await page.mouse.up();
  await idle(page);
  const dragged = await viewSpan(page);
  assert.ok(dragged.t0 > beforeDrag.t0, 'dragging left moves later in time');
  assert.ok(Math.abs(dragged.span - beforeDrag.span) < beforeDrag.span * 1e-6, 'dragging keeps the zoom');
  // Shift + drag selects a range and zooms to it.
  await page.keyboard.down('Shift');
  await page.mouse.move(cx - 200, cy);
  await page.mouse.down();
  await page.mouse.move(cx - 100, cy, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await idle(page);
  const ranged = await viewSpan(page);
  assert.ok(ranged.span < dragged.span / 4, 'shift+drag zooms to the selected range');
  // The overview: drag across it to pick a range.
  const ov = await page.locator('#overview').boundingBox();
  await page.mouse.move(ov.x + 200, ov.y + ov.height / 2);
  await page.mouse.down();
  await page.mouse.move(ov.x + 500, ov.y + ov.height / 2, { steps: 5 });
  await page.mouse.up();
  await idle(page);
  const picked = await viewSpan(page);
  assert.ok(picked.span > ranged.span, 'the overview range replaced the view');
  // Relative / absolute time.
  await page.keyboard.press('t');
  assert.equal(await page.locator('#time-mode button.on').getAttribute('data-mode'), 'absolute');
  await idle(page);
  await screenshot(page, 'absolute-time');
  await page.keyboard.press('t');
  // The points of interest, stepped through worst first.
  await page.keyboard.press('n');
  await page.keyboard.press('n');
  await idle(page);
  assert.equal(await page.locator('#poi-list li.on').getAttribute('data-rank'), '1');
  assert.equal((await page.locator('#detail-duration').textContent()).trim(), '210.0 µs');
  await page.keyboard.press('p');
  await idle(page);
  assert.equal((await page.locator('#detail-duration').textContent()).trim(), '12.00 ms');
  await page.click('#poi-kind button[data-kind="sched"]');
  await page.keyboard.press('n');
  await idle(page);
  assert.match(await page.locator('#details-body').textContent(), /Run-queue wait900\.0 µs/);
  await screenshot(page, 'sched-delay');
  await page.close();
  assert.deepEqual(errors, []);
});

test('a truncated file shows what was read and says it is truncated', async () => {
  let raw;
  if (haveFixture) raw = zlib.gunzipSync(fs.readFileSync(fixturePath));
  else raw = Buffer.concat(runtimeTrace(1).map((f) => Buffer.from(f.bytes)));
  writeArtifact('truncated.bin', raw.subarray(0, Math.floor(raw.length * 0.6) + 3));
  const { page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/truncated.bin'));
  assert.equal(await settled(page), 'ready');
  const banner = page.locator('#banner');
  assert.equal(await banner.isVisible(), true);
  assert.match(await banner.textContent(), /truncated: truncated\.bin: the data ends .* at byte \d+/);
  assert.match(await page.locator('#trace-summary').textContent(), /truncated/);
  assert.ok(await page.evaluate(() => window.dial9Viewer.loaded.events) > 0);
  await screenshot(page, 'truncated');
  await page.close();
  assert.deepEqual(errors, []);
});

test('invalid input gives a clear message, never a blank page', async () => {
  // Not a trace at all.
  writeArtifact('not-a-trace.bin', Buffer.from('\x89PNG\r\n\x1a\n0000000000000000', 'latin1'));
  let { page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/not-a-trace.bin'));
  assert.equal(await settled(page), 'error');
  assert.equal(await page.locator('#error-title').textContent(), 'This is not a dial9 trace');
  assert.match(await page.locator('#error-message').textContent(), /bad magic.*found 89 50 4e 47 \(at byte 0 of not-a-trace\.bin\)/);
  assert.equal(await page.locator('#error').isVisible(), true);
  await screenshot(page, 'error-not-a-trace');
  await page.close();
  assert.deepEqual(errors, []);

  // Corrupt in the middle: an unknown frame tag after the first segment.
  const [a, b] = runtimeTrace(2);
  const corrupt = Buffer.concat([Buffer.from(a.bytes), Buffer.from([0x7f, 1, 2, 3]), Buffer.from(b.bytes)]);
  writeArtifact('corrupt.bin', corrupt);
  ({ page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/corrupt.bin')));
  assert.equal(await settled(page), 'error');
  assert.equal(await page.locator('#error-title').textContent(), 'This trace could not be read');
  assert.match(await page.locator('#error-message').textContent(), new RegExp('unknown frame tag 0x7f .*at byte ' + a.bytes.length + ' of corrupt\\.bin'));
  const partial = page.locator('#error-partial');
  assert.equal(await partial.isVisible(), true);
  await screenshot(page, 'error-corrupt');
  await partial.click();
  assert.equal(await settled(page), 'ready');
  assert.match(await page.locator('#banner').textContent(), /Stopped at an error/);
  await screenshot(page, 'error-corrupt-partial');
  await page.close();
  assert.deepEqual(errors, []);

  // A gzip file cut short.
  const gz = zlib.gzipSync(Buffer.concat(runtimeTrace(1).map((f) => Buffer.from(f.bytes))));
  writeArtifact('cut.bin.gz', gz.subarray(0, gz.length - 40));
  ({ page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/cut.bin.gz')));
  assert.equal(await settled(page), 'error');
  assert.match(await page.locator('#error-message').textContent(), /cut\.bin\.gz: gzip data is corrupt or cut short/);
  await page.close();
  assert.deepEqual(errors, []);

  // An empty file: said so, not a blank page.
  writeArtifact('empty.bin', Buffer.alloc(0));
  ({ page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/empty.bin')));
  assert.equal(await settled(page), 'ready');
  assert.match(await page.locator('#banner').textContent(), /holds no events/);
  await page.close();
  assert.deepEqual(errors, []);

  // A URL that does not exist.
  ({ page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/no-such-file.bin')));
  assert.equal(await settled(page), 'error');
  assert.match(await page.locator('#error-message').textContent(), /the server answered 404 Not Found: not found/);
  await page.close();
  assert.deepEqual(errors.filter((e) => !/404/.test(e)), []);
});

test('several segments at once through the file picker, grouped by runtime', async () => {
  const files = runtimeTrace(2).map((f) => writeArtifact(f.name, f.bytes));
  const { page, errors } = await openPage(browser, viewerUrl(''));
  assert.equal(await settled(page), 'empty');
  assert.equal(await page.locator('#empty').isVisible(), true);
  await screenshot(page, 'empty');
  await page.setInputFiles('#file-input', files);
  assert.equal(await settled(page), 'ready');
  const info = await page.evaluate(() => ({
    groups: window.dial9Viewer.state.model.groups.map((g) => [g.name, g.lanes.map((l) => l.worker)]),
    files: window.dial9Viewer.state.model.trace.files.map((f) => f.name),
    drawn: window.dial9Viewer.timeline.stats.lanesDrawn,
  }));
  assert.deepEqual(info.groups, [['io', [0, 1]], ['cpu', [2]]]);
  assert.deepEqual(info.files, ['trace.0.bin', 'trace.1.bin']);
  assert.equal(info.drawn, 3);
  assert.match(await page.locator('#trace-summary').textContent(), /2 files/);
  assert.equal(await page.locator('#poi-list li[data-rank="0"] .dur').textContent(), '12.00 ms');
  await page.click('#poi-list li[data-rank="0"]');
  await idle(page);
  assert.match(await page.locator('#details-body').textContent(), /expand_fdtable/);
  assert.match(await page.locator('#details-body').textContent(), /fs\/file\.c:88/);
  await page.keyboard.press('k');
  await page.keyboard.press('0');
  await idle(page);
  const hl = await page.evaluate(() => window.dial9Viewer.timeline.stats.highlightedByWorker);
  for (const w of [0, 1, 2]) assert.ok(hl[w] > 0, 'task 7 highlighted on worker ' + w);
  await screenshot(page, 'segments-runtimes');
  // The same segments dropped on the page, and given as several ?trace= URLs.
  await page.evaluate(async (names) => {
    const dt = new DataTransfer();
    for (const n of names) {
      const bytes = await (await fetch('/viewer/test-artifacts/' + n)).arrayBuffer();
      dt.items.add(new File([bytes], n));
    }
    for (const type of ['dragenter', 'dragover', 'drop']) {
      window.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, ['trace.1.bin']);
  assert.equal(await settled(page), 'ready');
  assert.deepEqual(await page.evaluate(() => window.dial9Viewer.state.model.trace.files.map((f) => f.name)), ['trace.1.bin']);
  assert.equal(await page.locator('#drop-overlay').isVisible(), false);
  const multi = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/trace.0.bin&trace=/viewer/test-artifacts/trace.1.bin'));
  assert.equal(await settled(multi.page), 'ready');
  assert.equal(await multi.page.evaluate(() => window.dial9Viewer.state.model.trace.polls.count), 60);
  await multi.page.close();
  assert.deepEqual(multi.errors, []);
  // The fixture, gzip-compressed, through the picker as well.
  if (haveFixture) {
    await page.setInputFiles('#file-input', fixturePath);
    assert.equal(await settled(page), 'ready');
    assert.equal(await page.evaluate(() => window.dial9Viewer.loaded.events), 210639);
  }
  await page.close();
  assert.deepEqual(errors, []);
});

test('from file:// the picker decodes in a Blob worker, and ?trace= says why it cannot load', async () => {
  const file = writeArtifact('file-url.bin', Buffer.concat(runtimeTrace(1).map((f) => Buffer.from(f.bytes))));
  const pageUrl = pathToFileURL(path.join(viewerDir, 'index.html')).href;
  let { page, errors } = await openPage(browser, pageUrl);
  assert.equal(await settled(page), 'empty');
  await page.setInputFiles('#file-input', file);
  assert.equal(await settled(page), 'ready');
  assert.equal(await page.evaluate(() => window.dial9Viewer.loaded.where), 'worker');
  assert.equal(await page.evaluate(() => window.dial9Viewer.state.model.lanes.length), 3);
  await page.close();
  assert.deepEqual(errors, []);
  ({ page, errors } = await openPage(browser, pageUrl + '?trace=trace.bin'));
  assert.equal(await settled(page), 'error');
  assert.match(await page.locator('#error-message').textContent(), /file:\/\/.*serve the viewer over HTTP/);
  await page.close();
  assert.deepEqual(errors, []);
});

// The times are printed, not judged: a busy 2-CPU machine (CI) slows them several fold.
test('one million events: decoded in Chromium and drawn whole and zoomed (times printed)', async () => {
  writeArtifact('million.bin', millionEvents());
  const { page, errors } = await openPage(browser, viewerUrl('?trace=/viewer/test-artifacts/million.bin'));
  assert.equal(await settled(page, 60000), 'ready');
  const loaded = await page.evaluate(() => window.dial9Viewer.loaded);
  assert.equal(loaded.events, 1000000);
  console.log(`# Chromium (${loaded.where}): 1 000 000 synthetic events decoded in ${loaded.decodeMs.toFixed(0)} ms ` +
    `(${(1e6 / loaded.decodeMs / 1000).toFixed(2)} M events/s), view model ${loaded.modelMs.toFixed(0)} ms`);
  // Drawing the whole trace (250 000 polls) and a zoomed-in part.
  const frames = await page.evaluate(() => {
    const tl = window.dial9Viewer.timeline;
    const time = () => {
      const t = performance.now();
      tl.draw();
      return performance.now() - t;
    };
    tl.fitAll(false);
    time();
    const whole = Math.min(time(), time(), time());
    tl.zoomAt(0.001, 600, false);
    time();
    const zoomed = Math.min(time(), time(), time());
    return { whole, zoomed };
  });
  console.log(`# Chromium: frame of 250 000 polls ${frames.whole.toFixed(1)} ms, zoomed in ${frames.zoomed.toFixed(1)} ms`);
  await screenshot(page, 'million');
  await page.close();
  assert.deepEqual(errors, []);
});

test('help and trace info open from the keyboard; the demo button loads the demo or says it is missing', async () => {
  const file = writeArtifact('help.bin', Buffer.concat(runtimeTrace(1).map((f) => Buffer.from(f.bytes))));
  const { page, errors } = await openPage(browser, viewerUrl(''));
  await settled(page);
  await page.setInputFiles('#file-input', file);
  assert.equal(await settled(page), 'ready');
  await page.keyboard.press('?');
  assert.equal(await page.locator('#help').isVisible(), true);
  await screenshot(page, 'help');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('#help').isVisible(), false);
  await page.keyboard.press('i');
  assert.equal(await page.locator('#info').isVisible(), true);
  assert.match(await page.locator('#info-body').textContent(), /PollStartEvent/);
  assert.match(await page.locator('#info-body').textContent(), /synthetic-service/);
  await screenshot(page, 'trace-info');
  await page.keyboard.press('Escape');
  assert.deepEqual(errors, []);

  const demoExists = ['demo-trace.bin', 'demo-trace.bin.gz']
    .some((name) => fs.existsSync(path.join(viewerDir, 'demo', name)));
  const demoPage = await openPage(browser, viewerUrl(''));
  await settled(demoPage.page);
  await demoPage.page.click('#demo-btn');
  const s = await settled(demoPage.page);
  if (demoExists) {
    assert.equal(s, 'ready');
    assert.ok(await demoPage.page.evaluate(() => window.dial9Viewer.loaded.events) > 0);
    await screenshot(demoPage.page, 'demo');
  } else if (haveFixture) {
    // No demo recorded yet: the test server also serves the shared fixture, the fallback.
    assert.equal(s, 'ready');
    assert.equal(await demoPage.page.evaluate(() => window.dial9Viewer.loaded.events), 210639);
  } else {
    assert.equal(s, 'error');
    assert.match(await demoPage.page.locator('#error-message').textContent(), /demo trace is missing/);
  }
  await demoPage.page.close();
  assert.deepEqual(demoPage.errors.filter((e) => !/404/.test(e)), []);
});
