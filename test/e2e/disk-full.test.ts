/**
 * A full disk is an answer, not a wedge: the real daemon with its data dir on a small tmpfs of its own (mounted here,
 * as root), which the test fills to the last byte. Signing in, writing a setting and writing an audit record then
 * answer 507 HOSTD_STORAGE_FULL naming the disk, nothing of them is kept, reading still works, and as soon as the
 * space is freed everything works again without a restart; SIGTERM still stops the daemon. On main the first failed
 * ORM COMMIT (the audit record of a failed sign-in) left every later ORM query waiting for ever: the sign-in after
 * freeing never answered, and stopping needed SIGKILL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type Daemon } from '../support/daemon.ts'
import { mountTmpfs, type Tmpfs } from '../support/tmpfs.ts'

const ADMIN = 'admin'
const PASSWORD = 'correct horse battery'

type Json = Record<string, any>

describe('a full disk under the data dir', () => {
  let disk: Tmpfs
  let d: Daemon
  let admin: string

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await d.fetch(path, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, type: res.headers.get('content-type'), body: (text ? JSON.parse(text) : null) as Json }
  }
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const signIn = (password = PASSWORD) =>
    call('POST', '/api/auth/login', { username: ADMIN, password }, { 'x-svc-client': 'disk-full' })
  const setRetention = (maxAgeDays: number) =>
    call('PUT', '/api/audit/retention', { maxAgeDays, maxRows: 5000 }, bearer(admin))
  const auditRecords = async () => {
    const res = await call('GET', '/api/audit?range=all&limit=1000', undefined, bearer(admin))
    expect(res.status).toBe(200)
    return res.body.items as Json[]
  }
  /** The answer a write gets while the disk is full (its message is checked after, see below). */
  const expectFull = (res: { status: number; type: string | null; body: Json }) => {
    expect(res.status, JSON.stringify(res.body)).toBe(507)
    expect(res.type).toMatch(/^application\/json/)
    expect(res.body.error).toBe('HOSTD_STORAGE_FULL')
    return res.body.message as string
  }

  beforeAll(async () => {
    disk = await mountTmpfs(32)
    d = await startDaemon({ dataDir: disk.dir })
    expect((await call('POST', '/api/setup', { username: ADMIN, password: PASSWORD })).status).toBe(201)
    const first = await signIn()
    expect(first.status).toBe(200)
    admin = first.body.token
  })
  afterAll(async () => {
    await d?.stop()
    await disk?.unmount()
  })

  it('while full: writes answer 507 naming the disk, reads answer, nothing is kept; freed: all works, no restart', async () => {
    const before = await auditRecords()
    const retentionBefore = (await call('GET', '/api/audit/retention', undefined, bearer(admin))).body
    expect(await disk.fill()).toBe(0)

    const messages = [
      // A sign-in: its session cannot be written.
      expectFull(await signIn()),
      // A setting.
      expectFull(await setRetention(30)),
      // An audit record: a failed sign-in writes nothing else. (On main: its failed COMMIT wedged the ORM.)
      expectFull(await signIn('not the password at all')),
    ]

    // Reading needs no room.
    expect((await call('GET', '/health')).status).toBe(200)
    expect((await auditRecords()).length).toBe(before.length)

    await disk.free()
    // No restart: the same process answers, and every kind of write works again.
    const again = await signIn()
    expect(again.status, JSON.stringify(again.body)).toBe(200)
    expect((await setRetention(30)).status).toBe(200)
    expect((await signIn('not the password either')).status).toBe(401)

    // Nothing of the refused writes was kept: no session or record of the refused sign-ins, the setting as it was.
    const after = await auditRecords()
    const fresh = after.filter((e) => !before.some((b) => b.id === e.id))
    expect(fresh.map((e) => `${e.action} ${e.result}`).sort()).toEqual([
      'audit.retention success',
      'auth.login failure',
      'auth.login success',
    ])
    expect(retentionBefore).toEqual({ maxAgeDays: 365, maxRows: 100_000 })
    expect((await call('GET', '/api/audit/retention', undefined, bearer(admin))).body).toEqual({
      maxAgeDays: 30,
      maxRows: 5000,
    })
    const sessions = await call('GET', '/api/me/sessions', undefined, bearer(again.body.token))
    expect(sessions.status).toBe(200)
    expect(sessions.body as unknown as Json[]).toHaveLength(2) // the first sign-in's and this one's

    // Each 507 named the full disk, and what it did not save.
    for (const message of messages)
      expect(message).toMatch(new RegExp(`^The disk holding ${disk.dir}(/\\S*)? is full: `))
    expect(messages[0]).toContain('nothing was saved')
    expect(messages[2]).toContain('the audit record of this request was not saved')
  })

  it('SIGTERM still stops it (on main a wedged query made stopping need SIGKILL)', async () => {
    expect(await d.stop({ keepDataDir: true })).toBe(0)
  })
})
