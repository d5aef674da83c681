// Where a poll's time went, in the viewer (viewer/src/attribution.js) and in the C model
// (src/model/attribution.h): the same bytes through both must give the same parts, to the
// nanosecond, per poll (`dial9 analyze --json`'s longest polls, all of them with --top, and the
// poll slices of `dial9 export --format perfetto`) and per spawn location (analyze). Run on
// every shared vector (tests/vectors, the attribution vector first), the dial9 fixture, a
// recording of story 2 (a global mutex) and a hand-built trace of the edge cases the vectors do
// not hold.
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
import { perfettoPolls } from './perfetto-polls.mjs';

globalThis.window = globalThis.window || {};
globalThis.window.Dial9Decoder = D;
const require = createRequire(import.meta.url);
require('../src/format.js');
require('../src/spans.js');
require('../src/model.js');
require('../src/attribution.js');
const A = globalThis.window.D9.attribution;
const M = globalThis.window.D9.model;

const here = path.dirname(fileURLToPath(import.meta.url));
const vectorDir = path.resolve(here, '..', '..', 'tests', 'vectors');
const dial9 = path.resolve(process.env.D9_BUILD_DIR || path.join(here, '..', '..', 'build'), 'dial9');
const MS = 1000000;
const TOP = 10000; // analyze's largest --top: every poll and location of a smaller trace

function jsAttribution(tr) {
  const at = A.attributor(tr, M.makeSymbolizer(tr).lookup);
  const polls = [];
  for (let i = 0; i < tr.polls.count; i++) {
    const parts = at.parts(i);
    polls.push({
      worker: tr.polls.worker[i],
      start: (BigInt(tr.origin) + BigInt(tr.polls.start[i])).toString(),
      task: tr.polls.task[i],
      loc: tr.polls.loc[i] >= 0 ? tr.strings[tr.polls.loc[i]] : '',
      parts: Object.fromEntries(A.PARTS.map((p, k) => [p + '_ns', parts[k]])),
    });
  }
  return polls;
}

function sumByLocation(polls) {
  const by = {};
  for (const p of polls) {
    const b = by[p.loc] || (by[p.loc] = Object.fromEntries(A.PARTS.map((n) => [n + '_ns', 0])));
    for (const k in p.parts) b[k] += p.parts[k];
  }
  return by;
}

function analyze(file) {
  const an = spawnSync(dial9, ['analyze', '--json', '--top', String(TOP), file], { encoding: 'utf8', maxBuffer: 1 << 30 });
  assert.equal(an.status, 0, 'dial9 analyze ' + file + ': ' + an.stderr);
  return JSON.parse(an.stdout);
}

// The export's poll slices (perfetto): the parts of every poll, by the export model's pass.
function comparePerfetto(file, js) {
  const r = spawnSync(dial9, ['export', '--format', 'perfetto', '-o', '-', file], { maxBuffer: 1 << 30 });
  assert.equal(r.status, 0, 'dial9 export ' + file + ': ' + r.stderr);
  const slices = perfettoPolls(new Uint8Array(r.stdout.buffer, r.stdout.byteOffset, r.stdout.length));
  assert.equal(slices.length, js.length, file + ': the export has every poll');
  const jsBy = new Map(js.map((p) => [p.start + '/' + p.task, p.parts]));
  for (const s of slices) {
    const mine = jsBy.get(s.ts + '/' + s.task);
    assert.ok(mine, file + ': the poll of task ' + s.task + ' at ' + s.ts);
    const nonzero = Object.fromEntries(Object.entries(mine).filter(([, v]) => v > 0));
    // no switch source at all: the export writes no parts, the viewer all unknown
    if (!Object.keys(s.parts).length) assert.deepEqual(Object.keys(nonzero).filter((k) => k !== 'unknown_ns'), [], file + ' at ' + s.ts);
    else assert.deepEqual(nonzero, s.parts, file + ': the poll of task ' + s.task + ' at ' + s.ts + ' (perfetto)');
  }
}

