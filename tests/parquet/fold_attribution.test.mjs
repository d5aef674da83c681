// polls' attribution columns (docs/fleet-tables.md) against `dial9 analyze --json`: a fold of a
// trace with planted off-CPU causes (the attribution vector: a lock wait, a preemption, a
// nanosleep, a read, a blocked interval without a stack, a governor's sampled period, a drop)
// of a run of the executor demo (its switch records as the cost governor leaves them) and of
// a recording of story 2 (a global mutex under load), and of a hand-built trace whose long polls
// carry their exact CPU time (PollCpuEvent: off_cpu_uncaptured), of the worker-change vector (a
// thread that changes worker mid-run), read by DuckDB with the
// documented query and by hyparquet: per segment and spawn location the sums of the nine
// parts equal analyze's attribution of that location exactly, and on every row the parts add
// up to duration_ns.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { duckRows, hyparquetRows, lit } from './readers.mjs'
import { build, dial9, docQuery, files, record, source } from './fold_lib.mjs'
import { BUILTIN, T, TraceWriter } from '../../viewer/test/encoder.mjs'

const PARTS = ['on_cpu_ns', 'lock_ns', 'io_ns', 'sleep_ns', 'fault_ns', 'blocked_other_ns', 'runnable_ns', 'unknown_ns',
  'off_cpu_uncaptured_ns']
const dir = mkdtempSync(join(tmpdir(), 'pq-attr-'))
test.after(() => rmSync(dir, { recursive: true, force: true }))

// analyze --json of one segment: location -> {part: bigint}
function analyzeParts(path) {
  const r = dial9('analyze', '--json', path)
  assert.equal(r.status, 0, r.stderr)
  const out = {}
  for (const l of JSON.parse(r.stdout).polls.by_location)
    out[l.location] = Object.fromEntries(PARTS.map((p) => [p, BigInt(l.attribution[p])]))
  return out
}

function fold(segments, tables) {
  const r = dial9('fold', ...segments, '--to', tables)
  assert.equal(r.status, 0, r.stderr)
}

// The documented query per segment: file -> location -> {part: bigint}
async function foldParts(tables) {
  const q = docQuery('polls_attribution', { TABLES: tables })
    .replace('FROM read_parquet', ', segment FROM read_parquet') // per segment: analyze reads one file
    .replace(/ORDER BY[^;]*;/, ';')
  const segs = await duckRows(`SELECT segment, file FROM read_parquet(${lit(join(tables, 'segments/**/*.parquet'))})`)
  const fileOf = Object.fromEntries(segs.map((s) => [s.segment, s.file]))
  const out = {}
  for (const r of await duckRows(q)) {
    const f = fileOf[r.segment]
    assert.ok(f, `segment ${r.segment} in segments`)
    ;(out[f] ||= {})[r.spawn_loc] = Object.fromEntries(PARTS.map((p) => [p, BigInt(r[p])]))
    assert.equal(PARTS.reduce((s, p) => s + BigInt(r[p]), 0n), BigInt(r.duration_ns), `${f} ${r.spawn_loc}: the parts add up`)
  }
  return out
}

// Every row, by both readers: the parts add up to duration_ns, none negative.
async function rowsAddUp(tables) {
  const bad = await duckRows(`SELECT count(*) AS n FROM read_parquet(${lit(join(tables, 'polls/**/*.parquet'))})
    WHERE ${PARTS.join(' + ')} <> duration_ns OR least(${PARTS.join(', ')}) < 0`)
  assert.equal(bad[0].n, 0n, 'DuckDB: rows whose parts do not add up to duration_ns')
  let rows = 0
  for (const f of files(join(tables, 'polls')).filter((f) => f.endsWith('.parquet')))
    for (const r of await hyparquetRows(f)) {
      rows++
      assert.equal(PARTS.reduce((s, p) => s + r[p], 0n), r.duration_ns, `hyparquet: ${JSON.stringify(r, (k, v) => typeof v === 'bigint' ? String(v) : v)}`)
    }
  return rows
}

