/**
 * Accounts hardening (issue 27), over real HTTP connections to a listening kernel: each of the failures an attack
 * run found is a case here. Enrolling or turning off two-factor ends the user's other sessions and the API tokens
 * they minted; a password change, an admin reset and a disable end the user's API tokens too (enabling brings none
 * back); user management needs a person's recent session, so an admin token cannot make a new admin; a sign-in
 * challenge dies with its password; unauthenticated failures are throttled at every step and counted into one
 * audit record, which has a retention; private answers are never cached; changes to account security ask for the
 * password again after a few minutes; the database is created 0600. (Terminal input before the shell is ready:
 * plugins/terminal/test/terminal.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/kernel/testing'
import { AuditEntity } from '../kernel/src/db/entities.ts'
import { enrollTwoFactor, totp } from './support/two-factor.ts'

const PASSWORD = 'hardening password'

describe('accounts hardening', () => {
  let t: TestKernel
  let admin: string
  let n = 0

  beforeAll(async () => {
    // A looser per-user limit than the default, so one test's wrong guesses do not throttle the next test's users;
    // the per-address limit is the default (20).
    t = await startTestKernel({ overNetwork: true, env: { HOSTD_LOGIN_MAX_FAILURES_PER_USER: '50' } })
    admin = (await t.login('admin', 'hard-admin')).token
  })
  afterAll(() => t.close())

  async function user(role: 'viewer' | 'operator' | 'admin' = 'viewer') {
    const username = `hard${++n}`
    const made = await t.kernel.services.users.create(username, PASSWORD, role)
    return { id: made.id, username }
  }
  async function signIn(username: string, password = PASSWORD): Promise<string> {
    const res = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'x-svc-client': 'test' },
      payload: { username, password },
    })
    expect(res.statusCode, res.body).toBe(200)
    return res.json().token
  }
  const call = (method: 'GET' | 'POST' | 'PUT', url: string, bearer: string, payload?: object) =>
    t.inject({ method, url, as: { token: bearer }, ...(payload === undefined ? {} : { payload }) })
  const answer = async (res: Promise<{ statusCode: number; body: string }>) => {
    const r = await res
    return r.statusCode < 300 ? r.statusCode : `${r.statusCode} ${JSON.parse(r.body).error}`
  }
  const me = (bearer: string) => answer(call('GET', '/api/auth/me', bearer))
  async function mint(session: string, name = `script ${++n}`): Promise<string> {
    const res = await call('POST', '/api/me/tokens', session, { name, role: 'viewer' })
    expect(res.statusCode, res.body).toBe(201)
    return res.json().secret
  }
  const audit = async () => (await t.kernel.services.audit.list('all', 1000, 0)).items

  it('enrolling two-factor ends your other sessions and the tokens they minted; this session and its tokens stay', async () => {
    const u = await user()
    const thief = await signIn(u.username)
    const stolenToken = await mint(thief)
    const mine = await signIn(u.username)
    const myToken = await mint(mine)
    const started = await call('POST', '/api/me/two-factor/start', mine, { password: PASSWORD })
    expect(started.statusCode).toBe(200)
    expect(
      (await call('POST', '/api/me/two-factor/confirm', mine, { code: totp(started.json().secret) })).statusCode,
    ).toBe(200)
    expect(await me(thief)).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(await me(stolenToken)).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(await me(mine)).toBe(200)
    expect(await me(myToken)).toBe(200)
    expect(
      (await audit()).find((e) => e.action === 'user.two-factor.enable' && e.target === u.username)?.detail,
    ).toEqual({ ended: { sessions: 1, tokens: 1 } })
  })

  it('turning two-factor off ends the other sessions and their tokens too', async () => {
    const u = await user()
    const { secret, step } = await enrollTwoFactor(t, u.id)
    const other = t.kernel.services.sessions.create(u.id, '127.0.0.1')
    const otherToken = await mint(other)
    const mine = t.kernel.services.sessions.create(u.id, '127.0.0.1')
    expect(
      await answer(
        call('POST', '/api/me/two-factor/disable', mine, { password: PASSWORD, code: totp(secret, step + 1) }),
      ),
    ).toBe(204)
    expect(await me(other)).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(await me(otherToken)).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(await me(mine)).toBe(200)
  })

  it("a password change, an admin reset and a disable end the user's API tokens; enabling again brings none back", async () => {
    // Your own change: the tokens another session minted end; this session's stay.
    const u = await user()
    const stolen = await mint(await signIn(u.username))
    const mine = await signIn(u.username)
    const myToken = await mint(mine)
    expect(
      await answer(
        call('POST', '/api/me/password', mine, { currentPassword: PASSWORD, newPassword: 'a brand new password' }),
      ),
    ).toBe(204)
    expect(await me(stolen)).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(await me(myToken)).toBe(200)

    // An admin's reset: every session and token of the user.
    const v = await user()
    const vToken = await mint(await signIn(v.username))
    expect(await answer(call('POST', `/api/users/${v.id}/password`, admin, { password: 'reset by the admin' }))).toBe(
      204,
    )
    expect(await me(vToken)).toBe('401 HOSTD_AUTH_REQUIRED')

    // A disable, then an enable: the token stays gone.
    const w = await user()
    const wToken = await mint(await signIn(w.username))
    expect(await answer(call('POST', `/api/users/${w.id}/disabled`, admin, { disabled: true }))).toBe(204)
    expect(await answer(call('POST', `/api/users/${w.id}/disabled`, admin, { disabled: false }))).toBe(204)
    expect(await me(wToken)).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(
      (t.kernel.db.native.prepare('SELECT count(*) AS n FROM api_tokens WHERE user_id = ?').get(w.id) as { n: number })
        .n,
    ).toBe(0)
  })

  it('an admin API token cannot make a person: user management needs a session', async () => {
    const script = await mint(admin, 'admin script')
    // Minted as viewer above; an admin's own admin token:
    const res = await call('POST', '/api/me/tokens', admin, { name: 'admin token', role: 'admin' })
    const adminToken = res.json().secret as string
    const v = await user()
    expect(
      await answer(
        call('POST', '/api/users', adminToken, { username: 'made-by-token', password: PASSWORD, role: 'admin' }),
      ),
    ).toBe('403 HOSTD_AUTH_SESSION_REQUIRED')
    expect(await answer(call('POST', `/api/users/${v.id}/role`, adminToken, { role: 'admin' }))).toBe(
      '403 HOSTD_AUTH_SESSION_REQUIRED',
    )
    expect(
      await answer(call('POST', `/api/users/${v.id}/password`, adminToken, { password: 'taken over by a token' })),
    ).toBe('403 HOSTD_AUTH_SESSION_REQUIRED')
    expect(await answer(call('POST', `/api/users/${v.id}/disabled`, adminToken, { disabled: false }))).toBe(
      '403 HOSTD_AUTH_SESSION_REQUIRED',
    )
    expect(await t.kernel.services.users.findByUsername('made-by-token')).toBeNull()
    // Reading is still open to it, and so is every other admin route (the audit log here).
    expect(await answer(call('GET', '/api/users', adminToken))).toBe(200)
    expect(await answer(call('GET', '/api/audit?limit=1', adminToken))).toBe(200)
    expect(await me(script)).toBe(200)
  })

  it('a sign-in challenge dies with the password it was issued for', async () => {
    const u = await user()
    const { secret, step } = await enrollTwoFactor(t, u.id)
    const login = await t.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: u.username, password: PASSWORD },
    })
    const { challenge } = login.json()
    expect(challenge).toBeTruthy()
    expect(await answer(call('POST', `/api/users/${u.id}/password`, admin, { password: 'the admin reset this' }))).toBe(
      204,
    )
    const verify = await t.inject({
      method: 'POST',
      url: '/api/auth/login/verify',
      payload: { challenge, code: totp(secret, step + 1) },
    })
    expect(await answer(Promise.resolve(verify))).toBe('401 HOSTD_AUTH_CHALLENGE_EXPIRED')
    expect(
      (await audit()).find((e) => e.action === 'auth.login' && e.target === u.username && e.result === 'failure')
        ?.detail,
    ).toMatchObject({ reason: 'password changed' })
  })

  it('changes to account security ask for the password again after a few minutes ("sudo mode")', async () => {
    const u = await user('admin')
    const session = await signIn(u.username)
    expect(await answer(call('POST', '/api/me/tokens', session, { name: 'fresh', role: 'viewer' }))).toBe(201)
    // The sign-in was 10 minutes ago.
    t.kernel.db.native.prepare('UPDATE sessions SET auth_at = ? WHERE user_id = ?').run(Date.now() - 600_000, u.id)
    const needs = '403 HOSTD_AUTH_REAUTH_REQUIRED'
    expect(await answer(call('POST', '/api/me/tokens', session, { name: 'stale', role: 'viewer' }))).toBe(needs)
    expect(await answer(call('POST', '/api/me/sessions/end-others', session))).toBe(needs)
    expect(
      await answer(call('POST', '/api/users', session, { username: 'stale-made', password: PASSWORD, role: 'admin' })),
    ).toBe(needs)
    expect(await answer(call('PUT', '/api/auth/policy', session, { requireTwoFactor: 'nobody' }))).toBe(needs)
    // Reading does not ask.
    expect(await answer(call('GET', '/api/me/tokens', session))).toBe(200)
    // A wrong password counts like a failed sign-in; the right one opens the window again.
    expect(await answer(call('POST', '/api/auth/reauth', session, { password: 'not my password' }))).toBe(
      '400 HOSTD_USERS_WRONG_PASSWORD',
    )
    expect(await answer(call('POST', '/api/auth/reauth', session, { password: PASSWORD }))).toBe(204)
    expect(await answer(call('POST', '/api/me/tokens', session, { name: 'stale', role: 'viewer' }))).toBe(201)
    const actions = (await audit()).filter((e) => e.target === u.username).map((e) => `${e.action} ${e.result}`)
    expect(actions).toEqual(expect.arrayContaining(['auth.reauth success', 'auth.reauth failure']))
  })

  it('throttles unknown sign-in challenges per address and counts every failure into one audit record', async () => {
    // A kernel of its own: this address's failures must start at zero, and the throttle it ends in stays with it.
    const fresh = await startTestKernel({ overNetwork: true })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 60; i++) {
        const res = await fresh.inject({
          method: 'POST',
          url: '/api/auth/login/verify',
          payload: { challenge: `no-such-challenge-${i}`, code: '123456' },
        })
        statuses.push(res.statusCode)
        if (res.statusCode === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThan(0)
      }
      // The per-address limit is 20 failures in the window (the default); everything after is 429.
      expect(statuses).toEqual([...Array(20).fill(401), ...Array(40).fill(429)])
      const rows = (await fresh.kernel.services.audit.list('all', 100, 0)).items
      expect(rows.map((e) => `${e.action} ${e.detail?.reason} ${e.detail?.count}`).sort()).toEqual([
        'auth.login challenge expired or used 20',
        'auth.login throttled 40',
      ])
      // A password sign-in from the same address is throttled now too, into the same record.
      expect(
        await answer(
          fresh.inject({
            method: 'POST',
            url: '/api/auth/login',
            payload: { username: 'anyone', password: 'whatever it is' },
          }),
        ),
      ).toBe('429 HOSTD_AUTH_THROTTLED')
      const throttled = (await fresh.kernel.services.audit.list('all', 100, 0)).items.find(
        (e) => e.detail?.reason === 'throttled',
      )
      expect(throttled?.detail).toMatchObject({ count: 41, targets: ['anyone'] })
    } finally {
      await fresh.close()
    }
  })

  it('keeps the audit log within its retention: by age and by count, the change itself recorded', async () => {
    const session = t.kernel.services.sessions.create(
      (await t.kernel.services.users.create('hard-admin-2', PASSWORD, 'admin')).id,
      '127.0.0.1',
    )
    expect((await call('GET', '/api/audit/retention', admin)).json()).toEqual({ maxAgeDays: 365, maxRows: 100_000 })
    const em = t.kernel.db.em()
    const old = new Date(Date.now() - 400 * 24 * 3600_000)
    const row = (time: Date, i: number) => ({
      time,
      userId: null,
      username: null,
      ip: null,
      action: 'test.filler',
      target: String(i),
      result: 'success',
      detail: null,
    })
    await em.insertMany(AuditEntity, [
      ...Array.from({ length: 5 }, (_, i) => row(old, i)),
      ...Array.from({ length: 1500 }, (_, i) => row(new Date(), i)),
    ])
    // Out of range: 400 and nothing changes.
    expect(await answer(call('PUT', '/api/audit/retention', session, { maxAgeDays: 0, maxRows: 1000 }))).toBe(
      '400 HOSTD_REQUEST_INVALID',
    )
    expect((await call('GET', '/api/audit/retention', admin)).json()).toEqual({ maxAgeDays: 365, maxRows: 100_000 })
    // The hourly pass removes what is older than a year.
    await t.kernel.services.audit.prune()
    expect(
      (await audit()).some((e) => e.action === 'test.filler' && Date.parse(e.time) < Date.now() - 365 * 24 * 3600_000),
    ).toBe(false)
    const res = await call('PUT', '/api/audit/retention', session, { maxAgeDays: 30, maxRows: 1000 })
    expect(res.json()).toEqual({ maxAgeDays: 30, maxRows: 1000 })
    const total = (await t.kernel.services.audit.list('all', 1, 0)).total
    expect(total).toBe(1001) // what the limit keeps, and the record of the change
    const change = (await audit())[0]!
    expect(change).toMatchObject({
      action: 'audit.retention',
      username: 'hard-admin-2',
      detail: { maxAgeDays: 30, maxRows: 1000, previous: { maxAgeDays: 365, maxRows: 100_000 } },
    })
    expect(change.detail?.removed).toBeGreaterThanOrEqual(500)
    // An API token cannot shorten the log.
    expect(
      await answer(
        call('PUT', '/api/audit/retention', await mint(admin, 'retention script'), { maxAgeDays: 1, maxRows: 1000 }),
      ),
    ).toBe('403 HOSTD_AUTH_SESSION_REQUIRED')
  })

  it('marks every /api answer no-store, whoever wrote it, and leaves the rest alone', async () => {
    const u = await user()
    const session = await signIn(u.username)
    const made = await call('POST', '/api/me/tokens', session, { name: 'cache check', role: 'viewer' })
    const answers = [
      made,
      await call('GET', '/api/auth/me', session),
      await call('GET', '/api/users', admin),
      await call('GET', '/api/me/sessions', session),
      await call('GET', '/api/me/tokens', session),
      await call('GET', '/api/audit', admin),
      await call('GET', '/api/me/two-factor', session),
      await call('GET', '/api/no-such-route', session),
      await t.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: { 'x-svc-client': 'test' },
        payload: { username: u.username, password: PASSWORD },
      }),
    ]
    for (const res of answers) expect(res.headers['cache-control'], res.body.slice(0, 80)).toBe('no-store')
    expect((await t.inject({ url: '/health' })).headers['cache-control']).toBeUndefined()
    // In-process too (the test harness's injected requests go through the same function).
    const local = await startTestKernel()
    try {
      expect((await local.inject({ url: '/api/auth/me', as: 'viewer' })).headers['cache-control']).toBe('no-store')
      expect((await local.inject({ url: '/api/setup' })).headers['cache-control']).toBe('no-store')
    } finally {
      await local.close()
    }
  })

  it('creates the database 0600 and keeps it so', async () => {
    const file = join(t.kernel.config.dataDir, 'hostd.sqlite')
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect((await stat(`${file}-wal`)).mode & 0o777).toBe(0o600)
    expect((await stat(join(t.kernel.config.dataDir, 'secret.key'))).mode & 0o777).toBe(0o600)
  })
})
