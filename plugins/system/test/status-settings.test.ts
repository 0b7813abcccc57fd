import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createSystemPlugin } from '../src/index.ts'

/**
 * What the overview's Updates card and the system page's settings rely on: a reboot required (a stand-in
 * reboot-required file: this machine has none), the time zones the system knows (the real tzdata), SSH when it is
 * not installed (a stand-in sshd path that does not exist), and timedatectl's real failure on a host without systemd
 * turned into an error that names the cause.
 */
describe('system status, time zones, SSH not installed, errors translated', () => {
  let dir: string
  let dry: RunningHelper
  let t: TestKernel
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-system-status-'))
    dry = await startHelper({ dryRun: true })
    t = await startTestKernel({
      plugins: [createSystemPlugin({ rebootFile: join(dir, 'reboot-required'), sshdPath: join(dir, 'no-sshd') })],
      env: { HOSTD_HELPER_SOCKET: dry.socket },
    })
  })
  afterAll(async () => {
    await t.close()
    await dry.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('says whether a reboot is required, and by which packages; updates waiting are unknown without the packages plugin', async () => {
    const status = async () => (await t.inject({ url: '/api/system/status', as: 'viewer' })).json()
    expect(await status()).toEqual({
      rebootRequired: false,
      rebootPackages: [],
      updatesWaiting: null,
      updatesCheckedAt: null,
    })
    await writeFile(join(dir, 'reboot-required'), '*** System restart required ***\n')
    await writeFile(join(dir, 'reboot-required.pkgs'), 'linux-image-6.1.0-30-amd64\nlibc6\nlibc6\n')
    expect(await status()).toMatchObject({
      rebootRequired: true,
      rebootPackages: ['linux-image-6.1.0-30-amd64', 'libc6'],
    })
  })

  it('lists the zones tzdata knows (zones and links), each a real zoneinfo file; an unknown zone is refused before the helper', async () => {
    const { zones } = (await t.inject({ url: '/api/system/timezones', as: 'viewer' })).json() as { zones: string[] }
    const index = readFileSync('/usr/share/zoneinfo/tzdata.zi', 'utf8')
    expect(zones.length).toBe(
      new Set([...index.matchAll(/^Z (\S+)/gm), ...index.matchAll(/^L \S+ (\S+)/gm)].map((m) => m[1]).concat('UTC'))
        .size,
    )
    expect(zones).toEqual([...zones].sort())
    for (const zone of ['UTC', 'Europe/Paris', 'America/New_York', 'US/Eastern']) expect(zones).toContain(zone)
    for (const zone of zones) expect(existsSync(join('/usr/share/zoneinfo', zone)), zone).toBe(true)

    const bad = await t.inject({
      method: 'POST',
      url: '/api/system/privileged/timezone',
      payload: { choice: 'set', value: 'Mars/Olympus' },
      as: 'admin',
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().message).toMatch(/"Mars\/Olympus" is not one/)
    expect((await dry.log()).some((e) => e.action === 'timezone.set')).toBe(false)
    const good = await t.inject({
      method: 'POST',
      url: '/api/system/privileged/timezone',
      payload: { choice: 'set', value: 'Europe/Paris' },
      as: 'admin',
    })
    expect(good.json()).toMatchObject({ dryRun: true, argv: ['timedatectl', 'set-timezone', 'Europe/Paris'] })
  })

  it('SSH not installed: no on/off offered, a note on what to do, and turning it on is refused without the helper', async () => {
    const list = (await t.inject({ url: '/api/system/privileged', as: 'viewer' })).json()
    expect(list.actions.find((a: { key: string }) => a.key === 'ssh')).toEqual({
      key: 'ssh',
      title: 'SSH server',
      choices: [],
      state: 'not-installed',
      note: expect.stringMatching(/openssh-server.*Packages page/),
    })
    const on = await t.inject({
      method: 'POST',
      url: '/api/system/privileged/ssh',
      payload: { choice: 'on' },
      as: 'admin',
    })
    expect([on.statusCode, on.json().error]).toEqual([409, 'HOSTD_SYSTEM_NOT_INSTALLED'])
    expect((await dry.log()).some((e) => e.action === 'ssh.set')).toBe(false)
  })

  // On a host WITH systemd this would really switch network time: it runs only where timedatectl cannot work.
  it.skipIf(existsSync('/run/systemd/system'))(
    "timedatectl's real failure without systemd becomes HOSTD_SYSTEM_NO_SYSTEMD, its words under details",
    async () => {
      const real = await startHelper()
      const k = await startTestKernel({ plugins: [createSystemPlugin()], env: { HOSTD_HELPER_SOCKET: real.socket } })
      try {
        const res = await k.inject({
          method: 'POST',
          url: '/api/system/privileged/ntp',
          payload: { choice: 'on' },
          as: 'admin',
        })
        expect(res.statusCode).toBe(409)
        expect(res.json()).toMatchObject({
          error: 'HOSTD_SYSTEM_NO_SYSTEMD',
          message: /Network time \(NTP\) cannot be changed from hostd: this host was not started with systemd/,
          details: { raw: /timedatectl failed \(exit 1\): Failed to connect to bus/ },
        })
      } finally {
        await k.close()
        await real.stop()
      }
    },
  )
})
