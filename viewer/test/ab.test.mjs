// A/B mode's numbers (viewer/src/ab.js): per spawn location the polls of a side, counted as
// `dial9 analyze` counts them (its by_location counts, whole and windowed with --from/--to @NS),
// exact nearest-rank quantiles, and the log buckets of the histograms (4 a decade).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import D from '../src/decoder.js';

globalThis.window = globalThis.window || {};
createRequire(import.meta.url)('../src/ab.js');
const AB = globalThis.window.D9.ab;

const here = path.dirname(fileURLToPath(import.meta.url));
const vectorDir = path.resolve(here, '..', '..', 'tests', 'vectors');
const dial9 = path.resolve(process.env.D9_BUILD_DIR || path.join(here, '..', '..', 'build'), 'dial9');

test('quantiles (nearest rank) and log buckets', () => {
  const v = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.deepEqual([AB.quantile(v, 0.5), AB.quantile(v, 0.99), AB.quantile(v, 0.1)], [5, 10, 1]);
  assert.ok(Number.isNaN(AB.quantile(new Float64Array(0), 0.5)));
  assert.deepEqual([0, 1, 9, 10, 17, 18, 1000, 1e6].map(AB.bucketOf), [0, 0, 3, 4, 4, 5, 12, 24]);
});

test('two sides compared per location: counts, an only-in-B group, the most time first', () => {
  const g = (pairs) => new Map(pairs.map(([n, d]) => [n, { count: d.length, total: d.reduce((a, b) => a + b, 0), durations: Float64Array.from(d).sort() }]));
  const rows = AB.compare(g([['x', [10, 20]], ['y', [1000]]]), g([['x', [30]], ['z', [5, 5, 5]]]));
  assert.deepEqual(rows.map((r) => [r.name, r.a.count, r.b.count]), [['y', 1, 0], ['x', 2, 1], ['z', 0, 3]]);
  assert.deepEqual([rows[1].a.p50, rows[1].b.p50], [10, 30]);
});

for (const name of fs.readdirSync(vectorDir).filter((f) => f.endsWith('.bin')).sort()) {
  test('vector ' + name + ': polls per location as analyze counts them, whole and in a window', (t) => {
    if (!fs.existsSync(dial9)) {
      t.skip('not built: ' + dial9);
      return;
    }
    const file = path.join(vectorDir, name);
    const tr = D.decode(fs.readFileSync(file));
    if (!tr.polls.count) return;
    const starts = Array.from(tr.polls.start).sort((a, b) => a - b);
    const windows = [[NaN, NaN], [starts[0], starts[starts.length >> 1]]];
    for (const [from, to] of windows) {
      const args = ['analyze', '--json', '--top', '10000'];
      if (Number.isFinite(from)) args.push('--from', '@' + (BigInt(tr.origin) + BigInt(from)), '--to', '@' + (BigInt(tr.origin) + BigInt(to)));
      const an = spawnSync(dial9, [...args, file], { encoding: 'utf8', maxBuffer: 1 << 28 });
      assert.equal(an.status, 0, 'dial9 ' + args.join(' ') + ': ' + an.stderr);
      const c = Object.fromEntries(JSON.parse(an.stdout).polls.by_location.map((l) => [l.location, l.duration.count]));
      const js = Object.fromEntries(Array.from(AB.groups(tr, from, to)).map(([n, v]) => [n, v.count]));
      assert.deepEqual(js, c, name + ' window ' + from + '..' + to);
    }
  });
}
