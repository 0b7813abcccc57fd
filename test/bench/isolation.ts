/**
 * The isolation bench (`BENCH_ONLY=isolation npm run bench`): what running a third-party plugin in a sandboxed process
 * of its own costs (docs/ARCHITECTURE.md, "Third-party plugins: the trust boundary"). Against a real spawned daemon
 * (its build) with the hello example dropped into its plugins folder, loaded by wrk in its own process:
 *   - GET /api/hello req/s with hello isolated / the same plugin in the daemon's process (an admin's "trusted"), over
 *     alternating pairs;
 *   - the memory its processes add (PSS of bwrap and Node: shared pages, such as the Node binary's, counted in part);
 *   - its hot upgrade (files rewritten in place) to the first answer of the new version, every answer checked;
 *   - /health p99 while another isolated plugin (the busy-loop fixture) spins 5 s in each request and at each load.
 * Every figure is printed beside its goal, then one `BENCH_JSON {...}` line. See test/bench/README.md.
 */
import { cp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import { Agent, Client, request, type Dispatcher } from 'undici'
import { REPO_ROOT, startDaemon, type Daemon } from '../support/daemon.ts'
import { pluginProcesses } from '../isolation/support.ts'
import {
  figure,
  figureTable,
  median,
  printBenchJson,
  round,
  runBench,
  table,
  wrk,
  wrkScript,
  type Figure,
} from './support.ts'

const HELLO_SRC = join(REPO_ROOT, 'examples', 'hello-plugin')
const BUSY_LOOP = join(REPO_ROOT, 'test', 'fixtures', 'hostile-plugins', 'busy-loop')
const ADMIN = { username: 'bench', password: 'correct horse battery' }
const CFG = { pairs: 5, durationS: 4, connections: 32, upgrades: 5, pollMs: 5, busyS: 20 }
const GOALS = {
  throughput: { op: '>=', target: 0.6 },
  memory: { op: '<=', target: 50 },
  upgrade: { op: '<', target: 300 },
  failed: { op: '<=', target: 0 },
  healthP99: { op: '<', target: 50 },
} as const

const agent = new Agent({ connect: { rejectUnauthorized: false } })

async function call(d: Daemon, method: 'GET' | 'POST', path: string, token?: string, json?: unknown, via?: Dispatcher) {
  const res = await request(new URL(path, d.url), {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
    dispatcher: via ?? agent,
  })
  const text = await res.body.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.statusCode, body }
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const t0 = performance.now()
  while (!(await probe())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(20)
  }
}

const signIn = async (d: Daemon) =>
  (
    (await request(new URL('/api/auth/login', d.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-client': 'bench' },
      body: JSON.stringify(ADMIN),
      dispatcher: agent,
    }).then((r) => r.body.json())) as { token: string }
  ).token

