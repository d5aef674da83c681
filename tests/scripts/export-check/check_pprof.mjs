// Independent check of a `dial9 export --format pprof` file: gunzip (node:zlib), then decoded
// with pprof-format (Datadog's profile.proto codec), not with dial9's code. Checks the
// references between samples, locations, functions, mappings and the string table.
//   node check_pprof.mjs PROFILE.pb.gz
// Prints a JSON summary; exit status 1 with the problems on stderr.
import fs from 'node:fs';
import zlib from 'node:zlib';
import { Profile } from 'pprof-format';

const raw = fs.readFileSync(process.argv[2]);
if (raw[0] !== 0x1f || raw[1] !== 0x8b) throw new Error('not gzip');
const prof = Profile.decode(zlib.gunzipSync(raw));
const problems = [];
const fail = (m) => { if (problems.length < 50) problems.push(m); };
const strings = prof.stringTable.strings;
const str = (i) => {
  const n = Number(i);
  if (!(n >= 0 && n < strings.length)) { fail(`string index ${i} out of range`); return undefined; }
  return strings[n];
};
if (strings[0] !== '') fail('string_table[0] is not ""');

const functions = new Map(prof.function.map((f) => [Number(f.id), f]));
const mappings = new Map(prof.mapping.map((m) => [Number(m.id), m]));
const locations = new Map(prof.location.map((l) => [Number(l.id), l]));
for (const f of prof.function) { if (!Number(f.id)) fail('function id 0'); str(f.name); str(f.filename); }
for (const l of prof.location) {
  if (!Number(l.id)) fail('location id 0');
  if (Number(l.mappingId) && !mappings.has(Number(l.mappingId))) fail(`location ${l.id}: unknown mapping ${l.mappingId}`);
  for (const line of l.line) if (!functions.has(Number(line.functionId))) fail(`location ${l.id}: unknown function ${line.functionId}`);
}
for (const m of prof.mapping) str(m.filename);

const labelCounts = {};
const labelValues = {};
const functionNames = new Set();
const stacks = new Map(); // root-first function names "a;b;c" -> summed value
let total = 0;
for (const s of prof.sample) {
  // location_id is leaf first, and a location's lines are innermost first: reverse both
  const names = [];
  for (const id of [...s.locationId].reverse()) {
    const l = locations.get(Number(id));
    for (const line of [...(l?.line || [])].reverse()) names.push(str(functions.get(Number(line.functionId))?.name));
  }
  const key = names.join(';');
  stacks.set(key, (stacks.get(key) || 0) + Number(s.value[0]));
  if (s.value.length !== prof.sampleType.length) fail('sample with a wrong number of values');
  total += Number(s.value[0]);
  for (const id of s.locationId) {
    const l = locations.get(Number(id));
    if (!l) { fail(`sample: unknown location ${id}`); continue; }
    for (const line of l.line) functionNames.add(str(functions.get(Number(line.functionId))?.name));
  }
  for (const lb of s.label) {
    const key = str(lb.key);
    labelCounts[key] = (labelCounts[key] || 0) + 1;
    const v = Number(lb.str) ? str(lb.str) : Number(lb.num);
    (labelValues[key] ||= new Set()).add(v);
  }
}
const summary = {
  sample_types: prof.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`),
  samples: prof.sample.length,
  total,
  locations: prof.location.length,
  functions: prof.function.length,
  mappings: prof.mapping.length,
  labels: labelCounts,
  label_values: Object.fromEntries(Object.entries(labelValues).map(([k, v]) => [k, [...v].slice(0, 50)])),
  function_names: [...functionNames].sort(),
  distinct_stacks: stacks.size,
  sample_stacks: Object.fromEntries([...stacks].sort((a, b) => b[1] - a[1]).slice(0, 100)),
  duration_nanos: Number(prof.durationNanos),
  time_nanos: String(prof.timeNanos),
  comment: prof.comment.map(str),
};
process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
if (problems.length) {
  for (const p of problems) process.stderr.write(`check_pprof: ${p}\n`);
  process.exit(1);
}
