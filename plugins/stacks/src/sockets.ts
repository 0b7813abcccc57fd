/**
 * Live sockets: `/api/stacks/events` (every stack's operations, deploy progress and file changes) and
 * `/api/stacks/logs?name=` (the stack's containers' logs merged, each line prefixed by its service). Shapes in the
 * README.
 */
import { closeWithError, sendJson, type SocketRegistrar } from '@hostd/sdk'
import type { Readable } from 'node:stream'
import { LABELS } from './apply.ts'
import { LogsQuery } from './schemas.ts'
import type { StacksService } from './service.ts'

/** Pull progress and log lines are dropped, not queued, while this much waits on the socket. */
const HIGH_WATER = 1024 * 1024

/** Splits Docker's multiplexed log stream (8-byte frame headers) into lines of stdout and stderr. */
export class LineDemuxer {
  #buffer = Buffer.alloc(0)
  #partial: Record<'stdout' | 'stderr', string> = { stdout: '', stderr: '' }
  readonly tty: boolean
  readonly emit: (stream: 'stdout' | 'stderr', line: string) => void
  constructor(tty: boolean, emit: (stream: 'stdout' | 'stderr', line: string) => void) {
    this.tty = tty
    this.emit = emit
  }

  push(chunk: Buffer): void {
    if (this.tty) {
      this.#text('stdout', chunk.toString('utf8'))
      return
    }
    this.#buffer = Buffer.concat([this.#buffer, chunk])
    while (this.#buffer.length >= 8) {
      const size = this.#buffer.readUInt32BE(4)
      if (this.#buffer.length < 8 + size) break
      const stream = this.#buffer[0] === 2 ? 'stderr' : 'stdout'
      this.#text(stream, this.#buffer.subarray(8, 8 + size).toString('utf8'))
      this.#buffer = this.#buffer.subarray(8 + size)
    }
  }

  #text(stream: 'stdout' | 'stderr', text: string): void {
    const lines = (this.#partial[stream] + text).split('\n')
    this.#partial[stream] = lines.pop()!.slice(-65536)
    for (const line of lines) this.emit(stream, line)
  }
}

export function stackSockets(s: SocketRegistrar, stacks: () => StacksService): void {
  s.ws('/api/stacks/events', { role: 'viewer' }, async (socket, ctx) => {
    const off = stacks().subscribe((event) => {
      if (socket.readyState !== socket.OPEN) return
      if (event.type === 'progress' && event.event.type === 'pull' && socket.bufferedAmount > HIGH_WATER) return
      sendJson(socket, event)
    })
    ctx.signal.addEventListener('abort', off, { once: true })
    socket.on('close', off)
    sendJson(socket, { type: 'ready' })
  })

  s.ws('/api/stacks/logs', { role: 'viewer', query: LogsQuery }, async (socket, ctx) => {
    const streams: Readable[] = []
    const stop = () => {
      for (const st of streams) st.destroy()
    }
    ctx.signal.addEventListener('abort', stop, { once: true })
    socket.on('close', stop)
    try {
      const containers = await stacks().containersOf(ctx.query.name)
      let open = containers.length
      for (const c of containers) {
        const service = c.labels[LABELS.service] ?? c.name
        const { stream, tty } = await stacks().logs(c.id, ctx.query.tail ?? 100)
        streams.push(stream)
        const demux = new LineDemuxer(tty, (kind, line) => {
          if (socket.readyState === socket.OPEN && socket.bufferedAmount < HIGH_WATER)
            sendJson(socket, { type: 'log', service, stream: kind, line })
        })
        stream.on('data', (chunk: Buffer) => demux.push(chunk))
        stream.on('error', () => undefined)
        stream.on('end', () => {
          sendJson(socket, { type: 'end', service })
          if (--open === 0 && socket.readyState === socket.OPEN) socket.close(1000, 'every container stopped')
        })
      }
      sendJson(socket, { type: 'ready', services: containers.map((c) => c.labels[LABELS.service] ?? c.name) })
      if (containers.length === 0) socket.close(1000, 'no containers')
    } catch (err) {
      stop()
      closeWithError(socket, err, 'HOSTD_STACKS_INTERNAL')
    }
  })
}
