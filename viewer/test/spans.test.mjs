// Spans in the viewer (viewer/src/spans.js): the decoder keeps every SpanEnterEvent /
// SpanExitEvent, and the model pairs them and splits their time by the C model's rules
// (src/model/spans.h). The trace is built by hand, so every part below is known exactly.
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
globalThis.window.Dial9Decoder = D; // model.js's symbolizer reads addresses through it
createRequire(import.meta.url)('../src/spans.js');
createRequire(import.meta.url)('../src/format.js');
createRequire(import.meta.url)('../src/model.js'); // the polls of a task, the symbols
createRequire(import.meta.url)('../src/attribution.js'); // the drops of the coverage, the split by cause
const S = globalThis.window.D9.spans;

// As the recorder writes them (docs/schemas.md).
const ENTER = [['worker_id', T.VARINT], ['span_id', T.VARINT], ['parent_span_id', T.VARINT | T.OPT],
  ['span_name', T.POOLED_STRING], ['task_id', T.VARINT], ['tid', T.U32]];
const EXIT = [['worker_id', T.VARINT], ['span_id', T.VARINT], ['span_name', T.POOLED_STRING],
  ['task_id', T.VARINT], ['tid', T.U32]];
const REQ = 1;
const FLUSH = 2;
const IO = 4;
const t0 = 5000000000n;

function spanTrace() {
  return D.decode(spanTraceBytes());
}

function spanTraceBytes() {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.schema(40, 'SpanEnterEvent', true, ENTER);
  w.schema(41, 'SpanExitEvent', true, EXIT);
  w.stringPool([[REQ, 'request'], [FLUSH, 'flush'], [3, 'here'], [IO, 'io']]);
  const at = (ns) => t0 + BigInt(ns);
  const enter = (ns, name, sid, task, worker = 0, tid = 100) => w.event(40, at(ns), [worker, sid, null, name, task, tid]);
  const exit = (ns, name, sid, task, worker = 0, tid = 100) => w.event(41, at(ns), [worker, sid, name, task, tid]);
  const poll = (from, to, task, worker) => {
    w.event(id.PollStartEvent, at(from), [worker, 0, task, 3]);
    w.event(id.PollEndEvent, at(to), [worker]);
  };
  w.event(id.PollStartEvent, at(0), [0, 0, 9, 3]); // trace start at relative 0
  w.event(id.PollEndEvent, at(10), [0]);
  // request 7 begins in task 1's poll on worker 0 and ends in task 2's poll on worker 1
  w.event(id.PollStartEvent, at(100), [0, 0, 1, 3]);
  enter(150, REQ, 7, 1, 0, 100);
  enter(160, FLUSH, 7, 1, 0, 100); // same id, other name: another span, never ended
  w.event(id.PollEndEvent, at(200), [0]);
  w.event(id.WakeEventEvent, at(300), [1, 2, 1]);
  enter(300, REQ, 11, 0, 255, 300); // outside any poll, overlapping request 7
  exit(350, REQ, 11, 0, 255, 300);
  w.event(id.PollStartEvent, at(400), [1, 0, 2, 3]);
  exit(450, REQ, 7, 2, 1, 101);
  w.event(id.PollEndEvent, at(500), [1]);
  enter(520, REQ, 8, 0);
  enter(560, REQ, 8, 0); // reopened: the first runs to here, unended
  exit(580, REQ, 8, 0);
  exit(700, REQ, 42, 0); // stray: nothing open
  // io 1: task 5 polled three times inside it, waiting between; a wake before the third poll
  poll(600, 605, 5, 2);
  w.event(id.PollStartEvent, at(606), [2, 0, 5, 3]);
  enter(610, IO, 1, 5, 2, 102);
  w.event(id.PollEndEvent, at(620), [2]);
  poll(700, 720, 5, 2);
  w.event(id.WakeEventEvent, at(750), [0, 5, 2]);
  w.event(id.PollStartEvent, at(800), [2, 0, 5, 3]);
  exit(810, IO, 1, 5, 2, 102);
  w.event(id.PollEndEvent, at(820), [2]);
  // io 2: begun in task 6's poll, ended outside any poll while task 6 is woken but not polled
  w.event(id.PollStartEvent, at(850), [3, 0, 6, 3]);
  enter(855, IO, 2, 6, 3, 103);
  w.event(id.PollEndEvent, at(860), [3]);
  w.event(id.WakeEventEvent, at(870), [0, 6, 3]);
  exit(880, IO, 2, 0, 255, 300);
  poll(900, 1000, 3, 0); // the trace ends at 1000
  return w.bytes();
}