// A shared vector as a segment: the vectors have no ClockSyncEvent, which fold needs for
// wall_time: a second stream gives one (analyze reads the same file). Its path, or null.
function vectorSegment(name) {
  const vector = join(source, `tests/vectors/${name}.bin`)
  if (!existsSync(vector)) return null
  const clock = new TraceWriter().header()
  clock.schema(0, 'ClockSyncEvent', true, BUILTIN.ClockSyncEvent)
  clock.event(0, 1000000000n, [1700000000000000000n])
  const seg = join(dir, `vector-${name}`, 'trace.0.bin')
  mkdirSync(join(dir, `vector-${name}`))
  writeFileSync(seg, Buffer.concat([readFileSync(vector), Buffer.from(clock.bytes())]))
  return seg
}

test('the attribution vector: planted causes per spawn location as analyze says them', async (t) => {
  const seg = vectorSegment('attribution')
  if (!seg) return t.skip('no tests/vectors/attribution.bin in ' + source)
  const tables = join(dir, 'vector-tables')
  fold([seg], tables)
  const want = analyzeParts(seg)
  const got = await foldParts(tables)
  assert.deepEqual(got, { [basename(seg)]: want })
  // the vector plants each of these: a fold that drops one fails above, and here if analyze did too
  const total = Object.fromEntries(PARTS.map((p) => [p, Object.values(want).reduce((s, l) => s + l[p], 0n)]))
  for (const p of ['on_cpu_ns', 'lock_ns', 'io_ns', 'sleep_ns', 'blocked_other_ns', 'runnable_ns', 'unknown_ns'])
    assert.ok(total[p] > 0n, `the vector plants ${p}: ${JSON.stringify(total, (k, v) => String(v))}`)
  assert.ok(await rowsAddUp(tables) > 0, 'polls rows')
})

// The rule of a long poll's CPU time (src/model/attribution.h, d9m_attr_poll_cpu) on the
// poll-cpu vector (tests/unit/poll_cpu_trace.h): poll_cpu stated on, the governor's gaps; a long
// poll without a PollCpuEvent ran all of it (on_cpu, as analyze says: CI's ASan run failed on
// such a poll), one whose event says "not exact" stays unknown, one with its exact CPU time has
// off_cpu_uncaptured.
test('the poll-cpu vector: a long poll without a PollCpuEvent as analyze says it', async (t) => {
  const seg = vectorSegment('poll-cpu')
  if (!seg) return t.skip('no tests/vectors/poll-cpu.bin in ' + source)
  const tables = join(dir, 'vector-poll-cpu-tables')
  fold([seg], tables)
  const want = analyzeParts(seg)
  const MS = 1000000n
  const parts = (o) => Object.fromEntries(PARTS.map((p) => [p, o[p] || 0n]))
  assert.deepEqual(want, {
    'covered.c:1': parts({ on_cpu_ns: 9n * MS, io_ns: MS }),
    'none.c:1': parts({ on_cpu_ns: 10n * MS }),
    'inexact.c:1': parts({ unknown_ns: 10n * MS }),
    'exact.c:1': parts({ on_cpu_ns: 6n * MS, io_ns: MS, off_cpu_uncaptured_ns: 3n * MS }),
    'short.c:1': parts({ unknown_ns: MS / 2n }),
  }, 'analyze: the planted parts')
  assert.deepEqual(await foldParts(tables), { [basename(seg)]: want })
  assert.equal(await rowsAddUp(tables), 5, 'polls rows')
})

