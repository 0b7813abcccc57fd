import { afterEach, describe, expect, it } from 'vitest'
import { createServer, type Server, type ServerResponse } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { once } from 'node:events'
import { StreamHub, formatEvent, parseLastEventId, type StreamOptions, type StreamSource } from '../src/stream.ts'

/**
 * The SSE hub on a real HTTP server with real sockets. The sample source here is a counter (the hub's
 * contract is "one sample per tick"); the real /proc source is exercised in metrics.test.ts.
 */
function countingSource(payloadBytes = 16) {
  const calls = { begin: 0, sample: 0, end: 0 }
  let n = 0
  const source: StreamSource = {
    begin: async () => void calls.begin++,
    sample: async () => {
      calls.sample++
      return { at: Date.now(), data: { n: ++n, pad: 'x'.repeat(payloadBytes) } }
    },
    end: () => void calls.end++,
  }
  return { source, calls }
}

const until = async (cond: () => boolean, ms = 15_000) => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

let server: Server | null = null
const sockets: Socket[] = []
afterEach(async () => {
  sockets.splice(0).forEach((s) => s.destroy())
  server?.closeAllConnections()
  await new Promise((r) => server?.close(r) ?? r(null))
  server = null
})

async function serve(hub: StreamHub, onResponse?: (res: ServerResponse) => void): Promise<number> {
  server = createServer((req, res) => {
    onResponse?.(res)
    hub.attach(req, res, { limit: Number(new URL(req.url!, 'http://x').searchParams.get('limit')) || null })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

/** A raw client that sends the request and reads (or not) what comes back. */
function rawClient(port: number, headers: Record<string, string> = {}, read = true, path = '/') {
  const socket = connect(port, '127.0.0.1')
  sockets.push(socket)
  let text = ''
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
  )
  if (read) socket.on('data', (d) => (text += d.toString()))
  else socket.pause()
  return { socket, text: () => text, ids: () => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])) }
}

/** The last chunk of a chunked response: the stream ended (the keep-alive connection itself stays open). */
const ended = (text: string) => text.endsWith('\r\n0\r\n\r\n')

const fast: Partial<StreamOptions> = { intervalMs: 30, heartbeatMs: 50 }

describe('SSE hub', () => {
  it('formats events and reads Last-Event-ID', () => {
    expect(formatEvent(7, 'metrics', { a: 1 })).toBe('id: 7\nevent: metrics\ndata: {"a":1}\n\n')
    expect(parseLastEventId('1795249024648')).toBe(1795249024648)
    expect(parseLastEventId('abc')).toBeNull()
    expect(parseLastEventId(undefined)).toBeNull()
  })

  it('runs one sampler for many clients, only while someone listens', async () => {
    const { source, calls } = countingSource()
    const hub = new StreamHub(source, fast)
    const port = await serve(hub)
    expect(hub.sampling).toBe(false)
    const clients = [rawClient(port), rawClient(port), rawClient(port)]
    await until(() => clients.every((c) => c.ids().length >= 5))
    expect(calls.begin).toBe(1)
    // Every client saw the same events (same ids), from one sample per tick.
    const common = clients[0]!.ids().slice(0, 3)
    for (const c of clients) expect(c.ids()).toEqual(expect.arrayContaining(common))
    expect(calls.sample).toBeLessThan(clients[0]!.ids().length + 3)
    // Headers for proxies, retry and heartbeat comments.
    const text = clients[0]!.text()
    expect(text).toMatch(/content-type: text\/event-stream/i)
    expect(text).toMatch(/cache-control: no-store, no-transform/i)
    expect(text).toMatch(/x-accel-buffering: no/i)
    expect(text).toMatch(/^retry: \d+$/m)
    await until(() => clients[0]!.text().includes(': heartbeat'))
    clients.forEach((c) => c.socket.destroy())
    await until(() => hub.listeners === 0)
    expect(hub.sampling).toBe(false)
    expect(calls.end).toBe(1)
    const after = calls.sample
    await new Promise((r) => setTimeout(r, 150))
    expect(calls.sample).toBe(after) // nobody listens: no sampling at all
    // A later client never gets the stale last event of the earlier run as "the latest".
    const lastSeen = Math.max(...clients[0]!.ids())
    const later = rawClient(port)
    await until(() => later.ids().length >= 1)
    expect(later.ids()[0]).toBeGreaterThan(lastSeen)
    expect(calls.begin).toBe(2)
    later.socket.destroy()
  })

  it('resumes after Last-Event-ID from the kept events, and ends after limit events', async () => {
    const { source } = countingSource()
    const hub = new StreamHub(source, fast)
    const port = await serve(hub)
    const first = rawClient(port)
    await until(() => first.ids().length >= 6)
    const ids = first.ids()
    const resumed = rawClient(port, { 'Last-Event-ID': String(ids[1]) }, true, '/?limit=3')
    await until(() => ended(resumed.text()))
    // Exactly the three events after the one it had, in order, straight from history.
    expect(resumed.ids()).toEqual(ids.slice(2, 5))
    first.socket.destroy()
  })

  it('never buffers more than its bound for a client that does not read, then drops it', async () => {
    const { source } = countingSource(256 * 1024) // big events fill the socket buffers quickly
    const maxBufferedBytes = 64 * 1024
    const hub = new StreamHub(source, { intervalMs: 20, heartbeatMs: 1000, maxBufferedBytes, stallMs: 500 })
    let res: ServerResponse | null = null
    let maxQueued = 0
    const port = await serve(hub, (r) => (res = r))
    const slow = rawClient(port, {}, false)
    await until(() => res !== null)
    const watch = setInterval(() => (maxQueued = Math.max(maxQueued, res!.writableLength)), 2)
    try {
      await until(() => res!.destroyed, 30_000)
    } finally {
      clearInterval(watch)
    }
    // At most the bound plus the one event written while still under it.
    expect(maxQueued).toBeGreaterThan(0)
    expect(maxQueued).toBeLessThanOrEqual(maxBufferedBytes + 300 * 1024)
    await until(() => hub.listeners === 0)
    expect(hub.sampling).toBe(false)
    slow.socket.destroy()
  })

  it('close ends every stream and refuses to start again', async () => {
    const { source } = countingSource()
    const hub = new StreamHub(source, fast)
    const port = await serve(hub)
    const c = rawClient(port)
    await until(() => c.ids().length >= 1)
    hub.close()
    await until(() => ended(c.text()))
    expect(hub.closed).toBe(true)
    expect(hub.sampling).toBe(false)
  })
})
