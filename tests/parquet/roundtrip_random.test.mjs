// Our Parquet writer against two independent readers: random tables (every type, required and
// optional, dictionary and PLAIN, dictionaries overflowing mid row group or past 65 536 entries,
// random row-group and page sizes, zstd or not; tests/parquet/pq_random_table.c) must read back
// value for value.
// Run by tests/scripts/test_parquet_readers.sh with D9_BUILD_DIR set.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hyparquetMetadata, hyparquetRows, duckRows, lit } from './readers.mjs'

const build = process.env.D9_BUILD_DIR
const seeds = (process.env.PQ_SEEDS || '1,2,3,4,5,6,7,8,9,10,11,12').split(',').map(Number)

function generate(dir, seed, rows) {
  const pq = join(dir, `r${seed}.parquet`), js = join(dir, `r${seed}.jsonl`)
  execFileSync(join(build, 'pq_random_table'), [String(seed), String(rows), pq, js])
  const lines = readFileSync(js, 'utf8').trim().split('\n')
  return { pq, schema: JSON.parse(lines[0]), rows: lines.slice(1).map((l) => JSON.parse(l)) }
}

// A value as the JSON holds it, from what a reader returned.
function norm(v, type) {
  if (v === null || v === undefined) return null
  if (type === 'int64' || type === 'timestamp_ns') {
    if (v instanceof Date) throw new Error('timestamp read as a Date: nanoseconds lost')
    if (typeof v === 'object' && 'micros' in v) return String(v.micros) // never: we ask epoch_ns
    return String(v)
  }
  if (type === 'int32') return Number(v)
  return v
}

for (const seed of seeds) {
  test(`random table, seed ${seed}`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pq-rt-'))
    try {
      const rows = seed <= 2 ? 70000 + seed * 10000 : 200 + seed * 997 // big ones overflow a dictionary
      const t = generate(dir, seed, rows)
      const names = t.schema.map((c) => c.name)

      const h = await hyparquetRows(t.pq)
      assert.equal(h.length, t.rows.length, 'hyparquet: row count')
      for (let r = 0; r < t.rows.length; r++)
        for (let i = 0; i < names.length; i++)
          assert.deepEqual(norm(h[r][names[i]], t.schema[i].type), t.rows[r][i],
            `hyparquet: row ${r} column ${names[i]} (seed ${seed})`)

      // Row-group statistics (what engines prune by): null count, min and max of every column
      // chunk equal those of its rows; booleans compare false < true, strings bytewise.
      const md = hyparquetMetadata(t.pq)
      let first = 0
      for (const [g, rg] of md.row_groups.entries()) {
        const rows = t.rows.slice(first, first + Number(rg.num_rows))
        first += Number(rg.num_rows)
        for (const [i, col] of t.schema.entries()) {
          const st = rg.columns[i].meta_data.statistics
          const vals = rows.map((r) => r[i]).filter((v) => v !== null)
          const where = `row group ${g} column ${col.name} (seed ${seed})`
          assert.equal(Number(st.null_count), rows.length - vals.length, `null count, ${where}`)
          if (!vals.length) continue
          const key = col.type === 'int64' || col.type === 'timestamp_ns' ? BigInt
            : col.type === 'string' ? (v) => Buffer.from(v, 'utf8') : (v) => v
          const cmp = (x, y) => col.type === 'string' ? Buffer.compare(x, y) : (x < y ? -1 : x > y ? 1 : 0)
          const keys = vals.map(key).sort(cmp)
          const got = (v) => col.type === 'string' ? Buffer.from(v, 'utf8') : key(norm(v, col.type))
          assert.equal(cmp(got(st.min_value), keys[0]), 0, `min, ${where}`)
          assert.equal(cmp(got(st.max_value), keys[keys.length - 1]), 0, `max, ${where}`)
        }
      }
      assert.equal(first, t.rows.length, 'row groups cover every row')

      // seed 2's column 2: one row group, ~75 k distinct values, still a dictionary (its
      // indexes past 16 bits: 3 whole bytes under zstd, 17 bits without)
      if (seed === 2) {
        const c2 = md.row_groups[0].columns[2].meta_data
        assert.equal(new Set(t.rows.map((r) => r[2])).size > 65536, true, 'seed 2: over 65 536 distinct values')
        assert.equal(c2.encodings.includes('RLE_DICTIONARY'), true, `seed 2: ${c2.encodings} without RLE_DICTIONARY`)
        // and column 1, one value throughout but no dictionary column: a one-entry dictionary,
        const c1 = md.row_groups[0].columns[1].meta_data
        assert.equal(new Set(t.rows.map((r) => r[1])).size, 1, 'seed 2: column 1 of one value')
        assert.equal(c1.encodings.includes('RLE_DICTIONARY'), true, `seed 2: ${c1.encodings} for a constant column`)
        // in a chunk of its own codec, UNCOMPRESSED, beside the table's zstd chunks
        assert.equal(c1.codec, 'UNCOMPRESSED', 'seed 2: the constant column\'s codec')
        assert.equal(md.row_groups[0].columns.some((c) => c.meta_data.codec === 'ZSTD'), true, 'seed 2: zstd chunks')
      }

      // DuckDB reads TIMESTAMP(NANOS, isAdjustedToUTC) as TIMESTAMP WITH TIME ZONE, whose unit
      // is the microsecond: it truncates, and the expected value is truncated the same way
      // (hyparquet above checked the nanoseconds).
      const cols = t.schema.map((c) => c.type === 'timestamp_ns'
        ? `epoch_us("${c.name}") AS "${c.name}"` : `"${c.name}"`).join(', ')
      const micros = (v, type) => v !== null && type === 'timestamp_ns' ? String(BigInt(v) / 1000n) : v
      const d = await duckRows(`SELECT ${cols} FROM read_parquet(${lit(t.pq)})`)
      assert.equal(d.length, t.rows.length, 'duckdb: row count')
      for (let r = 0; r < t.rows.length; r++)
        for (let i = 0; i < names.length; i++)
          assert.deepEqual(norm(d[r][names[i]], t.schema[i].type), micros(t.rows[r][i], t.schema[i].type),
            `duckdb: row ${r} column ${names[i]} (seed ${seed})`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
}
