/**
 * One WebSocket carried between two members over NATS (README.md, "Sockets"): each end relays its local socket's
 * frames to the other, in pieces of at most 64 KiB, numbered, with credit (a sender has at most 32 pieces in flight
 * and pauses its socket; the receiver gives credit back 8 at a time once its socket has written them), a close on
 * either side closes the other, and an end silent for a minute (no frame, credit or ping) is closed.
 */
import type { WebSocket } from 'ws'

const PIECE_BYTES = 64 * 1024
const INITIAL_CREDIT = 32
const CREDIT_STEP = 8
const PING_MS = 20_000
const SILENT_MS = 60_000

/** What a bridge message carries besides its data. */
export interface BridgeHeaders {
  kind: 'frame' | 'credit' | 'close' | 'ping'
  seq?: number
  binary?: boolean
  /** More pieces of the same frame follow. */
  more?: boolean
  credit?: number
  code?: number
}

export type BridgeSend = (h: BridgeHeaders, data: Uint8Array) => void

/** A close code a socket may send (1005, 1006 and 1015 are only reported, never sent). */
export function sendableCode(code: number | undefined, fallback = 1000): number {
  if (code === undefined) return fallback
  return (code >= 1000 && code <= 1014 && ![1004, 1005, 1006].includes(code)) || (code >= 3000 && code <= 4999)
    ? code
    : fallback
}

/** A reason fits the close frame (123 bytes). */
export function closeReason(text: string): string {
  let out = text
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1)
  return out
}

export class SocketBridge {
  readonly #ws: WebSocket
  readonly #send: BridgeSend
  readonly #onDone: () => void
  #seqOut = 0
  #seqIn = 0
  #credit = INITIAL_CREDIT
  #written = 0
  #pieces: Buffer[] = []
  #lastHeard = Date.now()
  #lastSent = Date.now()
  #closed = false
  #finished = false
  readonly #timer: NodeJS.Timeout

  constructor(ws: WebSocket, send: BridgeSend, onDone: () => void) {
    this.#ws = ws
    this.#send = (h, data) => {
      this.#lastSent = Date.now()
      send(h, data)
    }
    this.#onDone = onDone
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => this.#fromSocket(data, isBinary))
    ws.once('close', (code: number, reason: Buffer) => {
      if (this.#closed) return this.#done()
      this.#closed = true
      this.#send({ kind: 'close', code: sendableCode(code) }, Buffer.from(closeReason(reason.toString('utf8'))))
      this.#done()
    })
    ws.on('error', () => {})
    this.#timer = setInterval(() => this.#tick(), PING_MS)
    this.#timer.unref()
  }

  /** A message from the other end. */
  receive(h: BridgeHeaders, data: Uint8Array): void {
    this.#lastHeard = Date.now()
    if (h.kind === 'credit') {
      this.#credit += Math.min(1024, Math.max(0, h.credit ?? 0))
      if (this.#credit > 0 && this.#ws.isPaused) this.#ws.resume()
    } else if (h.kind === 'close') {
      this.close(sendableCode(h.code), Buffer.from(data).toString('utf8'), false)
    } else if (h.kind === 'frame') {
      // Core NATS delivers at most once: a piece missing means the socket is broken, not silently shorter.
      if (h.seq !== this.#seqIn++) {
        this.close(1011, 'a piece of the socket was lost')
        return
      }
      this.#pieces.push(Buffer.from(data))
      if (h.more) return
      const count = this.#pieces.length
      const frame = count === 1 ? this.#pieces[0]! : Buffer.concat(this.#pieces)
      this.#pieces = []
      if (this.#ws.readyState !== this.#ws.OPEN) return
      this.#ws.send(frame, { binary: h.binary === true }, () => {
        this.#written += count
        if (this.#written >= CREDIT_STEP && !this.#closed) {
          this.#send({ kind: 'credit', credit: this.#written }, new Uint8Array())
          this.#written = 0
        }
      })
    }
  }

  /** Closes the local socket; `tell`: and the other end (this host ends it: its session ended, the plugin stops). */
  close(code: number, reason: string, tell = true): void {
    if (this.#closed) return
    this.#closed = true
    if (tell) this.#send({ kind: 'close', code }, Buffer.from(closeReason(reason)))
    const ws = this.#ws
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, closeReason(reason))
    setTimeout(() => ws.terminate(), 1000).unref()
    this.#done()
  }

  #fromSocket(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    if (this.#closed) return
    const frame = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)
    let at = 0
    do {
      const piece = frame.subarray(at, at + PIECE_BYTES)
      at += PIECE_BYTES
      this.#send({ kind: 'frame', seq: this.#seqOut++, binary: isBinary, more: at < frame.length }, piece)
      this.#credit--
    } while (at < frame.length)
    if (this.#credit <= 0) this.#ws.pause()
  }

  #tick(): void {
    if (Date.now() - this.#lastHeard > SILENT_MS) this.close(1001, 'the other member stopped answering', false)
    else if (Date.now() - this.#lastSent >= PING_MS / 2) this.#send({ kind: 'ping' }, new Uint8Array())
  }

  #done(): void {
    if (this.#finished) return
    this.#finished = true
    clearInterval(this.#timer)
    this.#onDone()
  }
}

/** Bridge headers as NATS headers (`Hostd-Op` and its fields) and back. */
export function writeBridgeHeaders(h: BridgeHeaders, set: (name: string, value: string) => void): void {
  set('Hostd-Op', h.kind)
  if (h.seq !== undefined) set('Hostd-Seq', String(h.seq))
  if (h.binary) set('Hostd-Binary', '1')
  if (h.more) set('Hostd-More', '1')
  if (h.credit !== undefined) set('Hostd-Credit', String(h.credit))
  if (h.code !== undefined) set('Hostd-Code', String(h.code))
}

export function readBridgeHeaders(get: (name: string) => string | undefined): BridgeHeaders | null {
  const kind = get('Hostd-Op')
  if (kind !== 'frame' && kind !== 'credit' && kind !== 'close' && kind !== 'ping') return null
  const num = (name: string) => {
    const v = get(name)
    return v ? Number(v) : undefined
  }
  return {
    kind,
    seq: num('Hostd-Seq'),
    binary: get('Hostd-Binary') === '1',
    more: get('Hostd-More') === '1',
    credit: num('Hostd-Credit'),
    code: num('Hostd-Code'),
  }
}
