import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { execFile } from 'node:child_process'
import { tmpdir } from 'node:os'
import { HostdError } from '@hostd/sdk'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { storagePlugin } from '../src/index.ts'
import { translateSamba } from '../src/samba.ts'
import { startSmbd, type Smbd } from './support/smbd.ts'
import { startStorageHelper, type StorageHelper } from './support/storage-helper.ts'

/**
 * "Folders shared over SMB" end to end: the API asks the real root helper to rewrite the share file that a
 * real smbd on loopback includes, and to reload it; smbclient then reads, writes or is refused.
 */
describe('storage: SMB exports with a real smbd', () => {
  let base: string
  let data: string
  let smbd: Smbd
  let helper: StorageHelper
  let t: TestKernel

  /** smbd takes a reload in tens of milliseconds; poll until the listing shows what we expect. */
  async function untilListing(has: boolean, share: string) {
    for (let i = 0; i < 50; i++) {
      const out = (await smbd.client(['-L', '//127.0.0.1'])).out
      if (new RegExp(`^\\s*${share}\\s+Disk`, 'm').test(out) === has) return out
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`share ${share} ${has ? 'never appeared' : 'never went away'}`)
  }

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'hostd-storage-smb-'))
    await chmod(base, 0o755) // the guest account (nobody) must reach the shared folders
    data = join(base, 'data')
    await mkdir(join(data, 'pub'), { recursive: true })
    await mkdir(join(data, 'drop'))
    await mkdir(join(data, 'private'))
    await mkdir(join(base, 'outside'))
    await chmod(join(data, 'drop'), 0o777)
    await writeFile(join(data, 'pub', 'hello.txt'), 'hello over smb\n')
    await symlink('../outside', join(data, 'link-out'))
    smbd = await startSmbd(join(base, 'samba'))
    helper = await startStorageHelper({
      HOSTD_HELPER_SMB_CONF: smbd.conf,
      HOSTD_HELPER_SMB_SHARES: smbd.shares,
      HOSTD_HELPER_EXPORT_ROOTS: base,
    })
    t = await startTestKernel({
      plugins: [storagePlugin({ roots: [{ name: 'data', path: data }] })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
  })
  afterAll(async () => {
    await t?.close()
    await helper?.stop()
    await smbd?.stop()
    await rm(base, { recursive: true, force: true })
  })

  const share = (body: Record<string, unknown>) =>
    t.inject({ method: 'POST', url: '/api/storage/exports', as: 'admin', payload: body })

  it('shares a folder read-only for guests: it appears, smbclient reads a file, a put is refused', async () => {
    const res = await share({
      name: 'pub',
      path: join(data, 'pub'),
      readOnly: true,
      guestAccess: true,
      comment: 'Public files',
    })
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json()).toEqual({
      name: 'pub',
      path: join(data, 'pub'),
      readOnly: true,
      guestAccess: true,
      comment: 'Public files',
    })
    await untilListing(true, 'pub')
    const local = join(base, 'got.txt')
    const get = await smbd.client(['//127.0.0.1/pub', '-c', `get hello.txt ${local}`])
    expect(get.code, get.out).toBe(0)
    expect(await readFile(local, 'utf8')).toBe('hello over smb\n')
    const put = await smbd.client(['//127.0.0.1/pub', '-c', `put ${local} planted.txt`])
    expect(put.out).toContain('NT_STATUS_ACCESS_DENIED')
    const list = await t.inject({ url: '/api/storage/exports', as: 'viewer' })
    expect(list.json().exports).toEqual([res.json()])
  })

  it('honors readOnly false (a guest put lands) and guestAccess false (an anonymous client is refused)', async () => {
    expect(
      (await share({ name: 'drop', path: join(data, 'drop'), readOnly: false, guestAccess: true })).statusCode,
    ).toBe(201)
    expect(
      (await share({ name: 'private', path: join(data, 'private'), readOnly: true, guestAccess: false })).statusCode,
    ).toBe(201)
    await untilListing(true, 'private')
    const local = join(base, 'up.txt')
    await writeFile(local, 'dropped in')
    const put = await smbd.client(['//127.0.0.1/drop', '-c', `put ${local} dropped.txt`])
    expect(put.code, put.out).toBe(0)
    expect(await readFile(join(data, 'drop', 'dropped.txt'), 'utf8')).toBe('dropped in')
    const anon = await smbd.client(['//127.0.0.1/private', '-c', 'ls'])
    expect(anon.code).not.toBe(0)
    expect(anon.out).toMatch(/NT_STATUS_ACCESS_DENIED|NT_STATUS_LOGON_FAILURE/)
  })

  it('refuses bad input with 400/403/409 and changes nothing (share file and list as before)', async () => {
    const before = await readFile(smbd.shares, 'utf8')
    const cases: [Record<string, unknown>, number][] = [
      [{ name: 'evil]\n[x', path: join(data, 'pub') }, 400],
      [{ name: 'ok', path: `${join(data, 'pub')}\n   path = /etc` }, 400],
      [{ name: 'ok', path: join(data, 'pub'), comment: 'x\n[global]' }, 400],
      [{ name: '-opt', path: join(data, 'pub') }, 400],
      [{ name: 'global', path: join(data, 'pub') }, 400],
      [{ name: 'etc', path: '/etc' }, 403],
      [{ name: 'out', path: join(base, 'outside') }, 403],
      [{ name: 'out2', path: join(data, 'link-out') }, 403],
      [{ name: 'sneaky', path: `${data}/../outside` }, 403],
      [{ name: 'PUB', path: join(data, 'pub') }, 409],
      [{ name: 'missing', path: join(data, 'nope') }, 404],
    ]
    for (const [body, status] of cases) {
      const res = await share(body)
      expect(res.statusCode, JSON.stringify(body)).toBe(status)
      expect(res.json().error).toMatch(/^HOSTD_/)
    }
    expect(await readFile(smbd.shares, 'utf8')).toBe(before)
    expect(
      (await t.inject({ url: '/api/storage/exports', as: 'viewer' }))
        .json()
        .exports.map((e: { name: string }) => e.name),
    ).toEqual(['pub', 'drop', 'private'])
  })

  it('the helper itself refuses a share record that would inject smb.conf lines, and writes nothing', async () => {
    const before = await readFile(smbd.shares, 'utf8')
    const good = { name: 'x', path: join(data, 'pub'), readOnly: true, guestAccess: false }
    for (const bad of [
      { ...good, name: 'a]\n[b' },
      { ...good, path: `${good.path}\nguest ok = yes` },
      { ...good, comment: 'c\nread only = no' },
      { ...good, path: '/etc' },
      { ...good, path: `${good.path}/` },
      { ...good, readOnly: 'no' },
      { ...good, extra: 1 },
      { ...good, path: '%H' },
    ]) {
      const answer = await helper.call('storage.exports.write', { shares: [bad] })
      expect(answer, JSON.stringify(bad)).toMatchObject({ ok: false })
      expect([400, 403]).toContain(answer.status)
    }
    expect(await readFile(smbd.shares, 'utf8')).toBe(before)
  })

  it('stops sharing: the share disappears and its clients get BAD_NETWORK_NAME; both changes are audited', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/storage/exports/remove',
      as: 'admin',
      payload: { name: 'pub' },
    })
    expect(res.statusCode, res.body).toBe(204)
    await untilListing(false, 'pub')
    expect((await smbd.client(['//127.0.0.1/pub', '-c', 'ls'])).out).toContain('NT_STATUS_BAD_NETWORK_NAME')
    expect(await readFile(smbd.shares, 'utf8')).not.toContain('[pub]')
    expect(
      (await t.inject({ method: 'POST', url: '/api/storage/exports/remove', as: 'admin', payload: { name: 'pub' } }))
        .statusCode,
    ).toBe(404)
    const audit = (await t.inject({ url: '/api/audit?range=24h&limit=100', as: 'admin' })).json().items
    const add = audit.find(
      (e: { action: string; target: string }) => e.action === 'storage.export.add' && e.target === 'pub',
    )
    const removed = audit.find(
      (e: { action: string; target: string }) => e.action === 'storage.export.remove' && e.target === 'pub',
    )
    expect(add.detail).toMatchObject({ before: null, after: { path: join(data, 'pub'), readOnly: true } })
    expect(removed.detail).toMatchObject({ before: { name: 'pub' }, after: null })
  })

  it('says "Samba is not running: start it" when smbd is gone (the real smbcontrol text under details), and keeps the list', async () => {
    const before = await readFile(smbd.shares, 'utf8')
    await smbd.stop()
    const res = await share({ name: 'late', path: join(data, 'pub') })
    expect(res.statusCode, res.body).toBe(503)
    const body = res.json()
    expect(body.error).toBe('HOSTD_STORAGE_SMBD_NOT_RUNNING')
    expect(body.message).toMatch(/not running.*start it/)
    expect(body.details.raw).toContain("Can't find pid for destination 'smbd'")
    expect(await readFile(smbd.shares, 'utf8')).toBe(before)
    expect((await t.inject({ url: '/api/storage/exports', as: 'viewer' })).json().exports).not.toContainEqual(
      expect.objectContaining({ name: 'late' }),
    )
  })

  it("translates the service manager's and a broken smb.conf's real messages", async () => {
    const run = (file: string, args: string[]) =>
      new Promise<string>((resolve) => execFile(file, args, (_err, stdout, stderr) => resolve(`${stderr}${stdout}`)))
    const failed = (text: string) =>
      new HostdError(
        'HOSTD_HELPER_ACTION_FAILED',
        500,
        `smbcontrol failed (exit 1): ${text.trim().split('\n').join(' ')}`,
      )
    const conf = await run('smbcontrol', ['-s', join(base, 'missing.conf'), 'smbd', 'reload-config'])
    const broken = translateSamba(failed(conf)) as HostdError
    expect(broken.code).toBe('HOSTD_STORAGE_SMB_CONF_INVALID')
    expect(broken.message).toContain('run testparm')
    // Where systemd is not PID 1 (this machine, most containers), systemctl says "Failed to connect to bus".
    const systemctl = await run('systemctl', ['reload', 'smbd'])
    const text = /Failed to connect to bus/.test(systemctl) ? systemctl : 'Failed to connect to bus: Host is down'
    const bus = translateSamba(failed(text)) as HostdError
    expect(bus.code).toBe('HOSTD_STORAGE_SERVICE_MANAGER_UNREACHABLE')
    expect(bus.details?.raw).toContain('Failed to connect to bus')
    const missing = translateSamba(
      new HostdError('HOSTD_HELPER_PROGRAM_MISSING', 501, 'smbcontrol is not installed on this host'),
    )
    expect((missing as HostdError).code).toBe('HOSTD_STORAGE_SAMBA_MISSING')
    const other = new HostdError('HOSTD_HELPER_ACTION_FAILED', 500, 'something else')
    expect(translateSamba(other)).toBe(other)
  })
})
