// Wake delays on the dial9 fixture, in Chromium: the points-of-interest list and the details panel
// pair a poll with the same wake (the first one after the task's previous poll started, counted
// from that poll's end when it came while the poll ran), show the
// same delay, every item has its "Woken by" line, and picking one frames the wake and the poll.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startBrowser, openPage, settled, idle, fixturePath, screenshot } from './harness.mjs';

const haveFixture = fs.existsSync(fixturePath);
let browser;
before(async () => {
  if (haveFixture) browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
});

/* The definition, computed here from the decoded columns independently of the viewer's model:
 * the first wake of the poll's task after the start of the task's previous poll and at or before
 * the poll's start; the delay runs from that wake, or from the end of the previous poll when the
 * wake came while it ran. */
function referenceWake(i) {
  const tr = window.dial9Viewer.state.model.trace;
  const P = tr.polls;
  const W = tr.wakes;
  const task = P.task[i];
  let prevStart = -Infinity;
  let prevEnd = -Infinity;
  for (let k = 0; k < P.count; k++) {
    if (P.task[k] === task && P.start[k] < P.start[i] && P.start[k] > prevStart) {
      prevStart = P.start[k];
      prevEnd = P.end[k];
    }
  }
  let best = -1;
  for (let w = 0; w < W.count; w++) {
    if (W.woken[w] !== task || W.ts[w] <= prevStart || W.ts[w] > P.start[i]) continue;
    if (best < 0 || W.ts[w] < W.ts[best]) best = w;
  }
  if (best < 0) return null;
  const from = Math.max(W.ts[best], prevEnd);
  return { wakeTs: W.ts[best], start: P.start[i], end: P.end[i], delay: D9.format.duration(P.start[i] - from) };
}

test('wake delays: the list and the details agree on the fixture\'s top 30, each is woken by someone, and the wake is in view', async (t) => {
  if (!haveFixture) {
    t.skip('fixture absent: ' + fixturePath);
    return;
  }
  const { page, errors } = await openPage(browser, browser.base + '/viewer/index.html?trace=/shared/fixtures/dial9-demo-trace.bin');
  assert.equal(await settled(page), 'ready');
  await page.click('#poi-kind button[data-kind="wake"]');
  const items = await page.locator('#poi-list li[data-rank]').count();
  assert.ok(items >= 30, 'at least 30 wake delays: ' + items);
  const disagree = [];
  for (let r = 0; r < 30; r++) {
    const li = page.locator('#poi-list li[data-rank="' + r + '"]');
    const listed = (await li.locator('.dur').textContent()).trim();
    await li.click();
    const details = await page.locator('#details-body').innerText();
    const m = /Woken by[\s\S]*?(?:^|\s)(\d[\d.]* [nµm]?s) from the (?:wake|end of its previous poll)/m.exec(details);
    const ref = await page.evaluate(`(${referenceWake.toString()})(window.dial9Viewer.state.selection.index)`);
    if (!m || m[1] !== listed || !ref || ref.delay !== listed) {
      disagree.push(`#${r + 1}: list ${listed}, details ${m ? m[1] : 'no "Woken by"'}, definition ${ref ? ref.delay : 'no wake'}`);
    }
  }
  assert.deepEqual(disagree, [], 'list, details and the definition agree');

  // The top item frames the whole wake → poll interval, with the wake drawn.
  await page.click('#poi-list li[data-rank="0"]');
  await idle(page);
  const ref = await page.evaluate(`(${referenceWake.toString()})(window.dial9Viewer.state.selection.index)`);
  const v = await page.evaluate(() => ({ t0: window.dial9Viewer.timeline.t0, t1: window.dial9Viewer.timeline.t1, wakes: window.dial9Viewer.timeline.stats.wakesDrawn }));
  assert.ok(v.t0 <= ref.wakeTs && v.t1 >= ref.end, `view [${v.t0}, ${v.t1}] holds the wake at ${ref.wakeTs} and the poll up to ${ref.end}`);
  assert.ok(v.wakes >= 1, 'the wake arrow is drawn');
  // F (zoom to the selection) frames the same interval.
  await page.keyboard.press('0');
  await idle(page);
  await page.keyboard.press('f');
  await idle(page);
  const f = await page.evaluate(() => ({ t0: window.dial9Viewer.timeline.t0, t1: window.dial9Viewer.timeline.t1 }));
  assert.ok(f.t0 <= ref.wakeTs && f.t1 >= ref.end, 'F frames the wake and the poll');
  await screenshot(page, 'wake-delay-top');
  await page.close();
  assert.deepEqual(errors, []);
});
