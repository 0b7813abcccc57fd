/**
 * hostd benchmark (`npm run bench`). One run measures, against a real spawned daemon:
 *   1. authenticated GET /api/auth/me requests per second over TLS, next to a bare Fastify HTTPS
 *      hello-world measured the same way (both servers in child processes, the load generator here);
 *   2. plugin hot-swap times: drop-in, upgrade (folder swap and in-place rewrite) and removal;
 *   3. resident memory (VmRSS) of the idle daemon, before and after load, with the bare server as reference.
 * It prints a table and one final `BENCH_JSON {...}` line. See test/bench/README.md.
 *
 * The same file is re-executed as `bench.ts --bare-server <cert> <key>` to run the bare Fastify server.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { cp, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'

type Undici = typeof import('undici')
type Dispatcher = import('undici').Dispatcher

const SELF = fileURLToPath(import.meta.url)
const REPO = join(dirname(SELF), '..', '..')
const HELLO_SRC = join(REPO, 'examples', 'hello-plugin')

function envInt(name: string, fallback: number): number {
  const raw = process.env[name]
  const n = raw ? Number(raw) : NaN
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback
}

/** Knobs (environment overrides are for experiments; the defaults are what the numbers in the README mean). */
const CFG = {
  connections: envInt('BENCH_CONNECTIONS', 32),
  warmupMs: envInt('BENCH_WARMUP_MS', 1000),
  durationMs: envInt('BENCH_DURATION_MS', 4000),
  rounds: envInt('BENCH_ROUNDS', 5),
  /** One unmeasured load run per server before the rounds: steady state (JIT) is what the rounds compare. */
  preheatMs: envInt('BENCH_PREHEAT_MS', 4000),
  swapRepeats: envInt('BENCH_SWAP_REPEATS', 5),
  pollMs: 10,
  swapTimeoutMs: 10_000,
  startTimeoutMs: 30_000,
  goalRatio: 0.6,
}
const USERNAME = 'bench'
const PASSWORD = 'correct horse battery'
const ME_PATH = '/api/auth/me'
const HELLO_PATH = '/api/hello'

// ---------------------------------------------------------------------------------------------------
// Bare Fastify server (child mode)
// ---------------------------------------------------------------------------------------------------

async function bareServer(certFile: string, keyFile: string): Promise<void> {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({
    logger: false,
    https: { cert: readFileSync(certFile), key: readFileSync(keyFile), minVersion: 'TLSv1.2' },
  })
  // A hello-world handler, mounted at the same path the daemon is measured on so both get identical requests.
  app.get(ME_PATH, async () => ({ hello: 'world' }))
  app.get('/', async () => ({ hello: 'world' }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  process.stdout.write(`bare serving https://127.0.0.1:${port}\n`)
  const stop = () => void app.close().finally(() => process.exit(0))
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

// ---------------------------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------------------------

interface Server {
  name: string
  child: ChildProcess
  pid: number
  origin: string
  /** Last lines of stdout/stderr, for error reports. */
  log: string[]
}

const children = new Set<ChildProcess>()
const tempDirs = new Set<string>()

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null
}

/** Spawns a server and resolves once it prints its https URL; keeps draining its output afterwards. */
async function startServer(name: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<Server> {
  const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  const log: string[] = []
  const keep = (line: string) => {
    log.push(line)
    if (log.length > 60) log.shift()
  }
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not get ready within ${CFG.startTimeoutMs} ms\n${log.join('\n')}`)), CFG.startTimeoutMs)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(line)
      const m = ready.exec(line)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    createInterface({ input: child.stderr! }).on('line', (line) => keep(`[stderr] ${line}`))
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited (code ${code}, signal ${signal}) before it was ready\n${log.join('\n')}`))
    })
  })
  if (!child.pid) throw new Error(`${name}: no pid`)
  return { name, child, pid: child.pid, origin, log }
}

