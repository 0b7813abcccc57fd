import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { storagePlugin } from '../src/index.ts'
import { startStorageHelper, type StorageHelper } from './support/storage-helper.ts'

/**
 * Mounting SMB shares. This machine's kernel has no cifs module, so `mount -t cifs` cannot succeed here: the real
 * helper runs in dry-run mode and the test checks everything up to the exact argument vector it would run and the
 * credentials file it wrote (0600, the password never on a command line and never in the helper's log).
 */
describe('storage: network share mount (helper dry run: no cifs in this kernel)', () => {
  let base: string
  let helper: StorageHelper
  let t: TestKernel
  const PASSWORD = 'p@ss,word=x;$(id) "quoted"'
  const uid = process.getuid!()
  const gid = process.getgid!()

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'hostd-storage-mount-'))
    helper = await startStorageHelper(
      { HOSTD_HELPER_MOUNT_ROOT: join(base, 'mnt'), HOSTD_HELPER_CREDENTIALS_DIR: join(base, 'creds') },
      { dryRun: true },
    )
    t = await startTestKernel({
      plugins: [storagePlugin({ roots: [{ name: 'files', path: base }], mountRoot: join(base, 'mnt') })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
  })
  afterAll(async () => {
    await t?.close()
    await helper?.stop()
    await rm(base, { recursive: true, force: true })
  })

  const mount = (payload: Record<string, unknown>) =>
    t.inject({ method: 'POST', url: '/api/storage/mount', as: 'admin', payload })
  const lastArgv = async (action: string) => (await helper.log()).findLast((e) => e.action === action)

  it('mounts smb://server/share with credentials: exact argv, a 0600 credentials file, no password in argv or log', async () => {
    const res = await mount({
      url: 'smb://nas.example/Media%20Files',
      name: 'media',
      username: 'alice',
      password: PASSWORD,
      domain: 'WORKGROUP',
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({
      share: {
        name: 'media',
        server: 'nas.example',
        share: 'Media Files',
        username: 'alice',
        domain: 'WORKGROUP',
        readOnly: false,
        mountpoint: join(base, 'mnt', 'media'),
        mounted: false,
      },
    })
    const cred = join(base, 'creds', 'media.cred')
    const entry = await lastArgv('storage.mount')
    expect(entry).toMatchObject({ outcome: 'dry-run' })
    expect(entry!.argv).toEqual([
      'mount',
      '-t',
      'cifs',
      '//nas.example/Media Files',
      join(base, 'mnt', 'media'),
      '-o',
      `credentials=${cred},uid=${uid},gid=${gid},file_mode=0644,dir_mode=0755,nosuid,nodev,noexec,rw`,
    ])
    expect(entry!.args.password).toBe('<redacted>')
    expect(await readFile(cred, 'utf8')).toBe(`username=alice\npassword=${PASSWORD}\ndomain=WORKGROUP\n`)
    expect((await stat(cred)).mode & 0o777).toBe(0o600)
    expect((await stat(join(base, 'creds'))).mode & 0o777).toBe(0o700)
    expect(await readFile(join(helper.dir, 'helper.log'), 'utf8')).not.toContain('p@ss')
    const audit = (await t.inject({ url: '/api/audit?range=24h&limit=50', as: 'admin' })).json().items
    const logged = audit.find((e: { action: string }) => e.action === 'storage.mount')
    expect(logged.target).toBe('//nas.example/Media Files')
    expect(JSON.stringify(logged)).not.toContain('p@ss')
  })

  it('mounts a guest share read-only from server and share', async () => {
    const res = await mount({ server: '192.0.2.10', share: 'public', name: 'pub', readOnly: true })
    expect(res.statusCode, res.body).toBe(200)
    expect((await lastArgv('storage.mount'))!.argv).toEqual([
      'mount',
      '-t',
      'cifs',
      '//192.0.2.10/public',
      join(base, 'mnt', 'pub'),
      '-o',
      `guest,uid=${uid},gid=${gid},file_mode=0644,dir_mode=0755,nosuid,nodev,noexec,ro`,
    ])
    expect(existsSync(join(base, 'creds', 'pub.cred'))).toBe(false)
    const overview = (await t.inject({ url: '/api/storage', as: 'viewer' })).json()
    expect(overview.shares.map((s: { name: string }) => s.name)).toEqual(['media', 'pub'])
  })

  it('refuses values that could inject mount options with 400, and the helper runs nothing', async () => {
    const before = (await helper.log()).length
    const bad: Record<string, unknown>[] = [
      { server: 'nas,guest', share: 's', name: 'a' },
      { server: 'nas', share: 's,uid=0', name: 'a' },
      { server: 'nas', share: 's\nx', name: 'a' },
      { server: '-oremount', share: 's', name: 'a' },
      { server: 'nas', share: '-s', name: 'a' },
      { server: 'nas', share: 's', name: '-o' },
      { server: 'nas', share: 's', name: '../etc' },
      { server: 'nas', share: 's', name: 'a', username: 'bob,uid=0' },
      { server: 'nas', share: 's', name: 'a', username: 'bob=1' },
      { server: 'nas', share: 's', name: 'a', username: 'bob', password: 'line\nusername=root' },
      { server: 'nas', share: 's', name: 'a', domain: 'W,sec=none' },
      { server: 'nas', share: 's', name: 'a', password: 'no user' },
      { url: 'smb://nas/share,guest', name: 'a' },
      { url: 'smb://nas/share%2Cuid%3D0', name: 'a' },
      { url: 'smb://nas/sh%0Aare', name: 'a' },
      { url: 'smb://-oro/share', name: 'a' },
      { url: 'http://nas/share', name: 'a' },
      { url: 'smb://nas/share/sub', name: 'a' },
      { url: 'smb://nas/share', server: 'nas', name: 'a' },
      { name: 'a' },
    ]
    for (const body of bad) {
      const res = await mount(body)
      expect(res.statusCode, JSON.stringify(body)).toBe(400)
      expect(res.json().error).toMatch(/^HOSTD_/)
    }
    expect((await helper.log()).length).toBe(before)
    // The helper refuses the same on its own, and a password that would add a line to the credentials file.
    for (const args of [
      { server: 'nas', share: 's', name: 'a', username: 'u', password: 'x\nusername=root' },
      { server: 'nas', share: 's,guest', name: 'a' },
      { server: 'nas', share: 's', name: 'a', password: 'nouser' },
    ]) {
      expect(await helper.call('storage.mount', args), JSON.stringify(args)).toMatchObject({ ok: false, status: 400 })
    }
    expect((await helper.log()).slice(before).some((e) => e.argv)).toBe(false)
    expect((await mount({ server: 'nas', share: 's', name: 'media' })).statusCode).toBe(409)
  })

  it('unmounts: exact argv, the credentials file is removed, the share is gone from the overview; unknown is 404', async () => {
    const res = await t.inject({ method: 'POST', url: '/api/storage/unmount', as: 'admin', payload: { name: 'media' } })
    expect(res.statusCode, res.body).toBe(204)
    expect((await lastArgv('storage.unmount'))!.argv).toEqual(['umount', join(base, 'mnt', 'media')])
    expect(existsSync(join(base, 'creds', 'media.cred'))).toBe(false)
    const overview = (await t.inject({ url: '/api/storage', as: 'viewer' })).json()
    expect(overview.shares.map((s: { name: string }) => s.name)).toEqual(['pub'])
    expect(
      (await t.inject({ method: 'POST', url: '/api/storage/unmount', as: 'admin', payload: { name: 'media' } }))
        .statusCode,
    ).toBe(404)
  })
})
