/**
 * Sockets and streams end with their session (issue 12, item 1): over real HTTP and WebSocket connections to a
 * listening kernel, every way a session can stop counting (sign-out, expiry, disable, removal, a lower role, through
 * the API and through raw SQL behind the kernel's back) closes the session's open WebSockets (4401/4403), its
 * server-sent event stream (the metrics plugin's, which ends on `lifetime`) and a stream that ignores every signal,
 * and aborts the socket handler's `ctx.signal` and the stream's `lifetime`. Other sessions stay open.
 * No timing is asserted: each wait is bounded only so a failure is reported instead of hanging.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import type { Role } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/kernel/testing'
import { createMetricsPlugin } from '../plugins/metrics/src/index.ts'
import { closeClients, openSocket as open, openStream as stream, probePlugin, within } from './support/live-probe.ts'

const PASSWORD = 'live connections password'

/** Tags of the connections whose handler signal (socket `ctx.signal`, stream `lifetime`) fired. */
const aborted = new Set<string>()
const probe = probePlugin('liveprobe', aborted)

/** The sessions table's key for a token (its SHA-256). */
const tokenHash = (token: string) => createHash('sha256').update(token).digest('base64url')

const openSocket = (t: TestKernel, path: string, token: string) => open(t.url!, path, token)
const openStream = (t: TestKernel, path: string, token: string) => stream(t.url!, path, token)

/** Everything one session can hold open: a viewer socket, an operator socket, the metrics SSE, the drip stream. */
async function openAll(t: TestKernel, token: string, tag: string) {
  return {
    viewer: await openSocket(t, `/api/liveprobe/viewer?tag=${tag}-viewer`, token),
    operator: await openSocket(t, `/api/liveprobe/operator?tag=${tag}-operator`, token),
    sse: await openStream(t, '/api/metrics/stream', token),
    drip: await openStream(t, `/api/liveprobe/drip?tag=${tag}-drip`, token),
  }
}

type Opened = Awaited<ReturnType<typeof openAll>>

/** All four end; the sockets with `code`; every handler's signal fired. */
async function expectAllEnded(opened: Opened, tag: string, code: number): Promise<void> {
  const [viewer, operator] = await Promise.all([
    within(opened.viewer.closed, `${tag}: viewer socket closed`),
    within(opened.operator.closed, `${tag}: operator socket closed`),
    within(opened.sse.ended, `${tag}: metrics stream ended`),
    within(opened.drip.ended, `${tag}: drip stream cut`),
  ])
  expect(viewer.code).toBe(code)
  expect(operator.code).toBe(code)
  expect(viewer.reason).not.toBe('')
  for (const kind of ['viewer', 'operator', 'drip'])
    expect(aborted, `${tag}-${kind} signal`).toContain(`${tag}-${kind}`)
}

