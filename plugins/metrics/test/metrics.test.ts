import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir, totalmem, cpus } from 'node:os'
import { join } from 'node:path'
import { request } from 'node:http'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createMetricsPlugin, serviceOf } from '../src/index.ts'

interface SseEvent {
  id: number
  event: string
  data: any
}

/** Reads `count` events from the real HTTP stream, then closes the connection. */
function readEvents(
  url: string,
  token: string,
  count: number,
  headers: Record<string, string> = {},
): Promise<{ events: SseEvent[]; headers: Record<string, unknown>; raw: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/metrics/stream`,
      { headers: { authorization: `Bearer ${token}`, ...headers } },
      (res) => {
        let raw = ''
        const events: SseEvent[] = []
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          raw += chunk
          let sep: number
          while ((sep = raw.indexOf('\n\n')) >= 0 && events.length < count) {
            const block = raw.slice(0, sep)
            raw = raw.slice(sep + 2)
            const id = /^id: (\d+)$/m.exec(block)
            const data = /^data: (.*)$/m.exec(block)
            const event = /^event: (.*)$/m.exec(block)
            if (id && data)
              events.push({ id: Number(id[1]), event: event?.[1] ?? 'message', data: JSON.parse(data[1]!) })
          }
          if (events.length >= count) {
            req.destroy()
            resolve({ events, headers: res.headers, raw })
          }
        })
        res.on('error', () => undefined)
      },
    )
    req.on('error', (err) =>
      err.message.includes('aborted') || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err),
    )
    req.setTimeout(20_000, () => reject(new Error('stream timed out')))
    req.end()
  })
}

const until = async (cond: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('metrics plugin on the real host', () => {
  const plugin = createMetricsPlugin()
  let t: TestKernel
  let viewer: string
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [plugin], listen: true })
    viewer = (await t.login('viewer')).token
  })
  afterAll(() => t.close())

  it('serves a snapshot of this machine', async () => {
    const res = await t.inject({ url: '/api/metrics', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    const s = res.json()
    expect(s.memory.totalBytes).toBe(totalmem())
    expect(s.cpu.cores).toHaveLength(cpus().length)
    expect(s.uptimeSeconds).toBeGreaterThan(0)
    expect(s.intervalSeconds).toBeGreaterThan(0)
    expect(s.filesystems.find((f: { mountpoint: string }) => f.mountpoint === '/')).toBeTruthy()
    expect(s.network.map((n: { name: string }) => n.name)).toContain('lo')
    expect(Date.now() - Date.parse(s.sampledAt)).toBeLessThan(60_000)
    for (const d of s.disks) expect(Math.min(d.readBytesPerSec, d.writeBytesPerSec)).toBeGreaterThanOrEqual(0)
    for (const n of s.network) expect(Math.min(n.rxBytesPerSec, n.txBytesPerSec)).toBeGreaterThanOrEqual(0)
  })

  it('answers 401 without sign-in', async () => {
    expect((await t.inject({ url: '/api/metrics' })).statusCode).toBe(401)
    expect((await t.inject({ url: '/api/metrics/stream' })).statusCode).toBe(401)
    expect((await t.inject({ url: '/api/activity/processes', as: 'viewer' })).statusCode).toBe(403)
  })

  it('streams events about two seconds apart from one shared sampler, and stops sampling when nobody listens', async () => {
    const service = serviceOf(t.kernel.registry, plugin)!
    expect(service.hub.sampling).toBe(false)
    const [a, b] = await Promise.all([readEvents(t.url!, viewer, 2), readEvents(t.url!, viewer, 2)])
    expect(a.headers['content-type']).toMatch(/^text\/event-stream/)
    expect(a.headers['cache-control']).toBe('no-store, no-transform')
    expect(a.headers['x-accel-buffering']).toBe('no')
    const [e1, e2] = a.events
    expect(e1!.event).toBe('metrics')
    expect(e2!.id).toBeGreaterThan(e1!.id)
    // A sanity check with generous bounds, not a timing assertion: consecutive samples are ~2 s apart.
    const gap = Date.parse(e2!.data.sampledAt) - Date.parse(e1!.data.sampledAt)
    expect(gap).toBeGreaterThan(1000)
    expect(gap).toBeLessThan(10_000)
    expect(e2!.data.intervalSeconds).toBeGreaterThan(1)
    for (const d of e2!.data.disks)
      expect(Math.min(d.readBytesPerSec, d.writeBytesPerSec, d.readsPerSec, d.writesPerSec)).toBeGreaterThanOrEqual(0)
    for (const n of e2!.data.network) expect(Math.min(n.rxBytesPerSec, n.txBytesPerSec)).toBeGreaterThanOrEqual(0)
    // Both clients got the same samples (same ids, same bytes): one sampler, not one per client.
    const shared = b.events.filter((e) => a.events.some((x) => x.id === e.id))
    expect(shared.length).toBeGreaterThanOrEqual(1)
    for (const e of shared) expect(e.data).toEqual(a.events.find((x) => x.id === e.id)!.data)
    await until(() => service.hub.listeners === 0)
    expect(service.hub.sampling).toBe(false)

    // Resume: Last-Event-ID of the first event replays the second one at once, from history.
    const resumed = await readEvents(t.url!, viewer, 1, { 'last-event-id': String(e1!.id) })
    expect(resumed.events[0]!.id).toBe(e2!.id)
    await until(() => service.hub.listeners === 0)

    // The stream's samples are the hour's 2 s history.
    const hist = await t.inject({ url: '/api/metrics/history?range=1h', as: 'viewer' })
    expect(hist.statusCode).toBe(200)
    const times = hist
      .json()
      .points.filter((p: { stepSeconds: number }) => p.stepSeconds === 2)
      .map((p: { t: string }) => p.t)
    expect(times).toEqual(expect.arrayContaining([e1!.data.sampledAt, e2!.data.sampledAt]))
  })

  it('ends a stream after limit events (for scripts and the route table)', async () => {
    const res = await t.inject({ url: '/api/metrics/stream?limit=1', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    expect(res.body.match(/^id: /gm)).toHaveLength(1)
    expect((await t.inject({ url: '/api/metrics/stream?limit=0', as: 'viewer' })).statusCode).toBe(400)
  })

  it('validates the history range', async () => {
    const bad = await t.inject({ url: '/api/metrics/history?range=2h', as: 'viewer' })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().error).toBe('HOSTD_REQUEST_INVALID')
    for (const range of ['24h', '7d']) {
      const res = await t.inject({ url: `/api/metrics/history?range=${range}`, as: 'viewer' })
      expect(res.statusCode).toBe(200)
      expect(res.json().range).toBe(range)
    }
  })

  it('exposes Prometheus text that matches the host', async () => {
    const res = await t.inject({ url: '/api/metrics/prometheus', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(res.body).toContain(`\nhostd_memory_total_bytes ${totalmem()}\n`)
    const cores = new Set([...res.body.matchAll(/^hostd_cpu_seconds_total\{cpu="(\d+)"/gm)].map((m) => m[1]))
    expect(cores.size).toBe(cpus().length)
    // A bearer token is all a scraper needs.
    expect((await t.inject({ url: '/api/metrics/prometheus' })).statusCode).toBe(401)
  })
})

describe('history persistence across a restart', () => {
  it('keeps the 2 s and the minute points in the database', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hostd-metrics-persist-'))
    try {
      // A one-second history period stands in for the minute, so the test need not wait one.
      const first = createMetricsPlugin({ historyIntervalMs: 1000 })
      const t1 = await startTestKernel({ plugins: [first], listen: true, env: { HOSTD_DATA_DIR: dataDir } })
      const { token } = await t1.login('viewer')
      const { events } = await readEvents(t1.url!, token, 1)
      await until(() => serviceOf(t1.kernel.registry, first)!.history.coarse.size >= 2)
      const before = (await t1.inject({ url: '/api/metrics/history?range=1h', as: 'viewer' })).json().points
      await until(() => serviceOf(t1.kernel.registry, first)!.hub.listeners === 0)
      await t1.close()

      const second = createMetricsPlugin()
      const t2 = await startTestKernel({ plugins: [second], env: { HOSTD_DATA_DIR: dataDir } })
      try {
        const again = { token: (await t2.login('viewer', 'viewer-after-restart')).token }
        const after = (await t2.inject({ url: '/api/metrics/history?range=1h', as: again })).json().points
        expect(after.length).toBeGreaterThanOrEqual(before.length)
        expect(after.map((p: { t: string }) => p.t)).toEqual(expect.arrayContaining([events[0]!.data.sampledAt]))
        const day = (await t2.inject({ url: '/api/metrics/history?range=24h', as: again })).json().points
        expect(day.length).toBeGreaterThanOrEqual(2)
        expect(day[0].cpu).toBeGreaterThanOrEqual(0)
      } finally {
        await t2.close()
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })
})

describe('a stream on plugin stop', () => {
  it('ends when the kernel retires the plugin', async () => {
    const plugin = createMetricsPlugin()
    const t = await startTestKernel({ plugins: [plugin], listen: true })
    const { token } = await t.login('viewer')
    let ended = false
    const opened = new Promise<void>((resolve) => {
      request(`${t.url}/api/metrics/stream`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.once('data', () => resolve())
        res.on('end', () => (ended = true))
        res.resume()
      }).end()
    })
    await opened
    // Retiring aborts the plugin version's lifetime signal before the kernel waits for in-flight requests: the
    // stream ends on that signal, so by the time the plugin's stop runs (and would end streams itself) none is left.
    const hub = serviceOf(t.kernel.registry, plugin)!.hub
    const close = hub.close.bind(hub)
    let listenersAtStop = -1
    hub.close = () => {
      listenersAtStop = hub.listeners
      close()
    }
    await t.kernel.registry.disable('metrics')
    await until(() => ended, 20_000)
    expect(listenersAtStop).toBe(0)
    expect(hub.closed).toBe(true)
    await t.close()
  }, 40_000)
})
