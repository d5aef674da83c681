// Independent check of a `dial9 export --format speedscope` file: validated against the
// file-format JSON schema that the speedscope npm package ships (with ajv), plus the rules the
// schema cannot say (frame indexes in range, one weight per sample, evented profiles open and
// close their frames in order inside [startValue, endValue]).
//   node check_speedscope.mjs PROFILE.json
// Prints a JSON summary; exit status 1 with the problems on stderr.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import Ajv from 'ajv';

const require = createRequire(import.meta.url);
const schemaPath = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/file-format-schema.json');
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const doc = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const problems = [];
const fail = (m) => { if (problems.length < 50) problems.push(m); };

const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
if (!validate(doc)) for (const e of validate.errors.slice(0, 20)) fail(`schema: ${e.instancePath} ${e.message}`);

const frames = doc.shared?.frames || [];
const profiles = [];
for (const p of doc.profiles || []) {
  const info = { name: p.name, type: p.type };
  if (p.type === 'sampled') {
    if (p.samples.length !== p.weights.length) fail(`${p.name}: ${p.samples.length} samples, ${p.weights.length} weights`);
    for (const st of p.samples) for (const f of st) if (!Number.isInteger(f) || f < 0 || f >= frames.length) fail(`${p.name}: frame ${f} out of range`);
    info.samples = p.samples.length;
    const stacks = new Map();
    p.samples.forEach((st, i) => {
      const key = st.map((f) => frames[f]?.name).join(';');
      stacks.set(key, (stacks.get(key) || 0) + p.weights[i]);
    });
    info.stacks = Object.fromEntries([...stacks].sort((a, b) => b[1] - a[1]).slice(0, 100));
    info.weight = p.weights.reduce((a, b) => a + b, 0);
    if (p.endValue < p.startValue) fail(`${p.name}: endValue < startValue`);
  } else {
    const stack = [];
    let last = p.startValue, opened = 0;
    for (const e of p.events) {
      if (e.frame < 0 || e.frame >= frames.length) fail(`${p.name}: frame ${e.frame} out of range`);
      if (e.at < last) fail(`${p.name}: event at ${e.at} before ${last}`);
      if (e.at > p.endValue) fail(`${p.name}: event at ${e.at} after endValue ${p.endValue}`);
      last = e.at;
      if (e.type === 'O') { stack.push(e.frame); opened++; }
      else if (stack.pop() !== e.frame) fail(`${p.name}: closes frame ${e.frame} that is not the innermost open one`);
    }
    if (stack.length) fail(`${p.name}: ${stack.length} frames never closed`);
    info.opened = opened;
    info.frames_opened = [...new Set(p.events.filter((e) => e.type === 'O').map((e) => frames[e.frame]?.name))].sort();
  }
  profiles.push(info);
}
const summary = {
  frames: frames.length,
  frame_names: frames.map((f) => f.name),
  profiles,
};
process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
if (problems.length) {
  for (const p of problems) process.stderr.write(`check_speedscope: ${p}\n`);
  process.exit(1);
}
