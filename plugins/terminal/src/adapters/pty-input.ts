/**
 * Writes the client's input to the PTY master with a bounded queue. node-pty's own `write` queues without limit and
 * retries a full PTY on every event-loop turn (a busy loop while the program on the other side does not read); this
 * writer counts what is queued, so the socket can stop reading the client past a high watermark, and backs off
 * (1 ms doubling to 50 ms) while the PTY is full. Writes are whole and in order: a 100 KB paste arrives entire.
 */
import { write } from 'node:fs'

const MAX_BACKOFF_MS = 50

export class PtyInput {
  readonly #fd: number
  readonly #queue: Buffer[] = []
  #offset = 0
  #pending = 0
  #writing = false
  #backoff = 0
  #closed = false
  readonly #onDrained: () => void

  /** `onDrained` runs whenever the queue empties. */
  constructor(fd: number, onDrained: () => void) {
    this.#fd = fd
    this.#onDrained = onDrained
  }

  /** Bytes accepted but not yet written to the PTY. */
  get pending(): number {
    return this.#pending
  }

  write(data: Buffer): void {
    if (this.#closed || data.length === 0) return
    this.#queue.push(data)
    this.#pending += data.length
    if (!this.#writing) this.#next()
  }

  /** Drops what is queued; later writes are ignored. */
  close(): void {
    this.#closed = true
    this.#queue.length = 0
    this.#pending = 0
  }

  #next(): void {
    const head = this.#queue[0]
    if (this.#closed || !head) {
      this.#writing = false
      if (!this.#closed) this.#onDrained()
      return
    }
    this.#writing = true
    write(this.#fd, head, this.#offset, head.length - this.#offset, null, (err, written) => {
      if (this.#closed) return
      if (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return this.close() // EIO: the shell is gone
        this.#backoff = Math.min(MAX_BACKOFF_MS, Math.max(1, this.#backoff * 2))
        setTimeout(() => this.#next(), this.#backoff)
        return
      }
      this.#backoff = 0
      this.#offset += written
      this.#pending -= written
      if (this.#offset >= head.length) {
        this.#queue.shift()
        this.#offset = 0
      }
      this.#next()
    })
  }
}
