/**
 * The origin rule (issue 12, item 6), against the real daemon over TLS: with the session cookie (a browser), a
 * WebSocket upgrade and an unsafe request need an `Origin` exactly equal to the daemon's own origin (https, host and
 * port); none, another scheme, another port or another host is 403 before the upgrade or the handler. Bearer-token
 * clients without a cookie may omit Origin. Safe requests (GET) are not affected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import WebSocket from 'ws'
import { REPO_ROOT, startDaemon, waitFor, type Daemon } from './support/daemon.ts'

const PASSWORD = 'origin rule password'

/** The upgrade's outcome: 'open' (and the socket echoes), or the HTTP status it was refused with. */
function upgrade(url: string, headers: Record<string, string>): Promise<'open' | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { rejectUnauthorized: false, headers })
    ws.once('open', () => {
      ws.once('message', (data) => {
        ws.terminate()
        resolve(String(data) === 'ping' ? 'open' : -1)
      })
      ws.send('ping')
    })
    ws.once('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0)
      req.destroy()
    })
    ws.once('error', reject)
  })
}

describe('origin rule for cookie-authenticated sockets and changes', () => {
  let d: Daemon
  let cookie: string
  let token: string
  let wsUrl: string
  let own: string
  let port: string

  beforeAll(async () => {
    d = await startDaemon()
    own = d.url
    port = new URL(own).port
    expect(own).toBe(`https://127.0.0.1:${port}`)
    const json = { 'content-type': 'application/json' }
    expect(
      (
        await d.fetch('/api/setup', {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ username: 'admin', password: PASSWORD }),
        })
      ).status,
    ).toBe(201)
    const browser = await d.fetch('/api/auth/login', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    })
    cookie = browser.headers
      .getSetCookie()
      .find((c) => c.startsWith('svc_session='))!
      .split(';')[0]!
    await browser.arrayBuffer()
    const client = await d.fetch('/api/auth/login', {
      method: 'POST',
      headers: { ...json, 'x-svc-client': 'test' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    })
    token = ((await client.json()) as { token: string }).token
    await cp(join(REPO_ROOT, 'examples', 'hello-plugin'), join(d.pluginsDir, 'hello'), { recursive: true })
    await waitFor(async () => {
      const res = await d.fetch('/api/hello', { headers: { cookie } })
      res.body?.cancel()
      return res.status === 200
    }, 15_000)
    wsUrl = `${own.replace(/^https:/, 'wss:')}/api/hello/echo`
  })
  afterAll(() => d?.stop())

  it("a cookie-authenticated upgrade needs exactly the daemon's own Origin", async () => {
    expect(await upgrade(wsUrl, { cookie, origin: own })).toBe('open')
    expect(await upgrade(wsUrl, { cookie })).toBe(403)
    expect(await upgrade(wsUrl, { cookie, origin: `http://127.0.0.1:${port}` })).toBe(403) // wrong scheme
    expect(await upgrade(wsUrl, { cookie, origin: `https://127.0.0.1:${Number(port) + 1}` })).toBe(403) // wrong port
    expect(await upgrade(wsUrl, { cookie, origin: `https://localhost:${port}` })).toBe(403) // another host name
    expect(await upgrade(wsUrl, { cookie, origin: 'https://evil.example' })).toBe(403)
    expect(await upgrade(wsUrl, { cookie, origin: 'null' })).toBe(403)
  })

  it('a bearer-token client may open a socket without Origin; a wrong Origin is still refused', async () => {
    expect(await upgrade(wsUrl, { authorization: `Bearer ${token}` })).toBe('open')
    expect(await upgrade(wsUrl, { authorization: `Bearer ${token}`, origin: own })).toBe('open')
    expect(await upgrade(wsUrl, { authorization: `Bearer ${token}`, origin: `http://127.0.0.1:${port}` })).toBe(403)
  })

  it('a cookie-authenticated unsafe request follows the same rule; GET does not need Origin', async () => {
    // A wrong current password: 400 once past the origin check, so 403 can only be the origin rule.
    const change = (headers: Record<string, string>) =>
      d
        .fetch('/api/me/password', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ currentPassword: 'not the password', newPassword: 'another good secret' }),
        })
        .then(async (r) => ({ status: r.status, error: ((await r.json()) as { error: string }).error }))
    expect(await change({ cookie, origin: own })).toEqual({ status: 400, error: 'HOSTD_USERS_WRONG_PASSWORD' })
    expect(await change({ cookie })).toEqual({ status: 403, error: 'HOSTD_AUTH_CROSS_ORIGIN' })
    expect(await change({ cookie, origin: `http://127.0.0.1:${port}` })).toEqual({
      status: 403,
      error: 'HOSTD_AUTH_CROSS_ORIGIN',
    })
    expect(await change({ cookie, origin: 'https://evil.example' })).toEqual({
      status: 403,
      error: 'HOSTD_AUTH_CROSS_ORIGIN',
    })
    expect(await change({ authorization: `Bearer ${token}` })).toEqual({
      status: 400,
      error: 'HOSTD_USERS_WRONG_PASSWORD',
    })
    const me = await d.fetch('/api/auth/me', { headers: { cookie } })
    expect(me.status).toBe(200)
    await me.arrayBuffer()
  })
})
