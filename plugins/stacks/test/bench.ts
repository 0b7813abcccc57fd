/**
 * Stacks bench (`npm run bench`, or `BENCH_ONLY=stacks npm run bench`): a ten-service stack (one network, each
 * service `sleep`ing, the image already local) brought up by hostd (`POST /api/stacks/<name>/deploy` on the real
 * daemon, `node kernel/dist/main.mjs`, with the containers and stacks plugins) against `docker-compose up -d` of the
 * same file (Debian's docker-compose 1.29), on one private dockerd. Rounds alternate which goes first; each takes
 * its stack down again untimed. The figure is the median of per-round ratios hostd / compose (goal <= 1: hostd not
 * slower).
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { promisify } from 'node:util'
import { figure, printBenchJson } from '../../../test/bench/support.ts'
import { startDaemon, type Daemon } from '../../../test/support/daemon.ts'
import { importTestImage, startEngine, type TestEngine } from '../../containers/test/support/engine.ts'

const run = promisify(execFile)
const ROUNDS = Number(process.env.BENCH_STACK_ROUNDS) || 5
const SERVICES = 10
const PASSWORD = 'correct horse battery'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

function composeFile(image: string): string {
  let text = 'services:\n'
  for (let i = 0; i < SERVICES; i++)
    text += `  s${i}:\n    image: ${image}\n    command: ["sleep", "3600"]\n    networks: [net]\n`
  return `${text}networks:\n  net: {}\n`
}

let engine: TestEngine | undefined
let daemon: Daemon | undefined
const work = await mkdtemp(join(tmpdir(), 'hostd-stacks-bench-'))
try {
  engine = await startEngine()
  const image = await importTestImage(engine, 'hostd-test/stacks-bench:1')
  const compose = composeFile(image)
  daemon = await startDaemon({
    env: { DOCKER_HOST: engine.host, HOSTD_BUILTIN_PLUGINS: 'containers,stacks' },
    startTimeoutMs: 60_000,
  })
  const json = { 'content-type': 'application/json' }
  await daemon.fetch('/api/setup', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  const login = await daemon.fetch('/api/auth/login', {
    method: 'POST',
    headers: { ...json, 'x-svc-client': 'bench' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  })
  const token = ((await login.json()) as { token: string }).token
  const post = async (path: string, body: unknown) => {
    const res = await daemon!.fetch(path, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    })
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }
  const cliEnv = { ...process.env, DOCKER_HOST: engine.host }

  const hostd = async (round: number) => {
    const name = `bench-h${round}`
    await post('/api/stacks', { name, compose })
    const start = performance.now()
    await post(`/api/stacks/${name}/deploy`, {})
    const ms = performance.now() - start
    await post(`/api/stacks/${name}/down`, {})
    return ms
  }
  const cli = async (round: number) => {
    const dir = join(work, `c${round}`)
    await run('mkdir', ['-p', dir])
    await writeFile(join(dir, 'docker-compose.yml'), compose)
    const start = performance.now()
    await run('docker-compose', ['-p', `bench-c${round}`, 'up', '-d'], { cwd: dir, env: cliEnv })
    const ms = performance.now() - start
    await run('docker-compose', ['-p', `bench-c${round}`, 'down'], { cwd: dir, env: cliEnv })
    return ms
  }
  // One of each unmeasured: the first create pays for caches on both sides.
  await hostd(100)
  await cli(100)
  const hostdMs: number[] = []
  const cliMs: number[] = []
  const ratios: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    let h: number
    let c: number
    if (round % 2 === 0) {
      h = await hostd(round)
      c = await cli(round)
    } else {
      c = await cli(round)
      h = await hostd(round)
    }
    hostdMs.push(h)
    cliMs.push(c)
    ratios.push(h / c)
    console.log(`round ${round}: hostd ${h.toFixed(0)} ms, docker-compose up -d ${c.toFixed(0)} ms`)
  }
  const ratio = +median(ratios).toFixed(3)
  console.log(`\nmedian hostd / docker-compose: ${ratio} (goal <= 1)`)
  printBenchJson(
    'stacks',
    [
      figure(
        `deploy of a ${SERVICES}-service stack / docker-compose up -d`,
        ratio,
        'x',
        { op: '<=', target: 1 },
        `${median(hostdMs).toFixed(0)} vs ${median(cliMs).toFixed(0)} ms (medians of ${ROUNDS})`,
      ),
    ],
    { hostdMs, cliMs, ratios },
  )
} finally {
  await daemon?.stop()
  await engine?.stop()
  await rm(work, { recursive: true, force: true })
}
