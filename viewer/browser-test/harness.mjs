// Browser test plumbing: Debian's Chromium driven by playwright-core (no browser download),
// a fresh profile per run, a static server for the repository on 127.0.0.1, and pages that
// record every console error and uncaught exception.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer, repoRoot, sharedDir } from '../tools/serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const viewerDir = path.resolve(here, '..');
export const artifactsDir = path.join(viewerDir, 'test-artifacts');
export const fixturePath = path.join(sharedDir, 'fixtures', 'dial9-demo-trace.bin');
export { repoRoot };

const CHROMIUM = process.env.D9_CHROMIUM || '/usr/bin/chromium';
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export async function startBrowser() {
  fs.mkdirSync(artifactsDir, { recursive: true });
  const { server, port } = await startServer(0);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'd9-viewer-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1600, height: 900 },
  });
  return {
    context,
    base: `http://127.0.0.1:${port}`,
    async close() {
      await context.close();
      await new Promise((ok) => server.close(ok));
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/* A page that collects console errors and uncaught exceptions into `errors`. */
export async function openPage(browser, url) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push('console: ' + m.text());
  });
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  if (url) await page.goto(url);
  return { page, errors };
}

/* Waits until the viewer leaves the loading state; returns the state it reached. */
export async function settled(page, timeout = 30000) {
  await page.waitForFunction(() => {
    const s = document.body.dataset.state;
    return s === 'ready' || s === 'error' || s === 'empty';
  }, null, { timeout });
  // Let the first frames draw.
  await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
  return page.evaluate(() => document.body.dataset.state);
}

export async function screenshot(page, name) {
  await page.screenshot({ path: path.join(artifactsDir, name + '.png') });
}

export function writeArtifact(name, bytes) {
  fs.mkdirSync(artifactsDir, { recursive: true });
  const p = path.join(artifactsDir, name);
  fs.writeFileSync(p, bytes);
  return p;
}

/* Waits for any view animation to finish. */
export async function idle(page) {
  await page.waitForFunction(() => {
    const tl = window.dial9Viewer.timeline;
    return !tl.anim && !tl.pending;
  });
  await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
}
