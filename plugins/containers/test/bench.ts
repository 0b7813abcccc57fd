/**
 * Containers bench (`npm run bench`, or `BENCH_ONLY=containers npm run bench`). One run:
 *   - starts its own dockerd (test/support/engine.ts) and a spawned hostd (`node kernel/dist/main.mjs`, the build npm start runs;
 *     `HOSTD_TEST_DAEMON=sources`: kernel/src/main.ts) over HTTPS with DOCKER_HOST pointing at it;
 *   - creates 1,000 containers (BENCH_CONTAINERS) from a busybox image: 50 (BENCH_RUNNING) running `sleep`, the rest
 *     only created;
 *   - measures, one request at a time and interleaved in rounds, the latency of
 *       hostd   GET /api/containers (bearer token, keep-alive HTTPS),
 *       raw     the Engine API's GET /containers/json?all=1 over the unix socket (keep-alive),
 *       cli     `docker -H unix://... ps -a` (a process per call, as a person or script would run it);
 *   - prints the medians, the ratios hostd/raw (goal <= 1.5) and hostd/cli;
 *   - in Debian's Chromium (playwright-core), signed in by cookie: the containers page's time to its first rows,
 *     navigation start to the first row's name link (each visit in a fresh browser context: nothing cached; goal
 *     under 1 s), and how many rows are in the DOM;
 *   - a running container killed through the Engine API (outside hostd) while the list and the overview are open:
 *     time from the kill to its row showing "exited" and to the overview card's running count going down (3 kills;
 *     the slowest is the figure, goal under 2 s);
 *   - the cost of live CPU and memory: the daemon's CPU time per second while a live socket asks for the running
 *     rows' figures every 2 s, against the same time with no socket; and `BENCH_JSON {...}`.
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
import { cpuSeconds, figure } from '../../../test/bench/support.ts'
import { addSessionCookie, launchBrowser } from '../../../test/support/browser.ts'
import WebSocket from 'ws'

const REPO = join(import.meta.dirname, '..', '..', '..')
const CONTAINERS = Number(process.env.BENCH_CONTAINERS) || 1000
const RUNNING = Math.min(Math.ceil(CONTAINERS / 2), Number(process.env.BENCH_RUNNING) || 50)
const ROUNDS = 5
const PER_ROUND = 40
const CLI_RUNS = 20
const GOAL = 1.5
const PAGE_VISITS = 5
const KILLS = 3
const LIVE_MS = 10_000
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
  const entry = process.env.HOSTD_TEST_DAEMON === 'sources' ? 'kernel/src/main.ts' : 'kernel/dist/main.mjs'
  const child = spawn(process.execPath, [entry], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
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
  const pool: { p: Pool | null; origin: string } = { p: null, origin: '' }
  try {
    console.log(
      `containers bench: node ${process.version}, ${cpus().length} CPUs, ${CONTAINERS} containers, ` +
        `${ROUNDS}x${PER_ROUND} sequential requests per target, ${CLI_RUNS} docker ps runs\n`,
    )
    engine = await startEngine()
    const image = await importTestImage(engine, 'hostd-bench/busybox:1')
    // Created in parallel; only RUNNING of them started (a bridge network holds about 250 addresses), the rest
    // only created, as most containers of a host with many are.
    for (let i = 0; i < CONTAINERS; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, CONTAINERS - i) }, async (_, k) => {
          const n = i + k
          const res = await engine!.api('POST', `/containers/create?name=bench-${n}`, {
            Image: image,
            Cmd: ['sleep', '3600'],
            Labels: { 'com.docker.compose.project': 'bench' },
            HostConfig: n % 7 === 0 ? { PortBindings: { '80/tcp': [{ HostPort: String(20000 + n) }] } } : {},
          })
          if (res.status !== 201) throw new Error(`create bench-${n}: ${res.status} ${res.body}`)
          if (n < RUNNING) {
            const started = await engine!.api('POST', `/containers/bench-${n}/start`)
            if (started.status !== 204) throw new Error(`start bench-${n}: ${started.status} ${started.body}`)
          }
        }),
      )
    }
    const started = await startHostd(dataDir, engine.host)
    hostd = started.child
    pool.origin = started.origin
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
    const stoppedMs: { list: number; overview: number }[] = []
    const cliMs: number[] = []
    for (let i = 0; i < CLI_RUNS; i++)
      cliMs.push(
        await time(() => run('docker', ['-H', engine!.host, 'ps', '-a', '--no-trunc'], { maxBuffer: 8 << 20 })),
      )

    const rawBytes = await rawList()
    console.log(
      `GET /api/containers: hostd ${median(hostdMs).toFixed(1)} ms, raw ${median(rawMs).toFixed(1)} ms (medians)`,
    )

    // ---- the page in Chromium: time to first rows, then a container stopped outside hostd ----
    const browser = await launchBrowser()
    const signedIn = async () => {
      const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1440, height: 900 } })
      await addSessionCookie(context, pool.origin, token)
      return context
    }
    const firstRowsMs: number[] = []
    const headingMs: number[] = []
    let rowsInDom = 0
    try {
      for (let i = 0; i < PAGE_VISITS; i++) {
        const context = await signedIn()
        // Timed in the page, from its navigation's start (performance.now()), as each element appears: playwright's
        // waitFor polls at growing intervals (up to a second), which rounded three visits of a run to 1,030 ms.
        await context.addInitScript(() => {
          const marks: { heading?: number; rows?: number } = {}
          ;(window as unknown as { __benchMarks: typeof marks }).__benchMarks = marks
          const look = () => {
            if (
              marks.heading === undefined &&
              [...document.querySelectorAll('h1')].some((h) => h.textContent === 'Containers')
            )
              marks.heading = performance.now()
            if (
              marks.rows === undefined &&
              [...document.querySelectorAll('a')].some((a) => a.textContent === 'bench-0')
            ) {
              marks.rows = performance.now()
              observer.disconnect()
            }
          }
          const observer = new MutationObserver(look)
          observer.observe(document, { childList: true, subtree: true, characterData: true })
        })
        const page = await context.newPage()
        await page.goto(`${pool.origin}/containers`, { waitUntil: 'commit' })
        await page.getByRole('link', { name: 'bench-0', exact: true }).waitFor({ timeout: 30_000 })
        const marks = await page.evaluate(
          () => (window as unknown as { __benchMarks: { heading?: number; rows?: number } }).__benchMarks,
        )
        if (marks.rows === undefined || marks.heading === undefined) throw new Error('the page was not timed')
        firstRowsMs.push(marks.rows)
        headingMs.push(marks.heading)
        rowsInDom = await page.locator('tbody tr').count()
        await context.close()
      }
      console.log(
        `first rows: ${firstRowsMs.map((x) => Math.round(x)).join(', ')} ms; ` +
          `page heading (shell and module loaded): ${headingMs.map((x) => Math.round(x)).join(', ')} ms`,
      )

      const context = await signedIn()
      const listPage = await context.newPage()
      await listPage.goto(`${pool.origin}/containers`)
      const overview = await context.newPage()
      // What the pages heard, printed when a kill is not shown in time.
      const heard: string[] = []
      const started = performance.now()
      for (const [label, p] of [
        ['list', listPage],
        ['overview', overview],
      ] as const) {
        p.on('websocket', (ws) => {
          heard.push(`${Math.round(performance.now() - started)} ms ${label} socket ${ws.url()}`)
          ws.on('framereceived', (f) => {
            const text = String(f.payload)
            if (!text.includes('"stats"'))
              heard.push(`${Math.round(performance.now() - started)} ms ${label} <- ${text}`)
          })
          ws.on('close', () => heard.push(`${Math.round(performance.now() - started)} ms ${label} socket closed`))
        })
        p.on('request', (r) => {
          if (r.url().endsWith('/api/containers'))
            heard.push(`${Math.round(performance.now() - started)} ms ${label} GET /api/containers`)
        })
      }
      await overview.goto(`${pool.origin}/`)
      await overview.getByRole('link', { name: `${RUNNING} running` }).waitFor({ timeout: 30_000 })
      for (let k = 1; k <= KILLS; k++) {
        const name = `bench-${k}`
        const row = listPage.getByRole('row').filter({ has: listPage.getByRole('link', { name, exact: true }) })
        await row.getByText('running', { exact: true }).waitFor({ timeout: 30_000 })
        const t0 = performance.now()
        heard.push(`${Math.round(t0 - started)} ms kill ${name}`)
        const killed = await engine.api('POST', `/containers/${name}/kill`)
        if (killed.status !== 204) throw new Error(`kill ${name}: ${killed.status} ${killed.body}`)
        const [inList, onOverview] = await Promise.all([
          row
            .getByText('exited', { exact: true })
            .waitFor({ timeout: 30_000 })
            .then(() => performance.now() - t0),
          overview
            .getByRole('link', { name: `${RUNNING - k} running` })
            .waitFor({ timeout: 30_000 })
            .then(() => performance.now() - t0),
        ]).catch((err) => {
          console.log(heard.join('\n'))
          throw err
        })
        stoppedMs.push({ list: inList, overview: onOverview })
      }
      await context.close()
    } finally {
      await browser.close()
    }

    // ---- live CPU and memory: the daemon's CPU while a socket asks for every running row's figures ----
    const daemonCpuPerSecond = async (ms: number) => {
      const c0 = cpuSeconds(hostd!.pid!)
      const t0 = performance.now()
      await sleep(ms)
      return ((cpuSeconds(hostd!.pid!) - c0) * 1000) / ((performance.now() - t0) / 1000)
    }
    await sleep(3000)
    const idleCpu = await daemonCpuPerSecond(LIVE_MS)
    const running = (await hostdList()).items.filter((c: { state: string }) => c.state === 'running')
    const ws = new WebSocket(`${pool.origin.replace('https', 'wss')}/api/containers/live`, {
      rejectUnauthorized: false,
      headers: { authorization: `Bearer ${token}` },
    })
    let statsMessages = 0
    let statsItems = 0
    let firstStatsMs = 0
    const asked = performance.now()
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString())
      if (m.type === 'ready') ws.send(JSON.stringify({ stats: running.map((c: { id: string }) => c.id) }))
      if (m.type === 'stats') {
        if (statsMessages++ === 0) firstStatsMs = performance.now() - asked
        statsItems = m.items.length
      }
    })
    await once(ws, 'open')
    await sleep(3000)
    const liveCpu = await daemonCpuPerSecond(LIVE_MS)
    ws.close()
    const out = {
      containers: CONTAINERS,
      running: RUNNING,
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
      firstRowsMedianMs: +median(firstRowsMs).toFixed(1),
      firstRowsMaxMs: +Math.max(...firstRowsMs).toFixed(1),
      headingMedianMs: +median(headingMs).toFixed(1),
      rowsInDom,
      stoppedInListMaxMs: +Math.max(...stoppedMs.map((x) => x.list)).toFixed(1),
      stoppedOnOverviewMaxMs: +Math.max(...stoppedMs.map((x) => x.overview)).toFixed(1),
      stoppedMs: stoppedMs.map((x) => ({ list: Math.round(x.list), overview: Math.round(x.overview) })),
      liveStatsRows: running.length,
      liveStatsItems: statsItems,
      liveFirstStatsMs: +firstStatsMs.toFixed(1),
      daemonCpuIdleMsPerS: +idleCpu.toFixed(2),
      daemonCpuLiveMsPerS: +liveCpu.toFixed(2),
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
    console.log(
      `page first rows (${PAGE_VISITS} cold visits):   median ${out.firstRowsMedianMs} ms, max ${out.firstRowsMaxMs} ms, ` +
        `${rowsInDom} rows in the DOM (goal < 1000 ms)`,
    )
    console.log(
      `stopped outside hostd, shown:      list ${stoppedMs.map((x) => Math.round(x.list)).join(', ')} ms; ` +
        `overview ${stoppedMs.map((x) => Math.round(x.overview)).join(', ')} ms (goal < 2000 ms)`,
    )
    console.log(
      `live CPU/memory of ${running.length} running rows: daemon CPU ${out.daemonCpuLiveMsPerS} ms/s ` +
        `(idle ${out.daemonCpuIdleMsPerS} ms/s), first figures after ${out.liveFirstStatsMs} ms, ${statsItems} per message`,
    )
    const figures = [
      figure(
        `GET /api/containers at ${CONTAINERS} containers / raw Engine API`,
        out.ratioHostdToRaw,
        'x',
        { op: '<=', target: GOAL },
        `${out.hostdMedianMs} vs ${out.rawMedianMs} ms (medians)`,
      ),
      figure(
        `containers page at ${CONTAINERS} containers, time to first rows (Chromium, cold)`,
        Math.round(out.firstRowsMedianMs),
        'ms',
        { op: '<', target: 1000 },
        `median of ${PAGE_VISITS} visits, max ${Math.round(out.firstRowsMaxMs)} ms; the page's heading (shell and ` +
          `module loaded) at ${Math.round(out.headingMedianMs)} ms; ${rowsInDom} rows in the DOM`,
      ),
      figure(
        'container stopped outside hostd, shown stopped in the list',
        Math.round(out.stoppedInListMaxMs),
        'ms',
        { op: '<', target: 2000 },
        `slowest of ${KILLS} kills`,
      ),
      figure(
        'container stopped outside hostd, shown stopped on the overview',
        Math.round(out.stoppedOnOverviewMaxMs),
        'ms',
        { op: '<', target: 2000 },
        `slowest of ${KILLS} kills`,
      ),
      figure(
        `live CPU and memory of ${running.length} running rows, daemon CPU`,
        +(liveCpu - idleCpu).toFixed(2),
        'ms/s',
        undefined,
        `${out.daemonCpuLiveMsPerS} with the socket vs ${out.daemonCpuIdleMsPerS} ms/s without`,
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
