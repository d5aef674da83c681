// `dial9 fold`'s promises (docs/fleet-tables.md): a second fold of the same segments changes
// nothing; folds of single runs, then of both, leave one file per partition and no row twice;
// a segment that cannot be read (not a trace, no clock sync) is named, and then nothing of the
// fold is visible; a torn tail is folded and said; polls' rows go out in order of their start.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { duckRows, lit } from './readers.mjs'
import { dial9, files, record, snapshot, source } from './fold_lib.mjs'

const dir = mkdtempSync(join(tmpdir(), 'pq-promises-'))
test.after(() => rmSync(dir, { recursive: true, force: true }))
// two runs of one service, each one segment, copied to A/ and B/
const [a] = record(dir, 'api', 1)
const [b] = record(join(dir, 'second'), 'api', 1)
const A = join(dir, 'A', 'trace.0.bin'), B = join(dir, 'B', 'trace.0.bin')
for (const [from, to] of [[a, A], [b, B]]) {
  rmSync(dirname(to), { recursive: true, force: true })
  mkdirSync(dirname(to), { recursive: true })
  copyFileSync(from, to)
}

const parquetFiles = (d) => files(d).filter((f) => f.endsWith('.parquet') && !f.split('/').pop().startsWith('.'))
const hidden = (d) => files(d).filter((f) => f.split('/').pop().startsWith('.tmp-'))
async function count(d, table, where = 'true') {
  const [r] = await duckRows(`SELECT count(*) AS n FROM read_parquet(${lit(join(d, table, '**/*.parquet'))},
                              hive_partitioning = true) WHERE ${where}`)
  return Number(r.n)
}
function fold(to, ...inputs) {
  return dial9('fold', ...inputs, '--to', to)
}

test('a second fold of the same segments changes nothing', () => {
  const to = join(dir, 'idem')
  let r = fold(to, A, B)
  assert.equal(r.status, 0, r.stderr)
  const before = snapshot(to)
  r = fold(to, A, B)
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stderr, /0 file\(s\) written/)
  assert.deepEqual(snapshot(to), before)
  r = fold(to, B) // a subset: its rows are there already
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(snapshot(to), before)
})

test('a segment is the same segment compressed, and after dial9 symbolize appended to it', () => {
  const to = join(dir, 'same')
  const seg = join(dir, 'sym', 'trace.0.bin')
  mkdirSync(dirname(seg), { recursive: true })
  copyFileSync(A, seg)
  let r = fold(to, seg)
  assert.equal(r.status, 0, r.stderr)
  const before = snapshot(to)
  r = dial9('symbolize', seg)
  assert.equal(r.status, 0, r.stderr)
  r = fold(to, seg)
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(snapshot(to), before, 'symbolized: no new rows')
  const gz = join(dir, 'gz', 'trace.0.bin.gz')
  mkdirSync(dirname(gz), { recursive: true })
  writeFileSync(gz, gzipSync(readFileSync(seg)))
  r = fold(to, gz)
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(snapshot(to), before, 'gzip\'ed: no new rows')
})

test('a segment still being written (.active) is named and not folded', () => {
  const to = join(dir, 'active')
  const act = join(dir, 'act', 'trace.3.bin.active')
  mkdirSync(dirname(act), { recursive: true })
  copyFileSync(A, act)
  const r = fold(to, A, act)
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stderr, /trace\.3\.bin\.active: still being written/)
  assert.match(r.stderr, /1 segment\(s\)/)
})

