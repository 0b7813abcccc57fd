import { fileURLToPath } from 'node:url'
import { sep } from 'node:path'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { RUNS_BUILT } from './loader.ts'

/**
 * Deadlines for calls into plugin code that runs in the daemon's process (import, `setup`, `routes`, `sockets`,
 * `provides`, `start`, `stop`), and where a plugin's error came from. Code in this process cannot be stopped from the
 * outside: a call past its deadline is abandoned (whatever it does later is ignored) and its plugin is failed with
 * the reason, so nothing of the registry waits on it. A synchronous loop cannot even be abandoned; it is reported once
 * it returns (docs/ARCHITECTURE.md, "Supervision").
 */

/** How long each call into plugin code may take: HOSTD_PLUGIN_CALL_TIMEOUT_MS (tests shorten it). */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000
/** How long a third-party plugin may take to start its answer: HOSTD_PLUGIN_REQUEST_TIMEOUT_MS (then 504). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000

/** A call into plugin code that ended without its own answer: its deadline passed, or the daemon stopped waiting. */
export class PluginCallError extends Error {
  override name = 'PluginCallError'
}

/** 10000 -> "10 s", 1500 -> "1.5 s", 300 -> "300 ms". */
export function formatDuration(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms)} ms`
}

/**
 * Calls `call` and waits for it at most `ms`: its result, or its error as thrown, or a PluginCallError saying that
 * `what` ("start()") did not finish within the deadline, or that `signal` gave up on it (disabled, removed, the daemon
 * stopping). A synchronous part that ran past the deadline (it blocked the daemon) is an error too, once it returns.
 * Given `startAfter` (an isolated plugin's sandbox starting), the call and its clock wait for it: the plugin's deadline
 * is for the plugin's code, not for how long the machine takes to start a process.
 */
export async function withDeadline<T>(
  what: string,
  call: () => T | Promise<T>,
  ms: number,
  signal?: AbortSignal,
  startAfter?: Promise<unknown>,
): Promise<T> {
  if (startAfter) await abortable(startAfter, what, signal)
  if (signal?.aborted) return Promise.reject(new PluginCallError(`${what} was not called: ${reasonOf(signal)}`))
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const settle = (done: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', abandon)
      done()
    }
    const abandon = () => settle(() => reject(new PluginCallError(`${what} was abandoned: ${reasonOf(signal!)}`)))
    const timer = setTimeout(
      () => settle(() => reject(new PluginCallError(`${what} did not finish within ${formatDuration(ms)}`))),
      ms,
    )
    signal?.addEventListener('abort', abandon, { once: true })
    const began = performance.now()
    let result: T | Promise<T>
    try {
      result = call()
    } catch (err) {
      settle(() => reject(err))
      return
    }
    const blocked = performance.now() - began
    if (blocked > ms) {
      const message = `${what} blocked the daemon for ${formatDuration(blocked)}, past its deadline of ${formatDuration(ms)}`
      settle(() => reject(new PluginCallError(message)))
      return
    }
    Promise.resolve(result).then(
      (value) => settle(() => resolve(value)),
      (err: unknown) => settle(() => reject(err)),
    )
  })
}

/** `waited`, or a PluginCallError as soon as `signal` gives up on `what`. */
function abortable(waited: Promise<unknown>, what: string, signal: AbortSignal | undefined): Promise<unknown> {
  if (!signal) return waited
  return new Promise((resolve, reject) => {
    const abandon = () => reject(new PluginCallError(`${what} was abandoned: ${reasonOf(signal)}`))
    if (signal.aborted) return abandon()
    signal.addEventListener('abort', abandon, { once: true })
    waited.then(resolve, reject).finally(() => signal.removeEventListener('abort', abandon))
  })
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason
  return reason instanceof Error ? reason.message : String(reason)
}

const REPO = fileURLToPath(new URL(RUNS_BUILT ? '../../' : '../../../', import.meta.url))
/** Frames of these are the kernel's, the sdk's or a library's, never the plugin's own line. */
const NOT_PLUGIN = [`${REPO}kernel${sep}src${sep}`, `${REPO}kernel${sep}dist${sep}`, `${REPO}sdk${sep}`]

/** A stack frame's file and line: `/path/to/file.ts:12`, query strings (the load tag) and `file://` taken off. */
function frameLocation(line: string): string | null {
  const match = /(?:\(|at )((?:file:\/\/)?\/[^\s()]*?)(?:\?[^\s():]*)?:(\d+):\d+\)?$/.exec(line.trim())
  if (!match) return null
  const file = match[1]!.startsWith('file://') ? fileURLToPath(match[1]!) : match[1]!
  return `${file}:${match[2]}`
}

/**
 * Where a plugin's error came from, as `file:line`: the first frame of its stack inside the plugin's folder (any
 * frame outside the kernel, the sdk, node_modules and Node itself for a definition handed over in-process), or the
 * file a syntax error names. Null when the stack names none (an error the kernel made, such as a route conflict).
 */
export function errorOrigin(err: unknown, dir: string | null): string | null {
  const stack = (err as Error | null)?.stack
  if (typeof stack !== 'string') return null
  const lines = stack.split('\n')
  // A module that does not parse: Node puts `file:line` first, then the source line and a caret.
  const syntax = /^((?:file:\/\/)?\/\S+?)(?:\?\S*)?:(\d+)$/.exec(lines[0] ?? '')
  if (syntax) {
    const file = syntax[1]!.startsWith('file://') ? fileURLToPath(syntax[1]!) : syntax[1]!
    if (!dir || file.startsWith(dir + sep)) return `${file}:${syntax[2]}`
  }
  for (const line of lines) {
    if (!line.trim().startsWith('at ')) continue
    const where = frameLocation(line)
    if (!where) continue
    if (dir ? where.startsWith(dir + sep) : !where.includes(`${sep}node_modules${sep}`) && !isKernel(where))
      return where
  }
  return null
}

const isKernel = (file: string) => NOT_PLUGIN.some((root) => file.startsWith(root))

/**
 * Gives each request to a third-party plugin running in the daemon's process (an admin trusts it, or isolation is off)
 * the deadline an isolated plugin's requests have: a handler that has not started its answer by then gets `onTimeout`'s
 * error as its answer (504 HOSTD_PLUGIN_TIMEOUT), and whatever it sends later is dropped. A streamed answer that has
 * begun is not cut; a route that takes a streamed body (`rawBody`, an upload) has none. Added before its routes.
 */
export function answerWithin(app: FastifyInstance, ms: number, onTimeout: (req: FastifyRequest) => Error): void {
  const timers = new WeakMap<FastifyRequest, NodeJS.Timeout>()
  app.addHook('onRequest', (req, reply, done) => {
    if (req.routeOptions.config?.rawBody) return done()
    const timer = setTimeout(() => {
      if (reply.sent || reply.raw.headersSent) return
      reply.send(onTimeout(req))
    }, ms)
    timer.unref()
    timers.set(req, timer)
    reply.raw.once('close', () => clearTimeout(timer))
    done()
  })
  app.addHook('onSend', (req, _reply, payload, done) => {
    clearTimeout(timers.get(req))
    done(null, payload)
  })
}
