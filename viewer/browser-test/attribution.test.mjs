// A selected poll's attribution (viewer/src/attribution.js) as one bar in its details: on the
// shared attribution vector (tests/vectors/attribution.bin) and the poll-cpu vector (long polls'
// CPU time: off_cpu_uncaptured, and a poll without a PollCpuEvent on CPU) every poll's bar
// shows, part for part, the ns that the C model computes on the same bytes (`dial9 analyze
// --json`, its longest polls: all five), and nothing for a part that is zero. Skips, saying so,
// when the build (D9_BUILD_DIR, else ./build) has no CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startBrowser, openPage, settled, screenshot, repoRoot } from './harness.mjs';

const build = path.resolve(process.env.D9_BUILD_DIR || path.join(repoRoot, 'build'));
const dial9 = path.join(build, 'dial9');

let browser;
before(async () => {
  if (fs.existsSync(dial9)) browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

for (const name of ['attribution', 'poll-cpu']) test('a poll\'s details: where its time went, as one bar equal to C\'s parts (' + name + ')', async (t) => {
  const vector = path.join(repoRoot, 'tests', 'vectors', name + '.bin');
  if (!fs.existsSync(dial9)) {
    t.skip('not built: ' + dial9);
    return;
  }
  const an = spawnSync(dial9, ['analyze', '--json', '--top', '100', vector], { encoding: 'utf8' });
  assert.equal(an.status, 0, 'dial9 analyze: ' + an.stderr);
  const longest = JSON.parse(an.stdout).polls.longest;
  assert.equal(longest.length, 5, 'the vector\'s five polls');

  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html');
  await settled(page);
  await page.setInputFiles('#file-input', vector);
  assert.equal(await settled(page), 'ready');
  let lockShown = false;
  for (const c of longest) {
    const index = await page.evaluate((start) => {
      const tr = window.dial9Viewer.state.model.trace;
      const P = tr.polls;
      for (let i = 0; i < P.count; i++) if ((BigInt(tr.origin) + BigInt(P.start[i])).toString() === start) return i;
      return -1;
    }, String(c.start_ns));
    assert.ok(index >= 0, 'the poll at ' + c.start_ns);
    await page.evaluate((i) => window.dial9Viewer.select({ kind: 'poll', index: i }), index);
    const bar = await page.locator('#detail-attr span[data-part]').evaluateAll((els) => els.map((e) => [e.dataset.part, Number(e.dataset.ns)]));
    const legend = await page.locator('#detail-attr-parts li[data-part]').evaluateAll((els) => els.map((e) => [e.dataset.part, Number(e.dataset.ns)]));
    const expected = Object.entries(c.attribution).filter(([, v]) => v > 0).map(([k, v]) => [k.replace(/_ns$/, ''), v]);
    assert.deepEqual(bar, expected, c.location + ': the bar\'s segments');
    assert.deepEqual(legend, expected, c.location + ': the legend');
    if (name === 'attribution' && c.location === 'lock.c:1') {
      lockShown = true;
      assert.match(await page.locator('#detail-attr span[data-part="lock"]').getAttribute('title'), /^lock 4(\.000)? ?ms/);
      await screenshot(page, 'attribution-lock');
    }
    if (c.attribution.unknown_ns > 0) assert.match(await page.locator('#detail-attr-note').textContent(), /Unknown/);
    else if (c.attribution.off_cpu_uncaptured_ns > 0) assert.match(await page.locator('#detail-attr-note').textContent(), /Off CPU for certain/);
  }
  if (name === 'attribution') assert.ok(lockShown, 'the lock poll was shown');
  assert.deepEqual(errors, []);
  await page.close();
});
