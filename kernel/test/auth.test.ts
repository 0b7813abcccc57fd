import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import argon2 from 'argon2'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

const PASSWORD = 'correct horse battery'
const json = (body: unknown) => ({ headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) })

describe('setup and sign-in', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({
      env: { HOSTD_LOGIN_MAX_FAILURES_PER_USER: '3', HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS: '50' },
    })
  })
  afterAll(() => t.close())

  it('creates the first admin exactly once under concurrent requests', async () => {
    expect((await t.inject({ url: '/api/setup' })).json()).toEqual({ needsSetup: true })
    const attempts = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        t.inject({ method: 'POST', url: '/api/setup', ...json({ username: `admin${i}`, password: PASSWORD }) }),
      ),
    )
    const codes = attempts.map((r) => r.statusCode).sort()
    expect(codes).toEqual([201, 409, 409, 409, 409, 409])
    const created = attempts.find((r) => r.statusCode === 201)!.json()
    expect(created).toMatchObject({ role: 'admin', disabled: false, twoFactor: false })
    expect(Object.keys(created).sort()).toEqual(['disabled', 'id', 'role', 'twoFactor', 'username'])
    expect(attempts.find((r) => r.statusCode === 409)!.json().error).toBe('HOSTD_SETUP_ALREADY_DONE')
    expect((await t.inject({ url: '/api/setup' })).json()).toEqual({ needsSetup: false })
    expect(await t.kernel.services.users.list()).toHaveLength(1)
    // Later calls change nothing either.
    const again = await t.inject({
      method: 'POST',
      url: '/api/setup',
      ...json({ username: 'late', password: PASSWORD }),
    })
    expect(again.statusCode).toBe(409)
    expect(await t.kernel.services.users.list()).toHaveLength(1)
  })

  it('signs in with a strict session cookie; the token is in the body only with X-Svc-Client', async () => {
    const admin = (await t.kernel.services.users.list())[0]!
    const plain = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...json({ username: admin.username.toUpperCase(), password: PASSWORD }),
    })
    expect(plain.statusCode).toBe(200)
    expect(plain.json()).toEqual(admin)
    const cookie = String(plain.headers['set-cookie'])
    expect(cookie).toMatch(/^svc_session=[A-Za-z0-9_-]{43};/)
    for (const attr of ['HttpOnly', 'SameSite=Strict', 'Path=/']) expect(cookie).toContain(attr)
    expect(cookie).not.toContain('Secure') // this harness speaks plain HTTP; over TLS the flag is set (e2e suite)

    const withHeader = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/json', 'x-svc-client': 'cli' },
      payload: JSON.stringify({ username: admin.username, password: PASSWORD }),
    })
    const token = withHeader.json().token as string
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)

    const sessionCookie = cookie.split(';')[0]!
    expect((await t.inject({ url: '/api/auth/me', headers: { cookie: sessionCookie } })).json()).toEqual(admin)
    expect((await t.inject({ url: '/api/auth/me', as: { token } })).json()).toEqual(admin)

    // Logout ends the session on the server: the same token is refused afterwards.
    expect((await t.inject({ method: 'POST', url: '/api/auth/logout', as: { token } })).statusCode).toBe(204)
    expect((await t.inject({ url: '/api/auth/me', as: { token } })).statusCode).toBe(401)
    expect((await t.inject({ url: '/api/auth/me', headers: { cookie: sessionCookie } })).statusCode).toBe(200)
  })

  it('stores sessions hashed, never the token', async () => {
    const { token } = await t.login('viewer')
    const rows = t.kernel.db.native.prepare('SELECT token_hash FROM sessions').all() as { token_hash: string }[]
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.some((r) => r.token_hash === token)).toBe(false)
    const dump = JSON.stringify(t.kernel.db.native.prepare('SELECT * FROM sessions').all())
    expect(dump).not.toContain(token)
  })

  it('answers unknown user and wrong password the same, after the same argon2 work', async () => {
    const { username } = await t.login('viewer', 'timing-user')
    const verify = vi.spyOn(argon2, 'verify')
    const attempt = async (user: string) => {
      verify.mockClear()
      const res = await t.inject({
        method: 'POST',
        url: '/api/auth/login',
        ...json({ username: user, password: 'wrong password here' }),
      })
      return {
        res,
        verifications: verify.mock.calls.length,
        hashedWith: String(verify.mock.calls[0]?.[0]).split('$').slice(1, 4).join('$'),
      }
    }
    const unknown = await attempt('nobody-at-all')
    const wrong = await attempt(username)
    verify.mockRestore()
    expect(unknown.res.statusCode).toBe(401)
    expect(unknown.res.json()).toEqual(wrong.res.json())
    // One verification each, against hashes of the same parameters: the same work, so the same time.
    expect(unknown.verifications).toBe(1)
    expect(wrong.verifications).toBe(1)
    expect(unknown.hashedWith).toBe('argon2id$v=19$m=19456,p=1,t=2')
    expect(wrong.hashedWith).toBe(unknown.hashedWith)
  })

  it('throttles failed sign-ins per user with 429 and Retry-After, ignoring X-Forwarded-For', async () => {
    await t.login('viewer', 'victim')
    for (let i = 0; i < 3; i++) {
      const res = await t.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${i}` },
        payload: JSON.stringify({ username: 'victim', password: 'not the password' }),
      })
      expect(res.statusCode).toBe(401)
    }
    const locked = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.7' },
      payload: JSON.stringify({ username: 'VICTIM', password: 'not the password' }),
    })
    expect(locked.statusCode).toBe(429)
    expect(locked.json().error).toBe('HOSTD_AUTH_THROTTLED')
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0)
    const audit = await t.kernel.services.audit.list('all', 5, 0)
    expect(audit.items[0]).toMatchObject({
      action: 'auth.login',
      target: 'VICTIM',
      result: 'failure',
      ip: '127.0.0.1',
      detail: { reason: 'throttled' },
    })
  })

  it('applies a role change or a disable to live sessions at once', async () => {
    const { token, userId } = await t.login('admin', 'second-admin')
    expect((await t.inject({ url: '/api/users', as: { token } })).statusCode).toBe(200)
    await t.kernel.services.users.setRole(userId, 'viewer')
    expect((await t.inject({ url: '/api/users', as: { token } })).statusCode).toBe(403)
    expect((await t.inject({ url: '/api/auth/me', as: { token } })).json().role).toBe('viewer')
    await t.kernel.services.users.setDisabled(userId, true)
    expect((await t.inject({ url: '/api/auth/me', as: { token } })).statusCode).toBe(401)
  })

  it('shows a change made in the store on the very next request, also for a token it has seen before', async () => {
    const { token, userId } = await t.login('operator', 'raw-changes')
    const me = () => t.inject({ url: '/api/auth/me', as: { token } })
    for (let i = 0; i < 3; i++) expect((await me()).json().role).toBe('operator')
    // Straight into the store, past every service: nothing in memory may keep the old answer.
    const sql = t.kernel.db.native
    sql.prepare('UPDATE users SET role = ? WHERE id = ?').run('viewer', userId)
    expect((await me()).json().role).toBe('viewer')
    sql.prepare('UPDATE users SET disabled = 1 WHERE id = ?').run(userId)
    expect((await me()).statusCode).toBe(401)
    sql.prepare('UPDATE users SET disabled = 0 WHERE id = ?').run(userId)
    expect((await me()).statusCode).toBe(200)
    sql.prepare('DELETE FROM sessions WHERE user_id = ?').run(userId)
    expect((await me()).statusCode).toBe(401)
  })

  it('refuses a disabled account with the same answer as a wrong password', async () => {
    const { userId, username } = await t.login('viewer', 'soon-disabled')
    await t.kernel.services.users.resetPassword(userId, PASSWORD)
    await t.kernel.services.users.setDisabled(userId, true)
    const res = await t.inject({ method: 'POST', url: '/api/auth/login', ...json({ username, password: PASSWORD }) })
    expect(res.statusCode).toBe(401)
    expect(res.json().error).toBe('HOSTD_AUTH_BAD_CREDENTIALS')
  })

  it('refuses cookie-authenticated changes from another origin', async () => {
    const admin = (await t.kernel.services.users.list())[0]!
    const login = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...json({ username: admin.username, password: PASSWORD }),
    })
    const cookie = String(login.headers['set-cookie']).split(';')[0]!
    const res = await t.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie, origin: 'https://evil.example', host: 'localhost:4443' },
    })
    expect(res.statusCode).toBe(403)
    expect(res.json().error).toBe('HOSTD_AUTH_CROSS_ORIGIN')
    // This harness speaks plain HTTP, so its own origin is http://; over TLS it is https:// (test/origin.test.ts).
    const same = await t.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie, origin: 'http://localhost:4443', host: 'localhost:4443' },
    })
    expect(same.statusCode).toBe(204)
  })
})

describe('session lifetimes', () => {
  it('ends a session after the idle lifetime', async () => {
    const t = await startTestKernel({ env: { HOSTD_SESSION_IDLE_SECONDS: '60' } })
    try {
      const { token } = await t.login('viewer')
      expect((await t.inject({ url: '/api/auth/me', as: { token } })).statusCode).toBe(200)
      // Age the session in the store instead of waiting a minute.
      t.kernel.db.native.prepare('UPDATE sessions SET last_seen_at = last_seen_at - 61000').run()
      expect((await t.inject({ url: '/api/auth/me', as: { token } })).statusCode).toBe(401)
    } finally {
      await t.close()
    }
  })

  it('ends a session after the absolute lifetime even when used', async () => {
    const t = await startTestKernel({ env: { HOSTD_SESSION_MAX_SECONDS: '120' } })
    try {
      const { token } = await t.login('viewer')
      t.kernel.db.native.prepare('UPDATE sessions SET created_at = created_at - 121000').run()
      expect((await t.inject({ url: '/api/auth/me', as: { token } })).statusCode).toBe(401)
    } finally {
      await t.close()
    }
  })
})
