import { spawn, type ChildProcess } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The real helper program; tests run it as a separate root process on its own socket. */
export const HELPER_PROGRAM = join(import.meta.dirname, '..', 'hostd-helper.py')

export interface HelperOptions {
  /** Answer the argument vector instead of running actions that change the host. */
  dryRun?: boolean
  /** D-Bus system bus address handed to nmcli/gdbus (a helper setting, not a request argument). */
  dbusSystemBus?: string
  /** The daemon's uid and gid: socket owner and the only peer uid served (default: this process's). */
  uid?: number
  gid?: number
  /** Reuse this directory (and so the same socket path), e.g. to restart a helper the daemon already points at. */
  dir?: string
  /** The helper's environment (default empty): settings it reads from there, e.g. the storage actions' paths. */
  env?: Record<string, string>
}

export interface HelperAnswer {
  ok: boolean
  result?: any
  error?: string
  message?: string
  status?: number
}

export interface RunningHelper {
  socket: string
  logFile: string
  dir: string
  process: ChildProcess
  /** One raw request over the socket, as the kernel's client sends it. */
  request(body: unknown): Promise<HelperAnswer>
  call(action: string, args?: Record<string, unknown>): Promise<HelperAnswer>
  /** The helper's own log, one object per request. */
  log(): Promise<Record<string, any>[]>
  /** Stops the helper; its directory (socket path, log) is removed unless `keepDir`. */
  stop(keepDir?: boolean): Promise<void>
}

/** One JSON line out, one JSON line back, over a Unix socket. Used by tests only. */
export function requestOverSocket(socket: string, body: unknown | string): Promise<HelperAnswer> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket)
    let buffer = ''
    conn.setEncoding('utf8')
    conn.on('connect', () => conn.write(typeof body === 'string' ? body : `${JSON.stringify(body)}\n`))
    conn.on('data', (chunk: string) => {
      buffer += chunk
      const end = buffer.indexOf('\n')
      if (end >= 0) {
        conn.end()
        resolve(JSON.parse(buffer.slice(0, end)))
      }
    })
    conn.on('error', reject)
    conn.on('close', () => reject(new Error('helper closed the connection without an answer')))
  })
}

/** Starts the helper (python3 helper/hostd-helper.py) in a fresh temp dir and waits until it answers a ping. */
export async function startHelper(options: HelperOptions = {}): Promise<RunningHelper> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'hostd-helper-')))
  await chmod(dir, 0o755) // so a test client running as another uid can reach the socket file
  const socket = join(dir, 'helper.sock')
  const logFile = join(dir, 'helper.log')
  const args = [
    HELPER_PROGRAM,
    '--socket',
    socket,
    '--log',
    logFile,
    '--uid',
    String(options.uid ?? process.getuid!()),
    '--gid',
    String(options.gid ?? process.getgid!()),
  ]
  if (options.dryRun) args.push('--dry-run')
  if (options.dbusSystemBus) args.push('--dbus-system-bus', options.dbusSystemBus)
  const child = spawn('/usr/bin/python3', args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? {} })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += String(d)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`helper exited: ${stderr}`)
    try {
      const answer = await requestOverSocket(socket, { action: 'ping' })
      if (answer) break // answered (a helper serving another uid refuses us, but it is up)
    } catch {
      if (attempt > 200) {
        child.kill('SIGKILL')
        throw new Error(`helper did not answer: ${stderr}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return {
    socket,
    logFile,
    dir,
    process: child,
    request: (body) => requestOverSocket(socket, body),
    call: (action, args = {}) => requestOverSocket(socket, { action, args }),
    async log() {
      const text = await readFile(logFile, 'utf8').catch(() => '')
      return text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    },
    async stop(keepDir = false) {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await exited
      }
      if (!keepDir) await rm(dir, { recursive: true, force: true })
    },
  }
}