// The C parts of every poll and location, against the viewer's: analyze's (its longest polls,
// all of them up to TOP, and its locations), and the perfetto export's poll slices.
function compare(file, tr, { withAnalyze = true } = {}) {
  const js = jsAttribution(tr);
  comparePerfetto(file, js);
  if (!withAnalyze) return js;
  const c = analyze(file);
  assert.equal(c.polls.longest.length, Math.min(js.length, TOP), file + ': analyze lists every poll, or TOP');
  const key = (w, s) => w + '@' + s;
  const jsBy = new Map(js.map((p) => [key(p.worker, p.start), p.parts]));
  for (const e of c.polls.longest) {
    assert.deepEqual(jsBy.get(key(e.worker, String(e.start_ns))), e.attribution,
      file + ': poll of worker ' + e.worker + ' at ' + e.start_ns + ' (' + e.location + ')');
  }
  const cBy = Object.fromEntries(c.polls.by_location.map((l) => [l.location, l.attribution]));
  const jsLoc = sumByLocation(js);
  if (c.polls.by_location.length < TOP) assert.equal(Object.keys(jsLoc).length, c.polls.by_location.length, file + ': locations');
  for (const loc in cBy) assert.deepEqual(jsLoc[loc], cBy[loc], file + ': parts of spawn location ' + loc);
  return js;
}

function skipWithoutCli(t) {
  if (fs.existsSync(dial9)) return false;
  t.skip('not built: ' + dial9 + ' (set D9_BUILD_DIR)');
  return true;
}

const vectors = fs.readdirSync(vectorDir).filter((f) => f.endsWith('.bin')).map((f) => f.slice(0, -4))
  .sort((a, b) => (a === 'attribution' ? -1 : b === 'attribution' ? 1 : a < b ? -1 : a > b ? 1 : 0));

// Whose worker a CPU sample is (src/model/thread_worker.h): on the worker-change vector a
// thread changes worker mid-run and its samples carry no worker id, timer (source 0) and
// context-switch (source 1) alike; the decoder gives each its thread's worker, so the samples
// inside each worker's polls are the ones analyze counts there (tests/unit/worker_change_trace.h).
test('the worker-change vector: a sample without a worker id is its thread\'s worker\'s, as analyze counts it', (t) => {
  if (skipWithoutCli(t)) return;
  const file = path.join(vectorDir, 'worker-change.bin');
  const tr = D.decode(fs.readFileSync(file));
  const S = tr.cpuSamples;
  const P = tr.polls;
  const js = {};
  for (let i = 0; i < S.count; i++) {
    let inPoll = false;
    for (let p = 0; p < P.count; p++) {
      if (P.worker[p] === S.worker[i] && S.ts[i] >= P.start[p] && S.ts[i] < P.end[p]) inPoll = true;
    }
    const k = (S.source[i] === 0 ? 'cpu ' : 'offcpu ') + (inPoll ? S.worker[i] : 'outside polls');
    js[k] = (js[k] || 0) + 1;
  }
  const c = {};
  for (const w of analyze(file).workers) {
    if (w.cpu_samples_in_poll) c['cpu ' + w.id] = w.cpu_samples_in_poll;
    if (w.offcpu_samples_in_poll) c['offcpu ' + w.id] = w.offcpu_samples_in_poll;
  }
  assert.deepEqual(c, { 'cpu 0': 1, 'cpu 1': 2, 'offcpu 0': 1, 'offcpu 1': 1 }, 'analyze: the planted samples');
  assert.deepEqual(js, c, 'the viewer: samples inside each worker\'s polls');
});