// Whose worker an off-CPU interval and a context-switch sample are (src/model/thread_worker.h)
// on the worker-change vector (tests/unit/worker_change_trace.h): a thread that changes worker
// mid-run, samples without a worker id, switch records naming none or the former worker. The
// fold gives each poll what analyze gives it (the switch-out's worker alone and samples without
// a worker id skipped gave a.c blocked_other and b.c all on_cpu).
test('the worker-change vector: a thread that changes worker as analyze says it', async (t) => {
  const seg = vectorSegment('worker-change')
  if (!seg) return t.skip('no tests/vectors/worker-change.bin in ' + source)
  const tables = join(dir, 'vector-worker-change-tables')
  fold([seg], tables)
  const want = analyzeParts(seg)
  const MS = 1000000n
  const parts = (o) => Object.fromEntries(PARTS.map((p) => [p, o[p] || 0n]))
  assert.deepEqual(want, {
    'a.c:1': parts({ on_cpu_ns: 8n * MS, lock_ns: 2n * MS }),
    'b.c:1': parts({ on_cpu_ns: 6n * MS, sleep_ns: 3n * MS, runnable_ns: MS }),
  }, 'analyze: the planted parts')
  assert.deepEqual(await foldParts(tables), { [basename(seg)]: want })
  assert.equal(await rowsAddUp(tables), 2, 'polls rows')
  // the samples table's worker_id is the worker sampled (src/model/thread_worker.h): a sample
  // without a worker id, timer (cpu) or context switch (offcpu), its thread's worker, as analyze
  // counts them in each worker's polls (every sample of the vector is inside a poll)
  const r = dial9('analyze', '--json', seg)
  assert.equal(r.status, 0, r.stderr)
  const an = {}
  for (const w of JSON.parse(r.stdout).workers) {
    if (w.cpu_samples_in_poll) an[`cpu ${w.id}`] = BigInt(w.cpu_samples_in_poll)
    if (w.offcpu_samples_in_poll) an[`offcpu ${w.id}`] = BigInt(w.offcpu_samples_in_poll)
  }
  assert.deepEqual(an, { 'cpu 0': 1n, 'cpu 1': 2n, 'offcpu 0': 1n, 'offcpu 1': 1n }, 'analyze: the planted samples')
  const samples = join(tables, 'samples/**/*.parquet')
  const byDuck = {}
  for (const x of await duckRows(`SELECT source, worker_id, count(*) AS n FROM read_parquet(${lit(samples)}) GROUP BY ALL`))
    byDuck[`${x.source} ${x.worker_id}`] = BigInt(x.n)
  assert.deepEqual(byDuck, an, 'DuckDB: samples by source and worker_id')
  const byHyp = {}
  for (const f of files(join(tables, 'samples')).filter((f) => f.endsWith('.parquet')))
    for (const x of await hyparquetRows(f)) {
      const k = `${x.source} ${x.worker_id}`
      byHyp[k] = (byHyp[k] || 0n) + 1n
    }
  assert.deepEqual(byHyp, an, 'hyparquet: samples by source and worker_id')
})

