// `dial9 analyze`'s quantile (src/analysis/hist.c), for comparing raw durations read back from
// the tables with analyze's p50/p99: values below 128 exact, above each power of two split in
// 128 buckets; the quantile is the midpoint of the bucket holding the ceil(q * count)-th value,
// clamped to the exact min and max.
export function bucketOf(v) {
  v = BigInt(v)
  if (v < 128n) return Number(v)
  const e = BigInt(v.toString(2).length - 1)
  const mant = v >> (e - 7n)
  return Number(128n + (e - 7n) * 128n + (mant - 128n))
}

export function bucketLow(i) {
  if (i < 128) return BigInt(i)
  const e = BigInt(Math.floor((i - 128) / 128) + 7)
  const mant = BigInt(((i - 128) % 128) + 128)
  return mant << (e - 7n)
}

export function bucketWidth(i) {
  if (i < 128) return 1n
  const e = BigInt(Math.floor((i - 128) / 128) + 7)
  return 1n << (e - 7n)
}

// values: array of bigint or number; returns {count, min, max, p50, p90, p99} as bigint
export function analyzeDist(values) {
  const v = values.map(BigInt)
  if (!v.length) return { count: 0n, min: 0n, max: 0n, p50: 0n, p90: 0n, p99: 0n }
  let min = v[0], max = v[0]
  const counts = new Map()
  for (const x of v) {
    if (x < min) min = x
    if (x > max) max = x
    const b = bucketOf(x)
    counts.set(b, (counts.get(b) || 0) + 1)
  }
  const buckets = [...counts.keys()].sort((a, b) => a - b)
  const q = (p) => {
    let rank = Math.ceil(p * v.length) // the same double arithmetic as hist.c
    if (rank === 0) rank = 1
    let seen = 0
    for (const b of buckets) {
      seen += counts.get(b)
      if (seen >= rank) {
        let mid = bucketLow(b) + bucketWidth(b) / 2n
        if (mid < min) mid = min
        if (mid > max) mid = max
        return mid
      }
    }
    return max
  }
  return { count: BigInt(v.length), min, max, p50: q(0.5), p90: q(0.9), p99: q(0.99) }
}