/** SIGTERM by pid, then SIGKILL if it has not exited within 5 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (alive(child)) {
    const exited = once(child, 'exit').catch(() => undefined)
    child.kill('SIGTERM')
    await Promise.race([exited, sleep(5000)])
    if (alive(child)) {
      child.kill('SIGKILL')
      await Promise.race([exited, sleep(2000)])
    }
  }
  children.delete(child)
}

async function cleanup(): Promise<void> {
  await Promise.all([...children].map(stopChild))
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true }).catch(() => undefined)
  tempDirs.clear()
}

// Last resort (e.g. an exception escaping everything): kill what is left synchronously, remove temp dirs.
process.on('exit', () => {
  for (const child of children) if (alive(child)) child.kill('SIGKILL')
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

// ---------------------------------------------------------------------------------------------------
// /proc readings
// ---------------------------------------------------------------------------------------------------

let clockTicks = 100
try {
  clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
} catch {
  /* keep 100 */
}

/** VmRSS of a process in KiB. */
async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(m[1])
}

/** user+system CPU seconds a process has used so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / clockTicks // utime, stime (fields 14 and 15)
}

// ---------------------------------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------------------------------

async function call(
  dispatcher: Dispatcher,
  origin: string,
  method: 'GET' | 'POST',
  path: string,
  opts: { token?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`
  if (opts.json !== undefined) headers['content-type'] = 'application/json'
  const res = await dispatcher.request({
    origin,
    method,
    path,
    headers,
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
// Load generator
// ---------------------------------------------------------------------------------------------------

interface LoadRun {
  round: number
  target: 'bare' | 'hostd'
  rps: number
  ok: number
  non2xx: number
  errors: number
  errorSamples: string[]
  p50Ms: number
  p99Ms: number
  serverCpuPct: number
  clientCpuPct: number
  /** 2xx answers per second of server CPU time: efficiency, less sensitive to the shared cores. */
  reqPerServerCpuSec: number
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return NaN
  const mid = Math.floor(v.length / 2)
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
}

/**
 * `connections` workers, each with one request in flight at a time, on a keep-alive Pool (pipelining 1).
 * Warm-up (handshakes, JIT), then a measured window; every loop ends by itself at the deadline.
 * Only 2xx answers completed inside the window count; non-2xx and errors are counted over the whole run.
 */
async function loadRun(undici: Undici, server: Server, target: 'bare' | 'hostd', round: number, token: string, durationMs = CFG.durationMs): Promise<LoadRun> {
  const pool = new undici.Pool(server.origin, {
    connections: CFG.connections,
    pipelining: 1,
    connect: { rejectUnauthorized: false },
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 60_000,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  })
  const headers = { authorization: `Bearer ${token}` }
  const t0 = performance.now()
  const measureStart = t0 + CFG.warmupMs
  const end = measureStart + durationMs
  let ok = 0
  let non2xx = 0
  let errors = 0
  const errorSamples = new Map<string, number>()
  const latencies: number[] = []
  let serverCpu0 = 0
  let clientCpu0: NodeJS.CpuUsage = process.cpuUsage()
  let serverCpu1 = 0
  let clientCpu1: NodeJS.CpuUsage = clientCpu0
  const startTimer = setTimeout(() => {
    serverCpu0 = cpuSeconds(server.pid)
    clientCpu0 = process.cpuUsage()
  }, CFG.warmupMs)
  const endTimer = setTimeout(() => {
    serverCpu1 = cpuSeconds(server.pid)
    clientCpu1 = process.cpuUsage(clientCpu0)
  }, CFG.warmupMs + durationMs)

  const worker = async () => {
    for (;;) {
      const start = performance.now()
      if (start >= end) return
      try {
        const res = await pool.request({ method: 'GET', path: ME_PATH, headers })
        await res.body.dump()
        const done = performance.now()
        if (res.statusCode >= 200 && res.statusCode < 300) {
          if (done >= measureStart && done < end) {
            ok++
            latencies.push(done - start)
          }
        } else {
          non2xx++
          const key = `HTTP ${res.statusCode}`
          errorSamples.set(key, (errorSamples.get(key) ?? 0) + 1)
        }
      } catch (err) {
        errors++
        const e = err as NodeJS.ErrnoException
        const key = `${e.code ?? e.name}: ${e.message}`
        errorSamples.set(key, (errorSamples.get(key) ?? 0) + 1)
        await sleep(10) // no hot loop on a dead server
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: CFG.connections }, worker))
  } finally {
    clearTimeout(startTimer)
    clearTimeout(endTimer)
    await pool.close().catch(() => undefined)
  }
  if (serverCpu1 === 0) serverCpu1 = cpuSeconds(server.pid) // timer starved: read now
  const seconds = durationMs / 1000
  const serverCpu = serverCpu1 - serverCpu0
  latencies.sort((a, b) => a - b)
  return {
    round,
    target,
    rps: ok / seconds,
    ok,
    non2xx,
    errors,
    errorSamples: [...errorSamples].map(([k, n]) => `${n}× ${k}`),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    serverCpuPct: (serverCpu / seconds) * 100,
    clientCpuPct: ((clientCpu1.user + clientCpu1.system) / 1e6 / seconds) * 100,
    reqPerServerCpuSec: serverCpu > 0 ? ok / serverCpu : NaN,
  }
}

