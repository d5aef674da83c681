// poll_hist when compaction joins small files (docs/fleet-tables.md, `poll_hist`): a run of
// several segments folded one segment at a time (a file each, as the pipeline's tables beside
// each upload), then all of them (the partition rewritten as one file). The rows of one run,
// hour, spawn location, worker and bucket are summed into one: after compaction no key has two
// rows, and DuckDB and hyparquet read the same counts per bucket, the same exact min and max per
// group and the same quantiles (the documented query) as from the small files. `segment` is
// the segment's id when a group's polls are one segment's, else empty. The merged rows do not
// depend on the order the segments were folded in.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { duckRows, hyparquetRows, lit } from './readers.mjs'
import { dial9, docQuery, files, record, snapshot } from './fold_lib.mjs'

const dir = mkdtempSync(join(tmpdir(), 'pq-histmerge-'))
test.after(() => rmSync(dir, { recursive: true, force: true }))
const segs = record(dir, 'api', 2, 3, { DIAL9_ROTATION_SECS: '1' })
const to = join(dir, 'tables')

const histFiles = (d) => files(join(d, 'poll_hist')).filter((f) => f.endsWith('.parquet') && !f.split('/').pop().startsWith('.'))
const partitionOf = (f) => dirname(f).split('/').slice(-3).join('/') // service=/date=/hour=

// every row of poll_hist as hyparquet reads it, with its partition
async function hyRows(d) {
  const out = []
  for (const f of histFiles(d)) for (const r of await hyparquetRows(f)) out.push({ ...r, part: partitionOf(f) })
  return out
}

const groupKey = (r) => [r.part, r.instance, r.boot, r.run, r.spawn_loc, String(r.worker_id)].join('|')

// Per (partition, run, location, worker): bucket -> count, the min of min_ns, the max of
// max_ns, the first wall_time, and the segments its rows name.
function summary(rows) {
  const groups = {}
  for (const r of rows) {
    const g = groups[groupKey(r)] ??= { buckets: {}, min: r.min_ns, max: r.max_ns, wall: r.wall_time, segments: new Set() }
    g.buckets[r.bucket] = (g.buckets[r.bucket] ?? 0n) + BigInt(r.count)
    if (r.min_ns < g.min) g.min = r.min_ns
    if (r.max_ns > g.max) g.max = r.max_ns
    if (r.wall_time < g.wall) g.wall = r.wall_time
    g.segments.add(r.segment)
  }
  return groups
}
// DuckDB reads TIMESTAMP(NANOS) to the microsecond: walls compared there at that unit
const comparable = (s, us = false) => Object.fromEntries(Object.entries(s).map(([k, g]) =>
  [k, { buckets: g.buckets, min: BigInt(g.min), max: BigInt(g.max),
        wall: us ? BigInt(g.wall) / 1000n : BigInt(g.wall) }]))

async function duckSummary(d) {
  const rows = await duckRows(`
    SELECT 'service=' || service || '/date=' || date || '/hour=' || hour AS part, instance, boot, run,
           spawn_loc, worker_id, bucket, bucket_low_ns, bucket_high_ns, count, min_ns, max_ns,
           epoch_us(wall_time) * 1000 AS wall_time, segment
    FROM read_parquet(${lit(join(d, 'poll_hist/**/*.parquet'))}, hive_partitioning = true, hive_types_autocast = false)`)
  return { rows, summary: summary(rows) }
}

const quantiles = (d) => duckRows(docQuery('poll_hist_quantiles', { TABLES: d }))

let before
test('one file per segment: the small files', async () => {
  assert.ok(segs.length >= 2, `a run of ${segs.length} segment(s): rotation every second makes more`)
  for (const s of segs) {
    const r = dial9('fold', '-q', s, '--to', to)
    assert.equal(r.status, 0, r.stderr)
  }
  const perPartition = {}
  for (const f of histFiles(to)) perPartition[partitionOf(f)] = (perPartition[partitionOf(f)] ?? 0) + 1
  assert.equal(Object.values(perPartition).reduce((a, b) => a + b, 0), segs.length)
  const duck = await duckSummary(to)
  const hy = await hyRows(to)
  assert.equal(hy.length, duck.rows.length)
  assert.deepEqual(comparable(summary(hy), true), comparable(duck.summary, true), 'hyparquet reads what DuckDB reads')
  before = { ...duck, hy: summary(hy), quantiles: await quantiles(to) }
})

test('compaction: one row per run, hour, location, worker and bucket, the same sums', async () => {
  assert.ok(before)
  const r = dial9('fold', ...segs, '--to', to)
  assert.equal(r.status, 0, r.stderr)
  const parts = histFiles(to).map(partitionOf)
  assert.equal(new Set(parts).size, parts.length, 'one file per partition')

  const after = await duckSummary(to)
  const keys = new Set(before.rows.map((x) => `${groupKey(x)}|${x.bucket}`))
  assert.ok(keys.size < before.rows.length, `the segments share keys (${keys.size} keys, ${before.rows.length} rows)`)
  assert.equal(after.rows.length, keys.size, 'one row per key')
  assert.deepEqual(comparable(after.summary), comparable(before.summary), 'counts per bucket, min, max, first poll')
  const hy = summary(await hyRows(to))
  assert.deepEqual(comparable(hy, true), comparable(after.summary, true), 'hyparquet reads what DuckDB reads')
  assert.deepEqual(comparable(hy), comparable(before.hy), 'the first poll to the nanosecond (hyparquet)')
  assert.deepEqual(await quantiles(to), before.quantiles, 'the documented quantiles')

  // as one histogram of the group's polls gives it: bounds but in the lowest and highest bucket
  const byGroup = {}
  for (const x of after.rows) (byGroup[groupKey(x)] ??= []).push(x)
  for (const [k, rows] of Object.entries(byGroup)) {
    rows.sort((a, b) => a.bucket - b.bucket)
    rows.forEach((x, i) => {
      if (i > 0) assert.equal(x.min_ns, x.bucket_low_ns, k)
      if (i < rows.length - 1) assert.equal(x.max_ns, x.bucket_high_ns - 1n, k)
    })
    const segsBefore = before.summary[k].segments
    const want = segsBefore.size === 1 ? [...segsBefore][0] : ''
    assert.deepEqual(new Set(rows.map((x) => x.segment)), new Set([want]), `${k}: its segment column`)
  }
  assert.ok(Object.values(before.summary).some((g) => g.segments.size > 1), 'a group of several segments')
})

test('a second fold changes nothing; another order writes the same poll_hist bytes', () => {
  const snap = snapshot(to)
  let r = dial9('fold', ...segs, '--to', to)
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(snapshot(to), snap)
  const other = join(dir, 'reversed')
  r = dial9('fold', ...[...segs].reverse(), '--to', other)
  assert.equal(r.status, 0, r.stderr)
  const mine = histFiles(to), theirs = histFiles(other)
  assert.deepEqual(theirs.map((f) => f.slice(other.length)), mine.map((f) => f.slice(to.length)))
  for (let i = 0; i < mine.length; i++) assert.ok(readFileSync(mine[i]).equals(readFileSync(theirs[i])), mine[i])
})