// A thread's worker from its WorkerRegisteredEvent alone (no park, unpark or switch record
// names it): its timer sample without a worker id is that worker's, in analyze and the viewer;
// another thread's stays no worker's (255).
test('a timer sample of a registered thread without a worker id: its worker\'s, as analyze counts it', (t) => {
  if (skipWithoutCli(t)) return;
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.schema(40, 'WorkerRegisteredEvent', true, [['worker_id', T.VARINT], ['tid', T.U32], ['runtime', T.POOLED_STRING],
    ['index', T.VARINT], ['thread_name', T.POOLED_STRING]]);
  w.stringPool([[0, ''], [1, 'main'], [2, 'reg.c:1']]);
  w.stackPool([[1, [0x401000n]]]);
  const at = (ms) => 7000000000n + BigInt(Math.round(ms * MS));
  w.event(40, at(0), [3, 200, 1, 0, 0]);
  w.event(id.PollStartEvent, at(1), [3, 0, 1, 2]);
  w.event(id.CpuSampleEvent, at(2), [255, 200, 0, null, 1, null]);
  w.event(id.CpuSampleEvent, at(2.5), [255, 300, 0, null, 1, null]);
  w.event(id.PollEndEvent, at(4), [3]);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'attr-reg-')), 'registered.bin');
  fs.writeFileSync(file, w.bytes());
  const tr = D.decode(w.bytes());
  const S = tr.cpuSamples;
  const workerOf = {};
  for (let i = 0; i < S.count; i++) workerOf[S.tid[i]] = S.worker[i];
  assert.deepEqual(workerOf, { 200: 3, 300: 255 }, 'the viewer: each sample\'s worker by tid');
  assert.deepEqual(Array.from(S.recordWorker || []), [255, 255], 'the records\' own worker_id, kept');
  const c = analyze(file);
  const w3 = c.workers.find((x) => x.id === 3);
  assert.ok(w3, 'analyze lists worker 3');
  assert.equal(w3.cpu_samples_in_poll, 1, 'analyze: the sample of tid 200 in worker 3\'s poll');
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

test('the attribution vector: the planted parts of tests/unit/attribution_trace.h', () => {
  const tr = D.decode(fs.readFileSync(path.join(vectorDir, 'attribution.bin')));
  const by = Object.fromEntries(jsAttribution(tr).map((p) => [p.loc, p.parts]));
  const parts = (o) => Object.fromEntries(A.PARTS.map((n) => [n + '_ns', o[n] || 0]));
  assert.deepEqual(by['lock.c:1'], parts({ on_cpu: 4.5 * MS, lock: 4 * MS, runnable: 1 * MS, blocked_other: 0.5 * MS }));
  assert.deepEqual(by['sleep.c:1'], parts({ on_cpu: 2 * MS, sleep: 8 * MS }));
  assert.deepEqual(by['io.c:1'], parts({ on_cpu: 4 * MS, io: 1 * MS, unknown: 5 * MS }));
  assert.deepEqual(by['drop.c:1'], parts({ on_cpu: 5 * MS, unknown: 5 * MS }));
  assert.deepEqual(by['after.c:1'], parts({ on_cpu: 2 * MS, sleep: 3 * MS }));
});

// The rule of a long poll's CPU time (src/model/attribution.h, d9m_attr_poll_cpu): poll_cpu
// stated on, the governor's gaps; a poll without a PollCpuEvent ran all of it, one whose event
// says "not exact" stays unknown, one with its exact CPU time has off_cpu_uncaptured
// (tests/unit/poll_cpu_trace.h). Analyze and the export say the same: the loop below.
test('the poll-cpu vector: the planted parts of tests/unit/poll_cpu_trace.h', () => {
  const tr = D.decode(fs.readFileSync(path.join(vectorDir, 'poll-cpu.bin')));
  const by = Object.fromEntries(jsAttribution(tr).map((p) => [p.loc, p.parts]));
  const parts = (o) => Object.fromEntries(A.PARTS.map((n) => [n + '_ns', o[n] || 0]));
  assert.deepEqual(by['covered.c:1'], parts({ on_cpu: 9 * MS, io: 1 * MS }));
  assert.deepEqual(by['none.c:1'], parts({ on_cpu: 10 * MS }));
  assert.deepEqual(by['inexact.c:1'], parts({ unknown: 10 * MS }));
  assert.deepEqual(by['exact.c:1'], parts({ on_cpu: 6 * MS, io: 1 * MS, off_cpu_uncaptured: 3 * MS }));
  assert.deepEqual(by['short.c:1'], parts({ unknown: 0.5 * MS }));
  // a span's piece of a poll keeps its gaps unknown, as src/model/spans.c does
  const i = Array.from(tr.polls.loc, (l) => tr.strings[l]).indexOf('none.c:1');
  const piece = A.attributor(tr, M.makeSymbolizer(tr).lookup).parts(i, tr.polls.start[i], tr.polls.end[i]);
  assert.equal(piece[A.PARTS.indexOf('unknown')], 10 * MS);
});

