// Compares two folds' tables row for row, with both readers (a check for a change of the
// writer that must not change what is read): node compare_folds.mjs DIR_A DIR_B
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { hyparquetRows, duckRows } from './readers.mjs'

function parquetFiles(dir) {
  const out = []
  for (const e of readdirSync(dir)) {
    const p = join(dir, e)
    if (statSync(p).isDirectory()) out.push(...parquetFiles(p))
    else if (e.endsWith('.parquet') && !e.startsWith('.')) out.push(p)
  }
  return out.sort()
}

const text = (rows) => JSON.stringify(rows, (k, v) => (typeof v === 'bigint' ? v.toString() : v))
const [a, b] = process.argv.slice(2)
const fa = parquetFiles(a).map((p) => p.slice(a.length))
const fb = parquetFiles(b).map((p) => p.slice(b.length))
let bad = 0
if (text(fa) !== text(fb)) {
  console.log('different files:', fa, fb)
  bad++
}
for (const f of fa) {
  const ha = text(await hyparquetRows(a + f)), hb = text(await hyparquetRows(b + f))
  const da = text(await duckRows(`SELECT * FROM read_parquet('${a + f}')`))
  const db = text(await duckRows(`SELECT * FROM read_parquet('${b + f}')`))
  const same = ha === hb && da === db
  if (!same) bad++
  console.log(`${same ? 'same' : 'DIFFERENT'} ${f} (${ha.length} bytes of JSON; sizes ${statSync(a + f).size} -> ${statSync(b + f).size})`)
}
process.exit(bad ? 1 : 0)