// Worker 0, no switch records (source.off_cpu inactive), from 5 s:
//   a.c  0 .. 10 ms, CPU 4 ms (exact)       -> on_cpu 4 ms, off_cpu_uncaptured 6 ms
//   b.c  20 .. 25 ms, no event              -> unknown 5 ms
//   c.c  30 .. 40 ms, "not exact"           -> unknown 10 ms
//   e.c  60 .. 70 ms, f.c begun at 70 ms, e's event after f's start:
//        e CPU 1 ms -> on_cpu 1 ms, off_cpu_uncaptured 9 ms; f no event -> unknown 2 ms
test('long polls with their exact CPU time (PollCpuEvent): off_cpu_uncaptured as analyze says it', async () => {
  const MS = 1000000n, T0 = 5000n * MS
  const w = new TraceWriter().header()
  const ids = { meta: 0, clock: 1, start: 2, end: 3, cpu: 4 }
  w.schema(ids.meta, 'SegmentMetadataEvent', true, BUILTIN.SegmentMetadataEvent)
  w.schema(ids.clock, 'ClockSyncEvent', true, BUILTIN.ClockSyncEvent)
  w.schema(ids.start, 'PollStartEvent', true, BUILTIN.PollStartEvent)
  w.schema(ids.end, 'PollEndEvent', true, BUILTIN.PollEndEvent)
  w.schema(ids.cpu, 'PollCpuEvent', true, [['worker_id', T.VARINT], ['cpu_time_ns', T.VARINT], ['exact', T.BOOL]])
  w.stringPool([[1, 'a.c:1'], [2, 'b.c:1'], [3, 'c.c:1'], [4, 'e.c:1'], [5, 'f.c:1']])
  w.event(ids.meta, T0, [[['service', 'pollcpu'], ['source.off_cpu', 'inactive: hand-built']]])
  w.event(ids.clock, T0, [1700000000000000000n])
  const poll = (from, to, task, loc) => w.event(ids.start, T0 + from, [0, 0, task, loc]).event(ids.end, T0 + to, [0])
  poll(0n, 10n * MS, 1, 1).event(ids.cpu, T0 + 10n * MS + 200n, [0, 4n * MS, true])
  poll(20n * MS, 25n * MS, 2, 2)
  poll(30n * MS, 40n * MS, 3, 3).event(ids.cpu, T0 + 40n * MS + 200n, [0, 0, false])
  w.event(ids.start, T0 + 60n * MS, [0, 0, 4, 4]).event(ids.end, T0 + 70n * MS, [0])
  w.event(ids.start, T0 + 70n * MS, [0, 0, 5, 5]).event(ids.cpu, T0 + 70n * MS + 100n, [0, MS, true])
  w.event(ids.end, T0 + 72n * MS, [0])
  const seg = join(dir, 'pollcpu', 'trace.0.bin')
  mkdirSync(join(dir, 'pollcpu'))
  writeFileSync(seg, Buffer.from(w.bytes()))
  const tables = join(dir, 'pollcpu-tables')
  fold([seg], tables)
  const want = analyzeParts(seg)
  assert.equal(want['a.c:1'].off_cpu_uncaptured_ns, 6n * MS, 'analyze: a.c off_cpu_uncaptured')
  assert.equal(want['e.c:1'].off_cpu_uncaptured_ns, 9n * MS, 'analyze: e.c off_cpu_uncaptured')
  assert.equal(want['c.c:1'].unknown_ns, 10n * MS, 'analyze: c.c unknown')
  assert.deepEqual(await foldParts(tables), { [basename(seg)]: want })
  assert.equal(await rowsAddUp(tables), 5, 'polls rows')
})

const story2 = join(build, 'examples/stories/story2_global_mutex')
test('a recording of story 2 (a global mutex): per segment and location as analyze says them', async (t) => {
  if (!existsSync(story2)) return t.skip('not built: ' + story2)
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DIAL9_')))
  const rec = join(dir, 'story2')
  const r = spawnSync(story2, ['--seconds', '1', '--trace-dir', rec], { encoding: 'utf8', env: { ...env, DIAL9_SERVICE: 'story2' }, timeout: 120000 })
  assert.equal(r.status, 0, 'story2: ' + r.stdout + r.stderr)
  const segments = files(rec).filter((f) => /trace\.\d+\.bin(\.gz|\.zst)?$/.test(f))
  assert.ok(segments.length > 0, 'segments in ' + rec)
  const tables = join(dir, 'story2-tables')
  fold(segments, tables)
  const want = Object.fromEntries(segments.map((s) => [basename(s), analyzeParts(s)]))
  const got = await foldParts(tables)
  assert.deepEqual(got, want)
  const sum = (p) => Object.values(want).flatMap((l) => Object.values(l)).reduce((s, x) => s + x[p], 0n)
  t.diagnostic(`${segments.length} segments, ${await rowsAddUp(tables)} polls; ` + PARTS.map((p) => `${p} ${sum(p)}`).join(', '))
  if (sum('lock_ns') + sum('io_ns') + sum('blocked_other_ns') + sum('runnable_ns') === 0n)
    t.diagnostic('no off-CPU time: this host gave the recording no switch records')
})

test('a run of the executor demo: per segment and location as analyze says them', async (t) => {
  const segments = record(dir, 'exec', 2)
  const tables = join(dir, 'exec-tables')
  fold(segments, tables)
  const want = Object.fromEntries(segments.map((s) => [basename(s), analyzeParts(s)]))
  assert.deepEqual(await foldParts(tables), want)
  t.diagnostic(`${segments.length} segments, ${await rowsAddUp(tables)} polls`)
})
