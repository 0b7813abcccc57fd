/**
 * System plugin and root helper benchmark (run by `npm run bench`, or `node plugins/system/test/bench.ts`).
 *
 * 1. Root helper round trip: one connection + one JSON line each way, sequential, for `ping` and for a dry-run
 *    `hostname.set` (validation, argv, log line). Reference: a bare Node Unix-socket server speaking the same
 *    protocol, measured in the same run. Ratio = helper / reference (requests per second).
 * 2. The fact routes (/api/system/info, /network, /settings) through the kernel in-process, against
 *    GET /api/version (the kernel's cheapest signed-in route) as the reference.
 */
import { createServer, connect } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel } from '@hostd/sdk/testing'
import { startHelper } from '../../../helper/test/start-helper.ts'
import { createSystemPlugin } from '../src/index.ts'
import { figure } from '../../../test/bench/support.ts'

function roundTrip(socket: string, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket)
    let got = ''
    conn.setEncoding('utf8')
    conn.on('connect', () => conn.write(line))
    conn.on('data', (d: string) => {
      got += d
      if (got.includes('\n')) {
        conn.end()
        resolve()
      }
    })
    conn.on('error', reject)
  })
}

async function rate(label: string, n: number, once: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(50, n); i++) await once() // warm-up
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await once()
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  const perSecond = n / seconds
  console.log(
    `${label.padEnd(44)} ${perSecond.toFixed(0).padStart(8)} /s  ${((seconds / n) * 1000).toFixed(2).padStart(8)} ms each`,
  )
  return perSecond
}

const dir = await mkdtemp(join(tmpdir(), 'hostd-bench-system-'))
const helper = await startHelper({ dryRun: true })
const echoSocket = join(dir, 'echo.sock')
const echo = createServer((c) => {
  c.setEncoding('utf8')
  c.once('data', () => c.end(`${JSON.stringify({ ok: true, result: { pong: true } })}\n`))
})
await new Promise<void>((r) => echo.listen(echoSocket, r))
const kernel = await startTestKernel({ plugins: [createSystemPlugin()], env: { HOSTD_HELPER_SOCKET: helper.socket } })

try {
  console.log('\n1. Root helper round trip (sequential, one connection per request)')
  const ping = `${JSON.stringify({ action: 'ping' })}\n`
  const action = `${JSON.stringify({ action: 'hostname.set', args: { name: 'bench-host' } })}\n`
  const reference = await rate('reference: bare Node Unix-socket server', 2000, () => roundTrip(echoSocket, ping))
  const helperPing = await rate('helper: ping', 1000, () => roundTrip(helper.socket, ping))
  const helperAction = await rate('helper: hostname.set (dry run, logged)', 1000, () =>
    roundTrip(helper.socket, action),
  )

  console.log('\n2. Fact routes in-process (inject), signed in as viewer')
  const get = (url: string) => async () => {
    const res = await kernel.inject({ url, as: 'viewer' })
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`)
  }
  const version = await rate('reference: GET /api/version', 1000, get('/api/version'))
  const info = await rate('GET /api/system/info', 300, get('/api/system/info'))
  const network = await rate('GET /api/system/network', 300, get('/api/system/network'))
  const settings = await rate('GET /api/system/settings (scans /proc)', 100, get('/api/system/settings'))

  const result = {
    helperPingPerSecond: Math.round(helperPing),
    helperActionPerSecond: Math.round(helperAction),
    unixEchoPerSecond: Math.round(reference),
    helperPingRatio: +(helperPing / reference).toFixed(3),
    helperActionRatio: +(helperAction / reference).toFixed(3),
    infoPerSecond: Math.round(info),
    networkPerSecond: Math.round(network),
    settingsPerSecond: Math.round(settings),
    versionPerSecond: Math.round(version),
    infoRatio: +(info / version).toFixed(3),
    networkRatio: +(network / version).toFixed(3),
    settingsRatio: +(settings / version).toFixed(3),
  }
  console.log(
    `\nhelper/reference: ping ${result.helperPingRatio}, action ${result.helperActionRatio}; ` +
      `routes/version: info ${result.infoRatio}, network ${result.networkRatio}, settings ${result.settingsRatio}`,
  )
  const figures = [
    figure(
      'root helper round trip (ping) / bare Unix-socket echo',
      result.helperPingRatio,
      'x',
      undefined,
      `${result.helperPingPerSecond} vs ${result.unixEchoPerSecond} /s`,
    ),
    figure(
      'root helper logged dry-run action / bare echo',
      result.helperActionRatio,
      'x',
      undefined,
      `${result.helperActionPerSecond} /s`,
    ),
  ]
  console.log(`BENCH_JSON ${JSON.stringify({ bench: 'system', figures, ...result })}`)
} finally {
  await kernel.close()
  await helper.stop()
  echo.close()
  await rm(dir, { recursive: true, force: true })
}
