// Independent check of a `dial9 export --format perfetto` file: decoded with protobufjs and
// a hand-written subset of Perfetto's trace protos (perfetto_subset.proto), not with dial9's
// code. Verifies what Perfetto's importer relies on and prints a JSON summary on stdout:
//   node check_perfetto.mjs TRACE [--slices]      (--slices: list every slice in the summary)
// Exit status 1 with the problems on stderr when the trace breaks a rule.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const file = process.argv[2];
const listSlices = process.argv.includes('--slices');
const root = protobuf.loadSync(path.join(here, 'perfetto_subset.proto'));
const Trace = root.lookupType('perfetto.protos.Trace');
const trace = Trace.toObject(Trace.decode(fs.readFileSync(file)), { longs: String, defaults: false });

const problems = [];
const fail = (msg) => { if (problems.length < 50) problems.push(msg); };
const big = (v) => (v === undefined ? undefined : BigInt(v));

const TYPE = { BEGIN: 1, END: 2, INSTANT: 3, COUNTER: 4 };
const interned = { categories: new Map(), names: new Map(), argNames: new Map(), functions: new Map(),
  frames: new Map(), callstacks: new Map(), mappings: new Map(), paths: new Map(), buildIds: new Map() };
const tracks = new Map(); // uuid -> descriptor
const open = new Map();   // track uuid -> stack of open slices
const slices = [];        // closed slices {track, name, cat, start, end, depth, args}
const flowSources = new Map(), flowTargets = new Map();
const counterValues = new Map();
let samples = 0, clearedSeen = false, clockSnapshot = null, lastTs = -1n;
const sampleFunctions = new Set();
const sampleTids = new Map();
const sampleStacks = new Map(); // "root;...;leaf" -> count
const flowInfo = new Map();     // flow id -> {from, to, to_name}

function addInterned(d) {
  const put = (map, list, key = 'name', what) => {
    for (const e of list || []) {
      const iid = String(e.iid);
      if (!e.iid || map.has(iid)) fail(`interned ${what}: iid ${iid} missing or defined twice`);
      map.set(iid, key ? (key === 'str' ? Buffer.from(e.str || '', 'base64').toString() : e[key]) : e);
    }
  };
  put(interned.categories, d.eventCategories, 'name', 'category');
  put(interned.names, d.eventNames, 'name', 'event name');
  put(interned.argNames, d.debugAnnotationNames, 'name', 'annotation name');
  put(interned.functions, d.functionNames, 'str', 'function name');
  put(interned.paths, d.mappingPaths, 'str', 'mapping path');
  put(interned.buildIds, d.buildIds, 'str', 'build id');
  put(interned.mappings, d.mappings, null, 'mapping');
  put(interned.frames, d.frames, null, 'frame');
  put(interned.callstacks, d.callstacks, null, 'callstack');
}

const lookup = (map, iid, what) => {
  const v = map.get(String(iid));
  if (v === undefined) fail(`unresolved ${what} iid ${iid}`);
  return v;
};

function args(te) {
  const out = {};
  for (const a of te.debugAnnotations || []) {
    const name = a.name ?? lookup(interned.argNames, a.nameIid, 'annotation name');
    out[name] = a.uintValue !== undefined ? Number(a.uintValue) : a.intValue !== undefined ? Number(a.intValue)
      : a.stringValue ?? a.boolValue;
  }
  return out;
}

