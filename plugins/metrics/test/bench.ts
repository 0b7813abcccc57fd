/**
 * Metrics plugin benchmark (`npm run bench`, or `node plugins/metrics/test/bench.ts`). One run, against a real
 * spawned daemon that loads only this plugin:
 *   1. GET /api/activity/processes (whole table, over HTTPS, body read) vs `ps -eo pid,user,pcpu,pmem,nlwp,comm`
 *      (process start to exit): medians and their ratio (goal < 1.0); again with 1,000 extra `sleep 600` processes;
 *   2. daemon CPU (utime+stime from /proc/<pid>/stat) while 1 and then 20 SSE clients listen, as a share of one
 *      core over a window (BENCH_METRICS_WINDOW_S, default 60 s; goal < 1 %, and no growth with clients);
 *   3. resident memory (VmRSS) after an hour of history: the daemon restarts on a database holding a full hour
 *      of 2 s points and 7 days of minute points (the rings full), and serves each range once.
 * Prints a table and a final `BENCH_JSON {...}` line.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { readFileSync, rmSync } from 'node:fs'
import { Agent, request, type RequestOptions } from 'node:https'
import type { IncomingMessage } from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { COARSE_CAPACITY, FINE_CAPACITY, History, type StoredPoint } from '../src/history.ts'
import { figure } from '../../../test/bench/support.ts'

const PLUGIN_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')
const REPO = join(PLUGIN_DIR, '..', '..')

function envInt(name: string, fallback: number): number {
  const n = Number(process.env[name])
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback
}

const CFG = {
  windowS: envInt('BENCH_METRICS_WINDOW_S', 60),
  repeats: envInt('BENCH_METRICS_REPEATS', 15),
  extraProcesses: envInt('BENCH_METRICS_EXTRA_PROCESSES', 1000),
  manyClients: 20,
}
const CLOCK_TICKS = 100

const children = new Set<ChildProcess>()
const tempDirs = new Set<string>()
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true })
})

const agent = new Agent({ keepAlive: true, rejectUnauthorized: false })

function call(
  origin: string,
  method: string,
  path: string,
  opts: { token?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.token) headers.authorization = `Bearer ${opts.token}`
    if (opts.json !== undefined) headers['content-type'] = 'application/json'
    const req = request(`${origin}${path}`, { method, headers, agent } as RequestOptions, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        let body: any = text
        try {
          body = JSON.parse(text)
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body })
      })
    })
    req.on('error', reject)
    req.end(opts.json === undefined ? undefined : JSON.stringify(opts.json))
  })
}

interface Daemon {
  child: ChildProcess
  pid: number
  origin: string
}

async function startDaemon(dataDir: string, pluginsDir: string): Promise<Daemon> {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HOSTD_')) env[k] = v
  Object.assign(env, {
    HOSTD_DATA_DIR: dataDir,
    HOSTD_PLUGINS_DIR: pluginsDir,
    // This plugin alone, as the built-in it is (its UI pages are compiled only for built-ins).
    HOSTD_BUILTIN_PLUGINS: 'metrics',
    HOSTD_HOST: '127.0.0.1',
    HOSTD_PORT: '0',
    HOSTD_HELPER_SOCKET: join(dataDir, 'no-helper.sock'),
    HOSTD_LOG_LEVEL: 'warn',
  })
  const child = spawn(process.execPath, ['kernel/dist/main.mjs'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  const log: string[] = []
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon not ready in 30 s\n${log.join('\n')}`)), 30_000)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      log.push(line)
      const m = /serving (https:\/\/127\.0\.0\.1:\d+)/.exec(line)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    createInterface({ input: child.stderr! }).on('line', (line) => log.push(`[stderr] ${line}`))
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`daemon exited (${code})\n${log.join('\n')}`))
    })
  })
  return { child, pid: child.pid!, origin }
}

async function stopDaemon(d: Daemon): Promise<void> {
  if (d.child.exitCode !== null) return
  const exited = once(d.child, 'exit')
  d.child.kill('SIGTERM')
  await Promise.race([exited, sleep(15_000)])
  if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGKILL')
  children.delete(d.child)
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS
}

async function rssKiB(pid: number): Promise<number> {
  return Number(/^VmRSS:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1])
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
const round2 = (x: number) => Math.round(x * 100) / 100
const round3 = (x: number) => Math.round(x * 1000) / 1000

function runPs(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    execFile('ps', ['-eo', 'pid,user,pcpu,pmem,nlwp,comm'], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err) return reject(err)
      if (!stdout.includes('PID')) return reject(new Error('ps printed no table'))
      resolve(performance.now() - t0)
    })
  })
}

/** Alternating runs of the endpoint and ps; medians in ms. */
async function processesVsPs(
  d: Daemon,
  token: string,
): Promise<{ hostdMs: number; psMs: number; ratio: number; processes: number }> {
  let processes = 0
  for (let i = 0; i < 2; i++) await call(d.origin, 'GET', '/api/activity/processes', { token }) // warm-up (JIT, first-call baseline)
  await runPs()
  const ours: number[] = []
  const ps: number[] = []
  for (let i = 0; i < CFG.repeats; i++) {
    const t0 = performance.now()
    const res = await call(d.origin, 'GET', '/api/activity/processes', { token })
    ours.push(performance.now() - t0)
    if (res.status !== 200) throw new Error(`processes answered ${res.status}`)
    processes = res.body.processes.length
    ps.push(await runPs())
  }
  const hostdMs = median(ours)
  const psMs = median(ps)
  return { hostdMs: round2(hostdMs), psMs: round2(psMs), ratio: round3(hostdMs / psMs), processes }
}

