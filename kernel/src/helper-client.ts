import { connect } from 'node:net'
import { errors, HostdError, type HelperCallOptions, type HelperClient } from '@hostd/sdk'

const PROBE_CACHE_MS = 1000
const CALL_TIMEOUT_MS = 30_000

/**
 * Talks to the root helper over its Unix socket: one JSON request line, one JSON answer line (a streamed action
 * sends `{"event": ...}` lines first, handed to `onEvent`).
 * Availability is probed at most once a second, so a helper that comes back is noticed quickly.
 * The helper itself and its action allowlist are built in helper/ (see its issue).
 */
export class UnixHelperClient implements HelperClient {
  readonly #socketPath: string
  #probe: { at: number; ok: Promise<boolean> } | null = null

  constructor(socketPath: string) {
    this.#socketPath = socketPath
  }

  available(): Promise<boolean> {
    const now = Date.now()
    if (!this.#probe || now - this.#probe.at > PROBE_CACHE_MS) {
      // Only an ok answer counts: a helper that refuses this process (wrong uid) is as good as absent.
      this.#probe = { at: now, ok: this.#request({ action: 'ping' }, 2000).then((answer) => (answer as { ok?: unknown })?.ok === true, () => false) }
    }
    return this.#probe.ok
  }

  async call<T>(action: string, args: Record<string, unknown> = {}, options: HelperCallOptions = {}): Promise<T> {
    if (!(await this.available())) throw errors.privilegesMissing()
    const answer = (await this.#request({ action, args }, options.timeoutMs ?? CALL_TIMEOUT_MS, options.onEvent)) as { ok: boolean; result?: T; error?: string; message?: string; status?: number }
    if (!answer.ok) {
      throw new HostdError(answer.error ?? 'HOSTD_HELPER_ACTION_FAILED', answer.status ?? 500, answer.message ?? `helper action ${action} failed`)
    }
    return answer.result as T
  }

  #request(body: unknown, timeoutMs: number, onEvent?: (event: unknown) => void): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const socket = connect(this.#socketPath)
      let buffer = ''
      const timer = setTimeout(() => socket.destroy(new Error('helper timed out')), timeoutMs)
      socket.setEncoding('utf8')
      socket.on('connect', () => socket.write(`${JSON.stringify(body)}\n`))
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
        reject(err)
      })
      socket.on('close', () => {
        clearTimeout(timer)
        reject(new Error('helper closed the connection'))
      })
    })
  }
}
