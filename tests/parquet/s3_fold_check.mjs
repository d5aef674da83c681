// The tables `dial9 fold --to s3://` wrote, copied back from the bucket into TABLES_DIR, read by
// DuckDB through their commit marker (_dial9_fold.json, the files a reader may trust: the
// query docs/fleet-tables.md gives), against `dial9 analyze --json` of the same segments: per
// run (the tables' run column), the polls by spawn location (count, min, max, p50, p99) and
// its one row in the segments table.
// Usage: node s3_fold_check.mjs TABLES_DIR RUN_ID[/FILE]::ANALYZE_JSON...  (FILE: one segment of
// the run, by the file name the fold read.) Prints what differs; exit 0 when nothing does.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { duckRows, lit } from './readers.mjs'
import { analyzeDist } from './analyze_quantile.mjs'
import { docQuery } from './fold_lib.mjs'

const [tables, ...specs] = process.argv.slice(2)
const marker = JSON.parse(readFileSync(join(tables, '_dial9_fold.json'), 'utf8'))
const files = (table) => marker.files.filter((f) => f.startsWith(`${table}/`)).map((f) => lit(join(tables, f)))
const read = (table) => `read_parquet([${files(table).join(', ')}], hive_partitioning = true)`
let bad = 0
const fail = (msg) => { bad++; console.log(`FAIL: ${msg}`) }
const pick = (d) => ({ count: d.count, min: d.min, max: d.max, p50: d.p50, p99: d.p99 })
const dist = (d) => ({ count: BigInt(d.count), min: BigInt(d.min_ns), max: BigInt(d.max_ns),
  p50: BigInt(d.p50_ns), p99: BigInt(d.p99_ns) })
const show = (o) => JSON.stringify(o, (k, v) => (typeof v === 'bigint' ? v.toString() : v))

for (const spec of specs) {
  const [match, jsonPath] = spec.split('::')
  const a = JSON.parse(readFileSync(jsonPath, 'utf8'))
  // RUN, or RUN/FILE: one segment of a run (its file name as the fold read it)
  const [run, file] = match.split('/')
  const segRows = await duckRows(`SELECT segment FROM ${read('segments')} WHERE run = ${lit(run)}` +
                                 (file ? ` AND file = ${lit(file)}` : ''))
  if (segRows.length !== 1) { fail(`${match}: ${segRows.length} segment rows, want 1 (each segment once)`); continue }
  const rows = await duckRows(`SELECT spawn_loc, duration_ns FROM ${read('polls')} WHERE run = ${lit(run)}
                               AND segment = ${lit(segRows[0].segment)}`)
  const by = {}
  for (const r of rows) (by[r.spawn_loc] ||= []).push(r.duration_ns)
  const got = Object.fromEntries(Object.entries(by).map(([k, v]) => [k, pick(analyzeDist(v))]))
  const want = {}
  for (const l of a.polls.by_location) want[l.location] = dist(l.duration)
  if (Object.keys(want).length === 0) fail(`${match}: analyze saw no polls`)
  if (show(got) !== show(want)) fail(`${match}: DuckDB ${show(got)}\n   analyze ${show(want)}`)
  else console.log(`ok: ${match}: ${rows.length} polls over ${Object.keys(want).length} spawn location(s) equal analyze's`)
}
// the documented query through the marker (docs/fleet-tables.md, s3_marker_files) reads what
// the marker's list read directly gives
const doc = await duckRows(docQuery('s3_marker_files', { TABLES: tables }))
const direct = await duckRows(`SELECT spawn_loc, count(*) AS polls, quantile_disc(duration_ns, 0.99) AS p99_ns
                               FROM ${read('polls')} GROUP BY ALL ORDER BY polls DESC`)
const key = (rows) => show(rows.map((r) => [r.spawn_loc, r.polls, r.p99_ns]).sort())
if (doc.length === 0 || key(doc) !== key(direct)) fail(`the documented query: ${key(doc)}\n   direct: ${key(direct)}`)
process.exit(bad ? 1 : 0)