for (const name of vectors) {
  test('vector ' + name + ': the viewer\'s attribution equals C\'s per poll and per location', (t) => {
    if (skipWithoutCli(t)) return;
    const file = path.join(vectorDir, name + '.bin');
    const js = compare(file, D.decode(fs.readFileSync(file)));
    for (const p of js) {
      const total = Object.values(p.parts).reduce((a, b) => a + b, 0);
      assert.ok(Object.values(p.parts).every((v) => Number.isInteger(v) && v >= 0), name + ': integer parts');
      assert.ok(total >= 0, name);
    }
  });
}

// The dial9 fixture (../shared): no switch records, so every poll is unknown in both.
test('the dial9 fixture: the viewer\'s attribution equals C\'s', (t) => {
  const fixture = path.resolve(process.env.D9_SHARED_DIR || path.join(here, '..', '..', '..', 'shared'), 'fixtures');
  const files = fs.existsSync(fixture) ? fs.readdirSync(fixture).filter((f) => /\.bin(\.gz)?$/.test(f)) : [];
  if (!files.length) {
    t.skip('no dial9 fixture in ' + fixture + ' (../shared absent)');
    return;
  }
  if (skipWithoutCli(t)) return;
  const file = path.join(fixture, files.sort()[0]);
  let bytes = fs.readFileSync(file);
  if (D.isGzip(bytes)) bytes = require('node:zlib').gunzipSync(bytes);
  compare(file, D.decode(bytes));
});

