/**
 * One terminal: a login shell on a PTY, wired to one WebSocket. Output goes out as binary frames, batched for a few
 * milliseconds; the PTY is paused while the socket holds more than HIGH_WATER unsent bytes (or the client asked for
 * a pause) and resumed below LOW_WATER, so a flood keeps the daemon's memory bounded and Ctrl-C reaches the shell
 * at once. Input binary frames go to the PTY as bytes through a bounded queue. Whatever ends it (the shell exits,
 * the socket closes, the context aborts, idleness), everything in the shell's session is ended.
 */
import { spawn, type IPty } from 'node-pty'
import { constants } from 'node:os'
import { Value } from '@sinclair/typebox/value'
import { findDuplicateKey, type HostdError } from '@hostd/sdk'
import type { WebSocket } from 'ws'
import type { Launch } from './config.ts'
import { PtyInput } from './adapters/pty-input.ts'
import { endSession } from './adapters/session-processes.ts'
import { ControlFrame, MAX_CONTROL_FRAME_BYTES } from './schemas.ts'
import { TerminalErrors } from './errors.ts'

/** Output flow control and batching (see README.md, "Flow control"). */
export const FLOW = {
  /** Pause the PTY when the socket holds more unsent bytes than this... */
  highWater: 1024 * 1024,
  /** ...and resume it below this. */
  lowWater: 256 * 1024,
  /** How often the socket's backlog is looked at while the PTY is paused. */
  pollMs: 10,
  /** PTY output is gathered this long (or up to batchBytes) into one frame. */
  batchMs: 2,
  batchBytes: 64 * 1024,
  /** Stop reading the client while this much input waits for the PTY. */
  inputHighWater: 1024 * 1024,
} as const

export type EndCause =
  | 'exit' // the shell exited
  | 'idle' // no input and no output for the idle timeout
  | 'closed' // the socket closed (closeCode says how: the client, the kernel on sign-out, a reload)
  | 'aborted' // the socket's context was aborted while it was open (session ended, plugin stopped)
  | 'error' // the shell could not be started

export interface TerminalEnd {
  ended: EndCause
  seconds: number
  exitCode?: number
  signal?: string | null
  closeCode?: number
  closeReason?: string
  reason?: string
}

