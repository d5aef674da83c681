// The sampled heap in the viewer (viewer/src/heap.js): the decoder keeps AllocEvent and
// FreeEvent, and the model weights each sample at the run's rate (the first segment metadata's) and sums
// them by allocation site as the C model does (src/model/heap_sites.c). The trace is built by
// hand and its answers worked by hand below (weights with Math.exp, independently of heap.js's
// libm-free series); then the same bytes go through `dial9 analyze --json` (skipped, saying so,
// when the CLI is not built) and every site's allocated and in-use bytes are C's, to the bit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import D from '../src/decoder.js';
import { TraceWriter, T, declareBuiltins } from './encoder.mjs';

globalThis.window = globalThis.window || {};
createRequire(import.meta.url)('../src/heap.js');
const H = globalThis.window.D9.heap;

// As the recorder writes them (src/format/schemas.c, dial9's format.rs)
const ALLOC = [['tid', T.U32], ['size', T.VARINT], ['addr', T.VARINT], ['callchain', T.POOLED_STACK]];
const FREE = [['tid', T.U32], ['addr', T.VARINT], ['size', T.VARINT], ['alloc_timestamp_ns', T.VARINT]];
const RATE_KEY = 'memory_profile.sample_rate_bytes';
const t0 = 7000000000n;
const MAIN = 0x401000;
const S1 = [0x401100, MAIN + 0x10]; // leaf first: site_one <- main
const S2 = [0x402100, MAIN + 0x20]; // site_two <- main
const S3 = [0x403100, MAIN + 0x30]; // site_three <- main

// the weight of a sample of s bytes at rate r, by the formula (docs/heap-profiling.md)
const w = (s, r) => 1 / (1 - Math.exp(-s / r));

function heapTraceBytes() {
  const wr = new TraceWriter().header();
  const id = declareBuiltins(wr);
  wr.schema(50, 'AllocEvent', true, ALLOC);
  wr.schema(51, 'FreeEvent', true, FREE);
  wr.stackPool([[1, S1], [2, S2], [3, S3]]);
  wr.stringPool([[10, 'main'], [11, 'site_one'], [12, 'site_two'], [13, 'site_three'], [14, 'm.c']]);
  const sym = (addr, name) => wr.event(id.SymbolTableEntry, 0n, [addr, 0x100, name, 0, 14, 1]);
  sym(MAIN, 10);
  sym(0x401100 - 0x100, 11);
  sym(0x402100 - 0x100, 12);
  sym(0x403100 - 0x100, 13);
  const at = (ns) => t0 + BigInt(ns);
  const alloc = (ns, size, addr, stack) => wr.event(50, at(ns), [100, size, addr, stack]);
  const free = (ns, addr, size) => wr.event(51, at(ns), [100, addr, size, 0]);
  wr.event(id.SegmentMetadataEvent, at(0), [[['service', 'heap-test'], [RATE_KEY, '1024']]]);
  alloc(10, 1024, 0x1000, 1);
  alloc(20, 1024, 0x2000, 1);
  alloc(30, 4096, 0x3000, 2);
  free(40, 0x1000, 1024);
  free(50, 0x9000, 64); // never sampled here: unmatched
  alloc(60, 1024, 0x3000, 2); // at a live block's address: that block's free was lost
  wr.event(id.SegmentMetadataEvent, at(70), [[[RATE_KEY, '4096']]]); // ignored: the first describes the run
  alloc(80, 100, 0x4000, 1);
  alloc(90, 2048, 0, 3); // address 0: its free would not be recorded, so never in use
  return wr.bytes();
}

// The answers, by hand.
const R1 = 1024;
const R2 = 1024; // after the second metadata event: still the first's
const want = {
  [S1.join()]: { samples: 3, frees: 1, alloc: 2 * 1024 * w(1024, R1) + 100 * w(100, R2), inuse: 1024 * w(1024, R1) + 100 * w(100, R2) },
  [S2.join()]: { samples: 2, frees: 0, alloc: 4096 * w(4096, R1) + 1024 * w(1024, R1), inuse: 1024 * w(1024, R1) },
  [S3.join()]: { samples: 1, frees: 0, alloc: 2048 * w(2048, R2), inuse: 0 },
};
const close = (x, y) => Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(y));

function addrsOf(trace, stack) {
  const words = trace.stacks[stack];
  const out = [];
  for (let i = 0; i < words.length; i += 2) out.push(words[i + 1] * 4294967296 + words[i]);
  return out.join();
}

