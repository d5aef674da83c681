// A user opening a run of `dial9 serve` in a real browser: Debian's Chromium, driven by
// playwright-core (installed in viewer/ by viewer/package-lock.json; it never downloads a
// browser), opens the server's list of runs (/runs), clicks the link of the one run whose name
// holds every PART, waits until the viewer has loaded it (a condition, with a generous safety
// net, never a fixed delay) and writes what the viewer shows to OUT as JSON: its state, the
// number on the summary's "events" chip, the decoder's counts per event name, the service
// chip, the worker lanes, the runs listed, and any page error.
// Exits 1 (and says why) when no run, or more than one, matches.
// With --window INSTANCE FROM TO instead of PARTs, it fills the start page's window form of
// INSTANCE (service=S/instance=I) with FROM and TO (UTC, YYYY-MM-DDTHH:MM:SS) and submits it.
// Usage: node open_run_in_browser.mjs BASE_URL OUT PART...
//        node open_run_in_browser.mjs BASE_URL OUT --window INSTANCE FROM TO
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const viewerDir = path.resolve(here, '../../../viewer');
const { chromium } = createRequire(path.join(viewerDir, 'package.json'))('playwright-core');

const [base, out, ...parts] = process.argv.slice(2);
const windowOf = parts[0] === '--window' ? { instance: parts[1], from: parts[2], to: parts[3] } : null;
const SAFETY_NET_MS = 900000; // a loaded CI machine; reached only when something hangs

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'd9-fleet-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.D9_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1600, height: 900 },
});
let rc = 0;
try {
  const page = await context.newPage();
  page.setDefaultTimeout(SAFETY_NET_MS);
  page.setDefaultNavigationTimeout(SAFETY_NET_MS);
  const errors = [];
  // failed loads by URL (the console says only "Failed to load resource"); the browser's own
  // guess at /favicon.ico for the HTML list of runs is not the page's
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push('console: ' + m.text());
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && new URL(r.url()).pathname !== '/favicon.ico') errors.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  page.on('requestfailed', (r) => errors.push(`failed: ${r.url()}: ${r.failure() && r.failure().errorText}`));
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));

  await page.goto(base + '/runs');
  // each row: the run's link first, then its segments' links
  const runLinks = page.locator('table tr td:first-child a');
  const listed = await runLinks.allTextContents();
  const matching = windowOf ? [] : listed.filter((name) => parts.every((p) => name.includes(p)));
  const form = windowOf ? page.locator('form.window').filter({
    has: page.locator(`input[name="instance"][value="${windowOf.instance}"]`) }) : null;
  if (windowOf && (await form.count()) !== 1) {
    console.error(`open_run_in_browser: ${await form.count()} window forms for ${windowOf.instance}`);
    rc = 1;
  } else if (!windowOf && matching.length !== 1) {
    console.error(`open_run_in_browser: ${matching.length} runs match ${JSON.stringify(parts)} among ` +
                  JSON.stringify(listed));
    rc = 1;
  } else {
    if (windowOf) { // a user picking the window and opening it
      // as the input holds it: HTML normalizes a datetime-local value, without ":00" seconds
      const normal = (v) => v.replace(/(T\d\d:\d\d):00$/, '$1');
      await form.locator('input[name="from"]').fill(normal(windowOf.from));
      await form.locator('input[name="to"]').fill(normal(windowOf.to));
    }
    await Promise.all([
      page.waitForURL((u) => u.pathname === '/' && u.searchParams.has('trace')),
      windowOf ? form.locator('button[type="submit"]').click()
               : runLinks.filter({ hasText: matching[0] }).first().click(),
    ]);
    await page.waitForFunction(() => ['ready', 'error', 'empty'].includes(document.body.dataset.state));
    const shown = await page.evaluate(() => {
      const v = window.dial9Viewer;
      const chips = [...document.querySelectorAll('#trace-summary .chip')].map((c) => c.textContent);
      const model = v.state.model;
      return {
        state: document.body.dataset.state,
        error: document.getElementById('error-message').textContent,
        chips,
        events_chip: (chips.find((c) => / events$/.test(c)) || '').replace(/\D/g, ''),
        service: model ? model.service || null : null,
        by_name: model ? model.trace.counts.byName : null,
        events: v.loaded ? v.loaded.events : null,
        lanes: model ? model.lanes.length : null,
      };
    });
    shown.run = windowOf ? windowOf.instance : matching[0];
    shown.listed = listed;
    shown.url = page.url();
    shown.page_errors = errors;
    fs.writeFileSync(out, JSON.stringify(shown, null, 1) + '\n');
  }
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
process.exit(rc);
