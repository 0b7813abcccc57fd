import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createNetworkPlugin } from '../src/index.ts'
import { translateNmError } from '../src/nmcli.ts'
import { startNetworkManager, type NetworkManagerUnderTest } from './nm-namespace.ts'

/**
 * The network plugin against a real NetworkManager (own network namespace, private D-Bus, udhcpd in a second
 * namespace) through the real root helper, whose D-Bus address is its own setting. Every assertion about the
 * host's state reads nmcli directly, not the plugin.
 */
const NAME = 'Office LAN'
const URL_NAME = encodeURIComponent(NAME)
const BASE = '/api/system/network/services'
const FIELDS =
  'ipv4.method,ipv4.addresses,ipv4.gateway,ipv4.dns,connection.autoconnect,GENERAL.STATE,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS'

async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const value = await probe()
    if (ok(value)) return value
    if (attempt > 200) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('network plugin (real NetworkManager, real helper)', () => {
  let nm: NetworkManagerUnderTest
  let helper: RunningHelper
  let t: TestKernel
  let admin: { token: string; username: string }

  const post = (path: string, body: unknown) =>
    t.inject({ method: 'POST', url: `${BASE}/${path}`, as: { token: admin.token }, payload: body as object })
  const state = () => nm.fields(NAME, FIELDS)
  const activated = () => until('activation', state, (f) => f['GENERAL.STATE'] === 'activated')

  beforeAll(async () => {
    nm = await startNetworkManager()
    await nm.nmcli(
      'connection',
      'add',
      'type',
      'ethernet',
      'ifname',
      nm.device,
      'con-name',
      NAME,
      'ipv4.method',
      'manual',
      'ipv4.addresses',
      '10.77.0.2/24',
      'ipv4.gateway',
      '10.77.0.1',
      'ipv4.dns',
      '10.77.0.1',
      'ipv6.method',
      'disabled',
    )
    await activated()
    helper = await startHelper({ dbusSystemBus: nm.busAddress })
    t = await startTestKernel({
      plugins: [createNetworkPlugin({ confirmSeconds: 60 })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    admin = await t.login('admin', 'new-admin')
  }, 90_000)
  afterAll(async () => {
    await t?.close()
    await helper?.stop()
    await nm?.stop()
  })

  it('lists the connection as a Network service, as nmcli reports it, without loopback', async () => {
    const res = await t.inject({ url: BASE, as: { token: admin.token } })
    expect(res.statusCode, res.body).toBe(200)
    const services = res.json() as { name: string }[]
    expect(services.map((s) => s.name)).toEqual([NAME])
    const f = await state()
    expect(services[0]).toEqual({
      name: NAME,
      hardwarePort: 'Ethernet',
      device: nm.device,
      enabled: f['GENERAL.STATE'] === 'activated',
      dhcp: f['ipv4.method'] === 'auto',
      ipv4: f['IP4.ADDRESS[1]']!.split('/')[0],
      subnetMask: '255.255.255.0',
      router: f['IP4.GATEWAY'],
      dnsServers: [f['IP4.DNS[1]']],
    })
  })

  it('sets DNS servers; nmcli shows them configured and in use; audited with before and after', async () => {
    const res = await post(`${URL_NAME}/dns`, { servers: ['10.77.0.53', '9.9.9.9'] })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ service: { name: NAME, dnsServers: ['10.77.0.53', '9.9.9.9'] }, confirm: null })
    const f = await activated()
    expect(f['ipv4.dns']).toBe('10.77.0.53,9.9.9.9')
    expect([f['IP4.DNS[1]'], f['IP4.DNS[2]']]).toEqual(['10.77.0.53', '9.9.9.9'])
    const audit = (await t.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items as {
      action: string
      username: string
      detail: any
    }[]
    const entry = audit.find((e) => e.action === 'network.dns')
    expect(entry).toMatchObject({
      username: 'new-admin',
      detail: { before: { dnsServers: ['10.77.0.1'] }, after: { dnsServers: ['10.77.0.53', '9.9.9.9'] } },
    })
  })

  it('sets a manual IPv4 address with confirm-or-revert; once confirmed, nmcli shows it', async () => {
    const res = await post(`${URL_NAME}/ipv4`, {
      dhcp: false,
      ipv4: '10.77.0.20',
      subnetMask: '255.255.255.0',
      router: '10.77.0.1',
    })
    expect(res.statusCode, res.body).toBe(200)
    const body = res.json()
    expect(body.service).toMatchObject({
      dhcp: false,
      ipv4: '10.77.0.20',
      subnetMask: '255.255.255.0',
      router: '10.77.0.1',
    })
    expect(body.confirm).toMatchObject({ service: NAME, confirmPath: `${BASE}/${URL_NAME}/confirm` })
    expect(
      (await t.inject({ method: 'POST', url: body.confirm.confirmPath, as: { token: admin.token } })).statusCode,
    ).toBe(204)
    const f = await activated()
    expect([f['ipv4.method'], f['ipv4.addresses'], f['ipv4.gateway'], f['IP4.ADDRESS[1]']]).toEqual([
      'manual',
      '10.77.0.20/24',
      '10.77.0.1',
      '10.77.0.20/24',
    ])
    expect((await post(`${URL_NAME}/confirm`, undefined)).statusCode).toBe(404) // nothing left to confirm
  })

  it('switches to DHCP and gets a lease from udhcpd in the other namespace', async () => {
    const res = await post(`${URL_NAME}/ipv4`, { dhcp: true })
    expect(res.statusCode, res.body).toBe(200)
    expect((await post(`${URL_NAME}/confirm`, undefined)).statusCode).toBe(204)
    const f = await until('a DHCP lease', state, (v) => /^10\.77\.0\.1(0[0-9]|10)\/24$/.test(v['IP4.ADDRESS[1]'] ?? ''))
    expect([f['ipv4.method'], f['ipv4.addresses'], f['IP4.GATEWAY']]).toEqual(['auto', '', '10.77.0.1'])
    const listed = (await t.inject({ url: BASE, as: { token: admin.token } })).json()[0]
    expect(listed).toMatchObject({ dhcp: true, ipv4: f['IP4.ADDRESS[1]']!.split('/')[0], router: '10.77.0.1' })
  })

  it('disables and enables the service; the answer is { services }', async () => {
    const off = await post(`${URL_NAME}/enabled`, { enabled: false })
    expect(off.statusCode, off.body).toBe(200)
    expect(off.json().services).toEqual([expect.objectContaining({ name: NAME, enabled: false })])
    if (off.json().confirm) expect((await post(`${URL_NAME}/confirm`, undefined)).statusCode).toBe(204)
    const down = await state()
    expect([down['GENERAL.STATE'] ?? '', down['connection.autoconnect']]).toEqual(['', 'no'])

    const on = await post(`${URL_NAME}/enabled`, { enabled: true })
    expect(on.statusCode, on.body).toBe(200)
    expect(on.json()).toMatchObject({ services: [{ name: NAME, enabled: true }], confirm: null })
    const up = await activated()
    expect(up['connection.autoconnect']).toBe('yes')
  })

  it('tells the pending change (GET /api/system/network/pending) and reverts it at once when asked', async () => {
    const previous = await activated()
    const res = await post(`${URL_NAME}/ipv4`, {
      dhcp: false,
      ipv4: '10.77.0.40',
      subnetMask: '255.255.255.0',
      router: '10.77.0.1',
    })
    expect(res.statusCode, res.body).toBe(200)
    const pending = () => t.inject({ url: '/api/system/network/pending', as: { token: admin.token } })
    expect((await pending()).json()).toEqual({ confirm: res.json().confirm })
    expect((await state())['ipv4.addresses']).toBe('10.77.0.40/24')
    expect((await post(`${URL_NAME}/revert`, undefined)).statusCode).toBe(204)
    const f = await until(
      'the revert',
      state,
      (v) => v['ipv4.method'] === previous['ipv4.method'] && v['IP4.ADDRESS[1]'] !== '10.77.0.40/24',
    )
    expect(f['ipv4.addresses']).toBe(previous['ipv4.addresses'])
    expect((await pending()).json()).toEqual({ confirm: null })
    expect((await post(`${URL_NAME}/revert`, undefined)).statusCode).toBe(404)
    expect((await post(`${URL_NAME}/confirm`, undefined)).statusCode).toBe(404)
    const audit = (await t.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items as {
      action: string
      username: string
      detail: any
    }[]
    expect(audit.find((e) => e.action === 'network.revert')).toMatchObject({
      username: 'new-admin',
      detail: { reason: 'reverted by an admin', before: { ipv4: '10.77.0.40' } },
    })
  })

  it('refuses bad input with 400 (or 404 for an unknown service) and changes nothing', async () => {
    const before = await state()
    const logBefore = (await helper.log()).length
    const cases: [string, unknown, number][] = [
      [`${encodeURIComponent('0;id')}/dns`, { servers: ['10.77.0.53'] }, 400],
      [`${encodeURIComponent('-oProxyCommand=id')}/dns`, { servers: ['10.77.0.53'] }, 400],
      [`${encodeURIComponent('a\nid')}/ipv4`, { dhcp: true }, 400],
      [`${URL_NAME}/dns`, { servers: ['$(id)'] }, 400],
      [`${URL_NAME}/dns`, { servers: ['1.1.1.1', '1.0.0.1', '8.8.8.8', '8.8.4.4'] }, 400],
      [`${URL_NAME}/ipv4`, { dhcp: false, ipv4: '10.77.0.9' }, 400],
      [`${URL_NAME}/ipv4`, { dhcp: false, ipv4: '10.77.0.9', subnetMask: '255.0.255.0' }, 400],
      [`${URL_NAME}/ipv4`, { dhcp: false, ipv4: '10.77.0.9`id`', subnetMask: '255.255.255.0' }, 400],
      [`${URL_NAME}/ipv4`, { dhcp: true, ipv4: '10.77.0.9' }, 400],
      [`${URL_NAME}/enabled`, { enabled: 'no' }, 400],
      [`${encodeURIComponent('No such LAN')}/dns`, { servers: [] }, 404],
    ]
    for (const [path, body, status] of cases) {
      const res = await post(path, body)
      expect(res.statusCode, `${path} ${JSON.stringify(body)}: ${res.body}`).toBe(status)
      expect(res.json().error).toMatch(/^HOSTD_/)
    }
    expect(await state()).toEqual(before)
    const changing = (await helper.log()).slice(logBefore).filter((e) => !['nm.list', 'nm.show'].includes(e.action))
    expect(changing).toEqual([])
  })

  it('answers 423 on every gated route while the helper is stopped, and works again once it is back', async () => {
    const routes = t.kernel.registry.routeTable().filter((r) => r.path.startsWith(BASE))
    expect(routes).toHaveLength(6)
    const before = await state()
    await helper.stop(true)
    await new Promise((r) => setTimeout(r, 1100)) // past the kernel's 1 s probe cache
    for (const route of routes) {
      const res = await t.inject({
        method: route.method as 'POST',
        url: route.path.replace(':service', URL_NAME),
        as: { token: admin.token },
        ...(route.method === 'POST' ? { payload: { servers: ['10.77.0.99'] } } : {}),
      })
      expect(res.statusCode, `${route.method} ${route.path}`).toBe(423)
      expect(res.json().error).toBe('HOSTD_HELPER_UNAVAILABLE')
    }
    expect(await state()).toEqual(before)
    helper = await startHelper({ dbusSystemBus: nm.busAddress, dir: helper.dir })
    await new Promise((r) => setTimeout(r, 1100))
    expect((await t.inject({ url: BASE, as: { token: admin.token } })).statusCode).toBe(200)
  })

  it("answers 503 naming the cause and the next step when NetworkManager or its bus is not there, nmcli's words in details", async () => {
    // A real system bus without NetworkManager on it (nmcli: "NetworkManager is not running"), and no bus at all.
    const bus = spawn('dbus-daemon', ['--session', '--nofork', '--print-address=1'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const address = await new Promise<string>((r) => bus.stdout!.once('data', (d: Buffer) => r(d.toString().trim())))
    const cases = [
      {
        bus: address,
        error: 'HOSTD_NETWORK_BACKEND_UNAVAILABLE',
        message: /systemctl start NetworkManager/,
        raw: /NetworkManager is not running/,
      },
      {
        bus: `unix:path=${helper.dir}/no-such-bus`,
        error: 'HOSTD_NETWORK_BUS_UNAVAILABLE',
        message: /systemctl start dbus/,
        raw: /Could not create NMClient/,
      },
    ]
    try {
      for (const c of cases) {
        const lonely = await startHelper({ dbusSystemBus: c.bus })
        const k = await startTestKernel({
          plugins: [createNetworkPlugin()],
          env: { HOSTD_HELPER_SOCKET: lonely.socket },
        })
        try {
          const res = await k.inject({ url: BASE, as: 'admin' })
          expect(res.statusCode).toBe(503)
          expect(res.json()).toMatchObject({ error: c.error, message: c.message, details: { raw: c.raw } })
        } finally {
          await k.close()
          await lonely.stop()
        }
      }
    } finally {
      bus.kill()
    }
  })

  it('reverts an unconfirmed change: NetworkManager restores the previous settings after the confirm window', async () => {
    const short = await startTestKernel({
      plugins: [createNetworkPlugin({ confirmSeconds: 2 })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    try {
      const previous = await activated()
      const res = await short.inject({
        method: 'POST',
        url: `${BASE}/${URL_NAME}/ipv4`,
        as: 'admin',
        payload: { dhcp: false, ipv4: '10.77.0.30', subnetMask: '255.255.255.0', router: '10.77.0.1' },
      })
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json().confirm).not.toBeNull()
      expect((await state())['ipv4.addresses']).toBe('10.77.0.30/24') // applied...
      const reverted = await until(
        'the revert',
        state,
        (f) => f['ipv4.method'] === previous['ipv4.method'] && f['ipv4.addresses'] === previous['ipv4.addresses'],
      )
      expect(reverted['ipv4.addresses']).not.toBe('10.77.0.30/24') // ...and rolled back without a confirm
      const late = await short.inject({ method: 'POST', url: `${BASE}/${URL_NAME}/confirm`, as: 'admin' })
      expect([404, 409]).toContain(late.statusCode)
      const audit = await until(
        'the revert audit entry',
        async () =>
          (await short.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items as {
            action: string
            detail: any
          }[],
        (entries) => entries.some((e) => e.action === 'network.revert'),
      )
      expect(audit.find((e) => e.action === 'network.revert')!.detail).toMatchObject({ before: { ipv4: '10.77.0.30' } })
    } finally {
      await short.close()
    }
  })
})

describe("nmcli's other known failures (its recorded words)", () => {
  it.each([
    [
      "nmcli failed (exit 10): Error: unknown connection 'Office LAN'.",
      'HOSTD_NETWORK_SERVICE_NOT_FOUND',
      /no connection named "Office LAN"/,
    ],
    [
      'nmcli failed (exit 10): Error: Office LAN - no such connection profile.',
      'HOSTD_NETWORK_SERVICE_NOT_FOUND',
      /Office LAN/,
    ],
    [
      'nmcli failed (exit 4): Error: Connection activation failed: No suitable device found for this connection ' +
        '(device eth0 not available because device is strictly unmanaged).',
      'HOSTD_NETWORK_ACTIVATION_FAILED',
      /could not bring the connection up: No suitable device found .*Check that the cable/,
    ],
  ])('%s', (raw, code, message) => {
    const err = translateNmError(raw)!
    expect([err.code, err.details]).toEqual([code, { raw }])
    expect(err.message).toMatch(message)
  })
  it('leaves other failures as they are', () => {
    expect(translateNmError('nmcli failed (exit 2): Error: invalid IP address.')).toBeNull()
  })
})
