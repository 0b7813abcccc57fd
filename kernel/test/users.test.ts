import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

const PASSWORD = 'correct horse battery'
const post = (url: string, body: unknown) => ({
  method: 'POST' as const,
  url,
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify(body),
})

describe('users', () => {
  let t: TestKernel
  let adminToken: string
  let adminId: string
  beforeAll(async () => {
    t = await startTestKernel()
    const admin = await t.login('admin', 'root')
    adminToken = admin.token
    adminId = admin.userId
  })
  afterAll(() => t.close())
  const asAdmin = (req: Parameters<TestKernel['inject']>[0]) => t.inject({ ...req, as: { token: adminToken } })

  it('creates a user (201, User shape) and lists it', async () => {
    const res = await asAdmin(post('/api/users', { username: 'Alice', password: PASSWORD, role: 'operator' }))
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ username: 'Alice', role: 'operator', disabled: false, twoFactor: false })
    const list = (await asAdmin({ url: '/api/users' })).json() as { username: string; passwordHash?: string }[]
    expect(list.map((u) => u.username)).toContain('Alice')
    expect(JSON.stringify(list)).not.toMatch(/argon2|passwordHash/)
  })

  it('keeps usernames unique case-insensitively, on create and on rename', async () => {
    const dup = await asAdmin(post('/api/users', { username: 'ALICE', password: PASSWORD, role: 'viewer' }))
    expect(dup.statusCode).toBe(409)
    expect(dup.json().error).toBe('HOSTD_USERS_USERNAME_TAKEN')
    const bob = (await asAdmin(post('/api/users', { username: 'bob', password: PASSWORD, role: 'viewer' }))).json()
    const rename = await asAdmin(post(`/api/users/${bob.id}/username`, { username: 'alice' }))
    expect(rename.statusCode).toBe(409)
    const ok = await asAdmin(post(`/api/users/${bob.id}/username`, { username: 'Robert' }))
    expect(ok.statusCode).toBe(204)
    expect(ok.body).toBe('')
    expect((await t.kernel.services.users.get(bob.id)).username).toBe('Robert')
  })

  it.each([
    [{ username: 'carol', password: '', role: 'viewer' }, 'HOSTD_USERS_WEAK_PASSWORD'],
    [{ username: 'carol', password: 'short', role: 'viewer' }, 'HOSTD_USERS_WEAK_PASSWORD'],
    [{ username: 'carol', password: PASSWORD, role: 'root' }, 'HOSTD_REQUEST_INVALID'],
    [{ username: '', password: PASSWORD, role: 'viewer' }, 'HOSTD_REQUEST_INVALID'],
    [{ username: 'carol; rm -rf /', password: PASSWORD, role: 'viewer' }, 'HOSTD_REQUEST_INVALID'],
    [{ username: 'carol', password: PASSWORD, role: 'viewer', admin: true }, 'HOSTD_REQUEST_INVALID'],
    [{ username: 'carol', password: PASSWORD }, 'HOSTD_REQUEST_INVALID'],
    [{ username: 'carol', password: 12345678, role: 'viewer' }, 'HOSTD_REQUEST_INVALID'],
  ])('refuses %j with 400 and creates nothing', async (body, code) => {
    const before = (await t.kernel.services.users.list()).length
    const res = await asAdmin(post('/api/users', body))
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error: code, message: expect.any(String) })
    expect((await t.kernel.services.users.list()).length).toBe(before)
  })

  it('answers malformed JSON with a 400 JSON error', async () => {
    const res = await asAdmin({
      method: 'POST',
      url: '/api/users',
      headers: { 'content-type': 'application/json' },
      payload: '{"username": "x",',
    })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({ error: 'HOSTD_REQUEST_MALFORMED_JSON', message: expect.any(String) })
  })

  it('changes a role (204) and refuses an unknown role', async () => {
    const dave = (await asAdmin(post('/api/users', { username: 'dave', password: PASSWORD, role: 'viewer' }))).json()
    expect((await asAdmin(post(`/api/users/${dave.id}/role`, { role: 'operator' }))).statusCode).toBe(204)
    expect((await t.kernel.services.users.get(dave.id)).role).toBe('operator')
    expect((await asAdmin(post(`/api/users/${dave.id}/role`, { role: 'superuser' }))).statusCode).toBe(400)
    expect(
      (await asAdmin(post('/api/users/00000000-0000-4000-8000-000000000000/role', { role: 'viewer' }))).statusCode,
    ).toBe(404)
    // Not a user id at all (ids are lowercase UUIDs): 400 before any lookup.
    for (const bad of ['no-such-id', '%00', dave.id.toUpperCase(), `${dave.id}x`]) {
      const res = await asAdmin(post(`/api/users/${bad}/role`, { role: 'viewer' }))
      expect(res.statusCode, bad).toBe(400)
      expect(res.json().error).toBe('HOSTD_REQUEST_INVALID')
    }
  })

  it('never demotes, disables or removes the last enabled admin', async () => {
    for (const [url, body] of [
      [`/api/users/${adminId}/role`, { role: 'operator' }],
      [`/api/users/${adminId}/disabled`, { disabled: true }],
      [`/api/users/${adminId}/remove`, {}],
    ] as const) {
      const res = await asAdmin(post(url, body))
      expect(res.statusCode).toBe(409)
      expect(res.json().error).toBe('HOSTD_USERS_LAST_ADMIN')
    }
    expect(await t.kernel.services.users.get(adminId)).toMatchObject({ role: 'admin', disabled: false })
    // With a second enabled admin, the first may be demoted.
    const second = await t.login('admin', 'second-root')
    expect((await asAdmin(post(`/api/users/${second.userId}/disabled`, { disabled: true }))).statusCode).toBe(204)
    expect((await asAdmin(post(`/api/users/${adminId}/role`, { role: 'viewer' }))).statusCode).toBe(409) // the other admin is disabled
    expect((await asAdmin(post(`/api/users/${second.userId}/disabled`, { disabled: false }))).statusCode).toBe(204)
  })

  it('disables and enables a user; disabling ends their sessions', async () => {
    const erin = await t.login('viewer', 'erin')
    expect((await t.inject({ url: '/api/auth/me', as: { token: erin.token } })).statusCode).toBe(200)
    expect((await asAdmin(post(`/api/users/${erin.userId}/disabled`, { disabled: true }))).statusCode).toBe(204)
    expect((await t.inject({ url: '/api/auth/me', as: { token: erin.token } })).statusCode).toBe(401)
    expect((await asAdmin(post(`/api/users/${erin.userId}/disabled`, { disabled: 'no' }))).statusCode).toBe(400)
    expect((await asAdmin(post(`/api/users/${erin.userId}/disabled`, { disabled: false }))).statusCode).toBe(204)
    expect((await t.kernel.services.users.get(erin.userId)).disabled).toBe(false)
  })

  it('resets a password: the new one signs in, old sessions end, weak ones are refused', async () => {
    const frank = await t.login('viewer', 'frank')
    expect((await asAdmin(post(`/api/users/${frank.userId}/password`, { password: 'abc' }))).statusCode).toBe(400)
    expect(
      (await asAdmin(post(`/api/users/${frank.userId}/password`, { password: 'a brand new secret' }))).statusCode,
    ).toBe(204)
    expect((await t.inject({ url: '/api/auth/me', as: { token: frank.token } })).statusCode).toBe(401)
    expect(
      (await t.inject(post('/api/auth/login', { username: 'frank', password: 'a brand new secret' }))).statusCode,
    ).toBe(200)
  })

  it('lets anyone change their own password with the current one', async () => {
    const gina = await t.login('viewer', 'gina')
    await t.kernel.services.users.resetPassword(gina.userId, 'the first secret')
    const session = (await t.inject(post('/api/auth/login', { username: 'gina', password: 'the first secret' })))
      .headers['set-cookie']
    const cookie = String(session).split(';')[0]!
    const wrong = await t.inject({
      ...post('/api/me/password', { currentPassword: 'nope nope nope', newPassword: 'the second secret' }),
      headers: { cookie, origin: 'http://localhost:80', 'content-type': 'application/json' },
    })
    expect(wrong.statusCode).toBe(400)
    expect(wrong.json().error).toBe('HOSTD_USERS_WRONG_PASSWORD')
    const ok = await t.inject({
      ...post('/api/me/password', { currentPassword: 'the first secret', newPassword: 'the second secret' }),
      headers: { cookie, origin: 'http://localhost:80', 'content-type': 'application/json' },
    })
    expect(ok.statusCode).toBe(204)
    expect((await t.inject({ url: '/api/auth/me', headers: { cookie } })).statusCode).toBe(200) // this session stays
    expect(
      (await t.inject(post('/api/auth/login', { username: 'gina', password: 'the second secret' }))).statusCode,
    ).toBe(200)
  })

  it('removes a user and ends their sessions', async () => {
    const hank = await t.login('operator', 'hank')
    expect((await asAdmin(post(`/api/users/${hank.userId}/remove`, {}))).statusCode).toBe(204)
    expect((await t.inject({ url: '/api/auth/me', as: { token: hank.token } })).statusCode).toBe(401)
    expect((await asAdmin(post(`/api/users/${hank.userId}/remove`, {}))).statusCode).toBe(404)
  })

  it('writes every user change to the audit log with who and from where', async () => {
    const res = await asAdmin({ url: '/api/audit?range=24h&limit=200' })
    expect(res.statusCode).toBe(200)
    const { items, total } = res.json() as {
      items: { action: string; username: string; ip: string; target: string; time: string }[]
      total: number
    }
    expect(total).toBe(items.length)
    const actions = new Set(items.map((i) => i.action))
    for (const a of [
      'user.create',
      'user.rename',
      'user.role',
      'user.disable',
      'user.enable',
      'user.password.reset',
      'user.password.change',
      'user.remove',
    ]) {
      expect(actions).toContain(a)
    }
    const create = items.find((i) => i.action === 'user.create' && i.target === 'Alice')!
    expect(create).toMatchObject({ username: 'root', ip: '127.0.0.1' })
    const times = items.map((i) => Date.parse(i.time))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
  })
})

