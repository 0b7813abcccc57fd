import type { IncomingMessage, ServerResponse } from 'node:http'

/** What the stream needs from the outside: one sample per tick, as the event's id and JSON data. */
export interface StreamSource {
  /** Starts a sampling run (takes the baseline reading). */
  begin(): Promise<void>
  /** One sample: called every interval while someone listens. */
  sample(): Promise<{ at: number; data: unknown } | null>
  /** The run ended (last listener gone or the hub closed). */
  end(): void
}

export interface StreamOptions {
  intervalMs: number
  heartbeatMs: number
  /** Reconnection delay suggested to EventSource clients (`retry:`). */
  retryMs: number
  /** Full events kept for Last-Event-ID resumption. */
  replaySize: number
  /** A client with more than this many bytes unsent skips events until it drains. */
  maxBufferedBytes: number
  /** A client that has not drained for this long is dropped (it may reconnect and resume). */
  stallMs: number
}

export const DEFAULT_STREAM_OPTIONS: StreamOptions = {
  intervalMs: 2000,
  heartbeatMs: 15_000,
  retryMs: 3000,
  replaySize: 150, // five minutes at two seconds
  maxBufferedBytes: 64 * 1024,
  stallMs: 60_000,
}

interface Frame {
  id: number
  bytes: Buffer
}

/** One listening client. Writes never queue more than `maxBufferedBytes` (plus one frame) in memory. */
export class StreamClient {
  readonly res: ServerResponse
  #remaining: number
  #stalledSince: number | null = null
  skipped = 0

  constructor(res: ServerResponse, limit: number | null) {
    this.res = res
    this.#remaining = limit ?? Number.POSITIVE_INFINITY
  }

  get done(): boolean {
    return this.#remaining <= 0 || this.res.destroyed || this.res.writableEnded
  }

