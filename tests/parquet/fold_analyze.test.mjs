// Traces -> `dial9 fold` -> DuckDB and hyparquet -> the same numbers as `dial9 analyze --json`:
// per spawn location the poll count, min, max, p50 and p99 (from polls' raw durations with
// analyze's quantile rule, and from poll_hist with the documented SQL, there within its
// documented bound), and per worker the
// polls and the scheduling-delay distribution (sched).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { duckRows, hyparquetRows, lit } from './readers.mjs'
import { analyzeDist } from './analyze_quantile.mjs'
import { dial9, docQuery, files, record } from './fold_lib.mjs'

const dir = mkdtempSync(join(tmpdir(), 'pq-fold-'))
const runs = { api: record(dir, 'api', 2), db: record(dir, 'db', 1) }
const tables = join(dir, 'tables')
const segments = [...runs.api, ...runs.db]

test.after(() => rmSync(dir, { recursive: true, force: true }))

function analyze(paths) {
  const r = dial9('analyze', '--json', ...paths)
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

const dist = (d) => ({ count: BigInt(d.count), min: BigInt(d.min_ns), max: BigInt(d.max_ns),
  p50: BigInt(d.p50_ns), p99: BigInt(d.p99_ns) })
const pick = (d) => ({ count: d.count, min: d.min, max: d.max, p50: d.p50, p99: d.p99 })

test('fold writes every table', () => {
  const r = dial9('fold', ...segments, '--to', tables)
  assert.equal(r.status, 0, r.stderr)
  const names = files(tables).filter((f) => f.endsWith('.parquet')).map((f) => f.slice(tables.length + 1).split('/')[0])
  assert.deepEqual([...new Set(names)].sort(), ['poll_hist', 'polls', 'samples', 'sched', 'segments', 'stacks', 'wakes'])
})

for (const service of ['api', 'db']) {
  test(`${service}: polls by spawn location equal analyze's (DuckDB, hyparquet, poll_hist)`, async () => {
    assert.equal(runs[service].length, 1, 'one segment per run: analyze pairs across files, fold per segment')
    const want = {}
    for (const l of analyze(runs[service]).polls.by_location) want[l.location] = dist(l.duration)
    assert.ok(Object.keys(want).length >= 1, 'the run polled')

    const glob = lit(join(tables, 'polls/**/*.parquet'))
    const rows = await duckRows(`SELECT spawn_loc, duration_ns FROM read_parquet(${glob}, hive_partitioning = true)
                                 WHERE service = ${lit(service)}`)
    const by = {}
    for (const r of rows) (by[r.spawn_loc] ||= []).push(r.duration_ns)
    const duck = Object.fromEntries(Object.entries(by).map(([k, v]) => [k, pick(analyzeDist(v))]))
    assert.deepEqual(duck, want, 'DuckDB polls')

    const hy = {}
    for (const f of files(join(tables, 'polls', `service=${service}`)).filter((f) => f.endsWith('.parquet')))
      for (const r of await hyparquetRows(f)) (hy[r.spawn_loc] ||= []).push(r.duration_ns)
    assert.deepEqual(Object.fromEntries(Object.entries(hy).map(([k, v]) => [k, pick(analyzeDist(v))])), want,
      'hyparquet polls')

    const q = docQuery('poll_hist_quantiles', { TABLES: join(tables) })
    const hist = {}
    for (const r of await duckRows(q)) {
      if (r.service !== service) continue
      hist[r.spawn_loc] = { count: BigInt(r.polls), min: BigInt(r.min_ns), max: BigInt(r.max_ns),
        p50: BigInt(r.p50_ns), p99: BigInt(r.p99_ns) }
    }
    // poll_hist's buckets are analyze's merged 8 at a time (docs/fleet-tables.md): count, min and
    // max exact, a percentile within half a merged bucket of analyze's: 1/32 of it, 4 ns below 128
    const bound = (a) => (a < 128n ? 4n : a / 32n)
    const abs = (x) => (x < 0n ? -x : x)
    assert.deepEqual(Object.keys(hist).sort(), Object.keys(want).sort(), 'poll_hist: the spawn locations')
    for (const [loc, h] of Object.entries(hist)) {
      const a = want[loc]
      assert.deepEqual([h.count, h.min, h.max], [a.count, a.min, a.max], `poll_hist ${loc}: count, min, max`)
      for (const q of ['p50', 'p99'])
        assert.ok(abs(h[q] - a[q]) <= bound(a[q]),
          `poll_hist ${loc} ${q}: ${h[q]} vs analyze's ${a[q]} (bound ${bound(a[q])})`)
    }
  })

  test(`${service}: per worker polls and scheduling delays equal analyze's (sched)`, async () => {
    const a = analyze(runs[service])
    const base = `read_parquet(${lit(join(tables, '%s/**/*.parquet'))}, hive_partitioning = true)`
    const polls = await duckRows(`SELECT worker_id, count(*) AS n FROM ${base.replace('%s', 'polls')}
                                  WHERE service = ${lit(service)} GROUP BY ALL`)
    const delays = await duckRows(`SELECT worker_id, sched_delay_ns FROM ${base.replace('%s', 'sched')}
                                   WHERE service = ${lit(service)} AND sched_delay_ns IS NOT NULL`)
    for (const w of a.workers) {
      const p = polls.find((r) => Number(r.worker_id) === w.id)
      assert.equal(p ? Number(p.n) : 0, w.polls, `worker ${w.id}: polls`)
      const mine = delays.filter((r) => Number(r.worker_id) === w.id).map((r) => r.sched_delay_ns)
      if (!w.sched_wait) {
        assert.equal(mine.length, 0, `worker ${w.id}: no measured delay in analyze, none in sched`)
        continue
      }
      assert.deepEqual(pick(analyzeDist(mine)), dist(w.sched_wait), `worker ${w.id}: scheduling delay`)
    }
  })
}

test('segments: one row per segment, its events and polls', async () => {
  const rows = await duckRows(`SELECT service, file, events, polls, status FROM
    read_parquet(${lit(join(tables, 'segments/**/*.parquet'))}, hive_partitioning = true) ORDER BY service`)
  assert.equal(rows.length, segments.length)
  for (const r of rows) {
    const a = analyze(runs[r.service])
    assert.equal(Number(r.events), a.summary.events, `${r.service}: events`)
    assert.equal(r.status, 'complete')
  }
})

test('wakes and samples: the counts analyze reports; every sample\'s stack in stacks', async () => {
  const glob = (t) => `read_parquet(${lit(join(tables, t, '**/*.parquet'))}, hive_partitioning = true)`
  for (const service of ['api', 'db']) {
    const c = analyze(runs[service]).summary.counts
    const [w] = await duckRows(`SELECT count(*) AS n FROM ${glob('wakes')} WHERE service = ${lit(service)}`)
    assert.equal(Number(w.n), c.wakes, `${service}: wakes`)
    const s = await duckRows(`SELECT source, count(*) AS n FROM ${glob('samples')} WHERE service = ${lit(service)} GROUP BY ALL`)
    const n = (src) => Number(s.find((r) => r.source === src)?.n || 0)
    assert.equal(n('cpu'), c.cpu_samples, `${service}: CPU samples`)
    assert.equal(n('offcpu'), c.offcpu_samples, `${service}: off-CPU samples`)
  }
  const [m] = await duckRows(`SELECT count(*) AS n FROM ${glob('samples')} s ANTI JOIN ${glob('stacks')} k
                              ON s.segment = k.segment AND s.stack_id = k.stack_id`)
  assert.equal(Number(m.n), 0, 'samples whose stack is not in stacks')
  const [d] = await duckRows(`SELECT count(*) - count(DISTINCT (segment, stack_id)) AS n FROM ${glob('stacks')}`)
  assert.equal(Number(d.n), 0, 'a stack twice in one segment')
})

test('stacks name their frames from the trace\'s symbols (after dial9 symbolize)', async () => {
  const [seg] = runs.api
  const copy = join(dir, 'symbolized', 'trace.0.bin')
  const { mkdirSync, copyFileSync } = await import('node:fs')
  mkdirSync(join(dir, 'symbolized'), { recursive: true })
  copyFileSync(seg, copy)
  const r = dial9('symbolize', copy)
  assert.equal(r.status, 0, r.stderr)
  const out = join(dir, 'symbolized-tables')
  const f = dial9('fold', copy, '--to', out)
  assert.equal(f.status, 0, f.stderr)
  const rows = await duckRows(`SELECT frames FROM read_parquet(${lit(join(out, 'stacks/**/*.parquet'))})`)
  assert.ok(rows.length > 0, 'the run has sampled stacks')
  const named = rows.flatMap((x) => JSON.parse(x.frames)).filter((fr) => fr.function)
  assert.ok(named.length > 0, 'some frame has a function name')
  assert.ok(named.every((fr) => typeof fr.function === 'string' && fr.function.length > 0))
})
