/**
 * Spawns the real daemon for end-to-end tests and talks to it over a real TLS socket. By default it runs what
 * `npm start` runs, the build (`node kernel/dist/main.mjs`, made by kernel/build.mjs; vitest's globalSetup and the
 * bench build it when a source changed); `HOSTD_TEST_DAEMON=sources` (or `entry: 'sources'`) runs
 * `node kernel/src/main.ts` instead. Each daemon gets its own temporary data dir and a free loopback port; `stop()`
 * ends it by PID (SIGTERM, then SIGKILL if it hangs) and removes the temp dir.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '@hostd/sdk/testing'
import { Agent, fetch, type RequestInit, type Response } from 'undici'

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** The daemon's entry files: its build and its TypeScript sources. */
export const DAEMON_ENTRIES = {
  built: join(REPO_ROOT, 'kernel', 'dist', 'main.mjs'),
  sources: join(REPO_ROOT, 'kernel', 'src', 'main.ts'),
} as const
export type DaemonEntry = keyof typeof DAEMON_ENTRIES
const DEFAULT_ENTRY: DaemonEntry = process.env.HOSTD_TEST_DAEMON === 'sources' ? 'sources' : 'built'

/** Accepts the daemon's self-signed certificate; everything else about TLS is real. */
export const insecureAgent = new Agent({ connect: { rejectUnauthorized: false } })

/** The parent's environment without any hostd settings, so the host running the tests cannot leak in. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('HOSTD_') || key === 'DOCKER_HOST' || key === 'NODE_OPTIONS' || key.startsWith('VITEST'))
      continue
    env[key] = value
  }
  return { ...env, ...extra }
}

export interface DaemonOptions {
  /** Reuse this data dir (e.g. to restart on the same one); otherwise a fresh temp dir. It is never removed if given. */
  dataDir?: string
  /** Extra environment (HOSTD_* settings). */
  env?: Record<string, string>
  /** How long to wait for the "serving" line. */
  startTimeoutMs?: number
  /** Run the build (the default, unless HOSTD_TEST_DAEMON=sources) or the TypeScript sources. */
  entry?: DaemonEntry
}

export interface Daemon {
  url: string
  port: number
  pid: number
  dataDir: string
  pluginsDir: string
  process: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves with the exit code (or signal name) once the process has ended. */
  exited: Promise<number | string>
  /** SIGTERM by PID, wait for exit (SIGKILL after a while), remove the temp dir unless it was given. */
  stop(options?: { keepDataDir?: boolean }): Promise<number | string>
  /** fetch against this daemon over TLS, accepting its certificate. */
  fetch(path: string, init?: RequestInit): Promise<Response>
}

const SERVING = /^hostd \S+ serving (https:\/\/\S+)$/m

async function spawnOnce(dataDir: string, ownsDir: boolean, options: DaemonOptions): Promise<Daemon | 'port-in-use'> {
  const port = await freePort()
  const env = cleanEnv({
    HOSTD_DATA_DIR: dataDir,
    HOSTD_HOST: '127.0.0.1',
    HOSTD_PORT: String(port),
    HOSTD_HELPER_SOCKET: join(dataDir, 'no-helper.sock'),
    HOSTD_BUILTIN_PLUGINS: '0',
    HOSTD_LOG_LEVEL: 'warn',
    ...options.env,
  })
  const child = spawn(process.execPath, [DAEMON_ENTRIES[options.entry ?? DEFAULT_ENTRY]], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  )

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `daemon did not print its serving line within ${options.startTimeoutMs ?? 20_000} ms\nstdout: ${out}\nstderr: ${err}`,
          ),
        ),
      options.startTimeoutMs ?? 20_000,
    )
    const check = () => {
      const match = SERVING.exec(out)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    }
    child.stdout!.on('data', check)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(
        Object.assign(new Error(`daemon exited (${code}) before serving\nstdout: ${out}\nstderr: ${err}`), {
          stderr: err,
        }),
      )
    })
  }).catch((e: Error & { stderr?: string }) => {
    if (/port already in use/.test(e.stderr ?? '')) return 'port-in-use' as const
    if (child.exitCode === null) child.kill('SIGKILL')
    throw e
  })
  if (url === 'port-in-use') return url

  const pid = child.pid!
  const daemon: Daemon = {
    url,
    port,
    pid,
    dataDir,
    pluginsDir: options.env?.HOSTD_PLUGINS_DIR ?? join(dataDir, 'plugins'),
    process: child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop({ keepDataDir = false } = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(pid, 'SIGTERM')
        } catch {
          /* already gone */
        }
        const killer = setTimeout(() => {
          try {
            process.kill(pid, 'SIGKILL')
          } catch {
            /* already gone */
          }
        }, 5000)
        await exited
        clearTimeout(killer)
      }
      const code = await exited
      if (ownsDir && !keepDataDir) await rm(dataDir, { recursive: true, force: true })
      return code
    },
    fetch: (path, init = {}) => fetch(new URL(path, url), { dispatcher: insecureAgent, ...init }),
  }
  return daemon
}

/** Starts a daemon and resolves once it printed `hostd <version> serving https://127.0.0.1:<port>`. */
export async function startDaemon(options: DaemonOptions = {}): Promise<Daemon> {
  const ownsDir = !options.dataDir
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'hostd-e2e-')))
  for (let attempt = 0; attempt < 3; attempt++) {
    const daemon = await spawnOnce(dataDir, ownsDir, options)
    if (daemon !== 'port-in-use') return daemon
  }
  throw new Error('could not find a free port in 3 attempts')
}

export interface RunResult {
  code: number | string
  stdout: string
  stderr: string
}

/** Runs the daemon with a configuration expected to be refused; kills it if it is still running after `timeoutMs`. */
export async function runDaemonExpectingExit(env: Record<string, string>, timeoutMs = 15_000): Promise<RunResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-e2e-bad-'))
  try {
    const child = spawn(process.execPath, [DAEMON_ENTRIES[DEFAULT_ENTRY]], {
      cwd: REPO_ROOT,
      env: cleanEnv({
        HOSTD_DATA_DIR: dataDir,
        HOSTD_HOST: '127.0.0.1',
        HOSTD_HELPER_SOCKET: join(dataDir, 'no-helper.sock'),
        HOSTD_BUILTIN_PLUGINS: '0',
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), timeoutMs)
    const code = await new Promise<number | string>((resolve) =>
      child.once('close', (c, signal) => resolve(c ?? signal ?? 'unknown')),
    )
    clearTimeout(timer)
    return { code, stdout, stderr }
  } finally {
    await rm(dataDir, { recursive: true, force: true })
  }
}

/** Polls `probe` every `everyMs` until it returns true; resolves with the elapsed ms, or throws after `timeoutMs`. */
export async function waitFor(probe: () => Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<number> {
  const start = performance.now()
  for (;;) {
    if (await probe().catch(() => false)) return performance.now() - start
    if (performance.now() - start > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