/** Opens `n` SSE clients; returns a closer and the event counts. */
function openStreams(d: Daemon, token: string, n: number): { counts: number[]; close: () => void } {
  const counts = new Array(n).fill(0)
  const reqs = Array.from({ length: n }, (_, i) => {
    const req = request(
      `${d.origin}/api/metrics/stream`,
      { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false },
      (res: IncomingMessage) => {
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (counts[i] += chunk.split('\nevent: metrics\n').length - 1))
        res.on('error', () => undefined)
      },
    )
    req.on('error', () => undefined)
    req.end()
    return req
  })
  return { counts, close: () => reqs.forEach((r) => r.destroy()) }
}

async function cpuWhileStreaming(
  d: Daemon,
  token: string,
  clients: number,
): Promise<{ clients: number; cpuPctOfCore: number; eventsPerClient: number; windowS: number }> {
  const s = openStreams(d, token, clients)
  await sleep(3000) // all connected, sampler running
  const before = s.counts.reduce((a, b) => a + b, 0)
  const cpu0 = cpuSeconds(d.pid)
  const t0 = performance.now()
  await sleep(CFG.windowS * 1000)
  const cpu1 = cpuSeconds(d.pid)
  const seconds = (performance.now() - t0) / 1000
  const events = s.counts.reduce((a, b) => a + b, 0) - before
  s.close()
  await sleep(500)
  return {
    clients,
    cpuPctOfCore: round3(((cpu1 - cpu0) / seconds) * 100),
    eventsPerClient: round2(events / clients),
    windowS: round2(seconds),
  }
}

async function spawnSleepers(n: number): Promise<ChildProcess[]> {
  const list: ChildProcess[] = []
  for (let i = 0; i < n; i++) {
    const c = spawn('sleep', ['600'], { stdio: 'ignore' })
    children.add(c)
    list.push(c)
  }
  await Promise.all(list.map((c) => (c.pid ? Promise.resolve() : once(c, 'spawn'))))
  await sleep(1000)
  return list
}

async function killAll(list: ChildProcess[]): Promise<void> {
  const exits = list.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : Promise.resolve()))
  for (const c of list) c.kill('SIGKILL')
  await Promise.race([Promise.all(exits), sleep(10_000)])
  list.forEach((c) => children.delete(c))
}

