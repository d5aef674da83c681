// C encoder -> JS decoder parity on the shared vectors: tests/vectors/NAME.bin is written by the
// C encoder (tests/unit/test_vectors_encode.c) and NAME.dump.jsonl is what the C decoder reads
// in it (`dial9 dump --jsonl`, kept exact by tests/goldens). The viewer's decoder must find the
// same events, fields, polls, parks, wakes, samples and symbols in the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import D from '../src/decoder.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const vectorDir = path.resolve(here, '..', '..', 'tests', 'vectors');
const names = fs.readdirSync(vectorDir).filter((f) => f.endsWith('.bin')).map((f) => f.slice(0, -4)).sort();

// The C decoder's events; timestamps as BigInt (the JSON numbers are exact below 2^53).
function cEvents(name) {
  const lines = fs.readFileSync(path.join(vectorDir, name + '.dump.jsonl'), 'utf8').split('\n').filter(Boolean);
  return lines.map((l) => {
    const row = JSON.parse(l);
    row.ts = row.ts === null ? null : BigInt(row.ts);
    return row;
  });
}

// Poll or park spans as both readers define them: per worker in time order, a start pairs with
// the next end; a start followed by a start, or an end without a start, pairs with nothing.
function pairByWorker(rows, startName, endName) {
  const byWorker = new Map();
  for (const r of rows) {
    if (r.event !== startName && r.event !== endName) continue;
    const w = r.fields.worker_id;
    if (!byWorker.has(w)) byWorker.set(w, []);
    byWorker.get(w).push(r);
  }
  const spans = [];
  for (const [w, edges] of byWorker) {
    edges.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
    let pending = null;
    for (const e of edges) {
      if (e.event === startName) pending = e;
      else if (pending) {
        spans.push({ worker: w, start: pending, end: e });
        pending = null;
      }
    }
  }
  return spans;
}

const abs = (tr, rel) => BigInt(tr.origin) + BigInt(rel);
const sortKeys = (a) => a.map((x) => JSON.stringify(x)).sort();
// "not measured": absent in our layout, 0 in dial9's (cpu_time_ns / sched_wait_ns)
const measured = (v) => (v === null || v === 0 ? null : v);

