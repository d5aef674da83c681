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
createRequire(import.meta.url)('../src/spans.js');
createRequire(import.meta.url)('../src/attribution.js'); // the drops of the coverage
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