describe('audit log queries', () => {
  it('filters by range and pages with limit and offset, newest first', async () => {
    const t = await startTestKernel()
    try {
      for (let i = 0; i < 5; i++) await t.kernel.services.audit.record({ action: 'test.event', target: `n${i}` })
      t.kernel.db.native.prepare("UPDATE audit SET time = ? WHERE target = 'n0'").run(Date.now() - 10 * 24 * 3600_000)
      const { token } = await t.login('admin')
      const page = (q: string) => t.inject({ url: `/api/audit?${q}`, as: { token } }).then((r) => r.json())
      const all = await page('range=all&limit=100')
      expect(
        all.items.filter((i: { action: string }) => i.action === 'test.event').map((i: { target: string }) => i.target),
      ).toEqual(['n4', 'n3', 'n2', 'n1', 'n0'])
      const week = await page('range=7d&limit=100')
      expect(week.items.map((i: { target: string }) => i.target)).not.toContain('n0')
      const second = await page('range=all&limit=2&offset=2')
      expect(second.items).toHaveLength(2)
      expect(second.total).toBe(all.total)
      expect(second.items[0].id).toBe(all.items[2].id)
      // Paging by key: older than the first page's last id, newer than the next page's first id.
      const ids = all.items.map((i: { id: number }) => i.id)
      const older = await page(`range=all&limit=2&before=${ids[1]}`)
      expect(older.items.map((i: { id: number }) => i.id)).toEqual(ids.slice(2, 4))
      expect(older.total).toBe(all.total)
      const newer = await page(`range=all&limit=2&after=${ids[3]}`)
      expect(newer.items.map((i: { id: number }) => i.id)).toEqual(ids.slice(1, 3))
      // The range holds by key too: n0 (10 days old) is never on a 7-day page, however far back it goes.
      const n1 = all.items.find((i: { target: string }) => i.target === 'n1').id
      expect(
        (await page(`range=7d&limit=10&before=${n1}`)).items.map((i: { target: string }) => i.target),
      ).not.toContain('n0')
      expect((await t.inject({ url: '/api/audit?before=-1', as: { token } })).statusCode).toBe(400)
      expect((await t.inject({ url: '/api/audit?range=1y', as: { token } })).statusCode).toBe(400)
      expect((await t.inject({ url: '/api/audit?limit=0', as: { token } })).statusCode).toBe(400)
      expect((await t.inject({ url: '/api/audit', as: 'operator' })).statusCode).toBe(403)
    } finally {
      await t.close()
    }
  })
})