export interface SessionOptions {
  socket: WebSocket
  launch: Launch
  env: Record<string, string>
  cols: number
  rows: number
  /** 0: never. */
  idleMs: number
  signal: AbortSignal
  onEnd(end: TerminalEnd): void
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name]))

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export class TerminalSession {
  readonly #o: SessionOptions
  readonly #startedAt = Date.now()
  #pty!: IPty
  #input!: PtyInput
  /** Resolves once every process of the shell's session is gone. */
  ended: Promise<void> = Promise.resolve()
  #finished = false
  #exited = false
  #lastActivity = Date.now()
  #batch: Buffer[] = []
  #batchBytes = 0
  #batchTimer: NodeJS.Timeout | null = null
  #idleTimer: NodeJS.Timeout | null = null
  #flowTimer: NodeJS.Timeout | null = null
  /** The socket's backlog passed the high watermark and has not yet fallen below the low one. */
  #throttled = false
  #clientPaused = false
  #ptyPaused = false
  /** The shell is gone: read what is left in the PTY whatever the backlog (it is bounded by the kernel's buffer). */
  #draining = false
  /** The terminal is over: what the PTY still says is read and dropped. */
  #discarding = false
  #inputPaused = false

  constructor(options: SessionOptions) {
    this.#o = options
  }

  get pid(): number {
    return this.#pty.pid
  }

  /** Spawns the shell and wires everything; throws when the shell cannot be started. */
  start(): void {
    const { launch, env, cols, rows, socket, signal } = this.#o
    this.#pty = spawn(launch.file, launch.args, { name: env.TERM, cols, rows, cwd: launch.cwd, env, encoding: null })
    // UnixTerminal's `fd` (the PTY master) is public in node-pty's class, though not in its IPty typing.
    this.#input = new PtyInput((this.#pty as unknown as { fd: number }).fd, () => this.#resumeInput())
    this.#pty.onData((chunk) => this.#output(chunk as unknown as Buffer))
    this.#pty.onExit(({ exitCode, signal: sig }) => this.#shellExited(exitCode, sig))
    socket.on('message', (data: Buffer, isBinary: boolean) => this.#message(data, isBinary))
    socket.once('close', (code: number, reason: Buffer) =>
      this.#finish({ ended: 'closed', closeCode: code, closeReason: reason.toString('utf8') }),
    )
    // The kernel aborts the context from its own 'close' listener too; then the 'close' listener above says how it closed.
    signal.addEventListener(
      'abort',
      () => {
        if (socket.readyState !== socket.CLOSED)
          this.#finish({ ended: 'aborted', reason: (signal.reason as Error | undefined)?.message })
      },
      { once: true },
    )
    if (this.#o.idleMs > 0) {
      const every = Math.min(30_000, Math.max(250, Math.floor(this.#o.idleMs / 4)))
      this.#idleTimer = setInterval(() => this.#checkIdle(), every)
    }
    if (socket.readyState !== socket.OPEN || signal.aborted) {
      this.#finish({ ended: 'closed', closeCode: 1006 })
      return
    }
    this.#sendJson({
      type: 'ready',
      account: launch.account.name,
      shell: launch.account.shell,
      pid: this.#pty.pid,
      cols,
      rows,
    })
  }

  // ---- output ----

  #output(chunk: Buffer): void {
    if (this.#discarding) return
    this.#lastActivity = Date.now()
    this.#batch.push(chunk)
    this.#batchBytes += chunk.length
    if (this.#batchBytes >= FLOW.batchBytes) this.#flush()
    else this.#batchTimer ??= setTimeout(() => this.#flush(), FLOW.batchMs)
  }

  #flush(): void {
    if (this.#batchTimer) clearTimeout(this.#batchTimer)
    this.#batchTimer = null
    if (this.#batchBytes === 0) return
    const data = this.#batch.length === 1 ? this.#batch[0]! : Buffer.concat(this.#batch, this.#batchBytes)
    this.#batch = []
    this.#batchBytes = 0
    const { socket } = this.#o
    if (socket.readyState !== socket.OPEN) return
    socket.send(data, { binary: true })
    if (socket.bufferedAmount > FLOW.highWater) {
      this.#throttled = true
      this.#applyFlow()
    }
  }

  #applyFlow(): void {
    const pause = !this.#draining && !this.#discarding && (this.#throttled || this.#clientPaused)
    if (pause !== this.#ptyPaused) {
      this.#ptyPaused = pause
      if (pause) this.#pty.pause()
      else this.#pty.resume()
    }
    if (pause && !this.#flowTimer) this.#flowTimer = setInterval(() => this.#pollFlow(), FLOW.pollMs)
    if (!pause && this.#flowTimer) {
      clearInterval(this.#flowTimer)
      this.#flowTimer = null
    }
  }

  /** While paused: resume once the backlog is low, and drain at once when the shell has exited (node-pty gives its
   *  reader only 200 ms after the exit before it closes the PTY: a paused PTY would lose the output's tail). */
  #pollFlow(): void {
    if (this.#throttled && this.#o.socket.bufferedAmount < FLOW.lowWater) this.#throttled = false
    if (!alive(this.#pty.pid)) this.#draining = true
    this.#applyFlow()
  }

  // ---- input ----

  #message(data: Buffer, isBinary: boolean): void {
    if (this.#finished) return
    if (isBinary) {
      if (this.#exited) return
      this.#lastActivity = Date.now()
      this.#input.write(data)
      if (this.#input.pending > FLOW.inputHighWater && !this.#inputPaused) {
        this.#inputPaused = true
        this.#o.socket.pause()
      }
      return
    }
    const frame = this.#control(data)
    if (typeof frame === 'string') {
      this.#sendError(TerminalErrors.badFrame(frame))
      return
    }
    if (frame.type === 'resize') {
      if (!this.#exited) this.#pty.resize(frame.cols, frame.rows)
    } else {
      this.#clientPaused = frame.type === 'pause'
      this.#applyFlow()
    }
  }

  /** A text frame as a control frame, or why it is not one. Never written to the PTY. */
  #control(data: Buffer): ControlFrame | string {
    if (data.length > MAX_CONTROL_FRAME_BYTES)
      return `A text frame is a control frame of at most ${MAX_CONTROL_FRAME_BYTES} bytes; send input as binary frames`
    const text = data.toString('utf8')
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return 'A text frame must be a JSON control frame; send input as binary frames'
    }
    if (findDuplicateKey(text) !== null || !Value.Check(ControlFrame, value)) {
      return `Unknown or invalid control frame: text frames are {"type":"resize","cols":1..1000,"rows":1..500}, {"type":"pause"} or {"type":"resume"}`
    }
    return value
  }

  #resumeInput(): void {
    if (!this.#inputPaused) return
    this.#inputPaused = false
    this.#o.socket.resume()
  }

  // ---- the end ----

  #checkIdle(): void {
    if (Date.now() - this.#lastActivity < this.#o.idleMs) return
    const seconds = Math.round(this.#o.idleMs / 1000)
    const err = TerminalErrors.idle(`No input and no output for ${seconds} s: the terminal was closed`)
    refuse(this.#o.socket, err)
    this.#finish({ ended: 'idle', closeCode: 4000 + err.statusCode, reason: err.message })
  }

  #shellExited(exitCode: number, signal: number | undefined): void {
    this.#exited = true
    this.#flush()
    const name = signal ? (SIGNAL_NAMES.get(signal) ?? String(signal)) : null
    this.#sendJson({ type: 'exit', code: exitCode, signal: name })
    const { socket } = this.#o
    if (socket.readyState === socket.OPEN) socket.close(1000, 'shell exited')
    this.#finish({ ended: 'exit', exitCode, signal: name, closeCode: 1000 })
  }

  #finish(end: Omit<TerminalEnd, 'seconds'>): void {
    if (this.#finished) return
    this.#finished = true
    for (const timer of [this.#idleTimer, this.#flowTimer]) if (timer) clearInterval(timer)
    if (this.#batchTimer) clearTimeout(this.#batchTimer)
    this.#input?.close()
    if (this.#pty) {
      this.#discarding = true
      this.#applyFlow()
      this.ended = endSession(this.#pty.pid)
    }
    this.#o.onEnd({ ...end, seconds: Math.round((Date.now() - this.#startedAt) / 100) / 10 })
  }

  // ---- frames ----

  #sendJson(message: Record<string, unknown>): void {
    const { socket } = this.#o
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message))
  }

  #sendError(err: HostdError): void {
    this.#sendJson({ type: 'error', error: err.code, message: err.message })
  }
}

/** Ends a socket for an error: an error frame, then the close code 4000 + its status with its code as the reason. */
export function refuse(socket: WebSocket, err: HostdError): void {
  if (socket.readyState !== socket.OPEN) return
  socket.send(JSON.stringify({ type: 'error', error: err.code, message: err.message }))
  socket.close(4000 + err.statusCode, err.code)
}
