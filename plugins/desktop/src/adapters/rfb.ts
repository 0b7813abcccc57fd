/**
 * The VNC server, over TCP: a connect with a deadline and a reason a person can act on, and the status probe, which
 * speaks just enough RFB (RFC 6143) to read the server's version and security types, and, when the server needs no
 * credentials, its ServerInit (framebuffer size, desktop name). The probe always asks for a shared session, so it
 * never disconnects a viewer, and closes right after.
 */
import { connect, type Socket } from 'node:net'
import { formatTarget, type VncTarget } from '../config.ts'

export const SECURITY_NONE = 1
const MAX_NAME_BYTES = 4096

export class VncUnreachable extends Error {}

function connectReason(err: NodeJS.ErrnoException, where: string): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return `No VNC server answers on ${where} (connection refused)`
    case 'ETIMEDOUT':
      return `No VNC server answered on ${where} in time`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `The host of ${where} cannot be resolved`
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${where} cannot be reached (${err.code})`
    default:
      return `Connecting to ${where} failed: ${err.message}`
  }
}

/** Opens a TCP connection to the target, or throws VncUnreachable with the reason. */
export function connectVnc(target: VncTarget, timeoutMs: number): Promise<Socket> {
  const where = formatTarget(target)
  return new Promise((resolve, reject) => {
    // No Nagle: pointer and key events are small writes that must go at once.
    const socket = connect({ host: target.host, port: target.port, noDelay: true })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new VncUnreachable(connectReason(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }), where)))
    }, timeoutMs)
    socket.once('connect', () => {
      clearTimeout(timer)
      socket.removeAllListeners('error')
      resolve(socket)
    })
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      socket.destroy()
      reject(new VncUnreachable(connectReason(err, where)))
    })
  })
}

/** Reads exact byte counts from a socket, each read bounded by the deadline. */
class Reader {
  #buffer = Buffer.alloc(0)
  #wake: (() => void) | null = null
  #ended: Error | null = null

  constructor(socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk])
      this.#wake?.()
    })
    const end = (err?: Error) => {
      this.#ended ??= err ?? new Error('the server closed the connection')
      this.#wake?.()
    }
    socket.on('end', () => end())
    socket.on('close', () => end())
    socket.on('error', (err) => end(err))
  }

  async read(n: number, deadline: number): Promise<Buffer> {
    while (this.#buffer.length < n) {
      if (this.#ended) throw this.#ended
      const left = deadline - Date.now()
      if (left <= 0) throw new Error('the server did not answer in time')
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.#wake = null
    }
    const out = this.#buffer.subarray(0, n)
    this.#buffer = this.#buffer.subarray(n)
    return out
  }
}

export interface ProbeResult {
  available: boolean
  protocolVersion: string | null
  authTypes: number[]
  display: { width: number; height: number } | null
  name: string | null
  reason: string | null
}

const GREETING = /^RFB (\d{3})\.(\d{3})\n$/

/**
 * Probes the target: connect and greeting within `timeoutMs`, then up to `timeoutMs` more for the security types and,
 * with None offered, ServerInit. Never throws.
 */
export async function probeVnc(target: VncTarget, timeoutMs = 1000): Promise<ProbeResult> {
  const where = formatTarget(target)
  const result: ProbeResult = {
    available: false,
    protocolVersion: null,
    authTypes: [],
    display: null,
    name: null,
    reason: null,
  }
  const started = Date.now()
  let socket: Socket
  try {
    socket = await connectVnc(target, timeoutMs)
  } catch (err) {
    return { ...result, reason: (err as Error).message }
  }
  const reader = new Reader(socket)
  try {
    const greeting = (
      await reader.read(12, started + timeoutMs).catch((err: Error) => {
        throw new Error(`${where} accepted a connection but sent no VNC greeting (${err.message})`)
      })
    ).toString('latin1')
    const version = GREETING.exec(greeting)
    if (!version)
      return { ...result, reason: `The service on ${where} is not a VNC server (it sent ${JSON.stringify(greeting)})` }
    result.protocolVersion = greeting.trim()
    result.available = true
    const minor = Number(version[1]) === 3 ? Number(version[2]) : 8
    // RFB 3.3 and 3.7 as such; 3.8 and anything later (Apple's 3.889 included) as 3.8.
    const speak = minor >= 8 ? 8 : minor >= 7 ? 7 : 3
    socket.write(`RFB 003.00${speak}\n`)
    const deadline = Date.now() + timeoutMs
    if (speak === 3) {
      const type = (await reader.read(4, deadline)).readUInt32BE(0)
      if (type === 0)
        return {
          ...result,
          available: false,
          reason: `The VNC server on ${where} refuses connections: ${await readReason(reader, deadline)}`,
        }
      result.authTypes = [type]
    } else {
      const count = (await reader.read(1, deadline))[0]!
      if (count === 0)
        return {
          ...result,
          available: false,
          reason: `The VNC server on ${where} refuses connections: ${await readReason(reader, deadline)}`,
        }
      result.authTypes = [...(await reader.read(count, deadline))]
    }
    if (!result.authTypes.includes(SECURITY_NONE)) return result
    if (speak !== 3) socket.write(Buffer.from([SECURITY_NONE]))
    // SecurityResult follows None only in 3.8 (RFC 6143, 7.1.3).
    if (speak === 8 && (await reader.read(4, deadline)).readUInt32BE(0) !== 0) {
      return {
        ...result,
        reason: `The VNC server on ${where} refused a session without credentials: ${await readReason(reader, deadline)}`,
      }
    }
    socket.write(Buffer.from([1])) // ClientInit: shared, so no other viewer is disconnected
    const init = await reader.read(24, deadline)
    const nameLength = init.readUInt32BE(20)
    result.display = { width: init.readUInt16BE(0), height: init.readUInt16BE(2) }
    if (nameLength <= MAX_NAME_BYTES) result.name = (await reader.read(nameLength, deadline)).toString('utf8')
    return result
  } catch (err) {
    // A server that greeted but stalled later is still there: report it with what is known.
    return {
      ...result,
      reason: result.available
        ? `The VNC server on ${where} stopped answering during the handshake (${(err as Error).message})`
        : (err as Error).message,
    }
  } finally {
    socket.destroy()
  }
}

async function readReason(reader: Reader, deadline: number): Promise<string> {
  try {
    const length = (await reader.read(4, deadline)).readUInt32BE(0)
    return (await reader.read(Math.min(length, MAX_NAME_BYTES), deadline)).toString('utf8')
  } catch {
    return 'no reason given'
  }
}
