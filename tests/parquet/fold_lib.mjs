// What the fold tests share: recording a run of the example executor, `dial9` itself, and
// the queries the docs give (docs/fleet-tables.md, between `<!-- query: NAME -->` and the end of
// the sql block after it), so the tests run the documented SQL.
import { execFileSync, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

export const build = process.env.D9_BUILD_DIR
export const source = process.env.D9_SOURCE_DIR
export const dial9 = (...args) => spawnSync(join(build, 'dial9'), args, { encoding: 'utf8' })

// One recorded run of examples/executor under `service`: its segments' paths (env: more of the
// recorder's variables, such as DIAL9_ROTATION_SECS).
export function record(dir, service, workers = 2, seconds = 1, env = {}) {
  const out = join(dir, `rec-${service}`)
  execFileSync(join(build, 'examples/executor/executor_demo'),
    ['--workers', String(workers), '--seconds', String(seconds), '--trace-dir', out],
    { env: { ...process.env, DIAL9_SERVICE: service, DIAL9_SYMBOLIZE: '0', ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  return files(out).filter((f) => /trace\.\d+\.bin(\.gz|\.zst)?$/.test(f))
}

// Every file under dir (recursive), hidden ones too.
export function files(dir) {
  const out = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...files(p))
    else out.push(p)
  }
  return out.sort()
}

// path -> "size mtime" of every file under dir: what a second fold must leave as it is.
export function snapshot(dir) {
  return Object.fromEntries(files(dir).map((f) => {
    const s = statSync(f)
    return [f, `${s.size} ${s.mtimeMs}`]
  }))
}

export function docQuery(name, vars) {
  const doc = readFileSync(join(process.env.D9_SOURCE_DIR || source, 'docs/fleet-tables.md'), 'utf8')
  const at = doc.indexOf(`<!-- query: ${name} -->`)
  if (at < 0) throw new Error(`docs/fleet-tables.md has no query ${name}`)
  const m = doc.slice(at).match(/```sql\n([\s\S]*?)```/)
  let sql = m[1]
  for (const [k, v] of Object.entries(vars)) sql = sql.replaceAll(`{${k}}`, v)
  return sql
}
