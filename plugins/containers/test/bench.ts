/**
 * Containers bench (`npm run bench`, or `BENCH_ONLY=containers npm run bench`). One run:
 *   - starts its own dockerd (test/support/engine.ts) and a spawned hostd (`node kernel/dist/main.mjs`, the build npm start runs) over HTTPS
 *     with DOCKER_HOST pointing at it;
 *   - creates 100 containers from a busybox image: half running `sleep`, half only created;
 *   - measures, one request at a time and interleaved in rounds, the latency of
 *       hostd   GET /api/containers (bearer token, keep-alive HTTPS),
 *       raw     the Engine API's GET /containers/json?all=1 over the unix socket (keep-alive),
 *       cli     `docker -H unix://... ps -a` (a process per call, as a person or script would run it);
 *   - prints the medians, the ratios hostd/raw (goal <= 1.5) and hostd/cli, and `BENCH_JSON {...}`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request as httpRequest } from 'node:http'
import { tmpdir, cpus } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { Pool } from 'undici'
import { importTestImage, startEngine, type TestEngine } from './support/engine.ts'
import { figure } from '../../../test/bench/support.ts'

const REPO = join(import.meta.dirname, '..', '..', '..')
const CONTAINERS = Number(process.env.BENCH_CONTAINERS) || 100
const ROUNDS = 5
const PER_ROUND = 40
const CLI_RUNS = 20
const GOAL = 1.5
const run = promisify(execFile)

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}
function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!
}

async function startHostd(dataDir: string, dockerHost: string): Promise<{ child: ChildProcess; origin: string }> {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HOSTD_') && k !== 'DOCKER_HOST') env[k] = v
  Object.assign(env, {
    HOSTD_DATA_DIR: dataDir,
    HOSTD_HOST: '127.0.0.1',
    HOSTD_PORT: '0',
    HOSTD_HELPER_SOCKET: join(dataDir, 'helper.sock'),
    DOCKER_HOST: dockerHost,
  })
  const child = spawn(process.execPath, ['kernel/dist/main.mjs'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const log: string[] = []
  createInterface({ input: child.stderr! }).on('line', (l) => log.push(l))
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hostd did not start:\n${log.join('\n')}`)), 30_000)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /serving (https:\/\/127\.0\.0\.1:\d+)/.exec(line)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    child.once('exit', (code) => reject(new Error(`hostd exited (${code}):\n${log.join('\n')}`)))
  })
  return { child, origin }
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-ctr-bench-'))
  let engine: TestEngine | null = null
  let hostd: ChildProcess | null = null
  const pool: { p: Pool | null } = { p: null }
  try {
    console.log(
      `containers bench: node ${process.version}, ${cpus().length} CPUs, ${CONTAINERS} containers, ` +
        `${ROUNDS}x${PER_ROUND} sequential requests per target, ${CLI_RUNS} docker ps runs\n`,
    )
    engine = await startEngine()
    const image = await importTestImage(engine, 'hostd-bench/busybox:1')
    for (let i = 0; i < CONTAINERS; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, CONTAINERS - i) }, async (_, k) => {
          const n = i + k
          const res = await engine!.api('POST', `/containers/create?name=bench-${n}`, {
            Image: image,
            Cmd: ['sleep', '3600'],
            Labels: { 'com.docker.compose.project': 'bench' },
          })
          if (res.status !== 201) throw new Error(`create bench-${n}: ${res.status} ${res.body}`)
          if (n % 2 === 0) {
            const started = await engine!.api('POST', `/containers/bench-${n}/start`)
            if (started.status !== 204) throw new Error(`start bench-${n}: ${started.status} ${started.body}`)
          }
        }),
      )
    }
    const started = await startHostd(dataDir, engine.host)
    hostd = started.child
    pool.p = new Pool(started.origin, {
      connections: 1,
      connect: { rejectUnauthorized: false },
      keepAliveTimeout: 60_000,
    })
    const call = async (
      method: string,
      path: string,
      body?: unknown,
      token?: string,
      headers: Record<string, string> = {},
    ) => {
      const res = await pool.p!.request({
        method: method as 'GET',
        path,
        body: body ? JSON.stringify(body) : undefined,
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
      })
      const text = await res.body.text()
      return { status: res.statusCode, body: text ? JSON.parse(text) : null }
    }
    const creds = { username: 'bench', password: 'correct horse battery' }
    if ((await call('POST', '/api/setup', creds)).status !== 201) throw new Error('setup failed')
    const token = (await call('POST', '/api/auth/login', creds, undefined, { 'x-svc-client': '1' })).body
      .token as string

    const version = (await engine.api('GET', '/version')).json().ApiVersion as string
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const rawList = () =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          { socketPath: engine!.socket, path: `/v${version}/containers/json?all=1`, agent },
          (res) => {
            let n = 0
            res.on('data', (c: Buffer) => (n += c.length))
            res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`raw ${res.statusCode}`))))
          },
        )
        req.on('error', reject)
        req.end()
      })
    const hostdList = async () => {
      const res = await call('GET', '/api/containers', undefined, token)
      if (res.status !== 200 || res.body.items.length !== CONTAINERS)
        throw new Error(`hostd list: ${res.status}, ${res.body?.items?.length} items`)
      return res.body
    }
    const time = async (fn: () => Promise<unknown>) => {
      const t0 = performance.now()
      await fn()
      return performance.now() - t0
    }

    // Warm-up: TLS, JIT, and the plugin's caches (details, image facts) filled off the hot path.
    for (let i = 0; i < 30; i++) {
      await hostdList()
      await rawList()
    }
    await sleep(1000)
    const sample = await hostdList()
    const complete = sample.items.filter((c: { restartPolicy: string }) => c.restartPolicy !== '').length

    const hostdMs: number[] = []
    const rawMs: number[] = []
    const roundRatios: number[] = []
    for (let r = 0; r < ROUNDS; r++) {
      const h: number[] = []
      const w: number[] = []
      for (let i = 0; i < PER_ROUND; i++) {
        w.push(await time(rawList))
        h.push(await time(hostdList))
      }
      hostdMs.push(...h)
      rawMs.push(...w)
      roundRatios.push(median(h) / median(w))
    }
    const cliMs: number[] = []
    for (let i = 0; i < CLI_RUNS; i++)
      cliMs.push(
        await time(() => run('docker', ['-H', engine!.host, 'ps', '-a', '--no-trunc'], { maxBuffer: 8 << 20 })),
      )

    const rawBytes = await rawList()
    const out = {
      containers: CONTAINERS,
      running: Math.ceil(CONTAINERS / 2),
      itemsWithCachedDetails: complete,
      rawResponseBytes: rawBytes,
      hostdMedianMs: +median(hostdMs).toFixed(3),
      hostdP90Ms: +pct(hostdMs, 0.9).toFixed(3),
      rawMedianMs: +median(rawMs).toFixed(3),
      rawP90Ms: +pct(rawMs, 0.9).toFixed(3),
      cliMedianMs: +median(cliMs).toFixed(3),
      ratioHostdToRaw: +(median(hostdMs) / median(rawMs)).toFixed(3),
      medianRoundRatioHostdToRaw: +median(roundRatios).toFixed(3),
      ratioHostdToCli: +(median(hostdMs) / median(cliMs)).toFixed(3),
      goalHostdToRaw: GOAL,
    }
    const row = (name: string, med: number, p90: number | string) =>
      console.log(
        `${name.padEnd(44)} ${med.toFixed(2).padStart(9)} ms  ${typeof p90 === 'number' ? p90.toFixed(2).padStart(9) : p90.padStart(9)} ms`,
      )
    console.log(`${'target'.padEnd(44)} ${'median'.padStart(12)}  ${'p90'.padStart(12)}`)
    row('hostd GET /api/containers (HTTPS, bearer)', out.hostdMedianMs, out.hostdP90Ms)
    row('raw Engine API /containers/json (unix)', out.rawMedianMs, out.rawP90Ms)
    row('docker ps -a (CLI process)', out.cliMedianMs, pct(cliMs, 0.9))
    console.log('')
    console.log(
      `ratio hostd/raw (of medians):      ${out.ratioHostdToRaw}  (goal <= ${GOAL}: ${out.ratioHostdToRaw <= GOAL ? 'MET' : 'NOT MET'})`,
    )
    console.log(`median of per-round ratios:        ${out.medianRoundRatioHostdToRaw}`)
    console.log(`ratio hostd/docker ps:             ${out.ratioHostdToCli}`)
    console.log(`list items with cached details:    ${complete}/${CONTAINERS}`)
    const figures = [
      figure(
        `GET /api/containers at ${CONTAINERS} containers / raw Engine API`,
        out.ratioHostdToRaw,
        'x',
        { op: '<=', target: GOAL },
        `${out.hostdMedianMs} vs ${out.rawMedianMs} ms (medians)`,
      ),
      figure(
        'GET /api/containers / docker ps -a',
        out.ratioHostdToCli,
        'x',
        undefined,
        `${out.hostdMedianMs} vs ${out.cliMedianMs} ms`,
      ),
    ]
    console.log(`BENCH_JSON ${JSON.stringify({ bench: 'containers', figures, ...out })}`)
  } finally {
    await pool.p?.close().catch(() => undefined)
    if (hostd && hostd.exitCode === null) {
      const exited = once(hostd, 'exit')
      hostd.kill('SIGTERM')
      await Promise.race([exited, sleep(5000)])
      if (hostd.exitCode === null) hostd.kill('SIGKILL')
    }
    await engine?.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
}

await main()
