// Independent check of a `dial9 export --format pprof --stacks heap` file: gunzip (node:zlib),
// decoded with pprof-format (not dial9's code). Prints a JSON summary: the sample types, the
// default one, and per leaf function (the innermost frame of a sample's first location) the sum
// of each value; exit status 1 when a sample's values do not match its types.
//   node check_pprof_heap.mjs PROFILE.pb.gz
import fs from 'node:fs';
import zlib from 'node:zlib';
import { Profile } from 'pprof-format';

const prof = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[2])));
const strings = prof.stringTable.strings;
const str = (i) => strings[Number(i)];
const functions = new Map(prof.function.map((f) => [Number(f.id), f]));
const locations = new Map(prof.location.map((l) => [Number(l.id), l]));
const types = prof.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`);
const leaves = {};
let bad = 0;
for (const s of prof.sample) {
  if (s.value.length !== types.length) bad++;
  const first = locations.get(Number(s.locationId[0]));
  const line = first?.line?.[0];
  const leaf = line ? str(functions.get(Number(line.functionId))?.name) : '<none>';
  const sums = (leaves[leaf] ||= types.map(() => 0));
  s.value.forEach((v, i) => { sums[i] += Number(v); });
}
process.stdout.write(JSON.stringify({ sample_types: types, default: str(prof.defaultSampleType), samples: prof.sample.length, leaves }, null, 1) + '\n');
if (bad) { process.stderr.write(`check_pprof_heap: ${bad} samples with a wrong number of values\n`); process.exit(1); }
