/**
 * Fleet bench (`npm run bench`, or `BENCH_ONLY=fleet npm run bench`). One run:
 *   - a single-node nats-server (the fleet's users and permissions), a private dockerd with 20 containers
 *     (plugins/containers' test engine), and two daemons over HTTPS: A (the fleet plugin) and B (fleet + containers);
 *   - throughput, wrk -t1 -c8 -d4s: A's `GET /api/hosts/b/api/containers` (over NATS, answered by B through its own
 *     API as A's admin) against B's own `GET /api/containers`, one warm-up each, then 3 pairs alternating which goes
 *     first; the median of the per-pair ratios remote / local (goal >= 0.5);
 *   - 500 simulated members (presence entries written by the bench with a realistic inventory, each refreshed every
 *     3 s as members do): A's `GET /api/hosts` answer time (median and max of 20 calls, goal under 2 s) and the RSS A
 *     gained per member (RSS once all 502 are listed, minus before, over 500; goal under 100 KiB).
 * Prints `BENCH_JSON {...}`.
 */
import { performance } from 'node:perf_hooks'
import { connect } from '@nats-io/transport-node'
import { figure, median, memoryOf, printBenchJson, round, runBench, wrk } from '../../../test/bench/support.ts'
import { eventually } from '@hostd/sdk/testing'
import { startPluginDaemon, type PluginDaemon } from '../../../test/support/plugin-daemon.ts'
import { importTestImage, startEngine } from '../../containers/test/support/engine.ts'
import { startCluster } from './support/cluster.ts'

const MEMBERS = Number(process.env.BENCH_FLEET_MEMBERS) || 500
const IMAGE = 'hostd-bench/fleet:1'

async function main(): Promise<void> {
  const cluster = await startCluster(1, [
    { user: 'a', password: 'pw-a', host: 'a' },
    { user: 'b', password: 'pw-b', host: 'b' },
    { user: 'bench', password: 'pw-bench' },
  ])
  const engine = await startEngine()
  const daemons: PluginDaemon[] = []
  const timers: NodeJS.Timeout[] = []
  try {
    await importTestImage(engine, IMAGE)
    for (let i = 0; i < 20; i++) await engine.docker('create', '--name', `bench-${i}`, IMAGE, 'sleep', '3600')
    const env = (host: string) => ({
      HOSTD_FLEET_NATS_URL: cluster.urls,
      HOSTD_FLEET_NATS_USER: host,
      HOSTD_FLEET_NATS_PASSWORD: `pw-${host}`,
      HOSTD_FLEET_HOST: host,
      HOSTD_LOG_LEVEL: 'warn',
    })
    const a = await startPluginDaemon(['fleet'], env('a'))
    daemons.push(a)
    const b = await startPluginDaemon(['fleet', 'containers'], { ...env('b'), DOCKER_HOST: engine.host })
    daemons.push(b)
    const listed = async () => {
      const res = await a.fetch('/api/hosts', { headers: { authorization: `Bearer ${a.adminToken}` } })
      return ((await res.json()) as { hosts: { up: boolean }[] }).hosts.filter((h) => h.up).length
    }
    await eventually(async () => (await listed()) === 2, 200)
    const remoteCheck = await a.fetch('/api/hosts/b/api/containers', {
      headers: { authorization: `Bearer ${a.adminToken}` },
    })
    if (remoteCheck.status !== 200) throw new Error(`remote call: ${remoteCheck.status} ${await remoteCheck.text()}`)

    // Throughput: remote through A against local on B.
    const run = (d: PluginDaemon, path: string) =>
      wrk({
        url: `${d.url}${path}`,
        connections: 8,
        durationS: 4,
        headers: { authorization: `Bearer ${d.adminToken}` },
        serverPid: d.pid,
      })
    const remote = () => run(a, '/api/hosts/b/api/containers')
    const local = () => run(b, '/api/containers')
    await remote()
    await local()
    const ratios: number[] = []
    const pairs: string[] = []
    for (let i = 0; i < 3; i++) {
      let rr: Awaited<ReturnType<typeof remote>>
      let l: Awaited<ReturnType<typeof local>>
      if (i % 2 === 0) {
        rr = await remote()
        l = await local()
      } else {
        l = await local()
        rr = await remote()
      }
      if (rr.non2xx > 0 || l.non2xx > 0) throw new Error(`errors: remote ${rr.non2xx}, local ${l.non2xx}`)
      ratios.push(rr.rps / l.rps)
      pairs.push(`${round(rr.rps, 0)}/${round(l.rps, 0)}`)
      console.log(`pair ${i + 1}: remote ${round(rr.rps, 0)}/s (p99 ${rr.p99Ms} ms), local ${round(l.rps, 0)}/s`)
    }

    // 500 simulated members.
    const before = await memoryOf(a.pid)
    const nc = await connect({ servers: cluster.urls, user: 'bench', pass: 'pw-bench' })
    const { Kvm } = await import('@nats-io/kv')
    const kv = await new Kvm(nc).open('hostd_fleet')
    const entry = (host: string) =>
      JSON.stringify({
        host,
        publicKey: 'MCowBQYDK2VwAyEA3S8fYQ1o2v2cQn8bZ0m9z8rYw0a1xXq2m4Jm6u2V7cA',
        version: '0.1.0',
        status: 'up',
        inventory: {
          cpu: Math.random(),
          memory: { used: 3_221_225_472, total: 8_589_934_592 },
          disk: { used: 107_374_182_400, total: 536_870_912_000 },
          alerts: 0,
          updates: 12,
        },
      })
    const names = Array.from({ length: MEMBERS }, (_, i) => `sim-${String(i).padStart(4, '0')}`)
    const writeAll = () => Promise.all(names.map((n) => kv.put(n, entry(n))))
    await writeAll()
    timers.push(setInterval(() => void writeAll().catch(() => {}), 3000))
    await eventually(async () => (await listed()) === MEMBERS + 2, 200)
    const times: number[] = []
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now()
      const res = await a.fetch('/api/hosts', { headers: { authorization: `Bearer ${a.adminToken}` } })
      await res.arrayBuffer()
      times.push(performance.now() - t0)
    }
    // Let a few heartbeats of every member pass, so the figure is a steady state, not the first arrival.
    await new Promise((resolve) => setTimeout(resolve, 7000))
    const after = await memoryOf(a.pid)
    const perMemberKiB = ((after.rss - before.rss) * 1024) / MEMBERS
    console.log(`A's RSS: ${before.rss} MiB before, ${after.rss} MiB with ${MEMBERS} more members`)
    await nc.close()

    const figures = [
      figure(
        'remote GET /api/containers / local on the member (wrk -c8)',
        median(ratios),
        'x',
        { op: '>=', target: 0.5 },
        pairs.join(', '),
      ),
      figure(`GET /api/hosts with ${MEMBERS + 2} members, median`, median(times), 'ms', { op: '<', target: 2000 }),
      figure(`GET /api/hosts with ${MEMBERS + 2} members, max of 20`, Math.max(...times), 'ms'),
      figure('RSS a member adds on the serving hostd', perMemberKiB, 'KiB', { op: '<', target: 100 }),
    ]
    for (const f of figures) console.log(`${f.name}: ${f.value} ${f.unit}${f.detail ? ` (${f.detail})` : ''}`)
    printBenchJson('fleet', figures, { before, after })
  } finally {
    for (const t of timers) clearInterval(t)
    for (const d of daemons) await d.stop()
    await engine.stop()
    await cluster.stop()
  }
}

await runBench('fleet', main, 300_000)