  /** Writes an event unless the client is behind; returns false when the client should be dropped. */
  sendEvent(frame: Frame, opts: StreamOptions, now: number): boolean {
    if (!this.#writable(opts, now)) {
      this.skipped++
      return this.#stalledSince === null || now - this.#stalledSince < opts.stallMs
    }
    this.res.write(frame.bytes)
    if (--this.#remaining <= 0) this.res.end()
    return true
  }

  sendComment(bytes: Buffer, opts: StreamOptions, now: number): boolean {
    if (!this.#writable(opts, now)) return this.#stalledSince === null || now - this.#stalledSince < opts.stallMs
    this.res.write(bytes)
    return true
  }

  #writable(opts: StreamOptions, now: number): boolean {
    if (this.res.writableLength < opts.maxBufferedBytes) {
      this.#stalledSince = null
      return true
    }
    this.#stalledSince ??= now
    return false
  }
}

/** `id:`, `event:` and `data:` lines; JSON has no raw newlines, so one data line suffices. */
export function formatEvent(id: number, event: string, data: unknown): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`
}

/** Last-Event-ID as sent by EventSource on reconnection; null when absent or not one of our ids. */
export function parseLastEventId(value: string | string[] | undefined): number | null {
  const raw = Array.isArray(value) ? value[0] : value
  if (!raw || !/^\d{1,16}$/.test(raw.trim())) return null
  return Number(raw.trim())
}

const HEARTBEAT = Buffer.from(': heartbeat\n\n')
const CLOSE_GRACE_MS = 2000

/**
 * The server-sent event hub: ONE sampler however many clients listen, started by the first listener and
 * stopped when the last leaves (no sampling while nobody listens). Every event is serialized once and the
 * same bytes go to every client. The last `replaySize` events stay for Last-Event-ID resumption.
 */
export class StreamHub {
  readonly #source: StreamSource
  readonly #opts: StreamOptions
  readonly #clients = new Set<StreamClient>()
  readonly #replay: Frame[] = []
  #timer: NodeJS.Timeout | null = null
  #heartbeat: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null
  #lastId = 0
  #closed = false
  #ticking = false

  constructor(source: StreamSource, opts: Partial<StreamOptions> = {}) {
    this.#source = source
    this.#opts = { ...DEFAULT_STREAM_OPTIONS, ...opts }
  }

  get listeners(): number {
    return this.#clients.size
  }

  get sampling(): boolean {
    return this.#timer !== null
  }

  get closed(): boolean {
    return this.#closed
  }

  /** Serves one SSE request on a hijacked response. */
  attach(req: IncomingMessage, res: ServerResponse, options: { limit?: number | null } = {}): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, no-transform',
      'x-accel-buffering': 'no', // nginx: do not buffer this response
      connection: 'keep-alive',
    })
    if (typeof res.socket?.setNoDelay === 'function') res.socket.setNoDelay(true)
    res.write(
      `: hostd metrics stream, one event every ${this.#opts.intervalMs / 1000} s\nretry: ${this.#opts.retryMs}\n\n`,
    )
    const client = new StreamClient(res, options.limit ?? null)
    const now = Date.now()
    const lastId = parseLastEventId(req.headers['last-event-id'])
    // Resume: every kept event after the client's last one. A new client gets the latest event at once when
    // it is recent (ids are sample times), never a stale one from an earlier sampling run.
    const latest = this.#replay.at(-1)
    const fresh = latest && now - latest.id < this.#opts.intervalMs * 1.5 ? [latest] : []
    const backlog = lastId !== null ? this.#replay.filter((f) => f.id > lastId) : fresh
    for (const frame of backlog) {
      if (client.done) break
      client.sendEvent(frame, this.#opts, now)
    }
    if (client.done) {
      if (!res.writableEnded) res.end()
      return
    }
    if (res.destroyed || req.socket.destroyed) return // gone before it was served: nothing to listen for
    this.#clients.add(client)
    res.once('close', () => this.#remove(client))
    this.#start()
  }

  /** Ends every stream and stops sampling (plugin stop): no stream outlives its plugin. */
  close(): void {
    this.#closed = true
    for (const client of this.#clients) {
      client.res.end()
      // A client that does not read would keep its connection (and the ended response) forever.
      setTimeout(() => client.res.writableFinished || client.res.destroy(), CLOSE_GRACE_MS).unref()
    }
    this.#clients.clear()
    this.#stop()
  }

  #remove(client: StreamClient): void {
    this.#clients.delete(client)
    if (this.#clients.size === 0) this.#stop()
  }

  #start(): void {
    if (this.#timer || this.#closed) return
    this.#running = this.#source.begin().catch(() => undefined)
    this.#timer = setInterval(() => void this.#tick(), this.#opts.intervalMs)
    this.#heartbeat = setInterval(() => this.#beat(), this.#opts.heartbeatMs)
  }

  #stop(): void {
    if (!this.#timer) return
    clearInterval(this.#timer)
    clearInterval(this.#heartbeat!)
    this.#timer = this.#heartbeat = null
    this.#running = null
    this.#source.end()
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return // a slow read (e.g. a hung statfs) never piles up samples
    this.#ticking = true
    try {
      await this.#running
      const sample = await this.#source.sample()
      if (!sample || !this.#timer) return
      const id = Math.max(this.#lastId + 1, sample.at)
      this.#lastId = id
      const frame = { id, bytes: Buffer.from(formatEvent(id, 'metrics', sample.data)) }
      this.#replay.push(frame)
      if (this.#replay.length > this.#opts.replaySize) this.#replay.shift()
      const now = Date.now()
      for (const client of this.#clients) {
        if (!client.sendEvent(frame, this.#opts, now)) client.res.destroy()
      }
    } catch {
      /* a failed read skips one event; the next tick tries again */
    } finally {
      this.#ticking = false
    }
  }

  #beat(): void {
    const now = Date.now()
    for (const client of this.#clients) {
      if (!client.sendComment(HEARTBEAT, this.#opts, now)) client.res.destroy()
    }
  }
}
