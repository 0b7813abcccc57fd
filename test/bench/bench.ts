/**
 * The kernel bench (`npm run bench`; alone: `BENCH_ONLY=kernel npm run bench`; soak only: `npm run bench -- --soak 10m`).
 * Against a real spawned daemon (`node kernel/dist/main.mjs`, the build npm start runs; all built-in plugins) and, as the reference, a bare
 * Fastify TLS server in plain JavaScript (bare-server.mjs), both in their own processes, loaded by wrk in a third:
 *   - idle memory after setup and ten sign-ins, hostd / bare;
 *   - a soak from there (10 req/s of mixed GETs and 5 event-stream clients): RSS over time and its swing;
 *   - GET /api/auth/me req/s, hostd / bare, over alternating pairs; server CPU per request from /proc;
 *   - memory again after that load;
 *   - GET /api/metrics latency at a dashboard's pace;
 *   - plugin hot-swap times: drop-in, upgrade (folder swap, rewrite in place), removal;
 *   - start to the first /health 200, hostd (restart on its data dir) and bare, alternating.
 * Every figure is printed beside its goal, then one `BENCH_JSON {...}` line. See test/bench/README.md.
 */
import { spawn } from 'node:child_process'
import { cp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import { cpus } from 'node:os'
import { createInterface } from 'node:readline'
import { Agent, Client, request, type Dispatcher } from 'undici'
import { REPO_ROOT, startDaemon, type Daemon } from '../support/daemon.ts'
import {
  cpuSeconds,
  figure,
  figureTable,
  median,
  memoryOf,
  printBenchJson,
  round,
  runBench,
  showMemory,
  startBare,
  stopChild,
  table,
  tempDir,
  track,
  wrk,
  wrkScript,
  type Bare,
  type Figure,
  type Memory,
  type WrkResult,
} from './support.ts'

function envInt(name: string, fallback: number): number {
  const n = Number(process.env[name])
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback
}

/** `--soak 10m`, `--soak 90s`, `--soak 600`: the soak's length in seconds; null when not asked for. */
function soakArgument(argv: string[]): number | null {
  const i = argv.indexOf('--soak')
  if (i < 0) return null
  const m = /^(\d+)(s|m|h)?$/.exec(argv[i + 1] ?? '10m')
  if (!m) throw new Error(`--soak takes a duration such as 10m, 90s or 600, not ${argv[i + 1]}`)
  return Number(m[1]) * (m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1)
}

const SOAK_ONLY_S = soakArgument(process.argv.slice(2))

/** Knobs, for experiments; the defaults are what the README's figures mean. */
const CFG = {
  connections: envInt('BENCH_CONNECTIONS', 32),
  preheatS: envInt('BENCH_PREHEAT_S', 3),
  durationS: envInt('BENCH_DURATION_S', 4),
  pairs: envInt('BENCH_PAIRS', 9),
  signIns: 10,
  metricsS: envInt('BENCH_METRICS_S', 20),
  swapRepeats: envInt('BENCH_SWAP_REPEATS', 5),
  swapPollMs: 5,
  swapTimeoutMs: 10_000,
  soakS: SOAK_ONLY_S ?? envInt('BENCH_SOAK_S', 60),
  soakSampleS: 5,
  soakClients: 5,
  startPairs: envInt('BENCH_START_PAIRS', 3),
}

const GOALS = {
  idleRssRatio: { op: '<=', target: 1.5 },
  soakSwingPct: { op: '<=', target: 10 },
  meRatio: { op: '>=', target: 0.75 },
  metricsMs: { op: '<', target: 10 },
  swapMs: { op: '<', target: 150 },
  startMs: { op: '<', target: 800 },
} as const

const USERNAME = 'bench'
const PASSWORD = 'correct horse battery'
const ME_PATH = '/api/auth/me'
const HELLO_PATH = '/api/hello'
const HELLO_SRC = join(REPO_ROOT, 'examples', 'hello-plugin')
const SOAK_PATHS = [
  ME_PATH,
  '/api/metrics',
  '/api/metrics/history?range=1h',
  '/api/extensions',
  '/api/audit?limit=20',
  '/api/users',
  '/api/version',
  '/health',
]

const agent = new Agent({ connect: { rejectUnauthorized: false } })

async function call(
  origin: string,
  method: 'GET' | 'POST',
  path: string,
  opts: { token?: string; json?: unknown; headers?: Record<string, string>; dispatcher?: Dispatcher } = {},
) {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`
  if (opts.json !== undefined) headers['content-type'] = 'application/json'
  const res = await request(new URL(path, origin), {
    method,
    headers,
    dispatcher: opts.dispatcher ?? agent,
    body: opts.json === undefined ? undefined : JSON.stringify(opts.json),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  })
  const text = await res.body.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    /* not JSON */
  }
  return { status: res.statusCode, body }
}

// ---------------------------------------------------------------------------------------------------
// Starting servers: spawn to the first 200 from /health
// ---------------------------------------------------------------------------------------------------

const DAEMON_ENV: Record<string, string> = {
  HOSTD_BUILTIN_PLUGINS: '1',
  HOSTD_LOG_LEVEL: 'info',
  // The kernel's own machinery (the registry's swap, its memory): the hello plugin runs in process here. What the
  // sandbox adds (an isolated hello's throughput, memory, upgrade) is test/bench/isolation.ts's, beside its own goals.
  HOSTD_PLUGINS_ISOLATION: 'off',
  // For experiments (heap or allocator settings): node options for the daemon only, never the bare server.
  ...(process.env.BENCH_DAEMON_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_DAEMON_NODE_OPTIONS } : {}),
}

async function firstHealth(origin: string): Promise<void> {
  const res = await call(origin, 'GET', '/health')
  if (res.status !== 200) throw new Error(`${origin}/health answered ${res.status}`)
}

/** Wall time and the server's own CPU time (utime + stime, the part a loaded machine does not inflate) to the first 200. */
async function timedDaemonStart(dataDir: string): Promise<{ daemon: Daemon; ms: number; cpuMs: number }> {
  const t0 = performance.now()
  const daemon = await startDaemon({ dataDir, env: DAEMON_ENV, startTimeoutMs: 30_000 })
  track(daemon.process)
  await firstHealth(daemon.url)
  return { daemon, ms: performance.now() - t0, cpuMs: cpuSeconds(daemon.pid) * 1000 }
}

async function timedBareStart(dataDir: string): Promise<{ bare: Bare; ms: number; cpuMs: number }> {
  const t0 = performance.now()
  const bare = await startBare(join(dataDir, 'tls', 'cert.pem'), join(dataDir, 'tls', 'key.pem'))
  await firstHealth(bare.origin)
  return { bare, ms: performance.now() - t0, cpuMs: cpuSeconds(bare.pid) * 1000 }
}

// ---------------------------------------------------------------------------------------------------
// Throughput: alternating pairs
// ---------------------------------------------------------------------------------------------------

interface LoadRun extends WrkResult {
  pair: number
  target: 'bare' | 'hostd'
  /** Server CPU per answered request, µs. */
  cpuUsPerRequest: number
}

async function loadRun(
  target: 'bare' | 'hostd',
  origin: string,
  pid: number,
  token: string,
  pair: number,
  durationS: number,
): Promise<LoadRun> {
  const r = await wrk({
    url: `${origin}${ME_PATH}`,
    connections: CFG.connections,
    durationS,
    headers: { authorization: `Bearer ${token}` },
    serverPid: pid,
  })
  return { ...r, pair, target, cpuUsPerRequest: (r.serverCpuS / r.requests) * 1e6 }
}

async function throughput(hostd: Daemon, bare: Bare, token: string): Promise<{ runs: LoadRun[]; figures: Figure[] }> {
  const servers = { bare: [bare.origin, bare.pid], hostd: [hostd.url, hostd.pid] } as const
  for (const target of ['bare', 'hostd'] as const) {
    await loadRun(target, servers[target][0], servers[target][1], token, 0, CFG.preheatS)
    console.log(`  preheat ${target} (${CFG.preheatS} s, not counted)`)
  }
  const runs: LoadRun[] = []
  for (let pair = 1; pair <= CFG.pairs; pair++) {
    // Odd pairs bare first, even pairs hostd first: a drift in the machine's load favours neither.
    const order = pair % 2 ? (['bare', 'hostd'] as const) : (['hostd', 'bare'] as const)
    for (const target of order) {
      const run = await loadRun(target, servers[target][0], servers[target][1], token, pair, CFG.durationS)
      runs.push(run)
      console.log(
        `  pair ${pair} ${target.padEnd(5)} ${Math.round(run.rps).toString().padStart(6)} req/s  ${Math.round(run.cpuUsPerRequest)} µs CPU/request` +
          `${run.non2xx || run.socketErrors ? `  (${run.non2xx} non-2xx, ${run.socketErrors} socket errors)` : ''}`,
      )
    }
  }
  console.log(
    '\nThroughput: GET /api/auth/me over TLS, wrk -t1 -c' +
      CFG.connections +
      ` -d${CFG.durationS}s (hostd: bearer token; bare: the same request, a hello-world)`,
  )
  console.log(
    table(
      runs.map((r) => [
        `${r.pair} ${r.target}`,
        Math.round(r.rps),
        round(r.p50Ms, 2),
        round(r.p99Ms, 2),
        r.non2xx,
        r.socketErrors,
        Math.round((r.serverCpuS / r.wallS) * 100),
        Math.round((r.clientCpuS / r.wallS) * 100),
        Math.round(r.cpuUsPerRequest),
      ]),
      ['run', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'server CPU%', 'wrk CPU%', 'server µs/req'],
    ),
  )
  const of = (target: string, pair: number) => runs.find((r) => r.target === target && r.pair === pair)!
  const ratios = Array.from({ length: CFG.pairs }, (_, i) => of('hostd', i + 1).rps / of('bare', i + 1).rps)
  const cpuRatios = Array.from(
    { length: CFG.pairs },
    (_, i) => of('bare', i + 1).cpuUsPerRequest / of('hostd', i + 1).cpuUsPerRequest,
  )
  const med = (target: string, key: 'rps' | 'cpuUsPerRequest') =>
    median(runs.filter((r) => r.target === target).map((r) => r[key]))
  const bad = runs.reduce((n, r) => n + r.non2xx + r.socketErrors, 0)
  return {
    runs,
    figures: [
      figure(
        'GET /api/auth/me req/s, hostd / bare (median of pairs)',
        median(ratios),
        'x',
        GOALS.meRatio,
        `min ${round(Math.min(...ratios), 2)}, max ${round(Math.max(...ratios), 2)} of ${CFG.pairs} pairs; ` +
          `medians ${Math.round(med('hostd', 'rps'))} / ${Math.round(med('bare', 'rps'))} req/s` +
          (bad ? `; ${bad} failed requests` : ''),
      ),
      figure(
        'server CPU per request, bare / hostd (median of pairs)',
        median(cpuRatios),
        'x',
        undefined,
        `hostd ${Math.round(med('hostd', 'cpuUsPerRequest'))} µs, bare ${Math.round(med('bare', 'cpuUsPerRequest'))} µs`,
      ),
    ],
  }
}

// ---------------------------------------------------------------------------------------------------
// GET /api/metrics latency
// ---------------------------------------------------------------------------------------------------

/**
 * Two clients, each polling every 50 ms (dashboards are slower; two at once is what made every answer wait for two
 * readings half a second apart): answers come from the shared sampler's fresh sample, one every 2 s reads the host.
 */
async function metricsLatency(hostd: Daemon, token: string): Promise<Figure> {
  // One request first, not counted: the route's first answer compiles its code paths; a dashboard polls for hours.
  if ((await call(hostd.url, 'GET', '/api/metrics', { token })).status !== 200)
    throw new Error('GET /api/metrics failed')
  const r = await wrk({
    url: `${hostd.url}/api/metrics`,
    connections: 2,
    durationS: CFG.metricsS,
    headers: { authorization: `Bearer ${token}` },
    script: wrkScript(['/api/metrics'], 50),
    serverPid: hostd.pid,
  })
  if (r.non2xx || r.socketErrors)
    throw new Error(`GET /api/metrics: ${r.non2xx} non-2xx, ${r.socketErrors} socket errors`)
  return figure(
    'GET /api/metrics latency, p99 (2 clients, each every 50 ms)',
    r.p99Ms,
    'ms',
    GOALS.metricsMs,
    `p50 ${round(r.p50Ms, 2)} ms, max ${round(r.maxMs, 2)} ms over ${r.requests} requests`,
  )
}

// ---------------------------------------------------------------------------------------------------
// Plugin hot-swap
// ---------------------------------------------------------------------------------------------------

interface SwapSample {
  ms: number
  /** Answers other than the old or the new one seen while waiting (e.g. a 404 or 503 during an upgrade). */
  blips: string[]
}

const copyFilter = (src: string) => basename(src) !== 'node_modules'

function helloSource(source: string, n: number): string {
  const next = source.replace("version: '1.0.0'", `version: '1.0.${n}'`).replace('`Hello, ${', `\`Hello v${n}, \${`)
  if (next === source || !next.includes(`Hello v${n}, `))
    throw new Error('examples/hello-plugin/src/index.ts changed shape: cannot make a new version of it')
  return next
}

/** Writes version 1.0.<n> of the hello plugin into `dir` (a copy first when `fresh`); returns the message it answers. */
async function writeHelloVersion(dir: string, n: number, fresh: boolean): Promise<string> {
  if (fresh) await cp(HELLO_SRC, dir, { recursive: true, filter: copyFilter })
  await writeFile(
    join(dir, 'src', 'index.ts'),
    helloSource(await readFile(join(HELLO_SRC, 'src', 'index.ts'), 'utf8'), n),
  )
  const pkg = JSON.parse(await readFile(join(HELLO_SRC, 'package.json'), 'utf8'))
  pkg.version = `1.0.${n}`
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
  return `Hello v${n}, ${USERNAME}!`
}

async function pluginSwaps(hostd: Daemon, token: string): Promise<{ figures: Figure[]; problems: string[] }> {
  const client = new Client(hostd.url, {
    connect: { rejectUnauthorized: false },
    pipelining: 1,
    keepAliveTimeout: 60_000,
  })
  const live = join(hostd.pluginsDir, 'hello')
  const staging = join(hostd.pluginsDir, '.hello-next') // dot-folders are ignored by the watcher
  const retired = join(hostd.pluginsDir, '.hello-old')
  const steps = {
    'drop-in': [] as SwapSample[],
    'upgrade, folder swap': [] as SwapSample[],
    'upgrade, rewrite in place': [] as SwapSample[],
    removal: [] as SwapSample[],
  }
  const problems: string[] = []
  /** Polls GET /api/hello every CFG.swapPollMs from t0 until `done`; other answers than `meanwhile` are blips. */
  const poll = async (
    t0: number,
    done: (s: number, b: any) => boolean,
    meanwhile: (s: number, b: any) => boolean,
  ): Promise<SwapSample> => {
    const blips = new Set<string>()
    for (let n = 1; ; n++) {
      const { status, body } = await call(hostd.url, 'GET', HELLO_PATH, { token, dispatcher: client })
      const now = performance.now()
      if (done(status, body)) return { ms: now - t0, blips: [...blips] }
      if (!meanwhile(status, body)) blips.add(`${status}${body?.message ? ` "${body.message}"` : ''}`)
      if (now - t0 > CFG.swapTimeoutMs)
        throw new Error(`no expected answer within ${CFG.swapTimeoutMs} ms (last: ${status} ${JSON.stringify(body)})`)
      const wait = t0 + n * CFG.swapPollMs - performance.now()
      if (wait > 0) await sleep(wait)
    }
  }
  const is200 = (s: number) => s === 200
  const is404 = (s: number) => s === 404
  const says = (message: string) => (s: number, b: any) => s === 200 && b?.message === message
  let version = 1
  try {
    if ((await call(hostd.url, 'GET', HELLO_PATH, { token, dispatcher: client })).status !== 404)
      throw new Error(`${HELLO_PATH} answers before any plugin was dropped in`)
    for (let cycle = 1; cycle <= CFG.swapRepeats; cycle++) {
      const step = async (name: keyof typeof steps, run: () => Promise<SwapSample>) => {
        steps[name].push(await run())
        await sleep(300) // the watcher and the registry go quiet before the next change
      }
      try {
        await step('drop-in', async () => {
          const t0 = performance.now()
          await cp(HELLO_SRC, live, { recursive: true, filter: copyFilter })
          return poll(t0, is200, is404)
        })
        await step('upgrade, folder swap', async () => {
          await rm(staging, { recursive: true, force: true })
          const expected = await writeHelloVersion(staging, version++, true)
          const t0 = performance.now()
          await rename(live, retired)
          await rename(staging, live)
          const sample = await poll(t0, says(expected), is200)
          await rm(retired, { recursive: true, force: true })
          return sample
        })
        await step('upgrade, rewrite in place', async () => {
          const t0 = performance.now()
          const expected = await writeHelloVersion(live, version++, false)
          return poll(t0, says(expected), is200)
        })
        await step('removal', async () => {
          const t0 = performance.now()
          await rm(live, { recursive: true, force: true })
          return poll(t0, is404, is200)
        })
      } catch (err) {
        problems.push(`cycle ${cycle}: ${(err as Error).message}`)
        for (const dir of [live, staging, retired]) await rm(dir, { recursive: true, force: true })
        await poll(performance.now(), is404, () => true).catch(() => undefined)
      }
    }
  } finally {
    await client.close().catch(() => undefined)
  }
  console.log(
    `\nPlugin hot-swap: GET ${HELLO_PATH} polled every ${CFG.swapPollMs} ms from the change, ${CFG.swapRepeats} cycles`,
  )
  console.log(
    table(
      Object.entries(steps).map(([name, samples]) => [
        name,
        round(median(samples.map((s) => s.ms))),
        round(Math.max(...samples.map((s) => s.ms))),
        samples.map((s) => Math.round(s.ms)).join(' '),
        [...new Set(samples.flatMap((s) => s.blips))].join(', ') || '-',
      ]),
      ['operation', 'median ms', 'max ms', 'samples ms', 'other answers while waiting'],
    ),
  )
  for (const p of problems) console.log(`  problem: ${p}`)
  const figures = Object.entries(steps).map(([name, samples]) => {
    const ms = samples.map((s) => s.ms)
    return figure(
      `plugin ${name} (median)`,
      median(ms),
      'ms',
      GOALS.swapMs,
      `max ${round(Math.max(...ms))} ms of ${ms.length}${ms.length < CFG.swapRepeats ? ` (${CFG.swapRepeats - ms.length} failed)` : ''}`,
    )
  })
  return { figures, problems }
}

// ---------------------------------------------------------------------------------------------------
// Soak: 10 req/s of mixed GETs (wrk, paced) and 5 event-stream clients (curl), RSS every 5 s
// ---------------------------------------------------------------------------------------------------

async function soak(
  hostd: Daemon,
  token: string,
  seconds: number,
): Promise<{ figure: Figure; samples: { s: number; memory: Memory }[] }> {
  console.log(
    `\nSoak: ${seconds} s of ~10 req/s over ${SOAK_PATHS.length} GET routes (wrk, 1 connection, one request per ` +
      `100 ms) and ${CFG.soakClients} GET /api/metrics/stream clients (curl)`,
  )
  const events: number[] = Array(CFG.soakClients).fill(0)
  const streams = Array.from({ length: CFG.soakClients }, (_, i) => {
    const child = track(
      spawn('curl', ['-sk', '-N', '-H', `authorization: Bearer ${token}`, `${hostd.url}/api/metrics/stream`], {
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    )
    createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('event: metrics') && events[i]!++)
    return child
  })
  const samples: { s: number; memory: Memory }[] = []
  const printEveryS = seconds >= 300 ? 60 : 10
  const t0 = performance.now()
  const load = wrk({
    url: hostd.url,
    connections: 1,
    durationS: seconds,
    headers: { authorization: `Bearer ${token}` },
    script: wrkScript(SOAK_PATHS, 100),
    serverPid: hostd.pid,
  })
  let done = false
  void load.finally(() => (done = true)).catch(() => undefined)
  for (let n = 0; !done; n++) {
    const s = n * CFG.soakSampleS
    const memory = await memoryOf(hostd.pid)
    samples.push({ s, memory })
    if (s % printEveryS === 0) console.log(`  ${String(s).padStart(4)} s  RSS ${showMemory(memory)}`)
    const next = t0 + (n + 1) * CFG.soakSampleS * 1000
    while (!done && performance.now() < next) await sleep(Math.max(0, Math.min(200, next - performance.now())))
  }
  const result = await load
  for (const child of streams) await stopChild(child)
  const rss = samples.map((x) => x.memory.rss)
  const min = Math.min(...rss)
  const max = Math.max(...rss)
  const swing = ((max - min) / min) * 100
  console.log(
    `  ${result.requests} requests (${round(result.rps)} req/s, ${result.non2xx} non-2xx, ` +
      `${result.socketErrors} socket errors); events per stream client: ${events.join(', ')}`,
  )
  console.log(`  RSS min ${min} MiB, max ${max} MiB: swing ${round(swing)} %`)
  if (result.non2xx || result.socketErrors) throw new Error('the soak had failed requests')
  if (events.some((n) => n < seconds / 2 / 2))
    throw new Error(`an event-stream client got too few events: ${events.join(', ')}`)
  return {
    figure: figure(
      `RSS swing in a ${seconds >= 60 ? `${round(seconds / 60)} min` : `${seconds} s`} soak`,
      swing,
      '%',
      GOALS.soakSwingPct,
      `min ${min} MiB, max ${max} MiB, ${samples.length} samples${seconds < 600 ? '; the goal is for 10 min: --soak 10m' : ''}`,
    ),
    samples,
  }
}

// ---------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------

async function signIns(hostd: Daemon): Promise<string> {
  const setup = await call(hostd.url, 'POST', '/api/setup', { json: { username: USERNAME, password: PASSWORD } })
  if (setup.status !== 201) throw new Error(`POST /api/setup answered ${setup.status}: ${JSON.stringify(setup.body)}`)
  let token = ''
  for (let i = 0; i < CFG.signIns; i++) {
    const login = await call(hostd.url, 'POST', '/api/auth/login', {
      json: { username: USERNAME, password: PASSWORD },
      headers: { 'x-svc-client': 'bench' },
    })
    if (login.status !== 200 || typeof login.body?.token !== 'string')
      throw new Error(`login answered ${login.status}: ${JSON.stringify(login.body)}`)
    token = login.body.token
  }
  const me = await call(hostd.url, 'GET', ME_PATH, { token })
  if (me.status !== 200 || me.body?.username !== USERNAME) throw new Error(`GET ${ME_PATH} answered ${me.status}`)
  return token
}

async function main(): Promise<void> {
  const began = performance.now()
  if (!process.version.startsWith('v24.'))
    console.warn(`warning: node ${process.version}; the repository pins node 24 (npm run bench uses it)`)
  const dataDir = join(tempDir('hostd-bench-'), 'data')
  const figures: Figure[] = []
  const extra: Record<string, unknown> = {}
  console.log(
    `hostd kernel bench: node ${process.version}, ${cpus().length} CPUs` +
      (SOAK_ONLY_S ? `, soak only (${SOAK_ONLY_S} s)` : ''),
  )

  // First start on an empty data dir (certificate and database made), setup and ten sign-ins, then idle memory.
  const { daemon: hostd, ms: firstStartMs } = await timedDaemonStart(dataDir)
  const token = await signIns(hostd)
  await sleep(2000)
  const hostdIdle = await memoryOf(hostd.pid)
  console.log(
    `\nhostd: first start to /health ${Math.round(firstStartMs)} ms; after setup and ${CFG.signIns} sign-ins, 2 s idle: RSS ${showMemory(hostdIdle)}`,
  )
  extra.hostdIdle = hostdIdle

  // The soak starts from that state, in the default run (1 min) as in `--soak 10m`.
  const soaked = await soak(hostd, token, CFG.soakS)
  extra.soak = soaked.samples
  if (SOAK_ONLY_S) figures.push(soaked.figure)
  else {
    const { bare } = await timedBareStart(dataDir)
    await sleep(2000)
    const bareIdle = await memoryOf(bare.pid)
    console.log(`bare:  after one request, 2 s idle: RSS ${showMemory(bareIdle)}\n`)
    figures.push(
      figure(
        `idle RSS after setup + ${CFG.signIns} sign-ins, hostd / bare`,
        hostdIdle.rss / bareIdle.rss,
        'x',
        GOALS.idleRssRatio,
        `hostd ${hostdIdle.rss} MiB (anon ${hostdIdle.anon}), bare ${bareIdle.rss} MiB (anon ${bareIdle.anon})`,
      ),
      soaked.figure,
    )

    const t = await throughput(hostd, bare, token)
    figures.push(...t.figures)
    await sleep(2000)
    const [hostdLoaded, bareLoaded] = await Promise.all([memoryOf(hostd.pid), memoryOf(bare.pid)])
    console.log(`\nAfter the load, 2 s idle: hostd RSS ${showMemory(hostdLoaded)}, bare ${showMemory(bareLoaded)}`)
    figures.push(
      figure(
        'RSS after the load, hostd / bare',
        hostdLoaded.rss / bareLoaded.rss,
        'x',
        undefined,
        `hostd ${hostdLoaded.rss} MiB, bare ${bareLoaded.rss} MiB`,
      ),
    )
    await bare.stop()

    figures.push(await metricsLatency(hostd, token))
    const swaps = await pluginSwaps(hostd, token)
    figures.push(...swaps.figures)
    await sleep(2000)
    const afterSwaps = await memoryOf(hostd.pid)
    console.log(`After ${CFG.swapRepeats} plugin cycles, 2 s idle: hostd RSS ${showMemory(afterSwaps)}`)

    Object.assign(extra, {
      hostdLoaded,
      bareIdle,
      bareLoaded,
      afterSwaps,
      throughputRuns: t.runs,
      swapProblems: swaps.problems,
    })

    // Start to the first /health: hostd restarted on its data dir (what a restart costs), bare started, alternately.
    await hostd.stop({ keepDataDir: true })
    const startOnce = {
      hostd: async () => {
        const { daemon, ms, cpuMs } = await timedDaemonStart(dataDir)
        await daemon.stop({ keepDataDir: true })
        return { ms, cpuMs }
      },
      bare: async () => {
        const { bare, ms, cpuMs } = await timedBareStart(dataDir)
        await bare.stop()
        return { ms, cpuMs }
      },
    }
    const starts = { hostd: [] as number[], bare: [] as number[] }
    const startCpu = { hostd: [] as number[], bare: [] as number[] }
    for (let pair = 1; pair <= CFG.startPairs; pair++) {
      for (const which of pair % 2 ? (['hostd', 'bare'] as const) : (['bare', 'hostd'] as const)) {
        const { ms, cpuMs } = await startOnce[which]()
        starts[which].push(ms)
        startCpu[which].push(cpuMs)
      }
    }
    console.log(
      `\nStart to first /health 200 (ms): hostd ${starts.hostd.map(Math.round).join(', ')}; bare ${starts.bare.map(Math.round).join(', ')}`,
    )
    console.log(
      `Server CPU to first /health 200 (ms): hostd ${startCpu.hostd.map(Math.round).join(', ')}; bare ${startCpu.bare.map(Math.round).join(', ')}`,
    )
    figures.push(
      figure(
        'start to first /health (restart, median)',
        median(starts.hostd),
        'ms',
        GOALS.startMs,
        `bare ${Math.round(median(starts.bare))} ms ` +
          `(hostd / bare ${round(median(starts.hostd) / median(starts.bare), 2)}); first start ${Math.round(firstStartMs)} ms`,
      ),
    )
    figures.push(
      figure(
        'server CPU to first /health (restart, median)',
        median(startCpu.hostd),
        'ms',
        undefined,
        `bare ${Math.round(median(startCpu.bare))} ms ` +
          `(hostd / bare ${round(median(startCpu.hostd) / median(startCpu.bare), 2)}); what the wall time is on an idle core`,
      ),
    )
    Object.assign(extra, { starts, startCpu })
  }
  await hostd.stop()

  console.log(
    `\nFigures (whole kernel bench ${round((performance.now() - began) / 1000)} s; ${cpus().length} shared CPUs: compare ratios, not absolutes)`,
  )
  console.log(figureTable(figures))
  printBenchJson('kernel', figures, extra)
}

await runBench('kernel', main, (SOAK_ONLY_S ?? 0) * 1000 + 10 * 60_000)
await agent.close()