async function main(): Promise<void> {
  const figures: Figure[] = []
  const d = await startDaemon({ env: { HOSTD_LOG_LEVEL: 'warn', HOSTD_PLUGIN_REQUEST_TIMEOUT_MS: '1000' } })
  try {
    await call(d, 'POST', '/api/setup', undefined, ADMIN)
    let token = await signIn(d)
    const live = join(d.pluginsDir, 'hello')
    await cp(HELLO_SRC, live, { recursive: true })
    const helloAnswers = async () => (await call(d, 'GET', '/api/hello', token)).status === 200
    await until('hello active', helloAnswers)

    // ---- throughput: isolated / in process, the same plugin, pairs alternating which goes first ----
    const trust = async (trusted: boolean) => {
      token = await signIn(d) // trusting needs a recent sign-in
      const res = await call(d, 'POST', '/api/extensions/hello/trust', token, { trusted })
      if (res.status !== 200) throw new Error(`trust ${trusted}: ${res.status} ${JSON.stringify(res.body)}`)
      await until('hello answers', helloAnswers)
    }
    const run = async (trusted: boolean) => {
      await trust(trusted)
      const procs = trusted ? [] : await pluginProcesses(d.pid, live)
      const r = await wrk({
        url: `${d.url}/api/hello`,
        connections: CFG.connections,
        durationS: CFG.durationS,
        headers: { authorization: `Bearer ${token}` },
        serverPid: d.pid,
      })
      if (r.non2xx || r.socketErrors) throw new Error(`wrk: ${r.non2xx} non-2xx, ${r.socketErrors} socket errors`)
      return { rps: r.rps, procs: procs.length }
    }
    await run(false) // warm-up, uncounted
    const rows: (string | number)[][] = []
    const ratios: number[] = []
    for (let pair = 0; pair < CFG.pairs; pair++) {
      const isolatedFirst = pair % 2 === 0
      const first = await run(!isolatedFirst)
      const second = await run(isolatedFirst)
      const [isolated, inProcess] = isolatedFirst ? [first, second] : [second, first]
      ratios.push(isolated.rps / inProcess.rps)
      rows.push([pair + 1, round(isolated.rps), round(inProcess.rps), round(isolated.rps / inProcess.rps, 3)])
    }
    console.log(`\nGET /api/hello, wrk -t1 -c${CFG.connections} -d${CFG.durationS}s, pairs alternating`)
    console.log(table(rows, ['pair', 'isolated req/s', 'in process req/s', 'ratio']))
    figures.push(
      figure(
        'isolated hello / in process, req/s (median)',
        median(ratios),
        'x',
        GOALS.throughput,
        `${CFG.pairs} pairs`,
      ),
    )

    // ---- memory: what its processes add ----
    await trust(false)
    await sleep(2000)
    let pss = 0
    let rss = 0
    let uss = 0
    for (const p of await pluginProcesses(d.pid, live)) {
      const text = await readFile(`/proc/${p.pid}/smaps_rollup`, 'utf8')
      const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0)
      pss += kib('Pss')
      rss += kib('Rss')
      uss += kib('Private_Clean') + kib('Private_Dirty')
    }
    figures.push(
      figure(
        'memory an isolated plugin adds (PSS of its processes)',
        pss / 1024,
        'MiB',
        GOALS.memory,
        `RSS ${round(rss / 1024)} MiB, private ${round(uss / 1024)} MiB; hello is TypeScript (Node's type stripper: about 17 MiB)`,
      ),
    )

    // ---- hot upgrade: files rewritten in place; every answer meanwhile must be a 200 ----
    const client = new Client(d.url, { connect: { rejectUnauthorized: false }, pipelining: 1 })
    const source = await readFile(join(HELLO_SRC, 'src', 'index.ts'), 'utf8')
    const times: number[] = []
    let failed = 0
    for (let n = 1; n <= CFG.upgrades; n++) {
      const next = source.replace("version: '1.0.0'", `version: '1.0.${n}'`).replace('`Hello, ${', `\`Hello v${n}, \${`)
      const t0 = performance.now()
      await writeFile(join(live, 'src', 'index.ts'), next)
      for (let i = 1; ; i++) {
        const { status, body } = await call(d, 'GET', '/api/hello', token, undefined, client)
        if (status !== 200) failed++
        if (status === 200 && String(body.message).startsWith(`Hello v${n},`)) break
        if (performance.now() - t0 > 10_000) throw new Error(`upgrade ${n}: no answer from the new version in 10 s`)
        const wait = t0 + i * CFG.pollMs - performance.now()
        if (wait > 0) await sleep(wait)
      }
      times.push(performance.now() - t0)
      await sleep(300)
    }
    await client.close()
    console.log(`\nIsolated hot upgrade (rewrite in place), ms: ${times.map((t) => Math.round(t)).join(' ')}`)
    figures.push(
      figure('isolated hot upgrade (median)', median(times), 'ms', GOALS.upgrade, `max ${round(Math.max(...times))}`),
      figure('failed requests during the upgrades', failed, 'requests', GOALS.failed, `polled every ${CFG.pollMs} ms`),
    )

    // ---- /health while an isolated plugin busy-loops ----
    await cp(BUSY_LOOP, join(d.pluginsDir, 'busy-loop'), { recursive: true })
    await until('busy-loop active', async () => (await call(d, 'GET', '/api/busy-loop/ping', token)).status === 200)
    let spinning = true
    const spinner = (async () => {
      while (spinning) await call(d, 'GET', '/api/busy-loop/spin', token).catch(() => undefined)
    })()
    const health = await wrk({
      url: `${d.url}/health`,
      connections: 2,
      durationS: CFG.busyS,
      script: wrkScript(['/health'], 10),
      serverPid: d.pid,
    })
    spinning = false
    await spinner
    figures.push(
      figure(
        '/health p99 while an isolated plugin busy-loops',
        health.p99Ms,
        'ms',
        GOALS.healthP99,
        `${health.requests} requests over ${CFG.busyS} s, max ${round(health.maxMs)} ms, ${health.non2xx} non-2xx`,
      ),
    )
  } finally {
    await d.stop()
  }
  console.log(`\n${figureTable(figures)}`)
  printBenchJson('isolation', figures)
}

await runBench('isolation', main, 10 * 60_000)