test('spans: the decoder keeps every span mark, not as capped generic rows', () => {
  const t = spanTrace();
  assert.equal(t.spanMarks.length, 13);
  assert.equal(t.other.SpanEnterEvent, undefined);
  const m = t.spanMarks[0];
  assert.deepEqual({ enter: m.enter, name: m.name, id: m.id, task: m.task, worker: m.worker, tid: m.tid, ts: m.ts },
    { enter: true, name: 'request', id: '7', task: 1, worker: 0, tid: 100, ts: 150 });
  assert.equal(t.spanMarks[8].enter, false);
});

test('spans: paired by name and id across threads, unended, reopened and stray, split like the C model', () => {
  const r = S.pair(spanTrace());
  assert.equal(r.strayEnds, 1);
  assert.equal(r.reopened, 1);
  assert.deepEqual(r.names, ['request', 'flush', 'io']);
  const key = (s) => s.name + ' ' + s.id + ' @' + s.begin;
  const got = Object.fromEntries(r.spans.map((s) => [key(s), s]));
  assert.deepEqual(Object.keys(got).sort(), ['flush 7 @160', 'io 1 @610', 'io 2 @855', 'request 11 @300', 'request 7 @150', 'request 8 @520', 'request 8 @560']);

  // cross-thread: begun by task 1 on worker 0, ended by task 2 on worker 1.
  // Task 1 polled [150,200), then waits for a wake up to 450; task 2 (unknown before its wake)
  // queued [300,400) from its wake, polled [400,450). Poll first, then queued, then wait:
  // poll 50+50, queued 100 (inside task 1's wait, but queued comes first), wait 100.
  const r7 = got['request 7 @150'];
  assert.deepEqual([r7.end, r7.ended, r7.beginWorker, r7.endWorker, r7.beginTask, r7.endTask, r7.beginTid, r7.endTid],
    [450, true, 0, 1, 1, 2, 100, 101]);
  assert.deepEqual([r7.poll, r7.queued, r7.wait, r7.unknown], [100, 100, 100, 0]);

  // same id, other name: not closed by request 7's end; unended, it runs to the trace's end.
  // Task 1: polled [160,200), then waits for a wake to the end (its only task).
  const f7 = got['flush 7 @160'];
  assert.deepEqual([f7.end, f7.ended, f7.poll, f7.queued, f7.wait, f7.unknown], [1000, false, 40, 0, 800, 0]);

  // outside any poll: all unknown
  const r11 = got['request 11 @300'];
  assert.deepEqual([r11.end, r11.ended, r11.poll, r11.queued, r11.wait, r11.unknown], [350, true, 0, 0, 0, 50]);

  // reopened: the first is unended at the second begin
  const a = got['request 8 @520'];
  const b = got['request 8 @560'];
  assert.deepEqual([a.end, a.ended, a.reopened, a.unknown], [560, false, true, 40]);
  assert.deepEqual([b.end, b.ended, b.reopened, b.unknown], [580, true, false, 20]);

  // between polls of its task: waiting for a wake from a poll's end to the next poll (or to the
  // wake that led to it), queued from that wake to the poll: poll 10+20+10, queued [750,800),
  // wait [620,700) + [720,750)
  const io1 = got['io 1 @610'];
  assert.deepEqual([io1.end, io1.ended, io1.poll, io1.queued, io1.wait, io1.unknown], [810, true, 40, 50, 110, 0]);
  // ended while its task is woken but not yet polled: wait [860,870), then queued [870,880)
  const io2 = got['io 2 @855'];
  assert.deepEqual([io2.endTask, io2.poll, io2.queued, io2.wait, io2.unknown], [0, 5, 10, 10, 0]);

  for (const s of r.spans) assert.equal(s.poll + s.queued + s.wait + s.unknown, s.end - s.begin, key(s) + ': the parts add up');
});