/** Writes a full hour of 2 s points and 7 days of minute points, as the plugin itself stores them. */
function fillHistory(dbFile: string): { fine: number; coarse: number } {
  const db = new Database(dbFile)
  const now = Date.now()
  const insert =
    db.prepare(`INSERT OR REPLACE INTO metrics_history (step, ms, cpu, iowait, load1, memUsedBytes, memTotalBytes, swapUsedBytes,
    diskReadBytesPerSec, diskWriteBytesPerSec, netRxBytesPerSec, netTxBytesPerSec, maxTempCelsius) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`)
  const row = (step: number, ms: number, i: number) =>
    insert.run(
      step,
      ms,
      (i * 7) % 100,
      0.5,
      1.25,
      2e9 + i,
      8e9,
      0,
      1e5 + i,
      2e5 + i,
      3e4 + i,
      4e4 + i,
      i % 3 ? 45.5 : null,
    )
  db.transaction(() => {
    for (let i = 1; i <= 1800; i++) row(2, now - i * 2000 + 1000, i)
    for (let i = 1; i <= 10_080; i++) row(60, now - i * 60_000 + 1000, i)
  })()
  db.close()
  return { fine: 1800, coarse: 10_080 }
}

/** Heap the full rings take, measured in this process around filling a History (RSS of the daemon is too coarse). */
function historyHeapKiB(): number {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  gc()
  const before = process.memoryUsage().heapUsed
  const h = new History()
  const t0 = Date.now() - 8 * 24 * 3_600_000
  const p = (ms: number, i: number): StoredPoint => ({
    ms,
    cpu: (i * 7) % 100,
    iowait: 0.5,
    load1: 1.25,
    memUsedBytes: 2e9 + i,
    memTotalBytes: 8e9,
    swapUsedBytes: 0,
    diskReadBytesPerSec: 1e5 + i,
    diskWriteBytesPerSec: 2e5 + i,
    netRxBytesPerSec: 3e4 + i,
    netTxBytesPerSec: 4e4 + i,
    maxTempCelsius: i % 3 ? 45.5 : null,
  })
  for (let i = 0; i < COARSE_CAPACITY; i++) h.add(60, p(t0 + i * 60_000, i))
  for (let i = 0; i < FINE_CAPACITY; i++) h.add(2, p(t0 + i * 2000, i))
  h.takePending()
  gc()
  const after = process.memoryUsage().heapUsed
  if (h.fine.size + h.coarse.size !== FINE_CAPACITY + COARSE_CAPACITY) throw new Error('rings not full')
  return Math.round((after - before) / 1024)
}

function table(rows: (string | number)[][], header: string[]): string {
  const cells = [header, ...rows.map((r) => r.map(String))]
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)))
  const line = (r: (string | number)[]) =>
    '  ' + r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('  ')
  return [line(cells[0]!), '  ' + widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n')
}

async function setupAndLogin(d: Daemon, first: boolean): Promise<string> {
  const user = { username: 'bench', password: 'correct horse battery' }
  if (first) {
    const setup = await call(d.origin, 'POST', '/api/setup', { json: user })
    if (setup.status !== 201) throw new Error(`setup answered ${setup.status}`)
  }
  const login = await call(d.origin, 'POST', '/api/auth/login', { json: user, headers: { 'x-svc-client': '1' } })
  if (typeof login.body?.token !== 'string') throw new Error(`login answered ${login.status}`)
  return login.body.token
}