test('one run, then the other, then both: one file per partition, no row twice', async () => {
  const to = join(dir, 'compact')
  const polls = {}
  for (const [name, seg] of [['A', A], ['B', B]]) {
    const alone = join(dir, `alone-${name}`)
    assert.equal(fold(alone, seg).status, 0)
    polls[name] = await count(alone, 'polls')
    assert.ok(polls[name] > 0)
  }
  assert.equal(fold(to, A).status, 0)
  assert.equal(fold(to, B).status, 0)
  assert.equal(await count(to, 'polls'), polls.A + polls.B, 'both runs, each once')
  assert.equal(await count(to, 'segments'), 2)
  const r = fold(to, A, B)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(await count(to, 'polls'), polls.A + polls.B, 'after compaction: each poll once')
  const perPartition = {}
  for (const f of parquetFiles(to)) perPartition[dirname(f)] = (perPartition[dirname(f)] || 0) + 1
  for (const [p, n] of Object.entries(perPartition)) assert.equal(n, 1, `${p}: one file`)
  // the manifests of the removed files went with them
  const manifests = files(to).filter((f) => f.endsWith('.segments'))
  assert.equal(manifests.length, parquetFiles(to).length)
})

test('a segment that is no trace is named, and nothing is written', () => {
  const to = join(dir, 'bad')
  const junk = join(dir, 'junk', 'trace.7.bin')
  mkdirSync(dirname(junk), { recursive: true })
  writeFileSync(junk, 'this is not a dial9 trace\n')
  const r = fold(to, A, junk, B)
  assert.equal(r.status, 1)
  assert.match(r.stderr, new RegExp(`${junk.replaceAll('.', '\\.')}: `))
  assert.match(r.stderr, /nothing was written/)
  assert.deepEqual(parquetFiles(to), [])
  assert.deepEqual(hidden(to), [])
})

test('a segment without a ClockSyncEvent is named: its wall-clock time is unknown', () => {
  const to = join(dir, 'noclock')
  const v = join(source, 'tests/vectors/runtime.bin')
  const r = fold(to, A, v)
  assert.equal(r.status, 1)
  assert.match(r.stderr, /runtime\.bin: no ClockSyncEvent/)
  assert.deepEqual(parquetFiles(to), [])
})

test('a torn tail is folded, said on stderr and in segments.status', async () => {
  const to = join(dir, 'torn')
  const cut = join(dir, 'cut', 'trace.0.bin')
  mkdirSync(dirname(cut), { recursive: true })
  copyFileSync(A, cut)
  truncateSync(cut, statSync(cut).size - 3)
  const r = fold(to, cut)
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stderr, /torn tail/)
  const [s] = await duckRows(`SELECT status FROM read_parquet(${lit(join(to, 'segments/**/*.parquet'))})`)
  assert.equal(s.status, 'truncated')
})

test('an output directory that cannot be made: exit 1, said', () => {
  const file = join(dir, 'a-file')
  writeFileSync(file, '')
  const r = fold(join(file, 'tables'), A)
  assert.equal(r.status, 1)
  assert.match(r.stderr, /a-file/)
})

test("polls' rows are in order of their start within a segment (windows of 64 Ki polls)", async () => {
  // two workers: their polls end in another order than they start
  const segs = record(join(dir, 'order'), 'api', 2)
  const to = join(dir, 'ordered')
  const r = fold(to, ...segs)
  assert.equal(r.status, 0, r.stderr)
  const rows = await duckRows(`
    SELECT segment, count(*) AS polls, count(DISTINCT worker_id) AS workers,
           count(*) FILTER (WHERE back) AS back
    FROM (SELECT segment, worker_id, wall_time < lag(wall_time) OVER w AS back
          FROM read_parquet(${lit(join(to, 'polls/**/*.parquet'))}, file_row_number = true)
          WINDOW w AS (PARTITION BY segment ORDER BY filename, file_row_number))
    GROUP BY segment`)
  assert.ok(rows.some((s) => Number(s.workers) === 2), 'a segment with both workers')
  // a window of 65 536 polls is ordered; the next may start before its last
  for (const s of rows)
    assert.ok(Number(s.back) <= Math.floor((Number(s.polls) - 1) / 65536),
      `segment ${s.segment}: ${s.back} of ${s.polls} rows start before the previous row`)
})
