// The overview strip as a range selector, in Chromium: a drag picks a range at any zoom, including
// the starting view, where the window covers the whole strip; Shift + drag moves the window and
// its edges resize it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBrowser, openPage, settled, idle, writeArtifact } from './harness.mjs';
import { runtimeTrace } from '../test/synthetic.mjs';

let browser;
before(async () => {
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

async function view(page) {
  return page.evaluate(() => {
    const tl = window.dial9Viewer.timeline;
    return { t0: tl.t0, t1: tl.t1, span: tl.t1 - tl.t0 };
  });
}

/* The trace time at a fraction of the overview strip, and the time one strip pixel stands for. */
async function stripTime(page, frac) {
  return page.evaluate((frac) => {
    const tl = window.dial9Viewer.timeline;
    const x = 148 + frac * (tl.w - 148 - 8);
    return { x, t: tl.overviewT(x), px: tl.overviewT(x + 1) - tl.overviewT(x) };
  }, frac);
}

async function drag(page, box, xa, xb, shift) {
  const y = box.y + box.height / 2;
  if (shift) await page.keyboard.down('Shift');
  await page.mouse.move(box.x + xa, y);
  await page.mouse.down();
  await page.mouse.move(box.x + xb, y, { steps: 6 });
  await page.mouse.up();
  if (shift) await page.keyboard.up('Shift');
  await idle(page);
}

test('a drag on the overview picks a range from the starting view and when zoomed in; Shift + drag moves, edges resize', async () => {
  const file = writeArtifact('overview-range.bin', Buffer.concat(runtimeTrace(2).map((f) => Buffer.from(f.bytes))));
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  assert.equal(await settled(page), 'empty');
  await page.setInputFiles('#file-input', file);
  assert.equal(await settled(page), 'ready');
  await idle(page);
  const box = await page.locator('#overview').boundingBox();
  const whole = await view(page);

  // The starting view: the window covers everything, and a drag still picks 30 % → 60 %.
  let a = await stripTime(page, 0.3);
  let b = await stripTime(page, 0.6);
  await drag(page, box, a.x, b.x);
  let v = await view(page);
  assert.ok(Math.abs(v.t0 - a.t) <= 2 * a.px && Math.abs(v.t1 - b.t) <= 2 * b.px,
    `starting view: the drag picked [${a.t}, ${b.t}], the view is [${v.t0}, ${v.t1}] (whole span ${whole.span})`);

  // Zoomed in: a drag that starts inside the window picks a new range too (40 % → 50 %).
  a = await stripTime(page, 0.4);
  b = await stripTime(page, 0.5);
  await drag(page, box, a.x, b.x);
  v = await view(page);
  assert.ok(Math.abs(v.t0 - a.t) <= 2 * a.px && Math.abs(v.t1 - b.t) <= 2 * b.px,
    `inside the window: picked [${a.t}, ${b.t}], the view is [${v.t0}, ${v.t1}]`);

  // Shift + drag inside the window moves it: same span, later by the distance dragged.
  const before = v;
  const from = await stripTime(page, 0.45);
  const to = await stripTime(page, 0.65);
  await drag(page, box, from.x, to.x, true);
  v = await view(page);
  assert.ok(Math.abs(v.span - before.span) < before.span * 1e-6, 'Shift + drag keeps the span');
  assert.ok(Math.abs((v.t0 - before.t0) - (to.t - from.t)) <= 2 * from.px, 'Shift + drag moves the window by the distance dragged');

  // The right edge, dragged out to 80 %, resizes: the start stays.
  const edge = await page.evaluate(() => window.dial9Viewer.timeline.overviewX(window.dial9Viewer.timeline.t1));
  const out = await stripTime(page, 0.8);
  const moved = v;
  await drag(page, box, edge - 1, out.x);
  v = await view(page);
  assert.ok(Math.abs(v.t0 - moved.t0) < 1, 'resizing by the right edge keeps the start');
  assert.ok(Math.abs(v.t1 - out.t) <= 2 * out.px, 'the right edge follows the pointer');

  // A double-click shows the whole trace again.
  await page.locator('#overview').dblclick({ position: { x: 400, y: box.height / 2 } });
  await idle(page);
  v = await view(page);
  assert.ok(Math.abs(v.span - whole.span) < 1, 'double-click: the whole trace');
  await page.close();
  assert.deepEqual(errors, []);
});