test('spans: a lane group per name, overlapping spans side by side', () => {
  const r = S.pair(spanTrace());
  const lanes = S.lanes(r);
  assert.deepEqual(lanes.map((l) => [l.name, l.count, l.rows.length]), [['request', 4, 2], ['flush', 1, 1], ['io', 2, 1]]);
  const req = lanes[0];
  const rowOf = (k) => req.rows.findIndex((row) => row.some((i) => r.spans[i].id + '@' + r.spans[i].begin === k));
  assert.equal(rowOf('7@150'), 0);
  assert.equal(rowOf('11@300'), 1, 'overlaps request 7: a second sub-lane');
  assert.equal(rowOf('8@520'), 0, 'request 7 has ended: back in the first');
  assert.equal(rowOf('8@560'), 0);
});

test('spans: a trace without spans has none', () => {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.stringPool([[1, 'here']]);
  w.event(id.PollStartEvent, t0, [0, 0, 1, 1]);
  w.event(id.PollEndEvent, t0 + 10n, [0]);
  const r = S.pair(D.decode(w.bytes()));
  assert.deepEqual([r.spans.length, r.names.length, r.strayEnds, r.reopened], [0, 0, 0, 0]);
});

// The same bytes through the C model (`dial9 analyze --json`, its spans section per name): the
// viewer must find the same counts and the same parts, to the nanosecond.
const here = path.dirname(fileURLToPath(import.meta.url));
const dial9 = path.resolve(process.env.D9_BUILD_DIR || path.join(here, '..', '..', 'build'), 'dial9');
test('spans: the viewer\'s split per name equals the C model\'s on the same trace', (t) => {
  if (!fs.existsSync(dial9)) {
    t.skip('not built: ' + dial9);
    return;
  }
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-spans-'));
  const file = path.join(dir, 'spans.bin');
  fs.writeFileSync(file, spanTraceBytes());
  const an = spawnSync(dial9, ['analyze', '--json', file], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(an.status, 0, 'dial9 analyze: ' + an.stderr);
  const c = JSON.parse(an.stdout).spans;
  const r = S.pair(spanTrace());
  const by = {};
  for (const s of r.spans) {
    const b = by[s.name] || (by[s.name] = { count: 0, unended: 0, poll: 0, queued: 0, wait: 0, unknown: 0 });
    if (!s.ended) { // analyze counts unended spans apart, their parts in no sum
      b.unended++;
      continue;
    }
    b.count++;
    b.poll += s.poll;
    b.queued += s.queued;
    b.wait += s.wait;
    b.unknown += s.unknown;
  }
  const cBy = Object.fromEntries(c.by_name.map((x) => [x.name, { count: x.count, unended: x.unended, ...x.parts_ns }]));
  assert.deepEqual(by, cBy);
  assert.deepEqual([r.strayEnds, r.reopened], [c.stray_ends, c.reopened]);
});

// Spans over polls with off-CPU intervals (stacks matched either side of the switch-out), a
// governor pause and drops: the viewer's parts per span name and its poll part by cause must
// equal analyze's `parts_ns` and `poll_attribution`, and the drop rule holds by hand.
const SWITCH = [['tid', T.U32], ['worker_id', T.VARINT], ['switch_out', T.BOOL], ['preempted', T.BOOL], ['cpu', T.VARINT | T.OPT]];
const DROP = [['count', T.VARINT], ['reason', T.POOLED_STRING], ['tid', T.U32], ['worker_id', T.VARINT]];
const COVERAGE = [['source', T.POOLED_STRING], ['mode', T.POOLED_STRING], ['previous_mode', T.POOLED_STRING],
  ['previous_since_ns', T.VARINT], ['one_in', T.VARINT], ['rate_per_s', T.VARINT], ['cost_ppm', T.VARINT], ['budget_ppm', T.VARINT]];
const MS = 1000000;

export function spanAttributionTraceBytes() {
  const w = new TraceWriter().header();
  const id = declareBuiltins(w);
  w.schema(40, 'SpanEnterEvent', true, ENTER);
  w.schema(41, 'SpanExitEvent', true, EXIT);
  w.schema(42, 'SchedSwitchEvent', true, SWITCH);
  w.schema(43, 'DroppedEventsEvent', true, DROP);
  w.schema(44, 'CoverageEvent', true, COVERAGE);
  const Str = { request: 1, job: 2, loc: 3, reason: 4, offcpu: 5, full: 6, paused: 7 };
  w.stringPool([[Str.request, 'request'], [Str.job, 'job'], [Str.loc, 'handler.c:1'], [Str.reason, 'perf_ring_full'],
    [Str.offcpu, 'off_cpu'], [Str.full, 'full'], [Str.paused, 'paused']]);
  const ADDR = { lock: 0x7f0000001000n, read: 0x7f0000002000n, sleep: 0x7f0000003000n, user: 0x401000n };
  const STK = { lock: 1, read: 2, sleep: 3 };
  w.stackPool([[STK.lock, [ADDR.lock, ADDR.user]], [STK.read, [ADDR.read, ADDR.user]], [STK.sleep, [ADDR.sleep, ADDR.user]]]);
  const at = (ms) => t0 + BigInt(Math.round(ms * MS));
  w.event(id.SegmentMetadataEvent, at(0), [[['source.off_cpu', 'active: perf switch records']]]);
  const events = [];
  const ev = (ms, type, values) => events.push([at(ms), type, values]);
  const poll = (worker, task, from, to) => {
    ev(from, id.PollStartEvent, [worker, 0, task, Str.loc]);
    ev(to, id.PollEndEvent, [worker]);
  };
  const sw = (worker, ms, out, preempted = false) => ev(ms, 42, [100 + worker, worker, out, preempted, null]);
  const sample = (worker, ms, stack) => ev(ms, id.CpuSampleEvent, [worker, 100 + worker, 1, null, stack, null]);
  const off = (worker, out, inn, stack, sampleAt) => {
    if (stack) sample(worker, sampleAt, stack);
    sw(worker, out, true);
    sw(worker, inn, false);
  };
  const enter = (ms, name, sid, task, worker) => ev(ms, 40, [worker, sid, null, name, task, 100 + worker]);
  const exit = (ms, name, sid, task, worker) => ev(ms, 41, [worker, sid, name, task, 100 + worker]);
  const drop = (ms, tid, worker) => ev(ms, 43, [3, Str.reason, tid, worker]);
  // request 1: begun in task 1 (worker 0), ended in task 2 (worker 1); a lock wait whose sample
  // came 0.5 ms early, a preemption, a read whose sample came after its switch-out; task 2 woken
  // at 11, a sleep it is still in when the span ends
  poll(0, 1, 0, 10);
  enter(1, Str.request, 1, 1, 0);
  off(0, 2, 4, STK.lock, 1.5);
  sw(0, 5, true, true);
  sw(0, 6, false);
  off(0, 7, 8, STK.read, 7.3);
  ev(11, id.WakeEventEvent, [1, 2, 1]);
  poll(1, 2, 12, 20);
  off(1, 13, 15, STK.sleep, 12.99);
  exit(14, Str.request, 1, 2, 1);
  // request 2: a drop of its own worker at 33 (unknown from its begin to there), a lock wait,
  // the governor paused 36..37
  poll(2, 3, 30, 40);
  enter(31, Str.request, 2, 3, 2);
  drop(33, 102, 2);
  off(2, 34, 35, STK.lock, 33.9);
  ev(36, 44, [Str.offcpu, Str.paused, Str.full, 0, 1, 0, 0, 0]);
  ev(37, 44, [Str.offcpu, Str.full, Str.paused, 0, 1, 0, 0, 0]);
  exit(39, Str.request, 2, 3, 2);
  // request 3: begun in task 6, ended in task 7, whose polls overlap: task 6's poll counts
  // first, task 7's only outside it (its lock wait hidden, its read not)
  poll(5, 6, 100, 110);
  enter(101, Str.request, 3, 6, 5);
  sw(5, 107, true, true);
  sw(5, 108, false);
  poll(6, 7, 105, 115);
  off(6, 106, 108, STK.lock, 105.9);
  off(6, 110.5, 111, STK.read, 110.6);
  exit(112, Str.request, 3, 7, 6);
  // job 5: a drop of a thread that is no worker (255, tid 7) does not count; one of the whole
  // process (255, tid 0) at 57 does: the read before it is lost, the sleep after it counts
  poll(3, 4, 50, 60);
  enter(51, Str.job, 5, 4, 3);
  off(3, 52, 54, STK.read, 51.9);
  drop(55, 7, 255);
  drop(57, 0, 255);
  off(3, 57.5, 58.5, STK.sleep, 57.4);
  exit(59, Str.job, 5, 4, 3);
  // job 6: a drop of another worker (0) at 84 counts too (a lost wake is as bad as a lost
  // poll); task 5 woken at 82, polled 85..90, preempted 86..87; a drop at its end counts
  poll(4, 5, 70, 80);
  enter(71, Str.job, 6, 5, 4);
  ev(82, id.WakeEventEvent, [0, 5, 4]);
  drop(84, 100, 0);
  poll(4, 5, 85, 90);
  sw(4, 86, true, true);
  sw(4, 87, false);
  exit(88, Str.job, 6, 5, 4);
  drop(95, 100, 0); // after every span: nothing
  events.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (const [ts, type, values] of events) w.event(type, ts, values);
  w.stringPool([[60, '__lll_lock_wait'], [61, '__GI___libc_read'], [62, 'clock_nanosleep'], [63, 'handler'], [0, '']]);
  const sym = (addr, name) => w.event(id.SymbolTableEntry, at(120), [addr, 0x100, name, 0, 0, 0]);
  sym(ADDR.lock, 60);
  sym(ADDR.read, 61);
  sym(ADDR.sleep, 62);
  sym(ADDR.user, 63);
  return w.bytes();
}

test('spans: drops and the poll part by cause per name equal analyze\'s on the same trace', (t) => {
  const M = globalThis.window.D9.model;
  const A = globalThis.window.D9.attribution;
  const bytes = spanAttributionTraceBytes();
  const tr = D.decode(bytes);
  const model = { trace: tr, symbols: M.makeSymbolizer(tr) };
  const r = S.pair(tr);
  const by = {};
  const one = {};
  for (const s of r.spans) {
    const parts = A.spanPollParts(model, s);
    assert.ok(s.poll === 0 || parts, s.name + ' ' + s.id + ': its poll part splits exactly');
    const named = Object.fromEntries(A.PARTS.map((p, k) => [p + '_ns', parts ? parts[k] : 0]));
    one[s.name + ' ' + s.id] = { poll: s.poll, queued: s.queued, wait: s.wait, unknown: s.unknown, ...Object.fromEntries(Object.entries(named).filter(([, v]) => v)) };
    const b = by[s.name] || (by[s.name] = { count: 0, unended: 0, poll: 0, queued: 0, wait: 0, unknown: 0,
      poll_attribution: Object.fromEntries(A.PARTS.map((p) => [p + '_ns', 0])) });
    if (!s.ended) {
      b.unended++;
      continue;
    }
    b.count++;
    b.poll += s.poll;
    b.queued += s.queued;
    b.wait += s.wait;
    b.unknown += s.unknown;
    for (const k in named) b.poll_attribution[k] += named[k];
  }
  // by hand: the drop rule, the clipping, the first task's precedence
  assert.deepEqual(one['request 1'], { poll: 11 * MS, queued: 1 * MS, wait: 1 * MS, unknown: 0,
    on_cpu_ns: 6 * MS, lock_ns: 2 * MS, io_ns: 1 * MS, sleep_ns: 1 * MS, runnable_ns: 1 * MS });
  assert.deepEqual(one['request 2'], { poll: 6 * MS, queued: 0, wait: 0, unknown: 2 * MS, on_cpu_ns: 4 * MS, lock_ns: 1 * MS, unknown_ns: 1 * MS });
  assert.deepEqual(one['request 3'], { poll: 11 * MS, queued: 0, wait: 0, unknown: 0, on_cpu_ns: 9.5 * MS, io_ns: 0.5 * MS, runnable_ns: 1 * MS });
  assert.deepEqual(one['job 5'], { poll: 2 * MS, queued: 0, wait: 0, unknown: 6 * MS, on_cpu_ns: 1 * MS, sleep_ns: 1 * MS });
  assert.deepEqual(one['job 6'], { poll: 3 * MS, queued: 1 * MS, wait: 0, unknown: 13 * MS, on_cpu_ns: 2 * MS, runnable_ns: 1 * MS });
  if (!fs.existsSync(dial9)) {
    t.skip('not built: ' + dial9 + ' (the comparison with analyze)');
    return;
  }
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'd9-spans-attr-'));
  const file = path.join(dir, 'spans.bin');
  fs.writeFileSync(file, bytes);
  const an = spawnSync(dial9, ['analyze', '--json', file], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(an.status, 0, 'dial9 analyze: ' + an.stderr);
  const c = JSON.parse(an.stdout).spans;
  const cBy = Object.fromEntries(c.by_name.map((x) => [x.name, { count: x.count, unended: x.unended, ...x.parts_ns, poll_attribution: x.poll_attribution }]));
  assert.deepEqual(by, cBy);
});
