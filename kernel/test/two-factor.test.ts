/**
 * TOTP two-factor sign-in (issue 15): enrollment, the two-step sign-in, replay and wrong codes, recovery codes,
 * turning it off, the admin's reset and the admin's policy. Codes are computed in the test from the secret the
 * server handed out, with otplib (test/support/two-factor.ts). Nothing here depends on timing: where a code's time
 * step matters the test names the step.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Response } from 'light-my-request'
import { startTestKernel, type TestKernel } from '../src/testing.ts'
import { currentStep, enrollTwoFactor, totp } from '../../test/support/two-factor.ts'

const PASSWORD = 'correct horse battery'

describe('two-factor sign-in', () => {
  let t: TestKernel
  let admin: { token: string; userId: string }
  let n = 0

  beforeAll(async () => {
    t = await startTestKernel({
      env: { HOSTD_LOGIN_MAX_FAILURES_PER_USER: '4', HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS: '1000' },
    })
    admin = await t.login('admin', 'boss')
  })
  afterAll(() => t.close())

  /** A fresh user with PASSWORD and a session token. */
  async function user(role: 'viewer' | 'operator' | 'admin' = 'viewer') {
    const username = `tf${++n}`
    const made = await t.kernel.services.users.create(username, PASSWORD, role)
    return { id: made.id, username, token: t.kernel.services.sessions.create(made.id, '127.0.0.1') }
  }
  const post = (url: string, token: string | undefined, payload?: unknown, headers: Record<string, string> = {}) =>
    t.inject({
      method: 'POST',
      url,
      ...(token ? { as: { token } } : {}),
      headers: { 'content-type': 'application/json', ...headers },
      payload: payload === undefined ? undefined : JSON.stringify(payload),
    })
  const login = (username: string, password = PASSWORD) =>
    post('/api/auth/login', undefined, { username, password }, { 'x-svc-client': 'test' })
  const verify = (challenge: string, code: string) =>
    post('/api/auth/login/verify', undefined, { challenge, code }, { 'x-svc-client': 'test' })
  const error = (res: Response) => ({ status: res.statusCode, error: res.json().error })
  const actions = async () => (await t.kernel.services.audit.list('all', 200, 0)).items

  it('enrolls from a password, a QR code and a code; only then is twoFactor true, and the secret is never shown again', async () => {
    const u = await user()
    const status = async () => (await t.inject({ url: '/api/me/two-factor', as: { token: u.token } })).json()
    expect(await status()).toEqual({ enabled: false, recoveryCodesLeft: 0, required: false })
    expect(error(await post('/api/me/two-factor/start', u.token, { password: 'not my password' }))).toEqual({
      status: 400,
      error: 'HOSTD_USERS_WRONG_PASSWORD',
    })

    const started = await post('/api/me/two-factor/start', u.token, { password: PASSWORD })
    expect(started.statusCode).toBe(200)
    const { secret, uri, qrSvg } = started.json()
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const parsed = new URL(uri)
    expect(`${parsed.protocol}//${parsed.host}`).toBe('otpauth://totp')
    expect(decodeURIComponent(parsed.pathname)).toMatch(new RegExp(`^/hostd \\(.+\\):${u.username}$`))
    expect(parsed.searchParams.get('secret')).toBe(secret)
    expect(parsed.searchParams.get('issuer')).toMatch(/^hostd \(/)
    expect(qrSvg).toMatch(/^<svg [^>]*viewBox=/)
    expect((await t.inject({ url: '/api/auth/me', as: { token: u.token } })).json().twoFactor).toBe(false)

    // A wrong code is refused (and counts); a code of the secret turns it on and answers ten recovery codes.
    expect(
      error(
        await post('/api/me/two-factor/confirm', u.token, { code: '000000' === totp(secret) ? '111111' : '000000' }),
      ),
    ).toEqual({ status: 400, error: 'HOSTD_TWO_FACTOR_BAD_CODE' })
    const confirmed = await post('/api/me/two-factor/confirm', u.token, { code: totp(secret) })
    expect(confirmed.statusCode).toBe(200)
    const codes: string[] = confirmed.json().recoveryCodes
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    for (const code of codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$/)
    expect(await status()).toEqual({ enabled: true, recoveryCodesLeft: 10, required: false })
    expect((await t.inject({ url: '/api/auth/me', as: { token: u.token } })).json()).toMatchObject({ twoFactor: true })
    expect(
      (await t.inject({ url: '/api/users', as: { token: admin.token } }))
        .json()
        .find((x: { id: string }) => x.id === u.id).twoFactor,
    ).toBe(true)

    // Never again: starting over is refused, and the store holds the secret sealed and the codes as keyed hashes.
    expect(error(await post('/api/me/two-factor/start', u.token, { password: PASSWORD }))).toEqual({
      status: 409,
      error: 'HOSTD_TWO_FACTOR_ALREADY_ON',
    })
    const row = JSON.stringify(t.kernel.db.native.prepare('SELECT * FROM users WHERE id = ?').get(u.id))
    expect(row).not.toContain(secret)
    for (const code of codes) {
      expect(row).not.toContain(code)
      expect(row).not.toContain(code.replace('-', ''))
    }
    expect(
      (t.kernel.db.native.prepare('SELECT totp_secret FROM users WHERE id = ?').get(u.id) as { totp_secret: string })
        .totp_secret,
    ).toMatch(/^v1\./)
    const audit = await actions()
    expect(audit.filter((e) => e.target === u.username).map((e) => `${e.action}:${e.result}`)).toEqual(
      expect.arrayContaining([
        'user.two-factor.start:failure',
        'user.two-factor.start:success',
        'user.two-factor.enable:failure',
        'user.two-factor.enable:success',
      ]),
    )
  })

  it('signs in in two steps: the password answers a challenge without a session, a code completes it once', async () => {
    const u = await user('operator')
    const { secret, step } = await enrollTwoFactor(t, u.id)
    const first = await login(u.username)
    expect(first.statusCode).toBe(200)
    expect(first.headers['set-cookie']).toBeUndefined()
    const body = first.json()
    expect(Object.keys(body).sort()).toEqual(['challenge', 'expiresInSeconds', 'twoFactorRequired'])
    expect(body).toMatchObject({ twoFactorRequired: true, expiresInSeconds: 300 })
    // The challenge is no session.
    expect((await t.inject({ url: '/api/auth/me', as: { token: body.challenge } })).statusCode).toBe(401)

    const second = await verify(body.challenge, totp(secret, step + 1))
    expect(second.statusCode).toBe(200)
    expect(String(second.headers['set-cookie'])).toMatch(/^svc_session=[A-Za-z0-9_-]{43};.*HttpOnly/)
    const signedIn = second.json()
    expect(signedIn).toMatchObject({ id: u.id, username: u.username, role: 'operator', twoFactor: true })
    expect((await t.inject({ url: '/api/auth/me', as: { token: signedIn.token } })).json()).toMatchObject({
      id: u.id,
      twoFactor: true,
    })

    // The same challenge again: gone. The same code with a new challenge: a replay, refused.
    expect(error(await verify(body.challenge, totp(secret, step + 1)))).toEqual({
      status: 401,
      error: 'HOSTD_AUTH_CHALLENGE_EXPIRED',
    })
    const again = (await login(u.username)).json().challenge
    expect(error(await verify(again, totp(secret, step + 1)))).toEqual({ status: 401, error: 'HOSTD_AUTH_BAD_CODE' })
    // An older step than one already used is refused too, even inside the skew window.
    expect(error(await verify(again, totp(secret, step)))).toEqual({ status: 401, error: 'HOSTD_AUTH_BAD_CODE' })
    expect(
      (await actions()).find((e) => e.action === 'auth.login' && e.target === u.username && e.result === 'success')
        ?.detail,
    ).toEqual({ twoFactor: 'totp' })
  })

  it('answers a wrong password, an unknown name and a disabled account as before, telling nothing about two-factor', async () => {
    const u = await user()
    await enrollTwoFactor(t, u.id)
    const plain = await user()
    const wrong = await login(u.username, 'a wrong password')
    const wrongPlain = await login(plain.username, 'a wrong password')
    const unknown = await login('nobody-like-this', 'a wrong password')
    for (const res of [wrong, wrongPlain, unknown])
      expect(res.json()).toEqual({ error: 'HOSTD_AUTH_BAD_CREDENTIALS', message: 'Wrong username or password' })
    await t.kernel.services.users.setDisabled(u.id, true)
    expect(error(await login(u.username))).toEqual({ status: 401, error: 'HOSTD_AUTH_BAD_CREDENTIALS' })
  })

  it('counts wrong codes in the sign-in throttle and ends a challenge after five wrong codes', async () => {
    const u = await user()
    const { secret, step } = await enrollTwoFactor(t, u.id)
    const wrongCode = (s: number) => (totp(secret, s) === '123456' ? '654321' : '123456')
    const challenge = (await login(u.username)).json().challenge
    // The per-user limit here is 4: four wrong codes, then even the right code is throttled.
    for (let i = 0; i < 4; i++)
      expect(error(await verify(challenge, wrongCode(step)))).toEqual({ status: 401, error: 'HOSTD_AUTH_BAD_CODE' })
    const throttled = await verify(challenge, totp(secret, step + 1))
    expect(error(throttled)).toEqual({ status: 429, error: 'HOSTD_AUTH_THROTTLED' })
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0)
    expect(error(await login(u.username))).toEqual({ status: 429, error: 'HOSTD_AUTH_THROTTLED' })
    // One audit record for the four, with their count.
    const wrongCodes = (await actions()).filter((e) => e.target === u.username && e.detail?.reason === 'wrong code')
    expect(wrongCodes.map((e) => e.detail?.count)).toEqual([4])

    // Per challenge: the fifth wrong code ends it (on a kernel with a looser throttle).
    const loose = await startTestKernel({ env: { HOSTD_LOGIN_MAX_FAILURES_PER_USER: '100' } })
    try {
      const v = await loose.kernel.services.users.create('loose', PASSWORD, 'viewer')
      const enrolled = await enrollTwoFactor(loose, v.id)
      const c = (
        await loose.inject({
          method: 'POST',
          url: '/api/auth/login',
          payload: { username: 'loose', password: PASSWORD },
        })
      ).json().challenge
      const send = (code: string) =>
        loose.inject({ method: 'POST', url: '/api/auth/login/verify', payload: { challenge: c, code } })
      for (let i = 0; i < 5; i++)
        expect((await send(wrongCode(enrolled.step))).json().error).toBe('HOSTD_AUTH_BAD_CODE')
      expect((await send(totp(enrolled.secret, enrolled.step + 1))).json().error).toBe('HOSTD_AUTH_CHALLENGE_EXPIRED')
    } finally {
      await loose.close()
    }
  })

  it('expires a challenge after five minutes', async () => {
    const u = await user()
    const { secret, step } = await enrollTwoFactor(t, u.id)
    const challenge = (await login(u.username)).json().challenge
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(Date.now() + 301_000)
      // The code of the step it is now, as the user's app would show it.
      expect(error(await verify(challenge, totp(secret, currentStep())))).toEqual({
        status: 401,
        error: 'HOSTD_AUTH_CHALLENGE_EXPIRED',
      })
    } finally {
      vi.useRealTimers()
    }
    expect((await verify((await login(u.username)).json().challenge, totp(secret, step + 1))).statusCode).toBe(200)
  })

  it('takes a recovery code once, in any case and with or without the dash; regenerating needs a code and replaces them', async () => {
    const u = await user()
    const { secret, step, recoveryCodes } = await enrollTwoFactor(t, u.id)
    const [first, second] = recoveryCodes as [string, string]
    const used = await verify((await login(u.username)).json().challenge, ` ${first.toUpperCase().replace('-', ' ')} `)
    expect(used.statusCode).toBe(200)
    const session = used.json().token as string
    expect((await t.inject({ url: '/api/me/two-factor', as: { token: session } })).json().recoveryCodesLeft).toBe(9)
    expect(error(await verify((await login(u.username)).json().challenge, first))).toEqual({
      status: 401,
      error: 'HOSTD_AUTH_BAD_CODE',
    })
    const audit = await actions()
    expect(
      audit.find((e) => e.action === 'user.two-factor.recovery-code-used' && e.target === u.username)?.detail,
    ).toEqual({ recoveryCodesLeft: 9 })

    expect(error(await post('/api/me/two-factor/recovery-codes', session, { code: second }))).toEqual({
      status: 400,
      error: 'HOSTD_TWO_FACTOR_BAD_CODE',
    })
    const fresh = await post('/api/me/two-factor/recovery-codes', session, { code: totp(secret, step + 1) })
    expect(fresh.statusCode).toBe(200)
    const replaced: string[] = fresh.json().recoveryCodes
    expect(replaced).toHaveLength(10)
    expect(replaced).not.toContain(second)
    expect(error(await verify((await login(u.username)).json().challenge, second))).toEqual({
      status: 401,
      error: 'HOSTD_AUTH_BAD_CODE',
    })
    expect((await verify((await login(u.username)).json().challenge, replaced[3]!)).statusCode).toBe(200)
  })

  it('turns off with the password and a code; sign-in is one step again', async () => {
    const u = await user()
    const { secret, step } = await enrollTwoFactor(t, u.id)
    expect(
      error(
        await post('/api/me/two-factor/disable', u.token, { password: 'wrong password', code: totp(secret, step + 1) }),
      ),
    ).toEqual({ status: 400, error: 'HOSTD_USERS_WRONG_PASSWORD' })
    expect(
      error(
        await post('/api/me/two-factor/disable', u.token, {
          password: PASSWORD,
          code: '000000' === totp(secret, step + 1) ? '111111' : '000000',
        }),
      ),
    ).toEqual({ status: 400, error: 'HOSTD_TWO_FACTOR_BAD_CODE' })
    expect(
      (await post('/api/me/two-factor/disable', u.token, { password: PASSWORD, code: totp(secret, step + 1) }))
        .statusCode,
    ).toBe(204)
    expect((await t.inject({ url: '/api/me/two-factor', as: { token: u.token } })).json()).toMatchObject({
      enabled: false,
    })
    const direct = await login(u.username)
    expect(direct.json()).toMatchObject({ id: u.id, twoFactor: false })
    expect(direct.json().token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(error(await post('/api/me/two-factor/disable', u.token, { password: PASSWORD, code: '123456' }))).toEqual({
      status: 409,
      error: 'HOSTD_TWO_FACTOR_NOT_ON',
    })
    expect(
      (await actions()).some(
        (e) => e.action === 'user.two-factor.disable' && e.target === u.username && e.result === 'success',
      ),
    ).toBe(true)
  })

  it("an admin resets another user's two-factor, which ends that user's sessions; their own needs the account page", async () => {
    const u = await user()
    await enrollTwoFactor(t, u.id)
    expect((await t.inject({ url: '/api/auth/me', as: { token: u.token } })).statusCode).toBe(200)
    expect((await post(`/api/users/${u.id}/two-factor/reset`, u.token)).statusCode).toBe(403)
    expect((await post(`/api/users/${u.id}/two-factor/reset`, admin.token)).statusCode).toBe(204)
    expect((await t.inject({ url: '/api/auth/me', as: { token: u.token } })).statusCode).toBe(401)
    expect((await login(u.username)).json()).toMatchObject({ twoFactor: false })
    expect(
      (await actions()).find((e) => e.action === 'user.two-factor.reset' && e.target === u.username),
    ).toMatchObject({ username: 'boss', detail: { wasOn: true } })
    expect(error(await post(`/api/users/${admin.userId}/two-factor/reset`, admin.token))).toEqual({
      status: 409,
      error: 'HOSTD_TWO_FACTOR_RESET_OWN',
    })
  })

  it('a policy requiring two-factor sends a user without it to enrollment: nothing else answers until they enroll', async () => {
    const setPolicy = (token: string, requireTwoFactor: string) =>
      t.inject({ method: 'PUT', url: '/api/auth/policy', as: { token }, payload: { requireTwoFactor } })
    // An admin without two-factor cannot lock themselves out.
    expect(error(await setPolicy(admin.token, 'admins'))).toEqual({ status: 409, error: 'HOSTD_AUTH_POLICY_LOCKOUT' })
    await enrollTwoFactor(t, admin.userId)
    const other = await user('admin')
    const viewer = await user('viewer')
    expect((await setPolicy(admin.token, 'admins')).json()).toEqual({ requireTwoFactor: 'admins' })
    try {
      expect((await t.inject({ url: '/api/auth/policy', as: { token: admin.token } })).json()).toEqual({
        requireTwoFactor: 'admins',
      })
      // The admin without two-factor: their live session is held to enrollment at once; a viewer is not covered.
      expect(error(await t.inject({ url: '/api/users', as: { token: other.token } }))).toEqual({
        status: 403,
        error: 'HOSTD_AUTH_TWO_FACTOR_ENROLLMENT_REQUIRED',
      })
      expect((await t.inject({ url: '/api/version', as: { token: viewer.token } })).statusCode).toBe(200)
      expect((await setPolicy(admin.token, 'everyone')).statusCode).toBe(200)

      // Signing in works (one step: no factor yet) and says where to go.
      const signedIn = await login(viewer.username)
      expect(signedIn.json()).toMatchObject({ mustEnrollTwoFactor: true, twoFactor: false })
      const token = signedIn.json().token as string
      expect((await t.inject({ url: '/api/auth/me', as: { token } })).json()).toMatchObject({
        mustEnrollTwoFactor: true,
      })
      for (const url of ['/api/version', '/api/extensions', '/api/me/sessions', '/api/openapi.json']) {
        expect(error(await t.inject({ url, as: { token } })), url).toEqual({
          status: 403,
          error: 'HOSTD_AUTH_TWO_FACTOR_ENROLLMENT_REQUIRED',
        })
      }
      expect((await t.inject({ url: '/api/me/two-factor', as: { token } })).json()).toEqual({
        enabled: false,
        recoveryCodesLeft: 0,
        required: true,
      })
      const started = await post('/api/me/two-factor/start', token, { password: PASSWORD })
      expect(started.statusCode).toBe(200)
      expect((await post('/api/me/two-factor/confirm', token, { code: totp(started.json().secret) })).statusCode).toBe(
        200,
      )
      // Enrolled: the same session may do everything its role allows, and /me no longer says mustEnroll.
      expect((await t.inject({ url: '/api/version', as: { token } })).statusCode).toBe(200)
      expect((await t.inject({ url: '/api/auth/me', as: { token } })).json().mustEnrollTwoFactor).toBeUndefined()

      // Sign-out stays open to a session held to enrollment.
      const held = (await login(other.username)).json().token as string
      expect((await post('/api/auth/logout', held)).statusCode).toBe(204)
    } finally {
      // Back to nobody, so the other tests' users are not held (the admin has two-factor now).
      expect((await setPolicy(admin.token, 'nobody')).statusCode).toBe(200)
      await t.kernel.services.twoFactor.disable(admin.userId)
    }
    expect((await actions()).filter((e) => e.action === 'auth.policy').map((e) => e.detail)).toEqual([
      { requireTwoFactor: 'nobody', previous: 'everyone' },
      { requireTwoFactor: 'everyone', previous: 'admins' },
      { requireTwoFactor: 'admins', previous: 'nobody' },
    ])
  })
})