// ---------------------------------------------------------------------------------------------------
// Plugin hot-swap
// ---------------------------------------------------------------------------------------------------

interface SwapSample {
  ms: number
  /** Statuses other than the old or new answer seen while waiting (e.g. 404/503 during an upgrade). */
  blips: string[]
}

interface SwapStats {
  samples: (number | null)[]
  medianMs: number
  minMs: number
  maxMs: number
  failures: number
  blips: string[]
}

const copyFilter = (src: string) => basename(src) !== 'node_modules'

/** A copy of examples/hello-plugin at version 1.0.<n> whose message is "Hello v<n>, <user>!". */
async function writeHelloVersion(dir: string, n: number): Promise<string> {
  await cp(HELLO_SRC, dir, { recursive: true, filter: copyFilter })
  const entry = join(dir, 'src', 'index.ts')
  const source = await readFile(entry, 'utf8')
  const next = source.replace("version: '1.0.0'", `version: '1.0.${n}'`).replace('`Hello, ${', `\`Hello v${n}, \${`)
  if (next === source || !next.includes(`Hello v${n}, `) || !next.includes(`'1.0.${n}'`)) {
    throw new Error('examples/hello-plugin/src/index.ts changed shape: cannot make a new version of it')
  }
  await writeFile(entry, next)
  const pkgFile = join(dir, 'package.json')
  const pkg = JSON.parse(await readFile(pkgFile, 'utf8'))
  pkg.version = `1.0.${n}`
  await writeFile(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`)
  return `Hello v${n}, ${USERNAME}!`
}

/** Rewrites an installed hello plugin's files in place to version 1.0.<n>. */
async function rewriteHelloInPlace(dir: string, n: number): Promise<string> {
  const source = await readFile(join(HELLO_SRC, 'src', 'index.ts'), 'utf8')
  const next = source.replace("version: '1.0.0'", `version: '1.0.${n}'`).replace('`Hello, ${', `\`Hello v${n}, \${`)
  const pkg = JSON.parse(await readFile(join(HELLO_SRC, 'package.json'), 'utf8'))
  pkg.version = `1.0.${n}`
  await writeFile(join(dir, 'src', 'index.ts'), next)
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
  return `Hello v${n}, ${USERNAME}!`
}

/**
 * Polls GET /api/hello every CFG.pollMs (fixed cadence from t0) until `done` holds; returns ms since t0.
 * Answers that are neither `done` nor `expectedWhileWaiting` are collected as blips.
 */
async function pollHello(
  client: Dispatcher,
  hostd: Server,
  token: string,
  t0: number,
  done: (status: number, body: any) => boolean,
  expectedWhileWaiting: (status: number, body: any) => boolean,
): Promise<SwapSample> {
  const blips: string[] = []
  for (let n = 1; ; n++) {
    const { status, body } = await call(client, hostd.origin, 'GET', HELLO_PATH, { token })
    const now = performance.now()
    if (done(status, body)) return { ms: now - t0, blips }
    if (!expectedWhileWaiting(status, body)) {
      const what = `${status}${body?.message ? ` "${body.message}"` : body?.code ? ` ${body.code}` : ''}`
      if (!blips.includes(what)) blips.push(what)
    }
    if (now - t0 > CFG.swapTimeoutMs) throw new Error(`no expected answer within ${CFG.swapTimeoutMs} ms (last: ${status} ${JSON.stringify(body)})`)
    const next = t0 + n * CFG.pollMs
    const wait = next - performance.now()
    if (wait > 0) await sleep(wait)
  }
}

function swapStats(samples: (SwapSample | null)[]): SwapStats {
  const ms = samples.map((s) => (s ? s.ms : null))
  const good = ms.filter((x): x is number => x !== null)
  return {
    samples: ms.map((x) => (x === null ? null : round1(x))),
    medianMs: round1(median(good)),
    minMs: round1(good.length ? Math.min(...good) : NaN),
    maxMs: round1(good.length ? Math.max(...good) : NaN),
    failures: ms.length - good.length,
    blips: [...new Set(samples.flatMap((s) => s?.blips ?? []))],
  }
}

async function pluginSwaps(undici: Undici, hostd: Server, token: string, pluginsDir: string) {
  const client = new undici.Client(hostd.origin, { connect: { rejectUnauthorized: false }, pipelining: 1, keepAliveTimeout: 60_000 })
  const live = join(pluginsDir, 'hello')
  const staging = join(pluginsDir, '.hello-next') // dot-folders are ignored by the watcher
  const retired = join(pluginsDir, '.hello-old')
  const dropIn: (SwapSample | null)[] = []
  const folderSwap: (SwapSample | null)[] = []
  const rewrite: (SwapSample | null)[] = []
  const removal: (SwapSample | null)[] = []
  const problems: string[] = []
  const is404 = (s: number) => s === 404
  const is200 = (s: number) => s === 200
  let version = 1
  try {
    const first = await call(client, hostd.origin, 'GET', HELLO_PATH, { token })
    if (first.status !== 404) throw new Error(`GET ${HELLO_PATH} answers ${first.status} before any plugin was dropped in`)
    for (let i = 0; i < CFG.swapRepeats; i++) {
      const step = async (name: string, list: (SwapSample | null)[], run: () => Promise<SwapSample>) => {
        try {
          list.push(await run())
        } catch (err) {
          list.push(null)
          problems.push(`cycle ${i + 1} ${name}: ${(err as Error).message}`)
          throw err
        }
        await sleep(200) // let the watcher and registry go quiet before the next change
      }
      try {
        // 1. Fresh drop-in: copy the folder in, until the first 200.
        await step('drop-in', dropIn, async () => {
          const t0 = performance.now()
          await cp(HELLO_SRC, live, { recursive: true, filter: copyFilter })
          return pollHello(client, hostd, token, t0, is200, is404)
        })
        // 2. Upgrade by folder swap: new version staged beside it, then two renames.
        await step('upgrade (folder swap)', folderSwap, async () => {
          const n = version++
          await rm(staging, { recursive: true, force: true })
          const expected = await writeHelloVersion(staging, n)
          const t0 = performance.now()
          await rename(live, retired)
          await rename(staging, live)
          const sample = await pollHello(client, hostd, token, t0, (s, b) => s === 200 && b?.message === expected, (s) => s === 200)
          await rm(retired, { recursive: true, force: true })
          return sample
        })
        // 3. Upgrade by rewriting the files in place.
        await step('upgrade (rewrite in place)', rewrite, async () => {
          const n = version++
          const t0 = performance.now()
          const expected = await rewriteHelloInPlace(live, n)
          return pollHello(client, hostd, token, t0, (s, b) => s === 200 && b?.message === expected, (s) => s === 200)
        })
        // 4. Removal: delete the folder, until the first 404.
        await step('removal', removal, async () => {
          const t0 = performance.now()
          await rm(live, { recursive: true, force: true })
          return pollHello(client, hostd, token, t0, is404, is200)
        })
      } catch {
        // Put things back to "no plugin" and go on with the next cycle.
        await rm(live, { recursive: true, force: true })
        await rm(staging, { recursive: true, force: true })
        await rm(retired, { recursive: true, force: true })
        await pollHello(client, hostd, token, performance.now(), is404, () => true).catch(() => undefined)
        await sleep(500)
      }
    }
  } finally {
    await client.close().catch(() => undefined)
  }
  return {
    dropIn: swapStats(dropIn),
    upgradeFolderSwap: swapStats(folderSwap),
    upgradeRewrite: swapStats(rewrite),
    removal: swapStats(removal),
    problems,
  }
}

// ---------------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------------

const round1 = (x: number) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : NaN)
const round3 = (x: number) => (Number.isFinite(x) ? Math.round(x * 1000) / 1000 : NaN)
const mib = (kib: number) => round1(kib / 1024)

function table(rows: (string | number)[][], header: string[]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? (Number.isFinite(c) ? String(c) : '-') : c)))]
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)))
  const line = (r: (string | number)[]) => '  ' + r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('  ')
  return [line(cells[0]!), '  ' + widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n')
}

