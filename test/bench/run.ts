/**
 * `npm run bench`: the kernel bench (test/bench/bench.ts), then each plugin's (`plugins/<name>/test/bench.ts`), one
 * child process each so that one's load never skews another's numbers. Each prints its tables and a final
 * `BENCH_JSON {...}` line whose `figures` (see support.ts) are printed together at the end, each beside its goal.
 * `BENCH_ONLY=kernel,ui,skills` picks some. The daemon's build (kernel/build.mjs) is brought up to date first.
 * `npm run bench -- --soak 10m` runs only the kernel bench's soak.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { performance } from 'node:perf_hooks'
import { figureTable, type Figure } from './support.ts'
import { buildDaemon } from '../../kernel/build.mjs'

const REPO = join(import.meta.dirname, '..', '..')
const args = process.argv.slice(2)
const soak = args.includes('--soak')

const benches: [string, string][] = [
  ['kernel', join(REPO, 'test', 'bench', 'bench.ts')],
  ['ui', join(REPO, 'test', 'bench', 'ui.ts')],
  ['isolation', join(REPO, 'test', 'bench', 'isolation.ts')],
  ['audit', join(REPO, 'test', 'bench', 'audit.ts')],
]
const pluginsDir = join(REPO, 'plugins')
for (const name of existsSync(pluginsDir) && !soak ? readdirSync(pluginsDir).sort() : []) {
  const file = join(pluginsDir, name, 'test', 'bench.ts')
  if (existsSync(file)) benches.push([name, file])
}
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim())

// Every bench's daemon runs its build, as `npm start` does: rebuilt first when a source changed.
await buildDaemon({ ifChanged: true })

const began = performance.now()
const figures: (Figure & { bench: string })[] = []
const failed: string[] = []
const missing: string[] = []
for (const [name, file] of benches) {
  if (only && !only.includes(name)) continue
  console.log(`\n=== bench: ${name} ===`)
  const t0 = performance.now()
  const child = spawn(process.execPath, [file, ...(name === 'kernel' ? args : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: REPO,
  })
  let json: { figures?: Figure[] } | null = null
  createInterface({ input: child.stdout! }).on('line', (line) => {
    console.log(line)
    if (line.startsWith('BENCH_JSON ')) json = JSON.parse(line.slice('BENCH_JSON '.length))
  })
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null]
  console.log(`=== ${name}: ${Math.round((performance.now() - t0) / 1000)} s ===`)
  if (code !== 0) failed.push(`${name} (exit ${code ?? signal})`)
  const got = (json as { figures?: Figure[] } | null)?.figures
  if (got) figures.push(...got.map((f) => ({ bench: name, ...f })))
  else if (code === 0) missing.push(name)
}

console.log(
  `\n=== every figure beside its goal (${Math.round((performance.now() - began) / 1000)} s in all; ` +
    'a shared machine makes absolutes noisy: ratios and pairs are from the same run) ===',
)
console.log(figureTable(figures))
const met = figures.filter((f) => f.goal && f.met).length
const goals = figures.filter((f) => f.goal).length
console.log(
  `\n  ${met} of ${goals} goals met${failed.length ? `; failed: ${failed.join(', ')}` : ''}${missing.length ? `; no figures from: ${missing.join(', ')}` : ''}`,
)
process.exit(failed.length ? 1 : 0)
