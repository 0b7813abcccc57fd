import { connect } from 'node:net'
import { errors, HostdError, type HelperCallOptions, type HelperClient } from '@hostd/sdk'

/** How long an answered ping counts, and a ping that timed out (a hung helper: each probe would wait its timeout). */
const PROBE_CACHE_MS = 1000
const PROBE_TIMEOUT_MS = 2000
const CALL_TIMEOUT_MS = 30_000
const TIMED_OUT = 'helper timed out'

/** The helper's socket could not be connected to (nothing listens there, or no such file): nothing was sent. */
class NotConnected extends Error {
  constructor(cause: Error) {
    super(`the root helper is not reachable: ${cause.message}`, { cause })
  }
}

interface Probe {
  at: number
  ok: Promise<boolean>
  outcome: 'pending' | 'ok' | 'absent' | 'hung'
}

/**
 * Talks to the root helper over its Unix socket: one JSON request line, one JSON answer line (a streamed action
 * sends `{"event": ...}` lines first, handed to `onEvent`).
 * Availability is probed at most once a second while the helper answers; a helper that is not there (nothing listens
 * on the socket: refused at once) is looked for again on the next call, so one that comes back is seen at once (a
 * person pressing "Check again" right after starting it must not be told it is still missing).
 * The helper itself and its action allowlist are built in helper/ (see its issue).
 */
export class UnixHelperClient implements HelperClient {
  readonly #socketPath: string
  #probe: Probe | null = null

  constructor(socketPath: string) {
    this.#socketPath = socketPath
  }

  available(): Promise<boolean> {
    const now = Date.now()
    const last = this.#probe
    if (last && (last.outcome === 'pending' || (last.outcome !== 'absent' && now - last.at <= PROBE_CACHE_MS)))
      return last.ok
    const probe: Probe = { at: now, outcome: 'pending', ok: Promise.resolve(false) }
    // Only an ok answer counts: a helper that refuses this process (wrong uid) is as good as absent.
    probe.ok = this.#request({ action: 'ping' }, PROBE_TIMEOUT_MS).then(
      (answer) => {
        probe.outcome = (answer as { ok?: unknown })?.ok === true ? 'ok' : 'absent'
        return probe.outcome === 'ok'
      },
      (err: Error) => {
        probe.outcome = err.message === TIMED_OUT ? 'hung' : 'absent'
        return false
      },
    )
    this.#probe = probe
    return probe.ok
  }

  async call<T>(action: string, args: Record<string, unknown> = {}, options: HelperCallOptions = {}): Promise<T> {
    if (!(await this.available())) throw errors.privilegesMissing()
    const answer = (await this.#request({ action, args }, options.timeoutMs ?? CALL_TIMEOUT_MS, options.onEvent).catch(
      (err: unknown) => {
        // It went away since it last answered a ping (within the second a ping is kept): nothing was sent, so this is
        // the helper missing (423), not a failed action, and the next call looks for it again.
        if (err instanceof NotConnected) {
          this.#probe = null
          throw errors.privilegesMissing()
        }
        throw err
      },
    )) as { ok: boolean; result?: T; error?: string; message?: string; status?: number }
    if (!answer.ok) {
      throw new HostdError(
        answer.error ?? 'HOSTD_HELPER_ACTION_FAILED',
        answer.status ?? 500,
        answer.message ?? `helper action ${action} failed`,
      )
    }
    return answer.result as T
  }

  #request(body: unknown, timeoutMs: number, onEvent?: (event: unknown) => void): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const socket = connect(this.#socketPath)
      let buffer = ''
      const timer = setTimeout(() => socket.destroy(new Error(TIMED_OUT)), timeoutMs)
      socket.setEncoding('utf8')
      let connected = false
      socket.on('connect', () => {
        connected = true
        socket.write(`${JSON.stringify(body)}\n`)
      })
      socket.on('data', (chunk: string) => {
        buffer += chunk
        for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
          let line: { event?: unknown }
          try {
            line = JSON.parse(buffer.slice(0, newline))
          } catch (err) {
            clearTimeout(timer)
            socket.destroy()
            return reject(err)
          }
          buffer = buffer.slice(newline + 1)
          if (line !== null && typeof line === 'object' && 'event' in line) {
            onEvent?.(line.event)
            continue
          }
          clearTimeout(timer)
          socket.end()
          return resolve(line)
        }
      })
      socket.on('error', (err) => {
        clearTimeout(timer)
        reject(connected ? err : new NotConnected(err))
      })
      socket.on('close', () => {
        clearTimeout(timer)
        reject(new Error('helper closed the connection'))
      })
    })
  }
}