test('the weight: heap.js\'s series is 1/(1-e^(-s/R)) to 1e-12, rate 0 and 1 weigh 1', () => {
  for (const [s, r] of [[1, 524288], [100, 4096], [1024, 1024], [4096, 1024], [1 << 20, 65536], [3e9, 512]]) {
    assert.ok(Math.abs(H.weight(s, r) - w(s, r)) <= 1e-12 * w(s, r), `weight(${s}, ${r}) = ${H.weight(s, r)}, want ${w(s, r)}`);
  }
  assert.equal(H.weight(4096, 1), 1);
  assert.equal(H.weight(4096, 0), 1);
  assert.equal(H.weight(0, 4096), 1);
  assert.equal(H.parseRate('65536'), 65536);
  assert.equal(H.parseRate('64k'), 0); // not digits: ignored, as the C side ignores it
  assert.equal(H.parseRate(''), 0);
});

test('decoder: AllocEvent and FreeEvent kept in the data\'s order, with the metadata seen before each', () => {
  const tr = D.decode(heapTraceBytes());
  assert.equal(tr.heapAllocs.count, 6);
  assert.equal(tr.heapFrees.count, 2);
  assert.deepEqual(Array.from(tr.heapAllocs.size), [1024, 1024, 4096, 1024, 100, 2048]);
  assert.deepEqual(Array.from(tr.heapAllocs.meta), [1, 1, 1, 1, 2, 2]);
  assert.deepEqual(Array.from(tr.heapFrees.addrLo), [0x1000, 0x9000]);
  assert.ok(tr.heapFrees.seq[0] > tr.heapAllocs.seq[2] && tr.heapFrees.seq[1] < tr.heapAllocs.seq[3]);
  assert.equal(tr.other.AllocEvent, undefined, 'no longer an unknown schema');
});

test('sites: weighted at the run\'s rate, frees followed, a lost free and an unmatched one, worked by hand', () => {
  const tr = D.decode(heapTraceBytes());
  const heap = H.compute(tr);
  assert.equal(heap.samples, 6);
  assert.equal(heap.frees, 1);
  assert.equal(heap.freesUnmatched, 1);
  assert.equal(heap.rate, 1024);
  assert.equal(heap.sites.length, 3);
  for (const s of heap.sites) {
    const k = addrsOf(tr, s.stack);
    const x = want[k];
    assert.ok(x, 'a site of the trace: ' + k);
    assert.equal(s.samples, x.samples, k);
    assert.equal(s.frees, x.frees, k);
    assert.ok(close(s.allocBytes, x.alloc), `${k}: allocated ${s.allocBytes}, want ${x.alloc}`);
    assert.ok(close(s.inuseBytes, x.inuse), `${k}: in use ${s.inuseBytes}, want ${x.inuse}`);
  }
  const totalInuse = want[S1.join()].inuse + want[S2.join()].inuse;
  assert.ok(close(heap.inuseBytes, totalInuse));
  // in use over time: after each of the 8 heap events
  const a = 1024 * w(1024, R1);
  const b = 4096 * w(4096, R1);
  const c = 100 * w(100, R2);
  const series = [a, 2 * a, 2 * a + b, a + b, a + b, 2 * a, 2 * a + c, 2 * a + c];
  assert.equal(heap.series.inuse.length, 8);
  series.forEach((v, i) => assert.ok(close(heap.series.inuse[i], v), `in use after event ${i + 1}: ${heap.series.inuse[i]}, want ${v}`));
  const ts = Array.from(heap.series.ts);
  assert.deepEqual(ts.map((x) => x - ts[0]), [0, 10, 20, 30, 40, 50, 70, 80]);
  // each site's own line: its bytes in use after each change of them (S2's block at 0x3000 is
  // replaced: its free was lost, so S2 drops to 0 and holds the new block)
  const lineOf = (stackKey) => {
    const site = heap.sites.find((x) => addrsOf(tr, x.stack) === stackKey);
    const out = [];
    heap.changes.site.forEach((k, i) => { if (k === site.index) out.push(heap.changes.inuse[i]); });
    return out;
  };
  const l1 = lineOf(S1.join());
  [a, 2 * a, a, a + c].forEach((v, i) => assert.ok(close(l1[i], v), `site_one's line: ${l1}`));
  assert.equal(l1.length, 4);
  assert.deepEqual(lineOf(S2.join()), [b, 0, a]);
  assert.deepEqual(lineOf(S3.join()), []); // never in use
  // the lists analyze ranks: in use (largest first, none at zero) and allocated
  assert.deepEqual(H.ranked(heap, 'inuse').map((s) => addrsOf(tr, s.stack)), [S1.join(), S2.join()]);
  // allocated: site_two 5792.5 (4172.5 + 1620.0), site_one 4314.3 (3240.0 + 1074.3), site_three 2368.5
  assert.deepEqual(H.ranked(heap, 'alloc').map((s) => addrsOf(tr, s.stack)), [S2.join(), S1.join(), S3.join()]);
});

