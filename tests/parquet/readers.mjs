// The two independent readers of our Parquet files in the tests: hyparquet (pure JS, with
// fzstd for zstd pages: neither uses libzstd or our code) and DuckDB (its own C++ reader).
import { readFileSync } from 'node:fs'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { decompress } from 'fzstd'
import { DuckDBInstance } from '@duckdb/node-api'

const compressors = { ZSTD: (input, outputLength) => decompress(input, new Uint8Array(outputLength)) }
// Timestamps as their nanoseconds (bigint): the default parser makes a Date of milliseconds.
const parsers = { timestampFromNanoseconds: (nanos) => BigInt(nanos) }

export function bufferOf(path) {
  const b = readFileSync(path)
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
}

export async function hyparquetRows(path) {
  return parquetReadObjects({ file: bufferOf(path), compressors, parsers })
}

export function hyparquetMetadata(path) {
  return parquetMetadata(bufferOf(path), { parsers })
}

let instance
export async function duck() {
  if (!instance) instance = await DuckDBInstance.create(':memory:')
  return instance.connect()
}

// Rows of a query as plain objects (DuckDB's own JS values: bigint for BIGINT, ...).
export async function duckRows(sql) {
  const c = await duck()
  try {
    const reader = await c.runAndReadAll(sql)
    return reader.getRowObjects()
  } finally {
    c.closeSync?.()
  }
}

// SQL string literal
export const lit = (s) => `'${String(s).replaceAll("'", "''")}'`
