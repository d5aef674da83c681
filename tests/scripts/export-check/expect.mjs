// Assertions on a checker's JSON summary, for the shell tests:
//   node expect.mjs SUMMARY.json 's.polls === 36801' 's.flows > 0' ...
// Each argument is a JavaScript expression over the summary `s`; every one that is not true is
// printed. Exit status 1 when any failed.
import fs from 'node:fs';

const s = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let failed = 0;
for (const expr of process.argv.slice(3)) {
  let ok = false, err = '';
  try {
    ok = Boolean(new Function('s', `return (${expr});`)(s));
  } catch (e) {
    err = ` (${e.message})`;
  }
  if (!ok) {
    failed++;
    process.stderr.write(`expect: FAILED: ${expr}${err}\n`);
  }
}
process.stdout.write(`expect: ${process.argv.length - 3 - failed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
