import { writeSync } from 'node:fs'
import { loadConfig, ConfigError, type KernelConfig } from './config.ts'
import { createKernel, REPO_ROOT, type Kernel } from './kernel.ts'
import { DRAIN_TIMEOUT_MS } from './plugins/runtime.ts'
import { swapDataFolder } from './setup-restore.ts'
import { DEFAULT_CALL_TIMEOUT_MS, errorOrigin, formatDuration } from './plugins/supervision.ts'

/**
 * The daemon (main.ts imports it once the runtime settings are in place): config -> kernel -> listen -> plugins. It is
 * never silently down: every exit writes one line saying why (a signal, a fatal error with where it came from, an empty
 * event loop), and a plugin in its process cannot end it with `process.exit` (refused, with its caller's file:line).
 * Bad configuration is one clear line and exit 1, never a stack trace.
 */

const exitProcess = process.exit.bind(process)
let told = false

/** The one line saying why the daemon ends: stdout for a clean stop, stderr otherwise. Only the first counts. */
function tell(code: number, why: string): void {
  if (told) return
  told = true
  writeSync(code === 0 ? 1 : 2, `hostd: ${why}\n`)
}

/** The daemon's own way out (`process.exit` is refused to everyone else, below). */
function exit(code: number, why: string): never {
  tell(code, why)
  return exitProcess(code)
}

// An end nobody asked for still gets its line: Node ends the process when nothing is left to wait on.
process.on('exit', (code) =>
  tell(code, `exiting with code ${code}: nothing was left to run (the event loop was empty)`),
)

/** Where a call came from: the first frame outside the kernel, the sdk and libraries, else the first after `skip` frames. */
function callerOf(err: Error, skip: number): string {
  const origin = errorOrigin(err, null)
  if (origin) return origin
  const frame = (err.stack ?? '').split('\n').filter((line) => line.trim().startsWith('at '))[skip]
  return frame?.trim().replace(/^at /, '') ?? 'an unknown caller'
}

/**
 * Refused rather than logged and allowed: an exit, even a clean one that systemd restarts, ends every request, socket
 * and terminal of every user, and a plugin that exits while it loads would do so at every start. The call throws to
 * its caller, so the plugin's hook fails with the reason (a `start` that calls it leaves its plugin `failed`).
 */
process.exit = ((code?: number | string | null) => {
  const caller = callerOf(new Error('process.exit'), 1)
  note(`process.exit(${code ?? ''}) called from ${caller}: refused, the daemon goes on (only a signal ends it)`)
  throw new Error(`process.exit() is refused in the hostd daemon (called from ${caller})`)
}) as typeof process.exit

/** A line that is not the exit line (a refused exit, an error the daemon survives). */
function note(line: string): void {
  writeSync(2, `hostd: ${line}\n`)
}

let kernel: Kernel | null = null
let stopping = false

/**
 * SIGTERM, SIGINT, SIGHUP: stop, then exit 0 with the line. Stopping takes at most the drain time of requests in flight
 * plus one call deadline (a plugin's `stop`); past that, and 2 s to spare, the daemon exits 1 saying so. A second
 * signal while stopping exits at once.
 */
async function stop(signal: string, callTimeoutMs: number): Promise<void> {
  if (stopping) exit(1, `exiting with code 1: ${signal} again while stopping, so at once`)
  stopping = true
  process.stdout.write(`hostd: ${signal}, stopping\n`)
  const began = performance.now()
  const limit = DRAIN_TIMEOUT_MS + callTimeoutMs + 2000
  setTimeout(
    () => exit(1, `exiting with code 1: ${signal}, but stopping took over ${formatDuration(limit)}: gave up waiting`),
    limit,
  )
  try {
    await kernel?.close()
  } catch (err) {
    exit(1, `exiting with code 1: ${signal}, and stopping failed: ${describe(err)}`)
  }
  exit(0, `exiting with code 0: ${signal} (stopped in ${formatDuration(performance.now() - began)})`)
}