// ---------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const began = performance.now()
  const undici: Undici = await import('undici')
  if (!process.version.startsWith('v24.')) {
    console.warn(`warning: running on node ${process.version}; the repository pins node 24 (export PATH=node_modules/.bin:$PATH)`)
  }
  const agent = new undici.Agent({ connect: { rejectUnauthorized: false } })
  const tmp = await mkdtemp(join(tmpdir(), 'hostd-bench-'))
  tempDirs.add(tmp)
  const dataDir = join(tmp, 'data')
  const pluginsDir = join(dataDir, 'plugins')
  const results: Record<string, unknown> = {}
  try {
    console.log(
      `hostd bench: node ${process.version}, ${cpus().length} CPUs, ${CFG.connections} connections, ` +
        `${CFG.preheatMs} ms unmeasured preheat per server, then ${CFG.rounds} rounds per server of ` +
        `${CFG.warmupMs} ms warm-up + ${CFG.durationMs} ms measured\n`,
    )

    // --- the daemon ---
    const env: NodeJS.ProcessEnv = {}
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HOSTD_') && k !== 'DOCKER_HOST') env[k] = v
    Object.assign(env, {
      HOSTD_DATA_DIR: dataDir,
      HOSTD_PLUGINS_DIR: pluginsDir,
      HOSTD_HOST: '127.0.0.1',
      HOSTD_PORT: '0', // the kernel binds a free port and prints it
      HOSTD_HELPER_SOCKET: join(tmp, 'helper.sock'),
    })
    const startedAt = performance.now()
    const hostd = await startServer('hostd', ['kernel/src/main.ts'], env, /serving (https:\/\/127\.0\.0\.1:\d+)/)
    const startupMs = performance.now() - startedAt
    const setup = await call(agent, hostd.origin, 'POST', '/api/setup', { json: { username: USERNAME, password: PASSWORD } })
    if (setup.status !== 201) throw new Error(`POST /api/setup answered ${setup.status}: ${JSON.stringify(setup.body)}`)
    const login = await call(agent, hostd.origin, 'POST', '/api/auth/login', {
      json: { username: USERNAME, password: PASSWORD },
      headers: { 'x-svc-client': '1' },
    })
    if (login.status !== 200 || typeof login.body?.token !== 'string') throw new Error(`login answered ${login.status}: ${JSON.stringify(login.body)}`)
    const token: string = login.body.token
    const me = await call(agent, hostd.origin, 'GET', ME_PATH, { token })
    if (me.status !== 200 || me.body?.username !== USERNAME) throw new Error(`GET ${ME_PATH} answered ${me.status}: ${JSON.stringify(me.body)}`)
    await sleep(1000)
    const hostdIdleKiB = await rssKiB(hostd.pid)

    // --- the bare Fastify server, with the cert and key hostd generated ---
    const bare = await startServer(
      'bare fastify',
      [SELF, '--bare-server', join(dataDir, 'tls', 'cert.pem'), join(dataDir, 'tls', 'key.pem')],
      env,
      /bare serving (https:\/\/127\.0\.0\.1:\d+)/,
    )
    const bareCheck = await call(agent, bare.origin, 'GET', ME_PATH, { token })
    if (bareCheck.status !== 200) throw new Error(`bare server answered ${bareCheck.status}`)
    await sleep(1000)
    const bareIdleKiB = await rssKiB(bare.pid)

    // --- throughput: a preheat per server, then rounds that alternate which server goes first ---
    for (const [target, server] of [['bare', bare], ['hostd', hostd]] as const) {
      await loadRun(undici, server, target, 0, token, CFG.preheatMs)
      process.stdout.write(`  preheat ${target}\n`)
    }
    const runs: LoadRun[] = []
    for (let r = 1; r <= CFG.rounds; r++) {
      const pair = [['bare', bare], ['hostd', hostd]] as const
      // Odd rounds bare first, even rounds hostd first: a drift in machine load favours neither.
      for (const [target, server] of r % 2 ? pair : [pair[1], pair[0]]) {
        const run = await loadRun(undici, server, target, r, token)
        runs.push(run)
        process.stdout.write(
          `  round ${r} ${target.padEnd(5)} ${run.rps.toFixed(0).padStart(6)} req/s` +
            `${run.non2xx || run.errors ? `  (${run.non2xx} non-2xx, ${run.errors} errors)` : ''}\n`,
        )
      }
    }
    for (const server of [hostd, bare]) if (!alive(server.child)) throw new Error(`${server.name} died during the load test\n${server.log.join('\n')}`)
    await sleep(2000)
    const [hostdAfterLoadKiB, bareAfterLoadKiB] = await Promise.all([rssKiB(hostd.pid), rssKiB(bare.pid)])
    await stopChild(bare.child) // its cores are not needed any more

    const bareRps = median(runs.filter((r) => r.target === 'bare').map((r) => r.rps))
    const hostdRps = median(runs.filter((r) => r.target === 'hostd').map((r) => r.rps))
    const ratio = hostdRps / bareRps
    // Within each round, hostd over bare: drifting machine load cancels out within a pair.
    const rpsOf = (target: string, round: number) => runs.find((run) => run.target === target && run.round === round)!.rps
    const pairedRatios = Array.from({ length: CFG.rounds }, (_, i) => rpsOf('hostd', i + 1) / rpsOf('bare', i + 1))
    const pairedRatio = median(pairedRatios)
    const bareEff = median(runs.filter((r) => r.target === 'bare').map((r) => r.reqPerServerCpuSec))
    const hostdEff = median(runs.filter((r) => r.target === 'hostd').map((r) => r.reqPerServerCpuSec))

    // --- plugin hot-swap ---
    console.log('\n  plugin hot-swap cycles ...')
    const swaps = await pluginSwaps(undici, hostd, token, pluginsDir)
    await sleep(2000)
    const hostdAfterSwapsKiB = await rssKiB(hostd.pid)
    if (!alive(hostd.child)) throw new Error(`hostd died during the plugin cycles\n${hostd.log.join('\n')}`)

    // --- report ---
    console.log('\nThroughput: GET /api/auth/me over TLS, keep-alive, pipelining 1 (hostd: bearer token; bare: hello-world)')
    console.log(
      table(
        runs.map((r) => [
          `${r.round} ${r.target}`,
          Math.round(r.rps),
          round1(r.p50Ms),
          round1(r.p99Ms),
          r.non2xx,
          r.errors,
          Math.round(r.serverCpuPct),
          Math.round(r.clientCpuPct),
          Math.round(r.reqPerServerCpuSec),
        ]),
        ['run', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'server CPU%', 'client CPU%', 'req/server-CPU-s'],
      ),
    )
    const errorLines = runs.flatMap((r) => r.errorSamples.map((s) => `    round ${r.round} ${r.target}: ${s}`))
    if (errorLines.length) console.log(`  errors under load:\n${errorLines.join('\n')}`)
    console.log(`\n  median bare : ${Math.round(bareRps)} req/s   (${Math.round(bareEff)} req per server CPU-second)`)
    console.log(`  median hostd: ${Math.round(hostdRps)} req/s   (${Math.round(hostdEff)} req per server CPU-second)`)
    console.log(
      `  ratio hostd/bare (of medians): ${ratio.toFixed(3)}  -> goal >= ${CFG.goalRatio}: ${ratio >= CFG.goalRatio ? 'MET' : 'NOT MET'}`,
    )
    console.log(
      `  cross-checks: median of per-round ratios ${pairedRatio.toFixed(3)} (${pairedRatios.map((r) => r.toFixed(2)).join(', ')}); ` +
        `per server CPU-second ${(hostdEff / bareEff).toFixed(3)}`,
    )

    console.log(`\nPlugin hot-swap: GET ${HELLO_PATH} polled every ${CFG.pollMs} ms, ${CFG.swapRepeats} cycles`)
    const swapRow = (name: string, s: SwapStats) => [name, s.medianMs, s.minMs, s.maxMs, s.failures, s.samples.map((x) => (x === null ? 'fail' : Math.round(x))).join(' ')]
    console.log(
      table(
        [
          swapRow('drop-in (copy folder in -> first 200)', swaps.dropIn),
          swapRow('upgrade, folder swap (rename -> new message)', swaps.upgradeFolderSwap),
          swapRow('upgrade, rewrite files (write -> new message)', swaps.upgradeRewrite),
          swapRow('removal (delete folder -> first 404)', swaps.removal),
        ],
        ['operation', 'median ms', 'min', 'max', 'failed', 'samples ms'],
      ),
    )
    const blips = Object.entries({ dropIn: swaps.dropIn, upgradeFolderSwap: swaps.upgradeFolderSwap, upgradeRewrite: swaps.upgradeRewrite, removal: swaps.removal })
      .filter(([, s]) => s.blips.length)
      .map(([k, s]) => `    ${k}: unexpected answers while waiting: ${s.blips.join(', ')}`)
    if (blips.length) console.log(blips.join('\n'))
    for (const p of swaps.problems) console.log(`    problem: ${p}`)

    console.log('\nMemory: VmRSS from /proc/<pid>/status')
    console.log(
      table(
        [
          ['hostd idle (start + setup + 1 s)', mib(hostdIdleKiB), round1(hostdIdleKiB / bareIdleKiB)],
          ['hostd idle after load (+2 s)', mib(hostdAfterLoadKiB), round1(hostdAfterLoadKiB / bareAfterLoadKiB)],
          [`hostd idle after ${CFG.swapRepeats} plugin cycles (+2 s)`, mib(hostdAfterSwapsKiB), '-'],
          ['bare fastify idle (start + 1 s)', mib(bareIdleKiB), 1],
          ['bare fastify idle after load (+2 s)', mib(bareAfterLoadKiB), 1],
        ],
        ['process', 'MiB', 'x bare'],
      ),
    )
    const totalS = (performance.now() - began) / 1000
    console.log(`\n  hostd startup to "serving": ${Math.round(startupMs)} ms; whole bench ${totalS.toFixed(1)} s`)

    Object.assign(results, {
      node: process.version,
      cpus: cpus().length,
      config: { connections: CFG.connections, pipelining: 1, preheatMs: CFG.preheatMs, warmupMs: CFG.warmupMs, durationMs: CFG.durationMs, rounds: CFG.rounds, swapRepeats: CFG.swapRepeats, pollMs: CFG.pollMs },
      hostdStartupMs: Math.round(startupMs),
      throughput: {
        bareMedianRps: Math.round(bareRps),
        hostdMedianRps: Math.round(hostdRps),
        ratio: round3(ratio),
        pairedRatios: pairedRatios.map(round3),
        medianPairedRatio: round3(pairedRatio),
        goal: CFG.goalRatio,
        goalMet: ratio >= CFG.goalRatio,
        bareReqPerServerCpuSec: Math.round(bareEff),
        hostdReqPerServerCpuSec: Math.round(hostdEff),
        cpuEfficiencyRatio: round3(hostdEff / bareEff),
        totalNon2xx: runs.reduce((a, r) => a + r.non2xx, 0),
        totalErrors: runs.reduce((a, r) => a + r.errors, 0),
        runs: runs.map((r) => ({
          round: r.round,
          target: r.target,
          rps: Math.round(r.rps),
          ok: r.ok,
          non2xx: r.non2xx,
          errors: r.errors,
          errorSamples: r.errorSamples,
          p50Ms: round1(r.p50Ms),
          p99Ms: round1(r.p99Ms),
          serverCpuPct: Math.round(r.serverCpuPct),
          clientCpuPct: Math.round(r.clientCpuPct),
          reqPerServerCpuSec: Math.round(r.reqPerServerCpuSec),
        })),
      },
      pluginSwap: swaps,
      memory: {
        hostdIdleMiB: mib(hostdIdleKiB),
        hostdAfterLoadMiB: mib(hostdAfterLoadKiB),
        hostdAfterPluginCyclesMiB: mib(hostdAfterSwapsKiB),
        bareIdleMiB: mib(bareIdleKiB),
        bareAfterLoadMiB: mib(bareAfterLoadKiB),
        idleRatioHostdToBare: round3(hostdIdleKiB / bareIdleKiB),
        afterLoadRatioHostdToBare: round3(hostdAfterLoadKiB / bareAfterLoadKiB),
      },
      totalSeconds: round1(totalS),
    })
  } finally {
    await agent.close().catch(() => undefined)
    await cleanup()
  }
  console.log(`BENCH_JSON ${JSON.stringify(results)}`)
}

// ---------------------------------------------------------------------------------------------------

if (process.argv[2] === '--bare-server') {
  const [certFile, keyFile] = process.argv.slice(3)
  if (!certFile || !keyFile) {
    console.error('usage: bench.ts --bare-server <cert.pem> <key.pem>')
    process.exit(2)
  }
  await bareServer(certFile, keyFile)
} else {
  // Stop children and remove temp dirs on Ctrl-C / SIGTERM too; and never run for more than 3 minutes.
  let aborting = false
  const abort = (why: string, code: number) => {
    if (aborting) return
    aborting = true
    console.error(`bench: ${why}, cleaning up`)
    void cleanup().finally(() => process.exit(code))
  }
  process.once('SIGINT', () => abort('SIGINT', 130))
  process.once('SIGTERM', () => abort('SIGTERM', 143))
  setTimeout(() => abort('took longer than 180 s', 1), 180_000).unref()
  try {
    await main()
  } catch (err) {
    console.error(`bench failed: ${(err as Error).stack ?? err}`)
    await cleanup()
    process.exitCode = 1
  }
}
