/**
 * A real screen to share: Xvfb on a free display number, and x11vnc serving it on a free loopback port
 * (test-components.md's recipe). Started and stopped by pid; x11vnc can be stopped and started again alone.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '@hostd/sdk/testing'

const run = promisify(execFile)

export const SCREEN = { width: 1024, height: 768 }

export interface Vnc {
  display: number
  port: number
  /** Stops x11vnc only (the screen stays). */
  stopServer(): Promise<void>
  /** Starts x11vnc again on the same port. */
  startServer(): Promise<void>
  stop(): Promise<void>
}

async function stopChild(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  process.kill(child.pid!, 'SIGTERM')
  const killer = setTimeout(() => child.exitCode === null && process.kill(child.pid!, 'SIGKILL'), 5000)
  await exited
  clearTimeout(killer)
}

/** Resolves once something on the port sends a VNC greeting. */
async function greets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.setTimeout(1000)
    socket.once('data', (d) => {
      socket.destroy()
      resolve(d.toString('latin1').startsWith('RFB '))
    })
    for (const e of ['error', 'timeout', 'close'])
      socket.once(e, () => {
        socket.destroy()
        resolve(false)
      })
  })
}

/**
 * `password`: x11vnc asks for it (VNC Authentication, security type 2) instead of running with `-nopw`.
 * `extraArgs`: more x11vnc options (the bench shortens its update timers).
 */
export async function startVnc(options: { password?: string; extraArgs?: string[] } = {}): Promise<Vnc> {
  let display = 0
  for (let n = 200 + Math.floor(Math.random() * 700); ; n++) {
    if (!existsSync(`/tmp/.X11-unix/X${n}`) && !existsSync(`/tmp/.X${n}-lock`)) {
      display = n
      break
    }
  }
  const xvfb = spawn(
    'Xvfb',
    [`:${display}`, '-screen', '0', `${SCREEN.width}x${SCREEN.height}x24`, '-nolisten', 'tcp'],
    { stdio: 'ignore' },
  )
  for (let i = 0; !existsSync(`/tmp/.X11-unix/X${display}`); i++) {
    if (xvfb.exitCode !== null || i > 200) throw new Error(`Xvfb :${display} did not start`)
    await sleep(50)
  }
  const port = await freePort()
  let auth = ['-nopw']
  let work: string | null = null
  if (options.password) {
    work = await mkdtemp(join(tmpdir(), 'hostd-vnc-'))
    const file = join(work, 'passwd')
    await run('x11vnc', ['-storepasswd', options.password, file])
    auth = ['-rfbauth', file]
  }
  let x11vnc: ChildProcess | null = null
  const startServer = async () => {
    x11vnc = spawn(
      'x11vnc',
      [
        '-display',
        `:${display}`,
        '-rfbport',
        String(port),
        '-localhost',
        ...auth,
        '-forever',
        '-shared',
        '-quiet',
        ...(options.extraArgs ?? []),
      ],
      { stdio: 'ignore' },
    )
    for (let i = 0; !(await greets(port)); i++) {
      if (x11vnc.exitCode !== null || i > 100) throw new Error(`x11vnc on :${display} port ${port} did not start`)
      await sleep(100)
    }
  }
  try {
    await startServer()
  } catch (err) {
    await stopChild(x11vnc)
    await stopChild(xvfb)
    if (work) await rm(work, { recursive: true, force: true })
    throw err
  }
  return {
    display,
    port,
    stopServer: () => stopChild(x11vnc),
    startServer,
    async stop() {
      await stopChild(x11vnc)
      await stopChild(xvfb)
      if (work) await rm(work, { recursive: true, force: true })
    },
  }
}
