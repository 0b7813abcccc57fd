/**
 * Sessions a user can see and end (issue 15), over real HTTP and WebSocket connections: the list (created, last
 * seen, client address, user agent, the current one marked; never a token), ending one (its socket closes 4401 and
 * its requests get 401), ending all the others, and an admin ending all of a user's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/kernel/testing'
import { closeClients, openSocket, probePlugin, within } from './support/live-probe.ts'

const PASSWORD = 'session list password'
const aborted = new Set<string>()

describe('sessions you can see and end', () => {
  let t: TestKernel
  let admin: string
  let n = 0

  beforeAll(async () => {
    t = await startTestKernel({ plugins: [probePlugin('sessprobe', aborted)], overNetwork: true })
    admin = (await t.login('admin', 'session-admin')).token
  })
  afterAll(async () => {
    closeClients()
    await t.close()
  })

  async function user() {
    const username = `sess${++n}`
    const made = await t.kernel.services.users.create(username, PASSWORD, 'viewer')
    return { id: made.id, username }
  }
  /** Signs in over HTTP as a browser or script would, with its own user agent. */
  async function signIn(username: string, userAgent: string): Promise<string> {
    const res = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'x-svc-client': 'test', 'user-agent': userAgent },
      payload: { username, password: PASSWORD },
    })
    expect(res.statusCode).toBe(200)
    return res.json().token
  }
  const list = async (token: string) =>
    (await t.inject({ url: '/api/me/sessions', as: { token } })).json() as {
      id: string
      current: boolean
      userAgent: string
    }[]
  const me = async (token: string) => (await t.inject({ url: '/api/auth/me', as: { token } })).statusCode

  it('lists your live sessions with where and what from, the current one marked, never a token', async () => {
    const u = await user()
    const laptop = await signIn(u.username, 'Mozilla/5.0 (X11; Linux x86_64) Laptop')
    const phone = await signIn(u.username, 'Mozilla/5.0 (iPhone) Phone')
    const res = await t.inject({ url: '/api/me/sessions', as: { token: laptop } })
    const sessions = res.json()
    expect(sessions).toHaveLength(2)
    for (const s of sessions) {
      expect(Object.keys(s).sort()).toEqual(['createdAt', 'current', 'id', 'ip', 'lastSeenAt', 'userAgent'])
      expect(s.id).toMatch(/^[0-9a-f]{32}$/)
      expect(s.ip).toBe('127.0.0.1')
      expect(Date.parse(s.createdAt)).toBeLessThanOrEqual(Date.parse(s.lastSeenAt))
    }
    expect(sessions.find((s: { current: boolean }) => s.current).userAgent).toContain('Laptop')
    expect(sessions.find((s: { current: boolean }) => !s.current).userAgent).toContain('Phone')
    for (const token of [laptop, phone]) expect(res.body).not.toContain(token)
    // An expired session is not listed.
    t.kernel.db.native
      .prepare('UPDATE sessions SET last_seen_at = 0 WHERE id = ?')
      .run(sessions.find((s: { current: boolean }) => !s.current).id)
    expect(await list(laptop)).toHaveLength(1)
  })

  it('ending one of your sessions signs it out and closes its socket (4401); the others stay', async () => {
    const u = await user()
    const mine = await signIn(u.username, 'this browser')
    const other = await signIn(u.username, 'the other browser')
    const otherSocket = await openSocket(t.url!, '/api/sessprobe/viewer?tag=ended-one', other)
    const mySocket = await openSocket(t.url!, '/api/sessprobe/viewer?tag=kept-one', mine)
    const target = (await list(mine)).find((s) => !s.current)!
    expect(target.userAgent).toBe('the other browser')
    const res = await t.inject({ method: 'POST', url: `/api/me/sessions/${target.id}/end`, as: { token: mine } })
    expect(res.statusCode).toBe(204)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect((await within(otherSocket.closed, 'socket of the ended session')).code).toBe(4401)
    expect(aborted).toContain('ended-one')
    expect(await me(other)).toBe(401)
    expect(await me(mine)).toBe(200)
    t.kernel.services.sessions.connections.recheck()
    expect(await mySocket.echo('still here')).toBe('still here')
    // Ids are per user: another user cannot end it, and an ended one is gone.
    const stranger = await signIn((await user()).username, 'stranger')
    const mineId = (await list(mine)).find((s) => s.current)!.id
    expect(
      (await t.inject({ method: 'POST', url: `/api/me/sessions/${mineId}/end`, as: { token: stranger } })).json().error,
    ).toBe('HOSTD_SESSIONS_NOT_FOUND')
    expect(
      (await t.inject({ method: 'POST', url: `/api/me/sessions/${target.id}/end`, as: { token: mine } })).statusCode,
    ).toBe(404)
    const audit = (await t.kernel.services.audit.list('all', 20, 0)).items
    expect(audit.find((e) => e.action === 'session.end' && e.target === u.username)?.detail).toEqual({
      session: target.id,
      current: false,
    })
  })

  it('ending your current session clears the cookie; "end all others" keeps only this one', async () => {
    const u = await user()
    const keep = await signIn(u.username, 'keep')
    const a = await signIn(u.username, 'a')
    const b = await signIn(u.username, 'b')
    const socketA = await openSocket(t.url!, '/api/sessprobe/viewer?tag=others-a', a)
    expect(
      (await t.inject({ method: 'POST', url: '/api/me/sessions/end-others', as: { token: keep } })).statusCode,
    ).toBe(204)
    expect((await within(socketA.closed, 'socket of another session')).code).toBe(4401)
    expect([await me(keep), await me(a), await me(b)]).toEqual([200, 401, 401])
    const current = (await list(keep))[0]!
    expect(current.current).toBe(true)
    const res = await t.inject({ method: 'POST', url: `/api/me/sessions/${current.id}/end`, as: { token: keep } })
    expect(res.statusCode).toBe(204)
    expect(String(res.headers['set-cookie'])).toMatch(/^svc_session=; .*Max-Age=0/)
    expect(await me(keep)).toBe(401)
  })

  it("an admin sees a user's sessions and ends them all, closing their sockets", async () => {
    const u = await user()
    const one = await signIn(u.username, 'one')
    const two = await signIn(u.username, 'two')
    const s1 = await openSocket(t.url!, '/api/sessprobe/viewer?tag=admin-1', one)
    const s2 = await openSocket(t.url!, '/api/sessprobe/viewer?tag=admin-2', two)
    const listed = (await t.inject({ url: `/api/users/${u.id}/sessions`, as: { token: admin } })).json()
    expect(listed.map((s: { userAgent: string }) => s.userAgent).sort()).toEqual(['one', 'two'])
    expect(listed.every((s: { current: boolean }) => !s.current)).toBe(true)
    expect((await t.inject({ url: `/api/users/${u.id}/sessions`, as: { token: one } })).statusCode).toBe(403)
    expect(
      (await t.inject({ method: 'POST', url: `/api/users/${u.id}/sessions/end`, as: { token: admin } })).statusCode,
    ).toBe(204)
    expect((await within(s1.closed, 'first socket')).code).toBe(4401)
    expect((await within(s2.closed, 'second socket')).code).toBe(4401)
    expect([await me(one), await me(two)]).toEqual([401, 401])
    expect((await t.inject({ url: `/api/users/${u.id}/sessions`, as: { token: admin } })).json()).toEqual([])
    const audit = (await t.kernel.services.audit.list('all', 20, 0)).items
    expect(audit.find((e) => e.action === 'session.end-all')).toMatchObject({
      username: 'session-admin',
      target: u.username,
    })
  })
})