async function main(): Promise<void> {
  console.log(
    `metrics bench: node ${process.version}, ${cpus().length} CPUs, CPU window ${CFG.windowS} s (BENCH_METRICS_WINDOW_S), ` +
      `${CFG.repeats} runs per process-table measurement, ${CFG.extraProcesses} extra processes\n`,
  )
  const tmp = await mkdtemp(join(tmpdir(), 'hostd-metrics-bench-'))
  tempDirs.add(tmp)
  const dataDir = join(tmp, 'data')
  const pluginsDir = join(tmp, 'plugins')
  await mkdir(pluginsDir, { recursive: true }) // empty: no third-party plugins

  let d = await startDaemon(dataDir, pluginsDir)
  let token = await setupAndLogin(d, true)
  const ok = await call(d.origin, 'GET', '/api/metrics', { token })
  if (ok.status !== 200) throw new Error(`GET /api/metrics answered ${ok.status}: ${JSON.stringify(ok.body)}`)
  await sleep(1000)
  const rssIdleKiB = await rssKiB(d.pid)

  console.log('process table: GET /api/activity/processes vs ps ...')
  const plain = await processesVsPs(d, token)
  const sleepers = await spawnSleepers(CFG.extraProcesses)
  let loaded: Awaited<ReturnType<typeof processesVsPs>>
  try {
    loaded = await processesVsPs(d, token)
  } finally {
    await killAll(sleepers)
  }

  console.log(`daemon CPU with 1 and ${CFG.manyClients} stream clients, ${CFG.windowS} s each ...`)
  const one = await cpuWhileStreaming(d, token, 1)
  const many = await cpuWhileStreaming(d, token, CFG.manyClients)
  const rssAfterStreamsKiB = await rssKiB(d.pid)
  await stopDaemon(d)

  console.log('memory after an hour of history ...')
  const filled = fillHistory(join(dataDir, 'hostd.sqlite'))
  d = await startDaemon(dataDir, pluginsDir)
  token = await setupAndLogin(d, false)
  await sleep(1000)
  const rssHistoryLoadedKiB = await rssKiB(d.pid)
  const counts: Record<string, number> = {}
  for (const range of ['1h', '24h', '7d']) {
    const res = await call(d.origin, 'GET', `/api/metrics/history?range=${range}`, { token })
    if (res.status !== 200) throw new Error(`history ${range} answered ${res.status}`)
    counts[range] = res.body.points.length
  }
  await sleep(500)
  const rssHistoryServedKiB = await rssKiB(d.pid)
  await stopDaemon(d)

  const ringsKiB = historyHeapKiB()
  const mib = (k: number) => round2(k / 1024)
  console.log(
    '\n' +
      table(
        [
          ['processes endpoint vs ps', plain.processes, plain.hostdMs, plain.psMs, plain.ratio],
          [
            `  with ${CFG.extraProcesses} extra sleeping processes`,
            loaded.processes,
            loaded.hostdMs,
            loaded.psMs,
            loaded.ratio,
          ],
        ],
        ['process table (median)', 'processes', 'hostd ms', 'ps ms', 'ratio (goal < 1.0)'],
      ),
  )
  console.log(
    '\n' +
      table(
        [
          ['1 client', one.windowS, one.eventsPerClient, one.cpuPctOfCore],
          [`${CFG.manyClients} clients`, many.windowS, many.eventsPerClient, many.cpuPctOfCore],
        ],
        ['SSE stream', 'window s', 'events/client', 'daemon CPU % of a core (goal < 1)'],
      ),
  )
  console.log(
    '\n' +
      table(
        [
          ['idle, empty history', mib(rssIdleKiB)],
          ['after the stream windows', mib(rssAfterStreamsKiB)],
          [`restarted with full history (${filled.fine} + ${filled.coarse} points)`, mib(rssHistoryLoadedKiB)],
          [
            `  after serving 1h/24h/7d (${counts['1h']}/${counts['24h']}/${counts['7d']} points)`,
            mib(rssHistoryServedKiB),
          ],
          ['heap of the full rings alone (measured in the bench process)', mib(ringsKiB)],
        ],
        ['daemon resident memory', 'MiB'],
      ),
  )

  const result = {
    processes: { plain, withExtra: { ...loaded, extra: CFG.extraProcesses } },
    streamCpu: {
      windowS: CFG.windowS,
      oneClient: one,
      manyClients: many,
      growth: round3(many.cpuPctOfCore - one.cpuPctOfCore),
    },
    rss: {
      idleKiB: rssIdleKiB,
      afterStreamsKiB: rssAfterStreamsKiB,
      fullHistoryKiB: rssHistoryLoadedKiB,
      fullHistoryServedKiB: rssHistoryServedKiB,
      historyPoints: counts,
      fullRingsHeapKiB: ringsKiB,
    },
  }
  const figures = [
    figure(
      'processes endpoint / ps',
      plain.ratio,
      'x',
      { op: '<', target: 1 },
      `${plain.processes} processes; ${loaded.ratio} with ${CFG.extraProcesses} more`,
    ),
    figure(
      `daemon CPU with ${CFG.manyClients} stream clients`,
      many.cpuPctOfCore,
      '% of a core',
      { op: '<', target: 1 },
      `${one.cpuPctOfCore} % with 1 client`,
    ),
  ]
  console.log(`\nBENCH_JSON ${JSON.stringify({ bench: 'metrics', figures, ...result })}`)
}

main()
  .catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
  .finally(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    for (const dir of tempDirs) await rm(dir, { recursive: true, force: true }).catch(() => undefined)
    agent.destroy()
  })
