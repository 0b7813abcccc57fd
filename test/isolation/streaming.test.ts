/**
 * Streamed answers across the trust boundary (issue 26): a handler that answers with a stream or an async iterable
 * (server-sent events, a large body) streams through the kernel, in its sandbox as in the daemon's process; a client
 * that goes away stops the plugin's stream; a stream that breaks cuts the connection.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { FIXTURES, startIsolationDaemon, type IsolationDaemon } from './support.ts'

const modes = [
  { mode: 'isolated', env: {} },
  { mode: 'in process', env: { HOSTD_PLUGINS_ISOLATION: 'off' } },
] as const

describe.each(modes)('streamer, $mode', ({ env }) => {
  let d: IsolationDaemon
  beforeAll(async () => {
    d = await startIsolationDaemon({ streamer: join(FIXTURES, 'streamer') }, env)
    await d.until('streamer', (e) => e.state === 'active')
  }, 60_000)
  afterAll(() => d?.close())
  const get = (path: string, signal?: AbortSignal) =>
    d.fetch(path, { headers: { authorization: `Bearer ${d.adminToken}` }, signal })

  it('server-sent events arrive as the plugin writes them, with its content type', async () => {
    const res = await get('/api/streamer/events')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(await res.text()).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\n')
  })

  it('a 1 MiB body from a Node stream arrives whole', async () => {
    const res = await get('/api/streamer/bytes')
    expect(res.status).toBe(200)
    const body = Buffer.from(await res.arrayBuffer())
    expect(body.length).toBe(16 * 64 * 1024)
    expect([body[0], body[64 * 1024], body.at(-1)]).toEqual([0, 1, 15])
  })

  it('a client that goes away stops an endless stream in the plugin', async () => {
    const abort = new AbortController()
    const res = await get('/api/streamer/endless', abort.signal)
    const reader = res.body!.getReader()
    await reader.read()
    abort.abort()
    await eventually(async () => (await d.api('/api/streamer/endless-state')).body.endlessStopped === true)
    const { endlessSent } = (await d.api('/api/streamer/endless-state')).body
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect((await d.api('/api/streamer/endless-state')).body.endlessSent).toBe(endlessSent)
  })

  it('a stream that breaks cuts the connection after what it sent', async () => {
    const res = await get('/api/streamer/breaks')
    expect(res.status).toBe(200)
    await expect(res.text()).rejects.toThrow()
    expect((await d.api('/health')).status).toBe(200)
  })
})
