// Load time of large traces in headless Chromium (Debian's): `node tools/bench-load.mjs [M...]`
// builds synthetic traces of M million events (default 1 and 10) and prints decode and model
// times and the JS heap, or the error if the tab could not open it. A measurement, not a test.
import { startBrowser, openPage, settled, writeArtifact } from '../browser-test/harness.mjs';
import { millionEvents } from '../test/synthetic.mjs';

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
const browser = await startBrowser();
for (const m of sizes.length ? sizes : [1, 10]) {
  const one = millionEvents();
  const parts = [];
  for (let r = 0; r < m; r++) parts.push(one); // concatenated streams: each copy stands alone
  const total = parts.reduce((n, p) => n + p.length, 0);
  const all = new Uint8Array(total);
  let off = 0;
  for (const p of parts) { all.set(p, off); off += p.length; }
  const name = `load-${m}M.bin`;
  writeArtifact(name, all);
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html?trace=/viewer/test-artifacts/' + name);
  const state = await settled(page, 600000);
  const info = await page.evaluate(() => {
    const l = window.dial9Viewer.loaded;
    const mem = performance.memory ? performance.memory.usedJSHeapSize : 0;
    return l ? { events: l.events, decodeMs: l.decodeMs, modelMs: l.modelMs, heapMB: mem / 1048576 } : null;
  });
  console.log(`${m} M events (${(total / 1048576).toFixed(0)} MiB): ${state}`,
    info ? `decode ${info.decodeMs.toFixed(0)} ms, model ${info.modelMs.toFixed(0)} ms, events ${info.events}, main-thread heap ${info.heapMB.toFixed(0)} MiB` : '',
    errors.length ? 'errors: ' + errors.join('; ') : '');
  await page.close();
}
await browser.close();
