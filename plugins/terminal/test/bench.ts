/**
 * Terminal benchmark (`npm run bench`, or `node plugins/terminal/test/bench.ts`): PTY output delivered to a WebSocket
 * client through the real daemon (TLS, the terminal plugin, its batching and flow control), against the same output
 * read locally from a PTY with node-pty in this process: MB/s of each, medians of BENCH_ROUNDS (default 5)
 * alternating rounds, and their ratio (daemon / local; 1.0 would mean the daemon adds nothing).
 * The program is `yes <37-byte line> | head -c BENCH_TERMINAL_BYTES` (default 50 MB), as the test account.
 * Prints a table and a final `BENCH_JSON {...}` line.
 */
import { spawn } from 'node-pty'
import { performance } from 'node:perf_hooks'
import { figure, printBenchJson } from '../../../test/bench/support.ts'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'
import { startPluginDaemon, type PluginDaemon } from '../../../test/support/plugin-daemon.ts'
import { TerminalClient } from './support.ts'

const BYTES = Number(process.env.BENCH_TERMINAL_BYTES ?? 50_000_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const PROGRAM = `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c ${BYTES}`

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** MB/s of the program's output read from a PTY in this process (the PTY's own line discipline included). */
function local(account: { uid: number; gid: number; home: string }): Promise<number> {
  return new Promise((resolve) => {
    let bytes = 0
    const start = performance.now()
    const pty = spawn('/bin/sh', ['-c', PROGRAM], {
      cols: 80,
      rows: 24,
      cwd: account.home,
      env: { PATH: '/usr/bin:/bin', TERM: 'xterm-256color' },
      encoding: null,
      uid: account.uid,
      gid: account.gid,
    })
    pty.onData((chunk) => (bytes += (chunk as unknown as Buffer).length))
    pty.onExit(() => resolve(bytes / 1e3 / (performance.now() - start)))
  })
}

const frameSizes: number[] = []

/** MB/s of the same output through the daemon to a WebSocket client, from the command's Enter to its end marker. */
async function throughDaemon(c: TerminalClient): Promise<number> {
  const start = performance.now()
  const from = c.bytes
  const fromFrames = c.binaryFrames
  c.output = ''
  c.type(`${PROGRAM}; echo BENCH-$((1+1))\n`)
  await c.waitFor(/BENCH-2\r\n/)
  frameSizes.push((c.bytes - from) / (c.binaryFrames - fromFrames))
  return (c.bytes - from) / 1e3 / (performance.now() - start)
}

let daemon: PluginDaemon | undefined
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void (daemon?.stop() ?? Promise.resolve()).finally(() => process.exit(130)))
try {
  const account = await ensureTestAccount()
  daemon = await startPluginDaemon(['terminal'], { HOSTD_TERMINAL_USER: account.name })
  const client = new TerminalClient(`${daemon.url.replace(/^https/, 'wss')}/api/terminal`, {
    token: daemon.adminToken,
    keep: 64 * 1024,
  })
  await client.waitForFrame('ready')
  await client.run('true')
  // One unmeasured round each: the first flood grows the daemon's heap once.
  await throughDaemon(client)
  await local(account)
  const hostd: number[] = []
  const reference: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      hostd.push(await throughDaemon(client))
      reference.push(await local(account))
    } else {
      reference.push(await local(account))
      hostd.push(await throughDaemon(client))
    }
  }
  await client.close()
  const h = median(hostd)
  const r = median(reference)
  console.log(`terminal output, ${(BYTES / 1e6).toFixed(0)} MB of \`yes | head -c\`, median of ${ROUNDS} rounds`)
  console.log(
    `  through the daemon to a WebSocket client   ${h.toFixed(1)} MB/s   (rounds: ${hostd.map((x) => x.toFixed(1)).join(', ')})`,
  )
  console.log(
    `  read locally from the PTY (node-pty)       ${r.toFixed(1)} MB/s   (rounds: ${reference.map((x) => x.toFixed(1)).join(', ')})`,
  )
  console.log(`  ratio daemon/local                         ${(h / r).toFixed(2)}`)
  const frameBytes = Math.round(median(frameSizes))
  console.log(`  mean WebSocket frame (batched output)      ${(frameBytes / 1024).toFixed(1)} KiB`)
  printBenchJson(
    'terminal',
    [
      figure(
        'PTY output to a WebSocket client / the same PTY read locally',
        h / r,
        'x',
        undefined,
        `${h.toFixed(1)} vs ${r.toFixed(1)} MB/s; frames of ${(frameBytes / 1024).toFixed(1)} KiB`,
      ),
    ],
    { bytes: BYTES, rounds: ROUNDS, hostdMBps: +h.toFixed(1), localMBps: +r.toFixed(1), frameBytes },
  )
} finally {
  await daemon?.stop()
}
