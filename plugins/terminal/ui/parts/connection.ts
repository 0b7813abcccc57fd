/**
 * One terminal socket (plugins/terminal/README.md): input as binary frames (never text: the server writes only
 * binary frames to the PTY, which is why xterm's addon-attach does not fit), output written to xterm as bytes,
 * resize frames, and client flow control: when xterm's parser falls behind (a flood such as `yes`), the page asks
 * the server to pause the PTY, so output never piles up past xterm's own limit (it discards beyond 50 MB) and
 * Ctrl-C is not stuck behind megabytes of queued output. The scheme is xterm.js's flow-control guide: a write
 * callback every ~100 KB, pause above 5 pending callbacks, resume below 2.
 */
import { parseFrame, type Ending, type ServerFrame } from './protocol.ts'

export const ACK_EVERY_BYTES = 100_000
export const PENDING_HIGH = 5
export const PENDING_LOW = 2
/** Input is sent in frames of at most this (the kernel refuses frames over 16 MiB). */
const MAX_INPUT_FRAME = 1 << 20

/** What a connection needs of the terminal emulator (xterm.js's Terminal has all of it). */
export interface Screen {
  write(data: Uint8Array, callback?: () => void): void
}

export interface ConnectionEvents {
  /** The shell started: its account, shell and size as the server has it. */
  onReady(frame: Extract<ServerFrame, { type: 'ready' }>): void
  /** The socket closed (for whatever reason: `explainEnding` says what to tell the user). */
  onEnd(end: Ending): void
}

export class TerminalConnection {
  readonly #socket: WebSocket
  readonly #screen: Screen
  readonly #encoder = new TextEncoder()
  #sinceAck = 0
  #pending = 0
  #paused = false
  #opened = false
  #error: Ending['error']
  #exit: Ending['exit']
  #ended = false

  constructor(socket: WebSocket, screen: Screen, events: ConnectionEvents) {
    this.#socket = socket
    this.#screen = screen
    socket.binaryType = 'arraybuffer'
    socket.addEventListener('open', () => (this.#opened = true))
    socket.addEventListener('message', (event: MessageEvent<ArrayBuffer | string>) => {
      if (typeof event.data !== 'string') return this.#output(new Uint8Array(event.data))
      const frame = parseFrame(event.data)
      if (frame?.type === 'ready') events.onReady(frame)
      else if (frame?.type === 'error') this.#error = { error: frame.error, message: frame.message }
      else if (frame?.type === 'exit') this.#exit = { code: frame.code, signal: frame.signal }
    })
    socket.addEventListener('close', (event) => {
      if (this.#ended) return
      this.#ended = true
      events.onEnd({
        code: event.code,
        reason: event.reason,
        opened: this.#opened,
        error: this.#error,
        exit: this.#exit,
      })
    })
  }

  get open(): boolean {
    return this.#socket.readyState === WebSocket.OPEN
  }

  /** Keystrokes, pastes (any size) and xterm's binary reports, as bytes. */
  input(data: string | Uint8Array): void {
    if (!this.open) return
    const bytes = typeof data === 'string' ? this.#encoder.encode(data) : data
    for (let at = 0; at < bytes.length; at += MAX_INPUT_FRAME)
      this.#socket.send(bytes.subarray(at, at + MAX_INPUT_FRAME))
  }

  resize(cols: number, rows: number): void {
    this.#control({ type: 'resize', cols, rows })
  }

  close(): void {
    this.#socket.close(1000, 'closed by the user')
  }

  #output(bytes: Uint8Array): void {
    this.#sinceAck += bytes.length
    if (this.#sinceAck < ACK_EVERY_BYTES) {
      this.#screen.write(bytes)
      return
    }
    this.#sinceAck = 0
    this.#pending++
    this.#screen.write(bytes, () => {
      this.#pending--
      if (this.#paused && this.#pending < PENDING_LOW) {
        this.#paused = false
        this.#control({ type: 'resume' })
      }
    })
    if (!this.#paused && this.#pending > PENDING_HIGH) {
      this.#paused = true
      this.#control({ type: 'pause' })
    }
  }

  #control(frame: Record<string, unknown>): void {
    if (this.open) this.#socket.send(JSON.stringify(frame))
  }
}