/** An error as one line: its message and, when its stack has one, where it came from. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const frame = (err.stack ?? '').split('\n').find((line) => line.trim().startsWith('at '))
  return frame ? `${err.message} (${frame.trim()})` : err.message
}

/**
 * First-run setup restored hostd from a backup into `folder`: this kernel is closed (nothing serves meanwhile: the
 * port is closed, and a client retries), the folder's content swapped into the data folder, and a new kernel started
 * on it, on the same port. If that one cannot start, the fresh install's content is put back and started again.
 */
async function restartOnRestored(config: KernelConfig, folder: string, snapshot: string): Promise<void> {
  if (stopping || !kernel) return
  process.stdout.write(`hostd: restored from snapshot ${snapshot.slice(0, 8)}: restarting on the restored data\n`)
  const old = kernel
  kernel = null
  await old.close()
  const swap = await swapDataFolder(config.dataDir, folder)
  try {
    kernel = await createKernel(config, { startPlugins: false, onRestored: restorer(config) })
  } catch (err) {
    note(`the restored data could not be started (${describe(err)}): back to the fresh install`)
    await swap.rollback()
    kernel = await createKernel(config, { startPlugins: false, onRestored: restorer(config) })
  }
  await swap.commit()
  const url = await kernel.listen()
  await kernel.services.audit.record({ action: 'setup.restore', target: snapshot }, { username: 'setup' })
  await kernel.startPlugins()
  process.stdout.write(`hostd ${kernel.services.version} serving ${url}\n`)
}

/** The kernel's `onRestored`: a failed restart ends the daemon with the reason (systemd starts it again). */
function restorer(config: KernelConfig) {
  return (folder: string, snapshot: string) =>
    restartOnRestored(config, folder, snapshot).catch((err: unknown) =>
      exit(1, `exiting with code 1: restarting on the restored data failed: ${describe(err)}`),
    )
}

async function runDaemon(): Promise<void> {
  let callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
    process.on(signal, () => void stop(signal, callTimeoutMs))
  // A plugin's stray async error must not take the daemon down: log it and carry on.
  process.on('unhandledRejection', (err) => console.error('hostd: unhandled rejection:', err))
  process.on('uncaughtException', (err) => console.error('hostd: uncaught exception:', err))
  const config = loadConfig(process.env, REPO_ROOT)
  callTimeoutMs = config.pluginCallTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS
  // Listen first, then start the plugins: /health answers meanwhile, and a plugin's routes answer 503 until it is up.
  // After a restore, the new kernel listens on the same port, even when the configuration said 0 (any).
  let listened = config.port
  kernel = await createKernel(config, {
    startPlugins: false,
    onRestored: (folder, snapshot) => restorer({ ...config, port: listened })(folder, snapshot),
  })
  const url = await kernel.listen()
  listened = Number(new URL(url).port) || config.port
  if (stopping) return
  process.stdout.write(`hostd ${kernel.services.version} listening on ${url}, starting plugins\n`)
  await kernel.startPlugins()
  if (stopping) return
  process.stdout.write(`hostd ${kernel.services.version} serving ${url}\n`)
  if (await kernel.services.users.needsSetup())
    process.stdout.write(`no users yet: create the first admin: open ${url} in a browser, or POST ${url}/api/setup\n`)
}

void runDaemon().catch((err: unknown) => {
  const e = err as NodeJS.ErrnoException
  const line =
    err instanceof ConfigError
      ? err.message
      : e.code === 'EADDRINUSE'
        ? `port already in use (${e.message})`
        : e.code === 'EACCES'
          ? `permission denied: ${e.message}`
          : e.code === 'EADDRNOTAVAIL'
            ? `cannot bind that address: ${e.message}`
            : `failed to start: ${describe(err)}`
  exit(1, line)
})