for (const [i, p] of (trace.packet || []).entries()) {
  if (p.clockSnapshot) clockSnapshot = p.clockSnapshot;
  if (p.internedData) {
    if (p.trustedPacketSequenceId === undefined) fail(`packet ${i}: interned data without a sequence id`);
    if ((p.sequenceFlags || 0) & 1) clearedSeen = true;
    else if (!clearedSeen) fail(`packet ${i}: interned data before SEQ_INCREMENTAL_STATE_CLEARED`);
    addInterned(p.internedData);
  }
  if (p.trackDescriptor) {
    const d = p.trackDescriptor;
    if (tracks.has(String(d.uuid))) fail(`track ${d.uuid} described twice`);
    tracks.set(String(d.uuid), d);
    if (d.thread && (d.thread.pid === undefined || d.thread.tid === undefined)) fail(`thread track ${d.uuid} without pid/tid`);
  }
  if (p.trackEvent || p.perfSample) {
    if (p.timestamp === undefined) { fail(`packet ${i}: event without a timestamp`); continue; }
    if (p.timestampClockId !== 3) fail(`packet ${i}: timestamp_clock_id ${p.timestampClockId}, want 3 (MONOTONIC)`);
    const ts = big(p.timestamp);
    if (ts < lastTs) fail(`packet ${i}: timestamps go backwards (${ts} < ${lastTs})`);
    lastTs = ts;
    if (p.trustedPacketSequenceId === undefined) fail(`packet ${i}: no sequence id`);
  }
  if (p.perfSample) {
    samples++;
    const cs = lookup(interned.callstacks, p.perfSample.callstackIid, 'callstack');
    const names = [];
    for (const f of cs?.frameIds || []) {
      const fr = lookup(interned.frames, f, 'frame');
      if (!fr) continue;
      const fn = lookup(interned.functions, fr.functionNameId, 'function name');
      sampleFunctions.add(fn);
      names.push(fn);
      lookup(interned.mappings, fr.mappingId, 'mapping');
    }
    const key = `${p.perfSample.tid}:${names.join(';')}`;
    sampleStacks.set(key, (sampleStacks.get(key) || 0) + 1);
    sampleTids.set(p.perfSample.tid, (sampleTids.get(p.perfSample.tid) || 0) + 1);
  }
  const te = p.trackEvent;
  if (!te) continue;
  const ts = big(p.timestamp);
  const uuid = String(te.trackUuid);
  const track = tracks.get(uuid);
  if (!track) { fail(`packet ${i}: event on undescribed track ${uuid}`); continue; }
  if (te.type === TYPE.COUNTER) {
    if (!track.counter) fail(`packet ${i}: counter value on non-counter track ${track.name}`);
    counterValues.set(track.name, (counterValues.get(track.name) || 0) + 1);
    continue;
  }
  if (track.counter) { fail(`packet ${i}: slice event on counter track ${track.name}`); continue; }
  const cat = (te.categoryIids || []).map((c) => lookup(interned.categories, c, 'category')).join(',');
  const name = te.nameIid !== undefined ? lookup(interned.names, te.nameIid, 'event name') : te.name;
  for (const id of te.flowIds || []) {
    if (flowSources.has(String(id))) fail(`flow ${id} starts twice`);
    flowSources.set(String(id), ts);
    (flowInfo.get(String(id)) || flowInfo.set(String(id), {}).get(String(id))).from = `${track.name}@${ts}`;
  }
  for (const id of te.terminatingFlowIds || []) {
    if (flowTargets.has(String(id))) fail(`flow ${id} ends twice`);
    flowTargets.set(String(id), ts);
    (flowInfo.get(String(id)) || flowInfo.set(String(id), {}).get(String(id))).to = `${track.name}@${ts}:${name}`;
  }
  const stack = open.get(uuid) || [];
  open.set(uuid, stack);
  if (te.type === TYPE.BEGIN) {
    stack.push({ track: track.name, name, cat, start: ts, depth: stack.length, args: args(te) });
  } else if (te.type === TYPE.END) {
    const s = stack.pop();
    if (!s) { fail(`packet ${i}: END without an open slice on ${track.name}`); continue; }
    s.end = ts;
    slices.push(s);
  } else if (te.type === TYPE.INSTANT) {
    slices.push({ track: track.name, name, cat, start: ts, end: ts, depth: stack.length, instant: true, args: args(te) });
  } else {
    fail(`packet ${i}: track event of type ${te.type}`);
  }
}
for (const [uuid, stack] of open) if (stack.length) fail(`track ${tracks.get(uuid).name}: ${stack.length} slices never ended`);

// Slices of one track must nest: never overlap partially (checked on the intervals, not only
// on the BEGIN/END order).
const byTrack = new Map();
for (const s of slices) if (!s.instant) (byTrack.get(s.track) || byTrack.set(s.track, []).get(s.track)).push(s);
let maxDepth = 0;
for (const [name, list] of byTrack) {
  list.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.end > b.end ? -1 : a.end < b.end ? 1 : 0));
  const stack = [];
  for (const s of list) {
    while (stack.length && stack[stack.length - 1].end <= s.start && !(stack[stack.length - 1].end === s.start && s.end === s.start && stack[stack.length - 1].start === s.start)) stack.pop();
    if (stack.length && s.end > stack[stack.length - 1].end) fail(`track ${name}: slices overlap partially: [${stack[stack.length - 1].start}, ${stack[stack.length - 1].end}] and [${s.start}, ${s.end}]`);
    stack.push(s);
    maxDepth = Math.max(maxDepth, stack.length);
  }
}

let flows = 0;
for (const [id, end] of flowTargets) {
  const start = flowSources.get(id);
  if (start === undefined) fail(`flow ${id} ends but never starts`);
  else if (start > end) fail(`flow ${id} ends before it starts`);
  else flows++;
}

if (!clockSnapshot) fail('no ClockSnapshot');
else if (!(clockSnapshot.clocks || []).some((c) => c.clockId === 3)) fail('ClockSnapshot without MONOTONIC');

const count = (pred) => slices.filter(pred).length;
const threadTracks = [...tracks.values()].filter((t) => t.thread);
const summary = {
  packets: (trace.packet || []).length,
  process: [...tracks.values()].filter((t) => t.process).map((t) => ({ pid: t.process.pid, name: t.process.processName })),
  threads: threadTracks.map((t) => ({ name: t.name, tid: t.thread.tid, pid: t.thread.pid })),
  counters: Object.fromEntries(counterValues),
  polls: count((s) => s.cat === 'poll'),
  parks: count((s) => s.cat === 'park'),
  wakes: count((s) => s.cat === 'wake'),
  flows,
  max_depth: maxDepth,
  samples,
  sample_tids: Object.fromEntries(sampleTids),
  functions: interned.functions.size,
  sample_functions: [...sampleFunctions].sort(),
  poll_names: [...new Set(slices.filter((s) => s.cat === 'poll').map((s) => s.name))].sort(),
  longest_poll: slices.filter((s) => s.cat === 'poll').reduce((a, s) => {
    const d = Number(s.end - s.start);
    return !a || d > a.dur ? { dur: d, track: s.track, name: s.name, task_id: s.args.task_id } : a;
  }, null),
};
if (listSlices) {
  summary.sample_stacks = Object.fromEntries(sampleStacks);
  summary.flow_list = [...flowInfo.values()];
}
if (listSlices) summary.slices = slices.map((s) => ({ ...s, start: Number(s.start), end: Number(s.end), dur: Number(s.end - s.start) }));
process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
if (problems.length) {
  for (const p of problems) process.stderr.write(`check_perfetto: ${p}\n`);
  process.exit(1);
}
