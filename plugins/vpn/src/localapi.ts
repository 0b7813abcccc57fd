/**
 * A small client of tailscaled's LocalAPI (ipn/localapi/localapi.go): HTTP over its Unix socket, the way
 * tailscale's own client (client/local) speaks it. Why not the npm client (tslocal): it has no prefs edit, login,
 * logout or bus watch, and these few calls are short.
 */
import type { IncomingMessage } from 'node:http'
import type { HostdError } from '@hostd/sdk'
import { VpnErrors } from './errors.ts'

// Not `import`: node:http's ES module facade loads Node's bundled undici (docs/ARCHITECTURE.md, "Runtime").
const { request } = process.getBuiltinModule('node:http')

/** tailscaled accepts this Host (apitype.LocalAPIHost) or none, and refuses any Origin or Referer. */
const LOCALAPI_HOST = 'local-tailscaled.sock'
/** The capability version we were written against (tailcfg.CurrentCapabilityVersion at tailscale de9ec7e). */
const CAPABILITY_VERSION = '145'
const MAX_ANSWER_BYTES = 16 * 1024 * 1024

/** tailscaled answered, but not with success: its status and its message (plain text, or `{"Error": ...}`). */
export class LocalApiRefusal extends Error {
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

export interface BusWatch {
  close(): void
}

export class LocalApi {
  readonly socketPath: string
  readonly #timeoutMs: number

  constructor(socketPath: string, timeoutMs = 5000) {
    this.socketPath = socketPath
    this.#timeoutMs = timeoutMs
  }

  /** One call; resolves with the parsed JSON answer (undefined for 204). */
  async call<T>(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<T> {
    const res = await this.#open(method, path, body)
    const text = await readBody(res)
    if (res.statusCode! < 200 || res.statusCode! > 299) throw refusalOf(res.statusCode!, text, this.socketPath)
    if (res.statusCode === 204 || text.trim() === '') return undefined as T
    try {
      return JSON.parse(text) as T
    } catch {
      throw VpnErrors.badAnswer(`tailscaled answered ${path} with something that is not JSON`)
    }
  }

  /**
   * Watches the IPN bus (newline-delimited ipn.Notify objects). Resolves once tailscaled has answered the request,
   * that is once the watch is registered, so nothing sent afterwards can be missed: start the watch, then act.
   */
  async watch(
    mask: number,
    onNotify: (notify: Record<string, unknown>) => void,
    onEnd: (err: Error) => void,
  ): Promise<BusWatch> {
    const res = await this.#open('GET', `/localapi/v0/watch-ipn-bus?mask=${mask}`, undefined, false)
    if (res.statusCode !== 200) throw refusalOf(res.statusCode!, await readBody(res), this.socketPath)
    let buffer = ''
    let ended = false
    const end = (err: Error) => {
      if (ended) return
      ended = true
      onEnd(err)
    }
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => {
      buffer += chunk
      for (let i = buffer.indexOf('\n'); i >= 0 && !ended; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i).trim()
        buffer = buffer.slice(i + 1)
        if (!line) continue
        try {
          onNotify(JSON.parse(line))
        } catch {
          end(VpnErrors.badAnswer('tailscaled sent a bus message that is not JSON'))
          res.destroy()
        }
      }
    })
    res.on('end', () => end(VpnErrors.notRunning('tailscaled closed the IPN bus')))
    res.on('error', (err) => end(err))
    return {
      close: () => {
        ended = true
        res.destroy()
      },
    }
  }

  #open(method: string, path: string, body: unknown, timed = true): Promise<IncomingMessage> {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    return new Promise((resolve, reject) => {
      const req = request({
        socketPath: this.socketPath,
        path,
        method,
        agent: false,
        headers: {
          Host: LOCALAPI_HOST,
          'Tailscale-Cap': CAPABILITY_VERSION,
          ...(payload === undefined
            ? {}
            : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }),
        },
      })
      // Until the head arrives; a bus watch then stays open as long as its caller wants.
      const timer = setTimeout(
        () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })),
        this.#timeoutMs,
      )
      req.on('response', (res) => {
        if (timed) res.on('end', () => clearTimeout(timer)).on('close', () => clearTimeout(timer))
        else clearTimeout(timer)
        resolve(res)
      })
      req.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        reject(this.#connectError(err))
      })
      req.end(payload)
    })
  }

  #connectError(err: NodeJS.ErrnoException): HostdError {
    const where = this.socketPath
    switch (err.code) {
      case 'ENOENT':
      case 'ENOTDIR':
        return VpnErrors.notInstalled(`tailscaled is not installed or not started: there is no socket at ${where}`)
      case 'EACCES':
        return VpnErrors.notPermitted(`hostd's user may not open tailscaled's socket ${where}`)
      case 'ETIMEDOUT':
        return VpnErrors.notRunning(`tailscaled did not answer on ${where} within ${this.#timeoutMs / 1000} s`)
      default:
        return VpnErrors.notRunning(
          `tailscaled is not running: nothing answers on ${where} (${err.code ?? err.message})`,
        )
    }
  }
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    res.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_ANSWER_BYTES) return res.destroy(VpnErrors.badAnswer('tailscaled answered more than 16 MiB'))
      chunks.push(chunk)
    })
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    res.on('error', reject)
  })
}

/** A 403 means tailscaled lets this user read but not write (not root, not its operator); the rest keep their status. */
function refusalOf(status: number, text: string, socketPath: string): Error {
  let message = text.trim()
  try {
    message = (JSON.parse(text) as { Error?: string }).Error ?? message
  } catch {
    /* plain text, as http.Error writes */
  }
  if (status === 403) {
    return VpnErrors.notPermitted(
      `tailscaled refused the change (${message || 'access denied'}): hostd's user must be root or ` +
        `tailscaled's operator (tailscale set --operator=<user>) on ${socketPath}`,
    )
  }
  return new LocalApiRefusal(status, message || `tailscaled answered ${status}`)
}
