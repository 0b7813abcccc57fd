/**
 * Container logs with bounded memory: the engine's multiplexed stream (8-byte frame headers for non-TTY
 * containers) is split as it arrives, never collected whole. Recent logs stop at a byte cap; the follow
 * stream hands out chunks of at most MAX_CHUNK bytes.
 */
import type Docker from 'dockerode'
import type { Readable } from 'node:stream'

export const MAX_RECENT_BYTES = 4 * 1024 * 1024
export const MAX_CHUNK = 64 * 1024

export type LogChunk = { stream: 'stdout' | 'stderr'; data: Buffer }

/**
 * A push parser for Docker's stream format. Holds at most one frame header and the unsent part of one
 * frame (itself emitted in pieces of at most MAX_CHUNK), so its memory is bounded whatever the frame size.
 */
export class LogDemuxer {
  readonly #tty: boolean
  readonly #emit: (chunk: LogChunk) => void
  #header = Buffer.alloc(0)
  #remaining = 0
  #stream: 'stdout' | 'stderr' = 'stdout'

  constructor(tty: boolean, emit: (chunk: LogChunk) => void) {
    this.#tty = tty
    this.#emit = emit
  }

  push(data: Buffer): void {
    if (this.#tty) {
      for (let i = 0; i < data.length; i += MAX_CHUNK)
        this.#emit({ stream: 'stdout', data: data.subarray(i, i + MAX_CHUNK) })
      return
    }
    let offset = 0
    while (offset < data.length) {
      if (this.#remaining === 0) {
        const need = 8 - this.#header.length
        this.#header = Buffer.concat([this.#header, data.subarray(offset, offset + need)])
        offset += Math.min(need, data.length - offset)
        if (this.#header.length < 8) return
        this.#stream = this.#header[0] === 2 ? 'stderr' : 'stdout'
        this.#remaining = this.#header.readUInt32BE(4)
        this.#header = Buffer.alloc(0)
        continue
      }
      const take = Math.min(this.#remaining, data.length - offset, MAX_CHUNK)
      this.#emit({ stream: this.#stream, data: data.subarray(offset, offset + take) })
      offset += take
      this.#remaining -= take
    }
  }
}

export interface LogOptions {
  tail: number
  timestamps?: boolean
  tty: boolean
  follow?: boolean
}

/** The engine's raw log stream (follow or not), as a stream: dockerode would buffer a non-follow answer whole. */
export function openLogStream(docker: Docker, id: string, opts: LogOptions): Promise<Readable> {
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/logs?`,
        method: 'GET',
        options: {
          stdout: true,
          stderr: true,
          tail: String(opts.tail),
          timestamps: Boolean(opts.timestamps),
          follow: Boolean(opts.follow),
        },
        isStream: true,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
      },
      (err: unknown, stream: unknown) => (err ? reject(err) : resolve(stream as Readable)),
    )
  })
}

/** The last `tail` lines as text, stdout and stderr interleaved as the engine sent them; cut at MAX_RECENT_BYTES. */
export async function readBoundedLogs(docker: Docker, id: string, opts: LogOptions): Promise<string> {
  const stream = await openLogStream(docker, id, { ...opts, follow: false })
  const parts: Buffer[] = []
  let size = 0
  let truncated = false
  await new Promise<void>((resolve, reject) => {
    const demux = new LogDemuxer(opts.tty, ({ data }) => {
      if (truncated) return
      if (size + data.length > MAX_RECENT_BYTES) {
        truncated = true
        stream.destroy()
        return resolve()
      }
      parts.push(Buffer.from(data))
      size += data.length
    })
    stream.on('data', (c: Buffer) => demux.push(c))
    stream.on('end', resolve)
    stream.on('close', resolve)
    stream.on('error', (err) => (truncated ? resolve() : reject(err)))
  })
  const text = Buffer.concat(parts).toString('utf8')
  return truncated ? `${text}\n[hostd: logs cut at ${MAX_RECENT_BYTES} bytes; ask for a smaller tail]\n` : text
}

/** Where the log pump writes: a WebSocket, as far as flow control goes. */
export interface LogSink {
  readonly bufferedAmount: number
  send(data: string, cb: (err?: Error) => void): void
  isOpen(): boolean
}

export const HIGH_WATER = 1024 * 1024
export const LOW_WATER = 256 * 1024

/**
 * Engine log stream -> JSON messages on a socket, with backpressure: when more than HIGH_WATER bytes wait on
 * the socket, the engine stream is paused (so the engine, not this process, holds the backlog); it resumes once
 * the socket has drained below LOW_WATER. Memory per follower is bounded by HIGH_WATER plus one chunk.
 */
export class LogPump {
  readonly #source: Readable
  readonly #sink: LogSink
  paused = false
  pauses = 0

  constructor(source: Readable, sink: LogSink, tty: boolean) {
    this.#source = source
    this.#sink = sink
    const demux = new LogDemuxer(tty, ({ stream, data }) => {
      if (!sink.isOpen()) return
      sink.send(JSON.stringify({ type: 'log', stream, data: data.toString('utf8') }), () => this.#drained())
      if (!this.paused && sink.bufferedAmount > HIGH_WATER) {
        this.paused = true
        this.pauses++
        source.pause()
      }
    })
    source.on('data', (c: Buffer) => demux.push(c))
  }

  #drained(): void {
    if (this.paused && this.#sink.bufferedAmount < LOW_WATER) {
      this.paused = false
      this.#source.resume()
    }
  }
}
