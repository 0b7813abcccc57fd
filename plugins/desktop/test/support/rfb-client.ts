/**
 * A minimal RFB client (RFC 6143 steps, None security only) for the tests and the bench, over the daemon's WebSocket
 * bridge or straight over TCP to the VNC server (the bench's reference).
 */
import { connect, type Socket } from 'node:net'
import WebSocket from 'ws'

export interface ServerInit {
  greeting: string
  securityTypes: number[]
  width: number
  height: number
  name: string
}

/** The protocol steps over any byte stream; subclasses feed `received` and implement `write` and `isClosed`. */
abstract class RfbClient {
  #buffer: Buffer = Buffer.alloc(0)
  #wake: (() => void) | null = null
  /** From ServerInit's pixel format. */
  bytesPerPixel = 4

  abstract write(bytes: Buffer | number[]): void
  protected abstract isClosed(): boolean

  protected received(data: Buffer): void {
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, data]) : data
    this.#wake?.()
  }

  protected ended(): void {
    this.#wake?.()
  }

  /** Exactly `n` bytes, as soon as they are there. */
  async read(n: number): Promise<Buffer> {
    while (this.#buffer.length < n) {
      if (this.isClosed()) throw new Error(`the stream closed with ${this.#buffer.length} of ${n} bytes`)
      await new Promise<void>((resolve) => (this.#wake = resolve))
      this.#wake = null
    }
    const out = this.#buffer.subarray(0, n)
    this.#buffer = this.#buffer.subarray(n)
    return out
  }

  /** Version, security None, ClientInit (shared), ServerInit. */
  async handshake(): Promise<ServerInit> {
    const greeting = (await this.read(12)).toString('latin1')
    this.write(Buffer.from('RFB 003.008\n', 'latin1'))
    const count = (await this.read(1))[0]!
    const securityTypes = [...(await this.read(count))]
    this.write([1])
    const result = (await this.read(4)).readUInt32BE(0)
    if (result !== 0) throw new Error(`SecurityResult ${result}`)
    this.write([1])
    const init = await this.read(24)
    this.bytesPerPixel = init[4]! / 8
    const name = (await this.read(init.readUInt32BE(20))).toString('utf8')
    return { greeting, securityTypes, width: init.readUInt16BE(0), height: init.readUInt16BE(2), name }
  }

  /**
   * One round trip after the handshake: a FramebufferUpdateRequest (non-incremental, a 1×1 area) and the
   * FramebufferUpdate that answers it, read whole (raw encoding: this client sends no SetEncodings).
   */
  async roundTrip(): Promise<void> {
    this.write([3, 0, 0, 0, 0, 0, 0, 1, 0, 1])
    for (;;) {
      const type = (await this.read(1))[0]
      if (type === 0) break
      if (type === 2) continue // Bell
      if (type !== 3) throw new Error(`unexpected server message ${type}`)
      const header = await this.read(7) // ServerCutText
      await this.read(header.readUInt32BE(3))
    }
    const rects = (await this.read(3)).readUInt16BE(1)
    for (let i = 0; i < rects; i++) {
      const rect = await this.read(12)
      if (rect.readInt32BE(8) !== 0) throw new Error(`unexpected encoding ${rect.readInt32BE(8)}`)
      await this.read(rect.readUInt16BE(4) * rect.readUInt16BE(6) * this.bytesPerPixel)
    }
  }
}

export class RfbOverWebSocket extends RfbClient {
  readonly ws: WebSocket
  readonly opened: Promise<void>
  readonly closed: Promise<{ code: number; reason: string }>
  /** Status and JSON body when the upgrade was refused. */
  refused: { status: number; body: any } | null = null

  constructor(url: string, token: string, options: { protocols?: string[]; headers?: Record<string, string> } = {}) {
    super()
    this.ws = new WebSocket(url, options.protocols ?? [], {
      headers: { authorization: `Bearer ${token}`, ...options.headers },
      rejectUnauthorized: false,
    })
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) throw new Error(`a text frame on the desktop socket: ${data.toString()}`)
      this.received(data)
    })
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve())
      this.ws.once('error', reject)
    })
    this.opened.catch(() => undefined)
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        this.ended()
        resolve({ code, reason: reason.toString() })
      })
      this.ws.on('error', () => undefined)
      this.ws.on('unexpected-response', (_req, res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () => {
          this.refused = { status: res.statusCode ?? 0, body: body ? JSON.parse(body) : null }
          resolve({ code: res.statusCode ?? 0, reason: 'refused before the upgrade' })
        })
      })
    })
  }

  write(bytes: Buffer | number[]): void {
    this.ws.send(Buffer.from(bytes as Buffer), { binary: true })
  }

  protected isClosed(): boolean {
    return this.ws.readyState === WebSocket.CLOSED
  }

  override async handshake(): Promise<ServerInit> {
    await this.opened
    return super.handshake()
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close()
    return this.closed
  }
}

/** Straight to the VNC server, no daemon in between. */
export class RfbOverTcp extends RfbClient {
  readonly #socket: Socket
  readonly #connected: Promise<void>
  #closed = false

  constructor(port: number, host = '127.0.0.1') {
    super()
    this.#socket = connect({ host, port })
    this.#socket.setNoDelay(true)
    this.#socket.on('data', (data: Buffer) => this.received(data))
    this.#socket.on('close', () => {
      this.#closed = true
      this.ended()
    })
    this.#connected = new Promise((resolve, reject) => {
      this.#socket.once('connect', () => resolve())
      this.#socket.once('error', reject)
    })
  }

  write(bytes: Buffer | number[]): void {
    this.#socket.write(Buffer.from(bytes as Buffer))
  }

  protected isClosed(): boolean {
    return this.#closed
  }

  override async handshake(): Promise<ServerInit> {
    await this.#connected
    return super.handshake()
  }

  close(): void {
    this.#socket.destroy()
  }
}
