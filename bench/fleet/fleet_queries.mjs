// DuckDB side of bench/fleet/fleet_bench.py (prints JSON): `columns DIR` the bytes per column
// of a polls table; `chunks DIR` each column's encodings, codecs and bytes on disk and before
// compression (what zstd was fed), summed over DIR's files; `queries DIR` the fleet queries,
// each timed (wall and this process's CPU, which holds DuckDB's threads) after one warm-up run.
import { join } from 'node:path'
import { duckRows, lit } from '../../tests/parquet/readers.mjs'
import { docQuery } from '../../tests/parquet/fold_lib.mjs'

const [what, dir] = process.argv.slice(2)
if (what === 'columns') {
  const rows = await duckRows(`SELECT path_in_schema AS column, sum(total_compressed_size) AS bytes
    FROM parquet_metadata(${lit(join(dir, '**/*.parquet'))}) GROUP BY ALL ORDER BY bytes DESC`)
  console.log(JSON.stringify(rows.map((r) => ({ column: r.column, bytes: String(r.bytes) }))))
} else if (what === 'chunks') {
  const rows = await duckRows(`SELECT path_in_schema AS column, string_agg(DISTINCT encodings, '; ') AS encodings,
      string_agg(DISTINCT compression, ', ') AS codec, sum(total_compressed_size) AS bytes,
      sum(total_uncompressed_size) AS raw
    FROM parquet_metadata(${lit(join(dir, '**/*.parquet'))}) GROUP BY ALL ORDER BY bytes DESC`)
  console.log(JSON.stringify(rows.map((r) => ({ ...r, bytes: String(r.bytes), raw: String(r.raw) }))))
} else {
  const queries = [
    ['p99 by service and spawn location from poll_hist', '< 1 s', docQuery('poll_hist_quantiles', { TABLES: dir })],
    ['p99 by service and spawn location exactly from polls', '< 10 s',
      `SELECT service, spawn_loc, count(*) AS polls, quantile_disc(duration_ns, 0.99) AS p99_ns
       FROM read_parquet(${lit(join(dir, 'polls/**/*.parquet'))}, hive_partitioning = true) GROUP BY ALL`],
  ]
  const out = []
  for (const [name, target, sql] of queries) {
    await duckRows(sql)
    const t0 = performance.now(), c0 = process.cpuUsage()
    const rows = await duckRows(sql)
    const c = process.cpuUsage(c0) // DuckDB's threads are this process's: its CPU time, whatever the load
    out.push({ name, target, seconds: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6, rows: rows.length })
  }
  console.log(JSON.stringify(out))
}