test('flame graphs: in use and allocated bytes by frame, root first', () => {
  const tr = D.decode(heapTraceBytes());
  const heap = H.compute(tr);
  const names = { [S1[0]]: 'site_one', [S2[0]]: 'site_two', [S3[0]]: 'site_three' };
  const labelsOf = (stack) => {
    const [leaf] = addrsOf(tr, stack).split(',').map(Number);
    return ['main', names[leaf]];
  };
  const inuse = H.tree(heap, 'inuse', labelsOf);
  assert.ok(close(inuse.value, want[S1.join()].inuse + want[S2.join()].inuse));
  const main = inuse.children.get('main');
  assert.ok(close(main.value, inuse.value));
  assert.deepEqual(Array.from(main.children.keys()).sort(), ['site_one', 'site_two']); // nothing of site_three is in use
  assert.ok(close(main.children.get('site_two').value, want[S2.join()].inuse));
  const alloc = H.tree(heap, 'alloc', labelsOf);
  assert.ok(close(alloc.children.get('main').children.get('site_three').value, want[S3.join()].alloc));
  assert.ok(close(alloc.value, want[S1.join()].alloc + want[S2.join()].alloc + want[S3.join()].alloc));
});

test('drops: the panel says the recorder dropped events, and how many', () => {
  assert.equal(H.dropsNote(D.decode(heapTraceBytes())), '');
  const wr = new TraceWriter().header();
  wr.schema(60, 'DroppedEventsEvent', true, [['count', T.VARINT], ['reason', T.POOLED_STRING], ['tid', T.U32], ['worker_id', T.VARINT]]);
  wr.stringPool([[1, 'buffer_full']]);
  wr.event(60, t0, [1400, 1, 100, 255]);
  wr.event(60, t0 + 5n, [7, 1, 101, 255]);
  assert.match(H.dropsNote(D.decode(wr.bytes())), /dropped 1407 events: samples or frees among them/);
});

test('no heap samples: nothing to show', () => {
  const wr = new TraceWriter().header();
  const id = declareBuiltins(wr);
  wr.stringPool([[1, 'here']]);
  wr.event(id.PollStartEvent, t0, [0, 0, 1, 1]);
  assert.equal(H.compute(D.decode(wr.bytes())), null);
});

// The same bytes through the C model: per site, allocated and in-use bytes equal to the bit.
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const dial9 = path.join(path.resolve(process.env.D9_BUILD_DIR || path.join(repo, 'build')), 'dial9');

function compareWithC(t, bytes, label) {
  if (!fs.existsSync(dial9)) {
    t.skip('dial9 is not built (' + dial9 + '): the comparison with analyze --json is skipped');
    return null;
  }
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-viewer-heap-'));
  const file = path.join(dir, label + '.bin');
  fs.writeFileSync(file, bytes);
  const r = spawnSync(dial9, ['analyze', '--json', '--top', '1000', file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(r.status, 0, 'dial9 analyze: ' + r.stderr);
  return JSON.parse(r.stdout);
}

test('the same bytes through dial9 analyze --json: every site\'s totals are C\'s', (t) => {
  const bytes = heapTraceBytes();
  const c = compareWithC(t, bytes, 'heap');
  if (!c) return;
  const tr = D.decode(bytes);
  const heap = H.compute(tr);
  assert.equal(c.heap.samples, heap.samples);
  assert.equal(c.heap.frees, heap.frees);
  assert.equal(c.heap.frees_unmatched, heap.freesUnmatched);
  assert.equal(c.heap.sample_rate_bytes, heap.rate);
  assert.equal(c.heap.alloc_bytes, heap.allocBytes);
  assert.equal(c.heap.inuse_bytes, heap.inuseBytes);
  const js = new Map(heap.sites.map((s) => [addrsOf(tr, s.stack), s]));
  assert.equal(c.heap.by_alloc.length, heap.sites.length);
  for (const e of c.heap.by_alloc) {
    const k = c.stacks[String(e.stack)].frames.map((f) => Number(f.addr)).join();
    const s = js.get(k);
    assert.ok(s, 'C\'s site ' + k + ' is one of the viewer\'s');
    assert.equal(s.allocBytes, e.alloc_bytes, k + ' allocated');
    assert.equal(s.inuseBytes, e.inuse_bytes, k + ' in use');
    assert.equal(s.allocBlocks, e.alloc_blocks, k + ' blocks');
    assert.equal(s.peakInuseBytes, e.peak_inuse_bytes, k + ' peak');
    assert.equal(s.samples, e.samples);
    assert.equal(s.frees, e.frees);
  }
});