describe('open sockets and streams end with their session', () => {
  let t: TestKernel
  let admin: string
  let n = 0

  beforeAll(async () => {
    t = await startTestKernel({ plugins: [createMetricsPlugin(), probe], overNetwork: true })
    admin = (await t.login('admin')).token
  })
  afterAll(async () => {
    closeClients()
    await t.close()
  })

  const sql = (text: string, ...params: unknown[]) => t.kernel.db.native.prepare(text).run(...params)

  /** A fresh user of `role` with a session signed in over HTTP. */
  async function user(role: Role): Promise<{ id: string; username: string; token: string }> {
    const username = `live${++n}`
    const made = await t.inject({
      method: 'POST',
      url: '/api/users',
      as: { token: admin },
      payload: { username, password: PASSWORD, role },
    })
    expect(made.statusCode).toBe(201)
    return { id: made.json().id, username, token: await signIn(username) }
  }

  async function signIn(username: string): Promise<string> {
    const res = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'x-svc-client': 'test' },
      payload: { username, password: PASSWORD },
    })
    expect(res.statusCode).toBe(200)
    return res.json().token
  }

  it("sign-out closes that session's sockets and streams; another session of the same user stays open", async () => {
    const u = await user('operator')
    const other = await signIn(u.username)
    const first = await openAll(t, u.token, 'logout')
    const kept = await openAll(t, other, 'kept')
    expect((await t.inject({ method: 'POST', url: '/api/auth/logout', as: { token: u.token } })).statusCode).toBe(204)
    await expectAllEnded(first, 'logout', 4401)
    // A full re-check after the close: the other session's connections are untouched and still work.
    t.kernel.services.sessions.connections.recheck()
    expect(await kept.viewer.echo('still here')).toBe('still here')
    expect(await kept.operator.echo('me too')).toBe('me too')
    expect(kept.sse.isOpen() && kept.drip.isOpen()).toBe(true)
    expect([...aborted].filter((tag) => tag.startsWith('kept'))).toEqual([])
    expect((await t.inject({ url: '/api/auth/me', as: { token: other } })).statusCode).toBe(200)
  })

  it('an expired session (idle or past its absolute lifetime) closes them', async () => {
    const idle = await user('operator')
    const old = await signIn(idle.username)
    const idleOpened = await openAll(t, idle.token, 'idle')
    const oldOpened = await openAll(t, old, 'old')
    // Time passing, as the store sees it: no request for longer than the idle lifetime / signed in too long ago.
    sql('UPDATE sessions SET last_seen_at = 0 WHERE token_hash = ?', tokenHash(idle.token))
    sql('UPDATE sessions SET created_at = 0 WHERE token_hash = ?', tokenHash(old))
    await expectAllEnded(idleOpened, 'idle', 4401)
    await expectAllEnded(oldOpened, 'old', 4401)
  })

  it('disabling the user through the API closes them', async () => {
    const u = await user('operator')
    const opened = await openAll(t, u.token, 'disable')
    const res = await t.inject({
      method: 'POST',
      url: `/api/users/${u.id}/disabled`,
      as: { token: admin },
      payload: { disabled: true },
    })
    expect(res.statusCode).toBe(204)
    await expectAllEnded(opened, 'disable', 4401)
  })

  it('removing the user through the API closes them', async () => {
    const u = await user('operator')
    const opened = await openAll(t, u.token, 'remove')
    expect(
      (await t.inject({ method: 'POST', url: `/api/users/${u.id}/remove`, as: { token: admin }, payload: {} }))
        .statusCode,
    ).toBe(204)
    await expectAllEnded(opened, 'remove', 4401)
  })

  it('a lower role through the API closes what needs the old role (4403) and keeps the rest', async () => {
    const u = await user('operator')
    const opened = await openAll(t, u.token, 'demote')
    expect(
      (
        await t.inject({
          method: 'POST',
          url: `/api/users/${u.id}/role`,
          as: { token: admin },
          payload: { role: 'viewer' },
        })
      ).statusCode,
    ).toBe(204)
    const closed = await within(opened.operator.closed, 'operator socket closed')
    expect(closed.code).toBe(4403)
    await within(opened.drip.ended, 'operator stream cut')
    expect(aborted).toContain('demote-operator')
    expect(aborted).toContain('demote-drip')
    t.kernel.services.sessions.connections.recheck()
    expect(await opened.viewer.echo('viewer still')).toBe('viewer still')
    expect(opened.sse.isOpen()).toBe(true)
    expect(aborted).not.toContain('demote-viewer')
  })

  it("changes made with raw SQL behind the kernel's back close them too: disable, remove, demote", async () => {
    const disabled = await user('operator')
    const removed = await user('operator')
    const demoted = await user('operator')
    const a = await openAll(t, disabled.token, 'sqldisable')
    const b = await openAll(t, removed.token, 'sqlremove')
    const c = await openAll(t, demoted.token, 'sqldemote')
    sql('UPDATE users SET disabled = 1 WHERE id = ?', disabled.id)
    sql('DELETE FROM users WHERE id = ?', removed.id)
    sql("UPDATE users SET role = 'viewer' WHERE id = ?", demoted.id)
    await expectAllEnded(a, 'sqldisable', 4401)
    await expectAllEnded(b, 'sqlremove', 4401)
    expect((await within(c.operator.closed, 'demoted operator socket')).code).toBe(4403)
    await within(c.drip.ended, 'demoted drip stream')
    t.kernel.services.sessions.connections.recheck()
    expect(c.viewer.isOpen()).toBe(true)
    // Promoted back with raw SQL: nothing is reopened, and the viewer socket was never touched.
    expect(await c.viewer.echo('ok')).toBe('ok')
  })

  it("changing your own password closes your other sessions' sockets and keeps this one's", async () => {
    const u = await user('viewer')
    const other = await signIn(u.username)
    const mine = await openSocket(t, '/api/liveprobe/viewer?tag=pw-mine', u.token)
    const theirs = await openSocket(t, '/api/liveprobe/viewer?tag=pw-other', other)
    const res = await t.inject({
      method: 'POST',
      url: '/api/me/password',
      as: { token: u.token },
      payload: { currentPassword: PASSWORD, newPassword: 'a brand new secret' },
    })
    expect(res.statusCode).toBe(204)
    expect((await within(theirs.closed, 'other session socket closed')).code).toBe(4401)
    expect(aborted).toContain('pw-other')
    t.kernel.services.sessions.connections.recheck()
    expect(await mine.echo('mine')).toBe('mine')
    expect(aborted).not.toContain('pw-mine')
  })

  it('an admin removing a session by its hash (the kernel API) closes its connections', async () => {
    const u = await user('viewer')
    const socket = await openSocket(t, '/api/liveprobe/viewer?tag=byhash', u.token)
    t.kernel.services.sessions.revokeHash(tokenHash(u.token))
    expect((await within(socket.closed, 'socket closed')).code).toBe(4401)
    expect(aborted).toContain('byhash')
  })
})
