// A file that cannot be read, dropped on a loaded trace, in Chromium: the loaded trace stays on
// screen and usable (keys, header, title), the error is a banner that can be dismissed, and a
// partly readable file offers what was read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBrowser, openPage, settled, idle, writeArtifact, screenshot } from './harness.mjs';
import { runtimeTrace } from '../test/synthetic.mjs';

let browser;
before(async () => {
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

/* Drops files (fetched from the test server) on the page as a user would. */
async function drop(page, names) {
  await page.evaluate(async (names) => {
    const dt = new DataTransfer();
    for (const n of names) {
      const bytes = await (await fetch('/viewer/test-artifacts/' + n)).arrayBuffer();
      dt.items.add(new File([bytes], n));
    }
    for (const type of ['dragenter', 'dragover', 'drop']) {
      window.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, names);
}

const span = (page) => page.evaluate(() => window.dial9Viewer.timeline.t1 - window.dial9Viewer.timeline.t0);

test('dropping an invalid file on a loaded trace keeps the trace and shows the error as a dismissable banner', async () => {
  const good = writeArtifact('banner-good.bin', Buffer.concat(runtimeTrace(1).map((f) => Buffer.from(f.bytes))));
  writeArtifact('banner-not-a-trace.bin', Buffer.from('\x89PNG\r\n\x1a\n0000000000000000', 'latin1'));
  const [a, b] = runtimeTrace(2);
  writeArtifact('banner-corrupt.bin', Buffer.concat([Buffer.from(a.bytes), Buffer.from([0x7f, 1, 2, 3]), Buffer.from(b.bytes)]));

  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  assert.equal(await settled(page), 'empty');
  await page.setInputFiles('#file-input', good);
  assert.equal(await settled(page), 'ready');
  await idle(page);
  const whole = await span(page);
  const title = await page.title();
  const summary = await page.locator('#trace-summary').textContent();
  assert.match(summary, /banner-good\.bin/);
  await page.keyboard.press('w');
  await idle(page);
  assert.ok(await span(page) < whole * 0.8, 'zoomed in before the drop');

  await drop(page, ['banner-not-a-trace.bin']);
  assert.equal(await settled(page), 'ready', 'the loaded trace stays on screen');
  assert.equal(await page.locator('#error').isVisible(), false, 'no full-page error card');
  const banner = page.locator('#banner');
  assert.equal(await banner.isVisible(), true);
  assert.match(await banner.textContent(), /This is not a dial9 trace: .*bad magic.*banner-not-a-trace\.bin/);
  assert.deepEqual(await page.evaluate(() => window.dial9Viewer.state.model.trace.files.map((f) => f.name)), ['banner-good.bin']);
  assert.equal(await page.locator('#trace-summary').textContent(), summary, 'the header still names the trace on screen');
  assert.equal(await page.title(), title);
  await screenshot(page, 'load-error-banner');

  // Shortcuts and Esc still work on the trace.
  await page.keyboard.press('0');
  await idle(page);
  assert.ok(Math.abs(await span(page) - whole) < 1, '0 shows the whole trace');
  await page.click('#poi-list li[data-rank="0"]');
  assert.equal(await page.evaluate(() => window.dial9Viewer.state.selection && window.dial9Viewer.state.selection.kind), 'poll');
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => window.dial9Viewer.state.selection), null, 'Esc clears the selection');

  // The banner goes away when dismissed.
  await page.click('#banner-close');
  assert.equal(await banner.isVisible(), false);

  // A file read in part: the banner offers the part, and the trace on screen stays until asked.
  await drop(page, ['banner-corrupt.bin']);
  assert.equal(await settled(page), 'ready');
  assert.match(await banner.textContent(), /unknown frame tag 0x7f/);
  assert.deepEqual(await page.evaluate(() => window.dial9Viewer.state.model.trace.files.map((f) => f.name)), ['banner-good.bin']);
  const partial = page.locator('#banner-action');
  assert.match(await partial.textContent(), /Show the \d+ events read before the error/);
  await partial.click();
  assert.equal(await settled(page), 'ready');
  assert.deepEqual(await page.evaluate(() => window.dial9Viewer.state.model.trace.files.map((f) => f.name)), ['banner-corrupt.bin']);
  assert.match(await banner.textContent(), /Stopped at an error/);
  await page.close();
  assert.deepEqual(errors, []);
});
