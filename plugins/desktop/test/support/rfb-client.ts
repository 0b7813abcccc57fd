/** A minimal RFB client over the daemon's WebSocket bridge (RFC 6143 steps, None security only), for tests and the bench. */
import { setTimeout as sleep } from 'node:timers/promises'
import WebSocket from 'ws'

export interface ServerInit {
  greeting: string
  securityTypes: number[]
  width: number
  height: number
  name: string
}

export class RfbOverWebSocket {
  readonly ws: WebSocket
  readonly opened: Promise<void>
  readonly closed: Promise<{ code: number; reason: string }>
  /** Status and JSON body when the upgrade was refused. */
  refused: { status: number; body: any } | null = null
  /** From ServerInit's pixel format. */
  bytesPerPixel = 4
  #buffer = Buffer.alloc(0)

  constructor(url: string, token: string, options: { protocols?: string[]; headers?: Record<string, string> } = {}) {
    this.ws = new WebSocket(url, options.protocols ?? [], { headers: { authorization: `Bearer ${token}`, ...options.headers } })
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) throw new Error(`a text frame on the desktop socket: ${data.toString()}`)
      this.#buffer = Buffer.concat([this.#buffer, data])
    })
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve())
      this.ws.once('error', reject)
    })
    this.opened.catch(() => undefined)
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))
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

  async read(n: number): Promise<Buffer> {
    while (this.#buffer.length < n) {
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed with ${this.#buffer.length} of ${n} bytes`)
      await sleep(5)
    }
    const out = this.#buffer.subarray(0, n)
    this.#buffer = this.#buffer.subarray(n)
    return out
  }

  write(bytes: Buffer | number[]): void {
    this.ws.send(Buffer.from(bytes as Buffer), { binary: true })
  }

  /** Version, security None, ClientInit (shared), ServerInit. */
  async handshake(): Promise<ServerInit> {
    await this.opened
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
   * FramebufferUpdate that answers it, read whole for the raw encoding this client asked for (the default).
   */
  async roundTrip(): Promise<void> {
    this.write([3, 0, 0, 0, 0, 0, 0, 1, 0, 1])
    await readFramebufferUpdate((n) => this.read(n), this.bytesPerPixel)
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close()
    return this.closed
  }
}

/** Reads one FramebufferUpdate in raw encoding (the only one a client that sent no SetEncodings gets). */
export async function readFramebufferUpdate(read: (n: number) => Promise<Buffer>, bytesPerPixel: number): Promise<void> {
  for (;;) {
    const type = (await read(1))[0]
    if (type === 0) break
    if (type === 2) continue // Bell
    if (type === 3) { // ServerCutText
      const header = await read(7)
      await read(header.readUInt32BE(3))
      continue
    }
    throw new Error(`unexpected server message ${type}`)
  }
  const header = await read(3)
  const rects = header.readUInt16BE(1)
  for (let i = 0; i < rects; i++) {
    const rect = await read(12)
    const w = rect.readUInt16BE(4)
    const h = rect.readUInt16BE(6)
    const encoding = rect.readInt32BE(8)
    if (encoding !== 0) throw new Error(`unexpected encoding ${encoding}`)
    await read(w * h * bytesPerPixel)
  }
}
