/**
 * API tokens for scripts (issue 15), over real HTTP and WebSocket connections to a listening kernel: created by a
 * signed-in user with a role at most their own, an optional expiry and path prefixes; the secret shown once and
 * stored hashed; the effective role the lower of the token's and its owner's current one, read on every request;
 * expired and revoked tokens 401 at once, and what they hold open closes; nothing marked `sessionOnly` answers a
 * token (the account routes, the terminal and desktop sockets, a probe socket with the same option).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import type { Role } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/kernel/testing'
import { terminalPlugin } from '../plugins/terminal/src/index.ts'
import { desktopPlugin } from '../plugins/desktop/src/index.ts'
import { ensureTestAccount } from './support/unix-user.ts'
import { closeClients, openSocket, openStream, probePlugin, upgrade, within } from './support/live-probe.ts'
import { SAMPLES, type Ctx } from './support/route-samples.ts'

const PASSWORD = 'api token password'
const aborted = new Set<string>()

describe('API tokens', () => {
  let t: TestKernel
  let admin: { token: string; userId: string }
  let n = 0

  beforeAll(async () => {
    const account = await ensureTestAccount()
    t = await startTestKernel({
      plugins: [
        probePlugin('probe', aborted),
        terminalPlugin({ user: account.name }),
        desktopPlugin({ target: { host: '127.0.0.1', port: 1 } }),
      ],
      overNetwork: true,
    })
    admin = await t.login('admin', 'token-admin')
  })
  afterAll(async () => {
    closeClients()
    await t.close()
  })

  /** A fresh user of `role`, signed in with a session. */
  async function user(role: Role) {
    const username = `tok${++n}`
    const made = await t.kernel.services.users.create(username, PASSWORD, role)
    return { id: made.id, username, session: t.kernel.services.sessions.create(made.id, '127.0.0.1') }
  }
  const create = (session: string, body: Record<string, unknown>) =>
    t.inject({ method: 'POST', url: '/api/me/tokens', as: { token: session }, payload: body })
  async function token(session: string, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
    const res = await create(session, { name: `script ${++n}`, ...body })
    expect(res.statusCode, res.body).toBe(201)
    return res.json()
  }
  const get = (url: string, bearer: string) => t.inject({ url, as: { token: bearer } })
  const call = (method: 'GET' | 'POST', url: string, bearer: string, payload?: object) =>
    t.inject({ method, url, as: { token: bearer }, ...(payload === undefined ? {} : { payload }) })
  const answer = async (res: Promise<{ statusCode: number; body: string }>) => {
    const r = await res
    return r.statusCode < 300 ? r.statusCode : `${r.statusCode} ${JSON.parse(r.body).error}`
  }

  it('shows the secret once, stores only its hash, and lists the token without it', async () => {
    const u = await user('operator')
    const res = await create(u.session, {
      name: 'nightly backup',
      role: 'viewer',
      expiresInDays: 7,
      prefixes: ['/api/probe'],
    })
    expect(res.statusCode).toBe(201)
    const made = res.json()
    expect(made.secret).toMatch(/^hostd_pat_[A-Za-z0-9_-]{43}$/)
    expect(made).toMatchObject({ name: 'nightly backup', role: 'viewer', prefixes: ['/api/probe'], lastUsedAt: null })
    const expires = Date.parse(made.expiresAt) - Date.now()
    expect(expires).toBeGreaterThan(6.9 * 86400_000)
    expect(expires).toBeLessThanOrEqual(7 * 86400_000)

    const listed = (await get('/api/me/tokens', u.session)).json()
    expect(listed).toEqual([
      {
        id: made.id,
        name: 'nightly backup',
        role: 'viewer',
        prefixes: ['/api/probe'],
        createdAt: made.createdAt,
        lastUsedAt: null,
        expiresAt: made.expiresAt,
      },
    ])
    const dump = JSON.stringify(t.kernel.db.native.prepare('SELECT * FROM api_tokens').all())
    expect(dump).not.toContain(made.secret)
    expect(dump).toContain(createHash('sha256').update(made.secret).digest('base64url'))

    // It works at once, as the owner with the token's role, and the listing shows it was used.
    expect((await get('/api/probe/read', made.secret)).json()).toEqual({ read: true, apiToken: 'nightly backup' })
    expect((await get('/api/me/tokens', u.session)).json()[0].lastUsedAt).not.toBeNull()
    // The same name twice is refused; so is a role above the owner's, an expiry in the past, a prefix outside /api.
    expect(await answer(create(u.session, { name: 'nightly backup', role: 'viewer' }))).toBe(
      '409 HOSTD_TOKENS_NAME_TAKEN',
    )
    expect(await answer(create(u.session, { name: 'too strong', role: 'admin' }))).toBe(
      '400 HOSTD_TOKENS_ROLE_TOO_HIGH',
    )
    expect(await answer(create(u.session, { name: 'never', role: 'viewer', expiresInDays: 0 }))).toBe(
      '400 HOSTD_REQUEST_INVALID',
    )
    for (const prefix of ['/etc', '/api/../users', '/api/x/./y', 'api/probe', '/api/pro be']) {
      expect(
        await answer(create(u.session, { name: `bad ${prefix}`, role: 'viewer', prefixes: [prefix] })),
        prefix,
      ).toBe('400 HOSTD_REQUEST_INVALID')
    }
  })

  it('a read-only token reads but changes nothing: a lower role gets 403', async () => {
    const u = await user('operator')
    const { secret } = await token(u.session, { role: 'viewer' })
    expect(await answer(call('GET', '/api/probe/read', secret))).toBe(200)
    expect(await answer(call('POST', '/api/probe/write', secret))).toBe('403 HOSTD_AUTH_FORBIDDEN')
    expect(await answer(call('POST', '/api/probe/write', u.session))).toBe(200)
    expect((await get('/api/auth/me', secret)).json()).toMatchObject({
      id: u.id,
      role: 'viewer',
      apiToken: { name: expect.stringMatching(/^script/) },
    })
  })

  it('expired and revoked tokens get 401; revoking closes what the token holds open at once', async () => {
    const u = await user('operator')
    const expiring = await token(u.session, { role: 'viewer', expiresInDays: 1 })
    expect(await answer(call('GET', '/api/probe/read', expiring.secret))).toBe(200)
    t.kernel.db.native.prepare('UPDATE api_tokens SET expires_at = ? WHERE id = ?').run(Date.now() - 1, expiring.id)
    const expired = await get('/api/probe/read', expiring.secret)
    expect(expired.json()).toEqual({
      error: 'HOSTD_AUTH_REQUIRED',
      message: 'This API token is unknown, expired or revoked, or its owner is disabled',
    })

    const script = await token(u.session, { role: 'operator' })
    const socket = await openSocket(t.url!, '/api/probe/operator?tag=revoked-socket', script.secret)
    const drip = await openStream(t.url!, '/api/probe/drip?tag=revoked-drip', script.secret)
    expect(await socket.echo('hello')).toBe('hello')
    expect((await call('POST', `/api/me/tokens/${script.id}/revoke`, u.session)).statusCode).toBe(204)
    expect(await answer(call('GET', '/api/probe/read', script.secret))).toBe('401 HOSTD_AUTH_REQUIRED')
    expect((await within(socket.closed, 'token socket closed')).code).toBe(4401)
    await within(drip.ended, 'token stream cut')
    expect(aborted).toContain('revoked-socket')
    expect(aborted).toContain('revoked-drip')
    expect((await get('/api/me/tokens', u.session)).json().map((x: { id: string }) => x.id)).not.toContain(script.id)
    expect(await answer(call('POST', `/api/me/tokens/${script.id}/revoke`, u.session))).toBe(
      '404 HOSTD_TOKENS_NOT_FOUND',
    )
  })

  it('a demoted owner lowers the token at once (its open operator socket closes 4403); a disabled owner ends it', async () => {
    const u = await user('operator')
    const { secret } = await token(u.session, { role: 'operator' })
    const op = await openSocket(t.url!, '/api/probe/operator?tag=demoted-op', secret)
    const viewer = await openSocket(t.url!, '/api/probe/viewer?tag=demoted-viewer', secret)
    expect(await answer(call('POST', '/api/probe/write', secret))).toBe(200)
    expect((await call('POST', `/api/users/${u.id}/role`, admin.token, { role: 'viewer' })).statusCode).toBe(204)
    expect(await answer(call('POST', '/api/probe/write', secret))).toBe('403 HOSTD_AUTH_FORBIDDEN')
    expect((await get('/api/auth/me', secret)).json().role).toBe('viewer')
    expect((await within(op.closed, 'operator socket closed')).code).toBe(4403)
    t.kernel.services.sessions.connections.recheck()
    expect(await viewer.echo('still')).toBe('still')
    // Promoted back, the token is an operator's again: its own role is the ceiling, not a snapshot.
    expect((await call('POST', `/api/users/${u.id}/role`, admin.token, { role: 'operator' })).statusCode).toBe(204)
    expect(await answer(call('POST', '/api/probe/write', secret))).toBe(200)
    // Behind the kernel's back too: the owner's row is read on every request.
    t.kernel.db.native.prepare("UPDATE users SET role = 'viewer' WHERE id = ?").run(u.id)
    expect(await answer(call('POST', '/api/probe/write', secret))).toBe('403 HOSTD_AUTH_FORBIDDEN')

    expect((await call('POST', `/api/users/${u.id}/disabled`, admin.token, { disabled: true })).statusCode).toBe(204)
    expect(await answer(call('GET', '/api/probe/read', secret))).toBe('401 HOSTD_AUTH_REQUIRED')
    expect((await within(viewer.closed, 'viewer socket closed')).code).toBe(4401)
    // Disabling deleted the token: enabling the account again does not bring it back.
    expect((await call('POST', `/api/users/${u.id}/disabled`, admin.token, { disabled: false })).statusCode).toBe(204)
    expect(await answer(call('GET', '/api/probe/read', secret))).toBe('401 HOSTD_AUTH_REQUIRED')
    const later = await token(t.kernel.services.sessions.create(u.id, '127.0.0.1'), { role: 'viewer' })
    // Removing the owner deletes their tokens.
    expect((await call('POST', `/api/users/${u.id}/remove`, admin.token, {})).statusCode).toBe(204)
    expect(await answer(call('GET', '/api/probe/read', later.secret))).toBe('401 HOSTD_AUTH_REQUIRED')
    expect(
      (t.kernel.db.native.prepare('SELECT count(*) AS n FROM api_tokens WHERE user_id = ?').get(u.id) as { n: number })
        .n,
    ).toBe(0)
  })

  it('holds a token to its path prefixes, segment by segment, with no way around them', async () => {
    const u = await user('operator')
    const { secret } = await token(u.session, { role: 'operator', prefixes: ['/api/probe/read', '/api/auth/me'] })
    expect(await answer(call('GET', '/api/probe/read', secret))).toBe(200)
    expect(await answer(call('GET', '/api/probe/read?x=1', secret))).toBe(200)
    expect(await answer(call('GET', '/api/auth/me', secret))).toBe(200)
    for (const url of [
      '/api/probe/write',
      '/api/probe/readx',
      '/api/version',
      '/api/probe/read/../write',
      '/api/probe/read/%2e%2e/write',
      '/api/probe/read%2f..%2fwrite',
    ]) {
      const method = url.includes('write') ? 'POST' : 'GET'
      const res = await call(method, url, secret)
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400)
      if (res.statusCode === 403) expect(res.json().error, url).toBe('HOSTD_AUTH_TOKEN_SCOPE')
    }
    expect(await answer(call('POST', '/api/probe/write', secret))).toBe('403 HOSTD_AUTH_TOKEN_SCOPE')
    expect(await upgrade(t.url!, '/api/probe/viewer?tag=scope', secret)).toEqual({
      status: 403,
      error: 'HOSTD_AUTH_TOKEN_SCOPE',
    })
  })

  it('cannot create tokens, change passwords or two-factor, manage sessions, or open the terminal and desktop', async () => {
    const { secret } = await token(admin.token, { role: 'admin' })
    expect(await answer(create(secret, { name: 'child', role: 'viewer' }))).toBe('403 HOSTD_AUTH_SESSION_REQUIRED')
    expect(
      await answer(
        call('POST', '/api/me/password', secret, { currentPassword: 'x', newPassword: 'a new good password' }),
      ),
    ).toBe('403 HOSTD_AUTH_SESSION_REQUIRED')
    expect(await answer(call('POST', '/api/me/two-factor/start', secret, { password: 'x' }))).toBe(
      '403 HOSTD_AUTH_SESSION_REQUIRED',
    )
    expect(await answer(call('GET', '/api/me/sessions', secret))).toBe('403 HOSTD_AUTH_SESSION_REQUIRED')
    // A real admin shell and a real desktop bridge: refused before the upgrade; the admin's session gets the shell.
    expect(await upgrade(t.url!, '/api/terminal', secret)).toEqual({
      status: 403,
      error: 'HOSTD_AUTH_SESSION_REQUIRED',
    })
    expect(await upgrade(t.url!, '/api/desktop', secret)).toEqual({ status: 403, error: 'HOSTD_AUTH_SESSION_REQUIRED' })
    expect(await upgrade(t.url!, '/api/terminal', admin.token)).toEqual({ status: 101 })
    expect(await upgrade(t.url!, '/api/probe/interactive?tag=i', secret)).toEqual({
      status: 403,
      error: 'HOSTD_AUTH_SESSION_REQUIRED',
    })
    expect(await upgrade(t.url!, '/api/probe/interactive?tag=i', admin.token)).toEqual({ status: 101 })
    expect(await upgrade(t.url!, '/api/probe/viewer?tag=v', secret)).toEqual({ status: 101 })

    // Every route marked session-only in the OpenAPI document refuses the admin's token; the rest answer as the role says.
    const doc = (await get('/api/openapi.json', secret)).json() as {
      paths: Record<string, Record<string, { 'x-hostd-session-only'?: boolean }>>
    }
    const sessionOnly = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op['x-hostd-session-only'])
        .map(([m]) => `${m.toUpperCase()} ${path}`),
    )
    expect(sessionOnly.sort()).toEqual(
      [
        'POST /api/auth/logout',
        'POST /api/auth/reauth',
        'POST /api/me/password',
        'POST /api/me/sessions/end-others',
        'POST /api/me/sessions/{id}/end',
        'POST /api/me/tokens',
        'POST /api/me/tokens/{id}/revoke',
        'POST /api/me/two-factor/confirm',
        'POST /api/me/two-factor/disable',
        'POST /api/me/two-factor/recovery-codes',
        'POST /api/me/two-factor/start',
        'POST /api/users/{id}/password',
        'POST /api/users/{id}/sessions/end',
        'POST /api/users/{id}/tokens/{tokenId}/revoke',
        'POST /api/users/{id}/two-factor/reset',
        'PUT /api/auth/policy',
        'GET /api/me/sessions',
        'GET /api/me/tokens',
        'GET /api/me/two-factor',
        // User management: an admin token cannot make a person (who could then open a shell).
        'POST /api/users',
        'POST /api/users/{id}/role',
        'POST /api/users/{id}/username',
        'POST /api/users/{id}/disabled',
        'POST /api/users/{id}/remove',
        'PUT /api/audit/retention',
        // A third-party plugin's wider permissions and its trust with the daemon's process are a person's choice.
        'POST /api/extensions/{id}/approve',
        'POST /api/extensions/{id}/trust',
      ].sort(),
    )
    const ctx: Ctx = {
      t,
      userId: admin.userId,
      pluginArchive: Buffer.alloc(0),
      freshUser: async () => (await t.kernel.services.users.create(`target${++n}`, PASSWORD, 'viewer')).id,
    }
    for (const key of sessionOnly) {
      const [method, path] = key.split(' ') as [string, string]
      const sample = await SAMPLES[`${method} ${path.replace(/\{([^}]+)\}/g, ':$1')}`]!(ctx)
      const res = await t.inject({
        method: method as 'POST',
        url: sample.url,
        as: { token: secret },
        ...(sample.body === undefined ? {} : { payload: sample.body as object }),
      })
      expect(`${key} ${res.statusCode} ${res.json().error}`).toBe(`${key} 403 HOSTD_AUTH_SESSION_REQUIRED`)
    }
  })

  it("admins list and revoke anyone's tokens; a script's changes are audited with its token", async () => {
    const u = await user('operator')
    const made = await token(u.session, { role: 'operator', name: 'deploy bot' })
    expect(await answer(call('POST', '/api/probe/write', made.secret))).toBe(200)
    const { secret: adminScript } = await token(admin.token, { role: 'admin', name: 'admin script' })
    const listed = await get(`/api/users/${u.id}/tokens`, adminScript)
    expect(listed.json().map((x: { name: string }) => x.name)).toEqual(['deploy bot'])
    expect(await answer(call('GET', `/api/users/${u.id}/tokens`, u.session))).toBe('403 HOSTD_AUTH_FORBIDDEN')
    // A change by an admin's script names the token in the audit log.
    expect((await call('POST', '/api/extensions/desktop/disable', adminScript)).statusCode).toBe(200)
    expect((await call('POST', '/api/extensions/desktop/enable', adminScript)).statusCode).toBe(200)
    const entry = (await t.kernel.services.audit.list('all', 20, 0)).items.find((e) => e.action === 'plugin.disable')
    expect(entry).toMatchObject({
      username: 'token-admin',
      target: 'desktop',
      detail: { apiToken: { name: 'admin script' } },
    })
    // Revoking someone else's token needs the admin's session.
    expect(await answer(call('POST', `/api/users/${u.id}/tokens/${made.id}/revoke`, adminScript))).toBe(
      '403 HOSTD_AUTH_SESSION_REQUIRED',
    )
    expect((await call('POST', `/api/users/${u.id}/tokens/${made.id}/revoke`, admin.token)).statusCode).toBe(204)
    expect(await answer(call('GET', '/api/probe/read', made.secret))).toBe('401 HOSTD_AUTH_REQUIRED')
    const audit = (await t.kernel.services.audit.list('all', 50, 0)).items
    expect(
      audit.filter((e) => e.action.startsWith('token.')).map((e) => `${e.action} ${e.target} ${e.detail?.token}`),
    ).toEqual(
      expect.arrayContaining([`token.create ${u.username} deploy bot`, `token.revoke ${u.username} deploy bot`]),
    )
  })
})
