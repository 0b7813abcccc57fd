/**
 * `npm run bench`: runs the kernel benchmark (test/bench/bench.ts), then each plugin's own benchmark
 * (`plugins/<name>/test/bench.ts`), one child process each so that one's load never skews another's numbers.
 * Each prints its table and a final `BENCH_JSON {...}` line. `BENCH_ONLY=kernel,ui,containers` picks some.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const benches: [string, string][] = [['kernel', join(REPO, 'test', 'bench', 'bench.ts')], ['ui', join(REPO, 'test', 'bench', 'ui.ts')]]
const pluginsDir = join(REPO, 'plugins')
for (const name of existsSync(pluginsDir) ? readdirSync(pluginsDir).sort() : []) {
  const file = join(pluginsDir, name, 'test', 'bench.ts')
  if (existsSync(file)) benches.push([name, file])
}
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim())
let failed = 0
for (const [name, file] of benches) {
  if (only && !only.includes(name)) continue
  console.log(`\n=== bench: ${name} ===`)
  const run = spawnSync(process.execPath, [file], { stdio: 'inherit', cwd: REPO })
  if (run.status !== 0) {
    console.error(`bench ${name} failed (exit ${run.status ?? run.signal})`)
    failed++
  }
}
process.exit(failed ? 1 : 0)
