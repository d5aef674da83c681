// Independent check of a `dial9 export --format chrome` file (Chrome JSON trace events):
// JSON.parse and the structural rules of the Trace Event Format that viewers rely on.
//   node check_chrome.mjs TRACE.json [--slices]
// Prints a JSON summary; exit status 1 with the problems on stderr.
import fs from 'node:fs';

const file = process.argv[2];
const listSlices = process.argv.includes('--slices');
const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
const problems = [];
const fail = (m) => { if (problems.length < 50) problems.push(m); };
const EPS = 1e-6; // µs values carry three decimals

const events = Array.isArray(doc) ? doc : doc.traceEvents;
if (!Array.isArray(events)) throw new Error('no traceEvents array');
const threadNames = new Map(), processNames = new Map();
const intervals = new Map(); // pid:tid -> [{start, end, name, cat, args}]
const openB = new Map();
const flowS = new Map(), flowF = new Map();
const counters = new Map();
const byPh = {};
for (const [i, e] of events.entries()) {
  byPh[e.ph] = (byPh[e.ph] || 0) + 1;
  if (typeof e.ph !== 'string') { fail(`event ${i}: no ph`); continue; }
  if (e.ph !== 'M' && (typeof e.ts !== 'number' || !(e.ts >= 0))) fail(`event ${i}: bad ts ${e.ts}`);
  if (e.pid === undefined || (e.ph !== 'C' && e.tid === undefined)) fail(`event ${i}: no pid/tid`);
  const key = `${e.pid}:${e.tid}`;
  const list = () => intervals.get(key) || intervals.set(key, []).get(key);
  switch (e.ph) {
    case 'M':
      if (e.name === 'thread_name') threadNames.set(key, e.args.name);
      else if (e.name === 'process_name') processNames.set(e.pid, e.args.name);
      break;
    case 'X':
      if (typeof e.dur !== 'number' || !(e.dur >= 0)) fail(`event ${i}: X without a valid dur`);
      list().push({ start: e.ts, end: e.ts + e.dur, dur: e.dur, name: e.name, cat: e.cat, args: e.args || {} });
      break;
    case 'B':
      (openB.get(key) || openB.set(key, []).get(key)).push(e);
      break;
    case 'E': {
      const b = (openB.get(key) || []).pop();
      if (!b) fail(`event ${i}: E without B`);
      else list().push({ start: b.ts, end: e.ts, dur: e.ts - b.ts, name: b.name, cat: b.cat, args: b.args || {} });
      break;
    }
    case 's': flowS.has(e.id) ? fail(`flow ${e.id} starts twice`) : flowS.set(e.id, e); break;
    case 'f': flowF.has(e.id) ? fail(`flow ${e.id} ends twice`) : flowF.set(e.id, e); break;
    case 'C':
      for (const v of Object.values(e.args || {})) if (typeof v !== 'number') fail(`event ${i}: counter value not a number`);
      counters.set(e.name, (counters.get(e.name) || 0) + 1);
      break;
    case 'i': case 'I': break;
    default: fail(`event ${i}: unexpected ph ${e.ph}`);
  }
}
for (const [k, st] of openB) if (st.length) fail(`thread ${k}: ${st.length} B without E`);

// Slices of a thread nest properly: sorted by (start, longest first), each one ends inside
// the innermost one still open.
let maxDepth = 0;
const sorted = new Map();
for (const [key, list] of intervals) {
  list.sort((a, b) => a.start - b.start || b.end - a.end);
  sorted.set(key, list);
  const stack = [];
  for (const s of list) {
    while (stack.length && stack[stack.length - 1].end <= s.start + EPS && !(s.end - s.start < EPS && stack[stack.length - 1].start + EPS >= s.start && stack[stack.length - 1].end - stack[stack.length - 1].start < EPS)) stack.pop();
    while (stack.length && stack[stack.length - 1].end < s.start - EPS) stack.pop();
    if (stack.length && s.end > stack[stack.length - 1].end + EPS)
      fail(`thread ${key}: slices overlap partially: [${stack[stack.length - 1].start}, ${stack[stack.length - 1].end}] and [${s.start}, ${s.end}]`);
    stack.push(s);
    maxDepth = Math.max(maxDepth, stack.length);
  }
}

// Flows: every start has an end no earlier; a 'f' with bp:e binds to a slice of its thread
// that starts at its ts.
let flows = 0;
for (const [id, s] of flowS) {
  const f = flowF.get(id);
  if (!f) { fail(`flow ${id} never ends`); continue; }
  if (f.ts + EPS < s.ts) fail(`flow ${id} ends before it starts`);
  const list = sorted.get(`${f.pid}:${f.tid}`) || [];
  if (f.bp === 'e' && !list.some((x) => Math.abs(x.start - f.ts) < EPS && x.cat !== 'wake')) fail(`flow ${id}: no slice starts where it ends`);
  flows++;
}
for (const id of flowF.keys()) if (!flowS.has(id)) fail(`flow ${id} ends but never starts`);

const all = [...intervals.values()].flat();
const polls = all.filter((s) => s.cat === 'poll');
const summary = {
  events: events.length,
  by_ph: byPh,
  processes: Object.fromEntries(processNames),
  threads: Object.fromEntries(threadNames),
  polls: polls.length,
  parks: all.filter((s) => s.cat === 'park').length,
  wakes: all.filter((s) => s.cat === 'wake').length,
  flows,
  max_depth: maxDepth,
  counters: Object.fromEntries(counters),
  poll_names: [...new Set(polls.map((s) => s.name))].sort(),
  longest_poll: polls.reduce((a, s) => (!a || s.dur > a.dur ? { dur: s.dur, name: s.name, task_id: s.args.task_id } : a), null),
  other: doc.otherData,
};
if (listSlices) summary.slices = all;
process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
if (problems.length) {
  for (const p of problems) process.stderr.write(`check_chrome: ${p}\n`);
  process.exit(1);
}
