/**
 * The embedded default: daemon A starts and supervises its own nats-server (HOSTD_FLEET_EMBEDDED=1); a join code
 * made on A without credentials mints B's NATS user (the server reloads its configuration), B joins with it, A calls
 * B. When A stops, its nats-server is stopped too (nothing listens on its port any more).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect as tcpConnect } from 'node:net'
import { eventually, freePort } from '@hostd/sdk/testing'
import { startPluginDaemon, type PluginDaemon } from '../../../test/support/plugin-daemon.ts'

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = tcpConnect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })

describe('fleet with the embedded nats-server', () => {
  let a: PluginDaemon
  let b: PluginDaemon
  let port: number

  beforeAll(async () => {
    port = await freePort()
    ;[a, b] = await Promise.all([
      startPluginDaemon(['fleet'], {
        HOSTD_FLEET_EMBEDDED: '1',
        HOSTD_FLEET_EMBEDDED_PORT: String(port),
        HOSTD_FLEET_EMBEDDED_URL: `nats://127.0.0.1:${port}`,
        HOSTD_FLEET_HOST: 'a',
      }),
      startPluginDaemon(['fleet']),
    ])
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
  })

  const get = async (d: PluginDaemon, path: string, body?: unknown) => {
    const res = await d.fetch(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${d.adminToken}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, json: (await res.json()) as any }
  }

  it('mints a member with a join code, lets it join, and stops its server with the daemon', async () => {
    await eventually(async () => (await get(a, '/api/hosts')).json.hosts.length === 1, 100)
    expect((await get(a, '/api/fleet')).json).toMatchObject({ joined: true, host: 'a', embedded: true })
    const code = await get(a, '/api/fleet/join-codes', { host: 'b' })
    expect(code.status, JSON.stringify(code.json)).toBe(201)
    const joined = await get(b, '/api/fleet/join', { code: code.json.code })
    expect(joined.status, JSON.stringify(joined.json)).toBe(200)
    await eventually(async () => (await get(a, '/api/hosts')).json.hosts.filter((h: any) => h.up).length === 2, 100)
    const remote = await get(a, '/api/hosts/b/api/extensions')
    expect(remote.status).toBe(200)
    // B's user may not answer for A: its requests to "a" come from "b" only (NATS permissions), checked end to end in
    // fleet.e2e.test.ts with the same configuration writer.
    expect(await listening(port)).toBe(true)
    await a.stop()
    expect(await listening(port)).toBe(false)
  })
})
