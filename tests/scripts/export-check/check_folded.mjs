// Check of a `dial9 export --format folded` file as flamegraph.pl reads it: each line is
// "frame;frame;... COUNT" (the count after the last space), no empty frame, distinct stacks.
//   node check_folded.mjs STACKS.folded
// Prints a JSON summary; exit status 1 with the problems on stderr.
import fs from 'node:fs';

const text = fs.readFileSync(process.argv[2], 'utf8');
const problems = [];
const fail = (m) => { if (problems.length < 50) problems.push(m); };
if (text.length && !text.endsWith('\n')) fail('no newline at the end');
const seen = new Set(), roots = {}, frames = new Set();
let total = 0, lines = 0;
for (const line of text.split('\n')) {
  if (!line) continue;
  lines++;
  const m = /^(.*) (\d+)$/.exec(line);
  if (!m) { fail(`bad line: ${line.slice(0, 80)}`); continue; }
  if (seen.has(m[1])) fail(`stack twice: ${m[1].slice(0, 80)}`);
  seen.add(m[1]);
  const stack = m[1].split(';');
  if (stack.some((f) => f === '')) fail(`empty frame: ${line.slice(0, 80)}`);
  const n = Number(m[2]);
  if (!(n > 0)) fail(`count ${n}`);
  total += n;
  roots[stack[0]] = (roots[stack[0]] || 0) + n;
  for (const f of stack) frames.add(f);
}
const summary = { lines, total, roots, frames: frames.size, has: [...frames].sort() };
process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
if (problems.length) {
  for (const p of problems) process.stderr.write(`check_folded: ${p}\n`);
  process.exit(1);
}
