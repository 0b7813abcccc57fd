/** A terminal socket client for the tests and the bench: binary input, text control frames, output kept as text. */
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import WebSocket from 'ws'
import { eventually } from '@hostd/sdk/testing'

export interface Closed {
  code: number
  reason: string
}

export interface ClientOptions {
  token: string
  headers?: Record<string, string>
  /** Keep at most this many characters of output (a flood is counted, not kept). */
  keep?: number
}

export class TerminalClient {
  readonly ws: WebSocket
  /** The output so far (latin1, so every byte is one character), or its last `keep` characters. */
  output = ''
  /** Output bytes received, and in how many binary frames. */
  bytes = 0
  binaryFrames = 0
  readonly frames: any[] = []
  readonly opened: Promise<void>
  readonly closed: Promise<Closed>
  /** The HTTP status when the upgrade was refused. */
  refusedWith: number | null = null
  readonly #keep: number

  constructor(url: string, options: ClientOptions) {
    this.#keep = options.keep ?? 4 * 1024 * 1024
    this.ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${options.token}`, ...options.headers },
      rejectUnauthorized: false,
    })
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return void this.frames.push(JSON.parse(data.toString('utf8')))
      this.bytes += data.length
      this.binaryFrames++
      this.output += data.toString('latin1')
      if (this.output.length > this.#keep) this.output = this.output.slice(-this.#keep)
    })
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve())
      this.ws.once('error', reject)
    })
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))
      this.ws.on('error', () => undefined)
      this.ws.on('unexpected-response', (_req, res) => {
        this.refusedWith = res.statusCode ?? 0
        resolve({ code: res.statusCode ?? 0, reason: 'refused before the upgrade' })
      })
    })
    this.opened.catch(() => undefined)
  }

  /** Keystrokes or a paste, as a binary frame. */
  type(text: string | Buffer): void {
    this.ws.send(typeof text === 'string' ? Buffer.from(text, 'utf8') : text, { binary: true })
  }

  control(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** Waits until the output matches (polled; the test's timeout bounds it). */
  async waitFor(pattern: RegExp): Promise<RegExpMatchArray> {
    for (;;) {
      const match = this.output.match(pattern)
      if (match) return match
      if (this.ws.readyState === WebSocket.CLOSED)
        throw new Error(`socket closed before ${pattern} (output tail: ${JSON.stringify(this.output.slice(-300))})`)
      await sleep(20)
    }
  }

  async waitForFrame(type: string): Promise<any> {
    for (;;) {
      const frame = this.frames.find((f) => f.type === type)
      if (frame) return frame
      if (this.ws.readyState === WebSocket.CLOSED)
        throw new Error(`socket closed before a ${type} frame (${JSON.stringify(this.frames)})`)
      await sleep(20)
    }
  }

  /** Runs a command line and answers its output, fenced by markers the shell computes (so the echoed input never matches). */
  async run(command: string): Promise<string> {
    const id = Math.floor(Math.random() * 1e9)
    this.type(`echo B$((${id}+1)); ${command}; echo E$((${id}+1))\n`)
    const match = await this.waitFor(new RegExp(`B${id + 1}\\r\\n([\\s\\S]*?)E${id + 1}\\r\\n`))
    return match[1]!.replace(/\r\n/g, '\n').trimEnd()
  }

  /** Closes the socket; resolves once it is closed. */
  close(): Promise<Closed> {
    this.ws.close()
    return this.closed
  }
}

/** True while `pid` is a live process (a zombie counts as gone: it runs nothing and holds nothing). */
export async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => null)
  if (!stat) return false
  const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  return state !== 'Z' && state !== 'X'
}

/** Waits until `probe` holds: the sdk's `eventually`, for the terminal tests' yes-or-no probes. */
export async function until(probe: () => Promise<boolean> | boolean, everyMs = 50): Promise<void> {
  await eventually(probe, everyMs)
}
