import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createSystemPlugin } from '../src/index.ts'

/**
 * Power actions and Admin Privileges through the real root helper in dry-run mode: these would restart this
 * machine or change its name, so the helper answers the exact argument vector instead of running it. The sleep
 * states file and the X socket folder are stand-ins where noted (this machine has neither).
 */
describe('system plugin: power and privileged actions (helper in dry-run)', () => {
  let helper: RunningHelper
  let t: TestKernel
  let dir: string
  const auditItems = async () =>
    (await t.inject({ url: '/api/audit?range=24h&limit=100', as: 'admin' })).json().items as {
      action: string
      result: string
      detail: any
    }[]

  beforeAll(async () => {
    helper = await startHelper({ dryRun: true })
    dir = await mkdtemp(join(tmpdir(), 'hostd-system-'))
    t = await startTestKernel({ plugins: [createSystemPlugin()], env: { HOSTD_HELPER_SOCKET: helper.socket } })
  })
  afterAll(async () => {
    await t.close()
    await helper.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it.each([
    ['restart', ['systemctl', 'reboot']],
    ['shutdown', ['systemctl', 'poweroff']],
  ])('%s answers the exact argument vector and is audited', async (action, argv) => {
    const res = await t.inject({ method: 'POST', url: `/api/system/power/${action}`, as: 'admin' })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ action, dryRun: true, argv })
    expect((await helper.log()).findLast((e) => e.action === `power.${action}`)).toMatchObject({
      outcome: 'dry-run',
      argv,
    })
    expect((await auditItems()).find((e) => e.action === `power.${action}`)).toBeTruthy()
  })

  it('sleep: 409 when the kernel offers no sleep state, the argument vector when it does', async () => {
    const real = (await readFile('/sys/power/state', 'utf8').catch(() => '')).split(/\s+/)
    const res = await t.inject({ method: 'POST', url: '/api/system/power/sleep', as: 'admin' })
    if (real.includes('mem') || real.includes('freeze'))
      expect(res.json()).toEqual({ action: 'sleep', dryRun: true, argv: ['systemctl', 'suspend'] })
    else expect([res.statusCode, res.json().error]).toEqual([409, 'HOSTD_POWER_SLEEP_UNSUPPORTED'])

    // Stand-in for /sys/power/state of a machine that can suspend.
    await writeFile(join(dir, 'state'), 'freeze mem disk\n')
    const k = await startTestKernel({
      plugins: [createSystemPlugin({ powerStatePath: join(dir, 'state') })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    try {
      const ok = await k.inject({ method: 'POST', url: '/api/system/power/sleep', as: 'admin' })
      expect(ok.json()).toEqual({ action: 'sleep', dryRun: true, argv: ['systemctl', 'suspend'] })
    } finally {
      await k.close()
    }
  })

  it('display-sleep: 409 without a display, xset on the first display when there is one', async () => {
    const none = await startTestKernel({
      plugins: [createSystemPlugin({ x11SocketDir: join(dir, 'no-x11') })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    const before = (await helper.log()).length
    try {
      const res = await none.inject({ method: 'POST', url: '/api/system/power/display-sleep', as: 'admin' })
      expect([res.statusCode, res.json().error]).toEqual([409, 'HOSTD_POWER_NO_DISPLAY'])
      expect((await helper.log()).length).toBe(before) // refused before the helper was asked
    } finally {
      await none.close()
    }
    // Stand-in X socket folder with display :1.
    await writeFile(join(dir, 'X1'), '')
    const withX = await startTestKernel({
      plugins: [createSystemPlugin({ x11SocketDir: dir })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    try {
      const res = await withX.inject({ method: 'POST', url: '/api/system/power/display-sleep', as: 'admin' })
      expect(res.json()).toEqual({
        action: 'display-sleep',
        dryRun: true,
        argv: ['xset', '-display', ':1', 'dpms', 'force', 'off'],
      })
    } finally {
      await withX.close()
    }
  })

  it('lists the privileged actions with their current state and the helper status', async () => {
    const res = await t.inject({ url: '/api/system/privileged', as: 'viewer' })
    expect(res.statusCode, res.body).toBe(200)
    const body = res.json()
    expect(body.helper).toEqual({ available: true, dryRun: true })
    expect(body.actions.map((a: { key: string }) => a.key)).toEqual(['ssh', 'hostname', 'timezone', 'ntp'])
    expect(body.actions.find((a: { key: string }) => a.key === 'hostname')).toMatchObject({
      choices: ['set'],
      state: hostname(),
    })
  })

  it.each([
    ['hostname', { choice: 'set', value: 'hostd-test-box' }, ['hostnamectl', 'set-hostname', 'hostd-test-box']],
    ['timezone', { choice: 'set', value: 'Europe/Paris' }, ['timedatectl', 'set-timezone', 'Europe/Paris']],
    ['ssh', { choice: 'on' }, ['systemctl', 'enable', '--now', 'ssh.service']],
    ['ssh', { choice: 'off' }, ['systemctl', 'disable', '--now', 'ssh.service']],
    ['ntp', { choice: 'off' }, ['timedatectl', 'set-ntp', 'false']],
  ])(
    '%s %j answers the argument vector, changes nothing, and is audited with before and after',
    async (key, body, argv) => {
      const list = (await t.inject({ url: '/api/system/privileged', as: 'viewer' })).json()
      const state = list.actions.find((a: { key: string }) => a.key === key).state
      const res = await t.inject({ method: 'POST', url: `/api/system/privileged/${key}`, as: 'admin', payload: body })
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json()).toEqual({ key, before: state, after: state, dryRun: true, argv })
      expect(hostname()).not.toBe('hostd-test-box')
      const entry = (await auditItems()).find((e) => e.action === `privileged.${key}`)
      expect(entry?.detail).toMatchObject({ choice: body.choice, before: state, after: state, dryRun: true, argv })
    },
  )

  it('refuses bad input with 400 (404 for an unknown action) before the helper is asked', async () => {
    const before = (await helper.log()).length
    const cases: [string, unknown, number][] = [
      ['hostname', { choice: 'on' }, 400],
      ['hostname', { choice: 'set' }, 400],
      ['ssh', { choice: 'on', value: 'x' }, 400],
      ['ssh', { choice: 'maybe' }, 400],
      ['timezone', { choice: 'set', value: '../../etc/passwd' }, 400],
      ['reboot', { choice: 'on' }, 404],
      ['hostname', { choice: 'set', value: 'box', extra: 1 }, 400],
    ]
    for (const bad of ['0;id', '$(id)', '`id`', 'a|id', 'a\nid', '-oProxyCommand=id']) {
      cases.push(['hostname', { choice: 'set', value: bad }, 400], ['timezone', { choice: 'set', value: bad }, 400])
    }
    for (const [key, body, status] of cases) {
      const res = await t.inject({
        method: 'POST',
        url: `/api/system/privileged/${key}`,
        as: 'admin',
        payload: body as object,
      })
      expect(res.statusCode, `${key} ${JSON.stringify(body)}`).toBe(status)
      expect(res.json().error).toMatch(/^HOSTD_/)
    }
    expect((await helper.log()).length).toBe(before)
  })

  it('answers 423 on every helper route while the helper is stopped; the list says so', async () => {
    await helper.stop(true)
    await new Promise((r) => setTimeout(r, 1100)) // past the kernel's 1 s probe cache
    try {
      const gated = t.kernel.registry
        .routeTable()
        .filter((r) => r.method === 'POST' && /^\/api\/(system\/(power|privileged)|updates)/.test(r.path))
      expect(gated.length).toBe(6)
      for (const route of gated) {
        const res = await t.inject({
          method: 'POST',
          url: route.path.replace(':key', 'ssh'),
          as: 'admin',
          payload: { choice: 'on' },
        })
        expect(res.statusCode, route.path).toBe(423)
      }
      expect((await t.inject({ url: '/api/system/privileged', as: 'viewer' })).json().helper).toEqual({
        available: false,
        dryRun: null,
      })
    } finally {
      helper = await startHelper({ dryRun: true, dir: helper.dir })
    }
  })
})