// A real recording: story 2 (examples/stories, a global mutex under load) records switch
// records and context-switch stacks for a second; its lock waits, preemptions and polls are
// whatever the machine made of them, and the viewer must read them as the export does, poll
// for poll.
const story2 = path.resolve(process.env.D9_BUILD_DIR || path.join(here, '..', '..', 'build'), 'examples', 'stories', 'story2_global_mutex');
test('a recording of story 2 (a global mutex): the viewer\'s attribution equals C\'s', (t) => {
  if (skipWithoutCli(t)) return;
  if (!fs.existsSync(story2)) {
    t.skip('not built: ' + story2);
    return;
  }
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-attr-story2-'));
  try {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DIAL9_'))); // the defaults
    const r = spawnSync(story2, ['--seconds', '1', '--trace-dir', dir], { encoding: 'utf8', env, timeout: 120000 });
    assert.equal(r.status, 0, 'story2: ' + r.stdout + r.stderr);
    const run = (r.stdout.match(/^trace +(.+)$/m) || [])[1];
    assert.ok(run && fs.existsSync(run), 'its run directory: ' + r.stdout);
    const files = fs.readdirSync(run).filter((f) => /\.bin$/.test(f)).sort();
    assert.ok(files.length > 0, 'segments in ' + run);
    for (const f of files) {
      const tr = D.decode(fs.readFileSync(path.join(run, f)));
      if (!tr.switches.count) {
        t.skip('no switch records on this host (perf refused them): ' + JSON.stringify(tr.metadata[0] && tr.metadata[0].entries.filter(([k]) => k === 'source.off_cpu')));
        return;
      }
      // analyze (per poll and per location) and the export (per poll) pair samples with
      // switch-outs by one rule (src/model/switch_stack_match.h): with the viewer's equal to
      // both, analyze's parts per location are the sums of the export's per poll
      const js = compare(path.join(run, f), tr);
      const sum = sumByLocation(js);
      t.diagnostic(f + ': ' + js.length + ' polls; ' + Object.entries(sum).map(([l, p]) => l + ' ' + JSON.stringify(p)).join('; '));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// Edge cases, one worker per case so that each poll tests one rule (tid 100 + worker).
const SWITCH = [['tid', T.U32], ['worker_id', T.VARINT], ['switch_out', T.BOOL], ['preempted', T.BOOL], ['cpu', T.VARINT | T.OPT]];
const DROP = [['count', T.VARINT], ['reason', T.POOLED_STRING], ['tid', T.U32], ['worker_id', T.VARINT]];
const COVERAGE = [['source', T.POOLED_STRING], ['mode', T.POOLED_STRING], ['previous_mode', T.POOLED_STRING],
  ['previous_since_ns', T.VARINT], ['one_in', T.VARINT], ['rate_per_s', T.VARINT], ['cost_ppm', T.VARINT], ['budget_ppm', T.VARINT]];

export function edgeTraceBytes(offCpu = 'active: perf switch records') {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.schema(40, 'SchedSwitchEvent', true, SWITCH);
  w.schema(41, 'DroppedEventsEvent', true, DROP);
  w.schema(42, 'CoverageEvent', true, COVERAGE);
  const S = { offcpu: 1, full: 2, paused: 3, nostacks: 4, reason: 5 };
  const strings = [[S.offcpu, 'off_cpu'], [S.full, 'full'], [S.paused, 'paused'], [S.nostacks, 'no_stacks'], [S.reason, 'perf_ring_full']];
  const locs = ['fault.c', 'glibc.c', 'overlap.c', 'early.c', 'late.c', 'paused.c', 'nostacks.c', 'alldrop.c', 'otherdrop.c', 'edge.c', 'clone.c', 'two.c', 'window.c', 'pairing.c', 'noworker.c'];
  locs.forEach((l, k) => strings.push([10 + k, l + ':1']));
  w.stringPool(strings);
  const ADDR = { sched: 0xffffffff81000000n, fault: 0xffffffff81005000n, user: 0x401000n, libcRead: 0x7f0000004000n,
    clone: 0x7f0000005000n, rw: 0x7f0000006000n };
  w.stackPool([[1, [ADDR.sched, ADDR.fault, ADDR.user]], [2, [ADDR.libcRead, ADDR.user]], [3, [ADDR.clone, ADDR.user]],
    [4, [ADDR.sched, ADDR.user]], [5, [ADDR.rw, ADDR.user]]]);
  const t0 = 7000000000n;
  const at = (ms) => t0 + BigInt(Math.round(ms * MS));
  w.event(id.SegmentMetadataEvent, at(0), [[['source.off_cpu', offCpu]]]);
  const events = [];
  const ev = (ms, type, values) => events.push([at(ms), type, values]);
  const poll = (worker, loc, from, to) => {
    ev(from, id.PollStartEvent, [worker, 0, 100 + worker, 10 + loc]);
    ev(to, id.PollEndEvent, [worker]);
  };
  const sw = (worker, ms, out, preempted = false) => ev(ms, 40, [100 + worker, worker, out, preempted, null]);
  const sample = (worker, ms, stack) => ev(ms, id.CpuSampleEvent, [worker, 100 + worker, 1, null, stack, null]);
  const blocked = (worker, out, inn, stack, sampleAt) => {
    if (stack) sample(worker, sampleAt === undefined ? out - 0.002 : sampleAt, stack);
    sw(worker, out, true);
    sw(worker, inn, false);
  };
  // 0 fault.c: a page fault 1..3 ms, then a blocked interval whose sample came 1.1 ms early
  // (outside the 1 ms window: blocked_other), then one running past the poll's end (clipped)
  poll(0, 0, 0, 10);
  blocked(0, 1, 3, 1);
  blocked(0, 5, 6, 1, 3.9);
  blocked(0, 9, 12, 4);
  // 1 glibc.c: __GI___libc_read in user space only (io), a stack with no symbol (blocked_other)
  poll(1, 1, 0, 10);
  blocked(1, 2, 4, 2);
  blocked(1, 5, 6, 4);
  // 2 overlap.c: two switch-outs before a switch-in, then intervals that overlap: the later out
  // pairs, and a second thread of the same worker overlapping it makes the poll inconsistent
  poll(2, 2, 0, 10);
  sw(2, 1, true);
  sw(2, 2, true);
  sw(2, 4, false);
  ev(3, 40, [999, 2, true, false, null]);
  ev(5, 40, [999, 2, false, false, null]);
  // 3 early.c: an interval that began before the poll is not the poll's
  poll(3, 3, 2, 10);
  blocked(3, 1, 4, 1);
  blocked(3, 6, 7, 5);
  // 4 late.c: its sample 40 us after the switch-out (matched), preempted 7..8 ms
  poll(4, 4, 0, 10);
  blocked(4, 2, 5, 1, 2.04);
  sw(4, 7, true, true);
  sw(4, 8, false);
  // 5 paused.c: the governor paused off_cpu 53..56 ms, an interval 52..55 ms half inside it
  poll(5, 5, 50, 60);
  blocked(5, 52, 55, 1);
  // 6 nostacks.c: no_stacks 11..20 ms is covered
  poll(6, 6, 12, 18);
  blocked(6, 13, 15, 0);
  // 7 alldrop.c: a drop of the whole process (worker 255, tid 0) at 25 ms
  poll(7, 7, 21, 30);
  blocked(7, 22, 23, 1);
  blocked(7, 26, 27, 1);
  // 8 otherdrop.c: a drop of a thread that is no worker (255, tid 7): nothing unknown; a drop of
  // another worker (5) inside it: nothing either
  poll(8, 8, 41, 45);
  blocked(8, 42, 43, 1);
  // 9 edge.c: a drop at its very end: all of it unknown; a zero-length interval
  poll(9, 9, 31, 35);
  sw(9, 32, true);
  sw(9, 32, false);
  // 10 clone.c: pthread_rwlock_wrlock.isra.0 (lock through a clone suffix)
  poll(10, 10, 31, 35);
  blocked(10, 32, 34, 3);
  // 11 two.c: two polls of one location on one worker: a lock wait in one, a fault in the other
  poll(11, 11, 31, 33);
  blocked(11, 31.5, 32.5, 5);
  poll(11, 11, 34, 36);
  blocked(11, 34.5, 35.5, 1);
  // 12 window.c: the 1 ms match window: a sample 0.9 ms before its switch-out (fault), one taken
  // 0.3 ms after an interval had ended (refused there, and 1.2 ms before the next switch-out:
  // both blocked_other), one 0.7 ms after its switch-out, inside the interval (lock)
  poll(12, 12, 0, 10);
  blocked(12, 2, 3, 1, 1.1);
  sw(12, 4, true);
  sw(12, 4.5, false);
  sample(12, 4.8, 5);
  sw(12, 6, true);
  sw(12, 7, false);
  blocked(12, 8, 9, 5, 8.7);
  // 13 pairing.c: which sample is which interval's (src/model/switch_stack_match.h), where
  // analyze's sweep once paired otherwise: a sample taken just before the poll began, its
  // switch-out just after (lock); two samples before two switch-outs, the oldest to the first
  // (fault, then lock); a sample taken inside an interval that has one already waits for the
  // next switch-out (lock, then fault)
  poll(13, 13, 10, 20);
  blocked(13, 10.01, 11, 5, 9.99);
  sample(13, 14, 1);
  sample(13, 14.1, 5);
  blocked(13, 14.5, 15, 0);
  blocked(13, 15, 15.5, 0);
  blocked(13, 17, 17.5, 5, 16.9);
  sample(13, 17.2, 1);
  blocked(13, 18, 19, 0);
  // 14 noworker.c: a context-switch sample without a worker id (255), from the worker's thread:
  // no worker's sample in analyze and the export, so the interval has no stack
  poll(14, 14, 0, 10);
  ev(0.998, id.CpuSampleEvent, [255, 114, 1, null, 1, null]);
  sw(14, 1, true);
  sw(14, 3, false);
  ev(53, 42, [S.offcpu, S.paused, S.paused, 0, 1, 0, 0, 0]);
  ev(56, 42, [S.offcpu, S.full, S.full, 0, 1, 0, 0, 0]);
  ev(11, 42, [S.offcpu, S.nostacks, S.nostacks, 0, 1, 0, 0, 0]);
  ev(20, 42, [S.offcpu, S.full, S.full, 0, 1, 0, 0, 0]);
  ev(25, 41, [3, S.reason, 0, 255]);
  ev(43, 41, [3, S.reason, 7, 255]);
  ev(44, 41, [3, S.reason, 105, 5]);
  ev(35, 41, [1, S.reason, 109, 9]);
  events.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (const [ts, type, values] of events) w.event(type, ts, values);
  const sym = (addr, name) => w.event(id.SymbolTableEntry, at(70), [addr, 0x100, name, 0, 0, 0]);
  w.stringPool([[60, '__schedule'], [61, 'handle_mm_fault'], [62, 'handler'], [63, '__GI___libc_read'],
    [64, 'pthread_rwlock_wrlock.isra.0'], [65, '__pthread_rwlock_rdlock'], [0, '']]);
  sym(ADDR.sched, 60);
  sym(ADDR.fault, 61);
  sym(ADDR.user, 62);
  sym(ADDR.libcRead, 63);
  sym(ADDR.clone, 64);
  sym(ADDR.rw, 65);
  return w.bytes();
}

test('edge cases: the viewer\'s attribution equals C\'s, and each rule holds', (t) => {
  if (skipWithoutCli(t)) return;
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-attr-'));
  try {
    for (const offCpu of ['active: perf switch records', 'inactive: no perf']) {
      const file = path.join(dir, 'edge.bin');
      fs.writeFileSync(file, edgeTraceBytes(offCpu));
      const js = compare(file, D.decode(fs.readFileSync(file)));
      const by = sumByLocation(js);
      const nonzero = (loc) => Object.fromEntries(Object.entries(by[loc]).filter(([, v]) => v));
      if (offCpu.startsWith('inactive')) {
        for (const loc in by) assert.deepEqual(Object.keys(nonzero(loc)), ['unknown_ns'], loc);
        continue;
      }
      assert.deepEqual(nonzero('fault.c:1'), { on_cpu_ns: 6 * MS, fault_ns: 2 * MS, blocked_other_ns: 2 * MS });
      assert.deepEqual(nonzero('glibc.c:1'), { on_cpu_ns: 7 * MS, io_ns: 2 * MS, blocked_other_ns: 1 * MS });
      assert.deepEqual(nonzero('overlap.c:1'), { unknown_ns: 10 * MS });
      assert.deepEqual(nonzero('early.c:1'), { on_cpu_ns: 7 * MS, lock_ns: 1 * MS });
      assert.deepEqual(nonzero('late.c:1'), { on_cpu_ns: 6 * MS, fault_ns: 3 * MS, runnable_ns: 1 * MS });
      assert.deepEqual(nonzero('paused.c:1'), { on_cpu_ns: 6 * MS, fault_ns: 1 * MS, unknown_ns: 3 * MS });
      assert.deepEqual(nonzero('nostacks.c:1'), { on_cpu_ns: 4 * MS, blocked_other_ns: 2 * MS });
      assert.deepEqual(nonzero('alldrop.c:1'), { on_cpu_ns: 4 * MS, fault_ns: 1 * MS, unknown_ns: 4 * MS });
      assert.deepEqual(nonzero('otherdrop.c:1'), { on_cpu_ns: 3 * MS, fault_ns: 1 * MS });
      assert.deepEqual(nonzero('edge.c:1'), { unknown_ns: 4 * MS });
      assert.deepEqual(nonzero('clone.c:1'), { on_cpu_ns: 2 * MS, lock_ns: 2 * MS });
      assert.deepEqual(nonzero('two.c:1'), { on_cpu_ns: 2 * MS, lock_ns: 1 * MS, fault_ns: 1 * MS });
      assert.deepEqual(nonzero('pairing.c:1'), { on_cpu_ns: 6510000, lock_ns: 1990000, fault_ns: 1500000 });
      assert.deepEqual(nonzero('noworker.c:1'), { on_cpu_ns: 8 * MS, blocked_other_ns: 2 * MS });
      assert.deepEqual(nonzero('window.c:1'), { on_cpu_ns: 6.5 * MS, lock_ns: 1 * MS, fault_ns: 1 * MS, blocked_other_ns: 1.5 * MS });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('causes: frame names as the C model reads them', () => {
  const cause = (names, preempted = false) => A.PARTS[A.causeOf(preempted, names)];
  assert.equal(cause(['__lll_lock_wait', 'read']), 'lock');
  assert.equal(cause(['do_syscall_64', 'clock_nanosleep']), 'sleep');
  assert.equal(cause(['__x64_sys_nanosleep']), 'sleep');
  assert.equal(cause(['asm_exc_page_fault', 'read']), 'fault');
  assert.equal(cause(['__x64_sys_futex']), 'io');
  assert.equal(cause(['__GI___libc_recvmsg']), 'io');
  assert.equal(cause(['flockfile']), 'lock');
  assert.equal(cause([null, 'main']), 'blocked_other');
  assert.equal(cause([]), 'blocked_other');
  assert.equal(cause(['__lll_lock_wait'], true), 'runnable');
});

// A span's polls by cause (the span details' second bar): its task's polls clipped to the span.
test('a span\'s polls split by cause: the parts of its tasks\' polls inside it', () => {
  require('../src/spans.js');
  const ENTER = [['worker_id', T.VARINT], ['span_id', T.VARINT], ['parent_span_id', T.VARINT | T.OPT],
    ['span_name', T.POOLED_STRING], ['task_id', T.VARINT], ['tid', T.U32]];
  const EXIT = [['worker_id', T.VARINT], ['span_id', T.VARINT], ['span_name', T.POOLED_STRING], ['task_id', T.VARINT], ['tid', T.U32]];
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.schema(40, 'SchedSwitchEvent', true, SWITCH);
  w.schema(41, 'SpanEnterEvent', true, ENTER);
  w.schema(42, 'SpanExitEvent', true, EXIT);
  w.stringPool([[0, ''], [1, 'req'], [2, 'handler.c:1'], [3, '__lll_lock_wait']]);
  w.stackPool([[1, [0x7f0000001000n]]]);
  const at = (ms) => 9000000000n + BigInt(Math.round(ms * MS));
  w.event(id.SegmentMetadataEvent, at(0), [[['source.off_cpu', 'active: perf switch records']]]);
  const sw = (worker, ms, out, preempted = false) => w.event(40, at(ms), [100 + worker, worker, out, preempted, null]);
  // worker 0: task 1's poll 0..4 ms, preempted 0.5..0.8 (before the span), a lock wait 2..3
  w.event(id.PollStartEvent, at(0), [0, 0, 1, 2]);
  sw(0, 0.5, true, true);
  sw(0, 0.8, false);
  w.event(41, at(1), [0, 1, null, 1, 1, 100]);
  w.event(id.CpuSampleEvent, at(1.998), [0, 100, 1, null, 1, null]);
  sw(0, 2, true);
  sw(0, 3, false);
  w.event(id.PollEndEvent, at(4), [0]);
  // worker 1: task 1's poll 10..16 ms, preempted 11..12, blocked 12.5..14 (no stack); the span
  // ends at 13
  w.event(id.PollStartEvent, at(10), [1, 0, 1, 2]);
  sw(1, 11, true, true);
  sw(1, 12, false);
  sw(1, 12.5, true);
  w.event(42, at(13), [1, 1, 1, 1, 101]);
  sw(1, 14, false);
  w.event(id.PollEndEvent, at(16), [1]);
  w.event(id.SymbolTableEntry, at(20), [0x7f0000001000n, 0x100, 3, 0, 0, 0]);
  const tr = D.decode(w.bytes());
  const spans = globalThis.window.D9.spans.pair(tr).spans;
  assert.equal(spans.length, 1);
  const s = spans[0];
  assert.equal(s.poll, 6 * MS, 'its poll part: 1..4 and 10..13 ms');
  const model = { trace: tr, symbols: M.makeSymbolizer(tr) };
  const parts = A.spanPollParts(model, s);
  const named = Object.fromEntries(A.PARTS.map((p, k) => [p, parts[k]]).filter(([, v]) => v));
  assert.deepEqual(named, { on_cpu: 3.5 * MS, lock: 1 * MS, blocked_other: 0.5 * MS, runnable: 1 * MS });
  assert.match(A.spanPollHtml(model, s), /id="detail-span-attr"/);
  // the whole polls, for comparison: the preemption before the span and the rest of the block
  const whole = A.attributor(tr, model.symbols.lookup);
  assert.deepEqual(Array.from(whole.parts(0)).filter((v, k) => k === 6), [0.3 * MS]);
});