for (const name of names) {
  test(`vector ${name}: the JS decoder reads what the C decoder reads`, () => {
    const bytes = new Uint8Array(fs.readFileSync(path.join(vectorDir, name + '.bin')));
    const rows = cEvents(name);
    const tr = D.decode([{ name: name + '.bin', bytes }]);
    assert.equal(tr.truncated, false);

    // every event, by schema name
    assert.equal(tr.counts.events, rows.length);
    const byName = {};
    for (const r of rows) byName[r.event] = (byName[r.event] || 0) + 1;
    assert.deepEqual({ ...tr.counts.byName }, byName);

    // the time span of timestamped events (symbols at time 0 are "no time")
    const timed = rows.filter((r) => r.ts !== null && r.ts !== 0n).map((r) => r.ts);
    if (timed.length) {
      const min = timed.reduce((a, b) => (b < a ? b : a));
      const max = timed.reduce((a, b) => (b > a ? b : a));
      assert.equal(abs(tr, tr.timeStart), min);
      assert.equal(abs(tr, tr.timeEnd), max);
    }

    // polls: worker, task, spawn location, start and end
    const polls = pairByWorker(rows, 'PollStartEvent', 'PollEndEvent').map((p) =>
      [p.worker, p.start.fields.task_id, p.start.fields.spawn_loc, p.start.ts.toString(), p.end.ts.toString()]);
    const jsPolls = [];
    for (let i = 0; i < tr.polls.count; i++) {
      jsPolls.push([tr.polls.worker[i], tr.polls.task[i], tr.strings[tr.polls.loc[i]],
        abs(tr, tr.polls.start[i]).toString(), abs(tr, tr.polls.end[i]).toString()]);
    }
    assert.deepEqual(sortKeys(jsPolls), sortKeys(polls));

    // PollCpuEvent: its worker's latest closed poll's, once (in time order, as the C readers
    // pair it): [poll start, exact, CPU time]
    const cpus = [];
    const latest = new Map();
    const timeline = rows.filter((r) => r.ts !== null && ['PollStartEvent', 'PollEndEvent', 'PollCpuEvent'].includes(r.event))
      .map((r, k) => [r, k]).sort(([a, i], [b, j]) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : i - j)).map(([r]) => r);
    for (const p of pairByWorker(rows, 'PollStartEvent', 'PollEndEvent')) p.end.closes = p.start;
    for (const r of timeline) {
      const w = r.fields.worker_id;
      if (r.event === 'PollEndEvent' && r.closes) latest.set(w, r.closes);
      if (r.event !== 'PollCpuEvent' || !latest.get(w)) continue;
      cpus.push([latest.get(w).ts.toString(), r.fields.exact ? 1 : 2, r.fields.exact ? Number(r.fields.cpu_time_ns) : 0]);
      latest.delete(w);
    }
    const jsCpus = [];
    for (let i = 0; i < tr.polls.count; i++) {
      if (tr.polls.cpuEvent[i]) jsCpus.push([abs(tr, tr.polls.start[i]).toString(), tr.polls.cpuEvent[i], tr.polls.cpuNs[i]]);
    }
    assert.deepEqual(sortKeys(jsCpus), sortKeys(cpus));

    // parks: worker, span, tid, CPU time at both ends and the run-queue wait, when measured
    const parks = pairByWorker(rows, 'WorkerParkEvent', 'WorkerUnparkEvent').map((p) =>
      [p.worker, p.start.ts.toString(), p.end.ts.toString(), p.start.fields.tid,
        measured(p.start.fields.cpu_time_ns), measured(p.end.fields.cpu_time_ns), measured(p.end.fields.sched_wait_ns)]);
    const num = (v) => (Number.isNaN(v) ? null : v);
    const jsParks = [];
    for (let i = 0; i < tr.parks.count; i++) {
      jsParks.push([tr.parks.worker[i], abs(tr, tr.parks.start[i]).toString(), abs(tr, tr.parks.end[i]).toString(),
        tr.parks.tid[i], num(tr.parks.cpuAtPark[i]), num(tr.parks.cpuAtUnpark[i]), num(tr.parks.schedWait[i])]);
    }
    assert.deepEqual(sortKeys(jsParks), sortKeys(parks));

    // wakes
    const wakes = rows.filter((r) => r.event === 'WakeEventEvent').map((r) =>
      [r.ts.toString(), r.fields.waker_task_id, r.fields.woken_task_id, r.fields.target_worker]);
    const jsWakes = [];
    for (let i = 0; i < tr.wakes.count; i++) {
      jsWakes.push([abs(tr, tr.wakes.ts[i]).toString(), tr.wakes.waker[i], tr.wakes.woken[i], tr.wakes.targetWorker[i]]);
    }
    assert.deepEqual(sortKeys(jsWakes), sortKeys(wakes));

    // CPU and off-CPU samples with their stacks
    const hex = (s) => s.replace(/^0x/, '');
    const samples = rows.filter((r) => r.event === 'CpuSampleEvent').map((r) =>
      [r.ts.toString(), r.fields.worker_id, r.fields.tid, r.fields.source, r.fields.callchain.map(hex)]);
    const jsSamples = [];
    for (let i = 0; i < tr.cpuSamples.count; i++) {
      const st = tr.stacks[tr.cpuSamples.stack[i]];
      const frames = [];
      for (let k = 0; k < st.length; k += 2) frames.push(D.addrHex(st[k], st[k + 1]));
      jsSamples.push([abs(tr, tr.cpuSamples.ts[i]).toString(), tr.cpuSamples.recordWorker[i], tr.cpuSamples.tid[i],
        tr.cpuSamples.source[i], frames]);
    }
    assert.deepEqual(sortKeys(jsSamples), sortKeys(samples));

    // switch records and drops (viewer/src/attribution.js reads them)
    const switches = rows.filter((r) => r.event === 'SchedSwitchEvent').map((r) =>
      [r.ts.toString(), r.fields.tid, r.fields.worker_id, r.fields.switch_out ? 1 : 0, r.fields.preempted ? 1 : 0]);
    const jsSwitches = [];
    for (let i = 0; i < tr.switches.count; i++) {
      jsSwitches.push([abs(tr, tr.switches.ts[i]).toString(), tr.switches.tid[i], tr.switches.worker[i], tr.switches.out[i], tr.switches.preempted[i]]);
    }
    assert.deepEqual(jsSwitches, switches);
    const drops = rows.filter((r) => r.event === 'DroppedEventsEvent').map((r) =>
      [r.ts.toString(), r.fields.worker_id, r.fields.tid, r.fields.count]);
    const jsDrops = [];
    for (let i = 0; i < tr.drops.count; i++) jsDrops.push([abs(tr, tr.drops.ts[i]).toString(), tr.drops.worker[i], tr.drops.tid[i], tr.drops.lost[i]]);
    assert.deepEqual(jsDrops, drops);

    // task spawns and terminations
    const spawns = rows.filter((r) => r.event === 'TaskSpawnEvent').map((r) => r.fields.task_id).sort();
    assert.deepEqual(Array.from(tr.spawns.task).sort(), spawns);
    const terms = rows.filter((r) => r.event === 'TaskTerminateEvent').map((r) => r.fields.task_id).sort();
    assert.deepEqual(Array.from(tr.terminates.task).sort(), terms);

    // symbols
    const symbols = rows.filter((r) => r.event === 'SymbolTableEntry').map((r) =>
      [r.fields.addr.toString(16), r.fields.symbol_name, r.fields.source_file, r.fields.source_line]);
    const jsSymbols = [];
    for (let i = 0; i < tr.symbols.count; i++) {
      jsSymbols.push([D.addrHex(tr.symbols.addrLo[i], tr.symbols.addrHi[i]), tr.strings[tr.symbols.name[i]],
        tr.strings[tr.symbols.file[i]], tr.symbols.line[i]]);
    }
    assert.deepEqual(sortKeys(jsSymbols), sortKeys(symbols));

    // events the viewer does not model: every field value, as text
    // (bytes as hex, as dump prints them; a pooled string is an index into tr.strings)
    const text = (v) => (v === null || v === undefined ? null
      : v instanceof Uint8Array ? Array.from(v, (b) => b.toString(16).padStart(2, '0')).join('')
        : typeof v === 'object' ? JSON.stringify(v) : String(v));
    for (const [ename, o] of Object.entries(tr.other)) {
      const schema = tr.schemas.find((s) => s.name === ename);
      const types = schema.fields.map((f) => f.typeName);
      const value = (v, i) => text(types[i] === 'PooledString' && v !== null ? tr.strings[v] : v);
      const mine = rows.filter((r) => r.event === ename);
      assert.equal(o.count, mine.length, ename);
      const cRows = mine.map((r) => [r.ts === null ? null : r.ts.toString(), ...o.fields.map((f) => text(r.fields[f]))]);
      // an event without a timestamp: null in dump, a placeholder in the viewer's row
      const jsRows = o.rows.map((row) => [schema.hasTimestamp ? abs(tr, row[0]).toString() : null,
        ...row.slice(1).map(value)]);
      assert.deepEqual(jsRows, cRows, ename);
    }
  });
}

test('every vector has its expected dump', () => {
  assert.ok(names.length >= 4, 'the vectors are in tests/vectors');
  for (const n of names) assert.ok(fs.existsSync(path.join(vectorDir, n + '.dump.jsonl')), n);
});
