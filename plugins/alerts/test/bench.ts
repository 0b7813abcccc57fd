/**
 * Alerts benchmark (`npm run bench`, or BENCH_ONLY=alerts).
 *
 * 1. CPU of 200 rules evaluating, beyond the metrics sampler: a kernel with the alerts plugin and 200 rules (150
 *    metric rules over 10 file systems and the host figures, 50 container rules over 50 containers), fed snapshots
 *    as the metrics sampler hands them over. The CPU this process spends per snapshot (evaluation, and the writes of
 *    what changed) is measured over many snapshots, steady (nothing changes) and churning (every rule's alerts change
 *    state at every snapshot: the worst case); the share of a core is that per snapshot over the sampler's period
 *    (60 s). Beside it, the sampler's own CPU per reading (the real HostReader), the reference it comes on top of.
 * 2. Event to webhook delivered, median: a private Docker engine and the real containers plugin; a container with a
 *    restart policy is killed with the docker CLI (outside hostd) and started again, 10 times; from the kill to the
 *    firing webhook at a local receiver. The rule has no hold (`forSeconds: 0`); the default rule's 5 s hold adds to
 *    this on purpose.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, startTestKernel } from '@hostd/sdk/testing'
import { figure, printBenchJson, round } from '../../../test/bench/support.ts'
import containers from '../../containers/src/index.ts'
import { importTestImage, startEngine } from '../../containers/test/support/engine.ts'
import { HostReader } from '../../metrics/src/adapters/host-reader.ts'
import { createAlertsPlugin } from '../src/index.ts'
import { FakeEngine, FakeMetrics, snapshot } from './support/fakes.ts'
import { httpReceiver } from './support/receivers.ts'

const SAMPLE_PERIOD_S = 60
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

async function evaluationCost() {
  const metrics = new FakeMetrics()
  const engine = new FakeEngine()
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-alerts-bench-'))
  const t = await startTestKernel({
    plugins: [createAlertsPlugin({ smartIntervalMs: 0, attachIntervalMs: 60_000 })],
    services: [metrics.binding, engine.binding],
    env: { HOSTD_DATA_DIR: dataDir },
  })
  try {
    for (let i = 0; i < 50; i++) engine.set(`app${i}`, 'running')
    const metricNames = ['filesystem.usedPercent', 'cpu.usage', 'memory.usedPercent', 'load.one', 'swap.usedPercent']
    for (let i = 0; i < 150; i++) {
      const res = await t.inject({
        method: 'POST',
        url: '/api/alerts/rules',
        as: 'admin',
        payload: {
          name: `metric ${i}`,
          source: 'metric',
          metric: metricNames[i % metricNames.length],
          threshold: 50 + (i % 40),
          clearThreshold: 40 + (i % 40),
        },
      })
      if (res.statusCode !== 201) throw new Error(res.body)
    }
    for (let i = 0; i < 50; i++)
      await t.inject({
        method: 'POST',
        url: '/api/alerts/rules',
        as: 'admin',
        payload: { name: `container ${i}`, source: 'container', condition: 'down', match: `app${i}` },
      })
    const filesystems = (value: number) => Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`/fs${i}`, value]))
    // Snapshots are evaluated one after the other on the plugin's queue; creating a silence takes its turn on the same
    // queue, so its answer comes once every snapshot before it was evaluated and written.
    let syncs = 0
    const drained = () =>
      t.inject({
        method: 'POST',
        url: '/api/alerts/silences',
        as: 'operator',
        payload: { target: `bench-sync-${++syncs}`, endsAt: new Date(Date.now() + 60_000).toISOString() },
      })
    const run = async (n: number, value: (i: number) => number) => {
      await drained()
      const start = cpuMs()
      for (let i = 0; i < n; i++) metrics.emit(snapshot(filesystems(value(i)), value(i)))
      await drained()
      return (cpuMs() - start) / n
    }
    await run(20, () => 20) // warm-up
    const steady = await run(300, () => 20)
    const churn = await run(100, (i) => (i % 2 === 0 ? 99 : 10))
    return { steady, churn }
  } finally {
    await t.close()
    await rm(dataDir, { recursive: true, force: true })
  }
}

async function samplerCost(): Promise<number> {
  const reader = new HostReader()
  await reader.read()
  const start = cpuMs()
  for (let i = 0; i < 50; i++) await reader.read()
  return (cpuMs() - start) / 50
}

async function eventToWebhook(): Promise<number[]> {
  const engine = await startEngine()
  const receiver = await httpReceiver()
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-alerts-bench-'))
  const t = await startTestKernel({
    plugins: [containers, createAlertsPlugin({ smartIntervalMs: 0, attachIntervalMs: 500 })],
    env: { DOCKER_HOST: engine.host, HOSTD_DATA_DIR: dataDir },
  })
  try {
    await importTestImage(engine, 'hostd-test/alerts-bench:1')
    const hook = await t.inject({
      method: 'POST',
      url: '/api/alerts/channels',
      as: 'admin',
      payload: { name: 'bench', type: 'webhook', options: { url: `${receiver.url}/hook` } },
    })
    await t.inject({ method: 'DELETE', url: '/api/alerts/rules/container-down', as: 'admin' })
    await t.inject({
      method: 'POST',
      url: '/api/alerts/rules',
      as: 'admin',
      payload: {
        name: 'down now',
        source: 'container',
        condition: 'down',
        repeatIntervalSeconds: 60,
        channels: [hook.json().id],
      },
    })
    const times: number[] = []
    const firing = () => receiver.requests.filter((r) => JSON.parse(r.body).status === 'firing').length
    const resolved = () => receiver.requests.filter((r) => JSON.parse(r.body).status === 'resolved').length
    // Each round waits out the repeat interval's damping: the rule repeats every 60 s, so one alert per round would
    // be damped; a fresh container name per round is a fresh target instead.
    for (let i = 0; i < 10; i++) {
      const name = `bench-web-${i}`
      await engine.docker(
        'run',
        '-d',
        '--restart',
        'unless-stopped',
        '--name',
        name,
        'hostd-test/alerts-bench:1',
        'sleep',
        '3600',
      )
      const before = firing()
      const start = performance.now()
      await engine.docker('kill', name)
      await eventually(() => firing() > before, 5)
      times.push(performance.now() - start)
      const resolvedBefore = resolved()
      await engine.docker('rm', '-f', name)
      await eventually(() => resolved() > resolvedBefore, 5)
    }
    return times
  } finally {
    await t.close()
    await receiver.close()
    await engine.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
}

const { steady, churn } = await evaluationCost()
const sampler = await samplerCost()
const latencies = await eventToWebhook()
const share = (ms: number) => (100 * ms) / (SAMPLE_PERIOD_S * 1000)
console.log(
  `200 rules per snapshot: steady ${round(steady, 2)} ms, churning ${round(churn, 2)} ms CPU; sampler reading ${round(sampler, 2)} ms`,
)
console.log(`event -> webhook: ${latencies.map((x) => Math.round(x)).join(', ')} ms`)
// 1 % of a core is 600 ms of CPU per minute; the sampler hands over one snapshot a minute.
const perMinute = (ms: number) => (ms * 60) / SAMPLE_PERIOD_S
printBenchJson(
  'alerts',
  [
    figure(
      '200 rules evaluating, CPU per minute',
      round(perMinute(steady), 2),
      'ms',
      { op: '<', target: 600 },
      `1 % of a core is 600 ms/min; ${round(share(steady), 4)} %; beyond the sampler's own ${round(sampler, 2)} ms a reading`,
    ),
    figure(
      'same, every alert changing state each sample',
      round(perMinute(churn), 2),
      'ms',
      { op: '<', target: 600 },
      `${round(share(churn), 3)} % of a core (the state writes included)`,
    ),
    figure(
      'container event to webhook delivered, median',
      Math.round(median(latencies)),
      'ms',
      { op: '<', target: 3000 },
      'docker kill (outside hostd) to the firing webhook, no hold; 10 rounds',
    ),
  ],
  { steadyMs: steady, churnMs: churn, samplerMs: sampler, latenciesMs: latencies },
)
