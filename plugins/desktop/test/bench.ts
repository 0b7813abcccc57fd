/**
 * Desktop bridge benchmark (`npm run bench`, or `node plugins/desktop/test/bench.ts`): the latency one RFB round trip
 * gains by going through the daemon. Xvfb plus x11vnc on loopback; the real daemon with the desktop plugin pointed at
 * it. A round trip is a FramebufferUpdateRequest (non-incremental, 1×1) and its FramebufferUpdate; each client first
 * completes the handshake. Measured straight over TCP to x11vnc (the reference) and through the daemon (WebSocket
 * over TLS, the bridge, TCP), BENCH_DESKTOP_TRIPS (default 2000) each, in BENCH_ROUNDS (default 5) alternating
 * rounds. Prints median round-trip times, the added latency (daemon − direct) and the ratio, and `BENCH_JSON {...}`.
 */
import { performance } from 'node:perf_hooks'
import { figure, printBenchJson } from '../../../test/bench/support.ts'
import { startPluginDaemon, type PluginDaemon } from '../../../test/support/plugin-daemon.ts'
import { RfbOverTcp, RfbOverWebSocket } from './support/rfb-client.ts'
import { startVnc, type Vnc } from './support/vnc.ts'

const TRIPS = Number(process.env.BENCH_DESKTOP_TRIPS ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)

// x11vnc answers update requests on its own 20 ms timers by default (-defer, -wait), which would hide the bridge's
// cost in its own scheduling; the bench runs it with the shortest ones. BENCH_X11VNC_ARGS="" keeps its defaults.
const X11VNC_ARGS = (process.env.BENCH_X11VNC_ARGS ?? '-defer 0 -wait 1').split(' ').filter(Boolean)

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Median microseconds per round trip over `trips`. */
async function measure(client: RfbOverTcp | RfbOverWebSocket, trips: number): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < trips; i++) {
    const start = performance.now()
    await client.roundTrip()
    times.push((performance.now() - start) * 1000)
  }
  return median(times)
}

let vnc: Vnc | undefined
let daemon: PluginDaemon | undefined
const cleanUp = async () => {
  await daemon?.stop()
  await vnc?.stop()
}
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)))
try {
  vnc = await startVnc({ extraArgs: X11VNC_ARGS })
  daemon = await startPluginDaemon(['desktop'], { HOSTD_DESKTOP_VNC: `127.0.0.1:${vnc.port}` })
  const direct = new RfbOverTcp(vnc.port)
  const bridged = new RfbOverWebSocket(`${daemon.url.replace(/^https/, 'wss')}/api/desktop`, daemon.adminToken, {
    protocols: ['binary'],
  })
  await direct.handshake()
  await bridged.handshake()
  // Unmeasured warm-up for both paths.
  await measure(direct, 200)
  await measure(bridged, 200)
  const viaDaemon: number[] = []
  const reference: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      viaDaemon.push(await measure(bridged, TRIPS))
      reference.push(await measure(direct, TRIPS))
    } else {
      reference.push(await measure(direct, TRIPS))
      viaDaemon.push(await measure(bridged, TRIPS))
    }
  }
  direct.close()
  await bridged.close()
  const d = median(viaDaemon)
  const r = median(reference)
  console.log(
    'desktop bridge, RFB round trip (FramebufferUpdateRequest 1x1 -> FramebufferUpdate), ' +
      `medians of ${ROUNDS} rounds of ${TRIPS}; x11vnc ${X11VNC_ARGS.join(' ') || '(default timers)'}`,
  )
  console.log(
    `  through the daemon (wss -> bridge -> tcp)  ${d.toFixed(0)} µs   (rounds: ${viaDaemon.map((x) => x.toFixed(0)).join(', ')})`,
  )
  console.log(
    `  straight to x11vnc over tcp                ${r.toFixed(0)} µs   (rounds: ${reference.map((x) => x.toFixed(0)).join(', ')})`,
  )
  console.log(
    `  added by the daemon                        ${(d - r).toFixed(0)} µs per round trip (ratio ${(d / r).toFixed(2)})`,
  )
  printBenchJson(
    'desktop',
    [
      figure(
        'RFB round trip added by the bridge',
        d - r,
        'µs',
        undefined,
        `${Math.round(d)} µs through the daemon vs ${Math.round(r)} µs straight to x11vnc (${(d / r).toFixed(2)}x)`,
      ),
    ],
    {
      x11vncArgs: X11VNC_ARGS.join(' '),
      trips: TRIPS,
      rounds: ROUNDS,
      bridgedUs: Math.round(d),
      directUs: Math.round(r),
    },
  )
} finally {
  await cleanUp()
}
