import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { request } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createVpnPlugin } from '../src/index.ts'
import { startStandInLocalApi, type StandInLocalApi, type StandInOptions } from './support/localapi-standin.ts'

/**
 * The VPN plugin against a STAND-IN of tailscaled's LocalAPI (test/support/localapi-standin.ts): tailscaled and
 * Tailscale's control plane cannot run here. The stand-in follows tailscale's own handlers and field names; what
 * these tests prove is that hostd speaks that protocol correctly (headers, masked edits, the watch-then-login
 * order, integer bus states) and turns it into the documented API, roles and audit.
 */
const STATE_FIELDS = ['installed', 'running', 'backendState', 'loggedIn', 'peers', 'prefs', 'remoteAccess']

async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const value = await probe()
    if (ok(value)) return value
    if (attempt > 200) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function kernelFor(socketPath: string, loginTimeoutMs = 5000): Promise<TestKernel> {
  return startTestKernel({ plugins: [createVpnPlugin({ socketPath, loginTimeoutMs })] })
}

const ACTIONS = [
  { url: '/api/vpn/settings', body: { ssh: true } },
  { url: '/api/vpn/login', body: undefined },
  { url: '/api/vpn/logout', body: undefined },
  { url: '/api/vpn/connect', body: { up: true } },
]

describe('vpn plugin without tailscaled', () => {
  let dir: string
  let t: TestKernel
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-vpn-none-'))
  })
  afterEach(async () => t?.close())
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('not installed: GET says so with 200; every action is 503 naming the missing socket', async () => {
    const socket = join(dir, 'no-such.sock')
    t = await kernelFor(socket)
    const res = await t.inject({ url: '/api/vpn', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      installed: false,
      running: false,
      backendState: null,
      peers: [],
      prefs: null,
      self: null,
    })
    expect(res.json().message).toContain(socket)
    for (const action of ACTIONS) {
      const r = await t.inject({ method: 'POST', url: action.url, as: 'admin', payload: action.body })
      expect(r.statusCode, action.url).toBe(503)
      expect(r.json(), action.url).toMatchObject({ error: 'HOSTD_VPN_NOT_INSTALLED' })
      expect(r.json().message).toContain(socket)
    }
  })

  it('not running (a socket file nobody answers on): GET says so with 200; actions are 503', async () => {
    const standIn = await startStandInLocalApi()
    await standIn.stop(true)
    t = await kernelFor(standIn.socketPath)
    const res = await t.inject({ url: '/api/vpn', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ installed: true, running: false })
    expect(res.json().message).toMatch(/not running/)
    for (const action of ACTIONS) {
      const r = await t.inject({ method: 'POST', url: action.url, as: 'admin', payload: action.body })
      expect([r.statusCode, r.json().error], action.url).toEqual([503, 'HOSTD_VPN_NOT_RUNNING'])
    }
    await standIn.remove()
  })
})

describe('vpn plugin against the stand-in LocalAPI', () => {
  let standIn: StandInLocalApi
  let t: TestKernel
  let admin: { token: string }
  const get = async (as: 'viewer' | 'admin' = 'viewer') => {
    const res = await t.inject({ url: '/api/vpn', as: as === 'admin' ? admin : 'viewer' })
    expect(res.statusCode, res.body).toBe(200)
    return res.json()
  }
  const post = (url: string, payload?: object) => t.inject({ method: 'POST', url, as: admin, payload })
  const audit = async () =>
    (await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })).json().items as any[]

  beforeAll(async () => {
    standIn = await startStandInLocalApi({ state: 'NeedsLogin' })
    t = await kernelFor(standIn.socketPath)
    admin = await t.login('admin', 'vpn-admin')
  })
  afterAll(async () => {
    await t?.close()
    await standIn?.stop()
    await standIn?.remove()
  })

  it('shows a logged-out node: state, default preferences, no peers', async () => {
    const state = await get()
    expect(state).toMatchObject({
      installed: true,
      running: true,
      message: null,
      version: '1.94.1-t0123456789-g0123456789',
      backendState: 'NeedsLogin',
      loggedIn: false,
      loginPending: false,
      authUrl: null,
      self: null,
      tailnet: null,
      peers: [],
      exitNode: null,
      health: [],
      prefs: {
        acceptRoutes: false,
        acceptDns: true,
        ssh: false,
        shieldsUp: false,
        exitNodeId: '',
        hostname: '',
        wantRunning: false,
        loggedOut: false,
      },
      remoteAccess: { ssh: false, serve: { enabled: false, funnel: false, tcpPorts: [], web: [] } },
    })
  })

  it('speaks the LocalAPI as tailscale clients do: Host local-tailscaled.sock, Tailscale-Cap, never Origin or Referer', () => {
    expect(standIn.requests.length).toBeGreaterThan(0)
    for (const r of standIn.requests) {
      expect(r.headers.host, r.url).toBe('local-tailscaled.sock')
      expect(r.headers['tailscale-cap'], r.url).toBe('145')
      expect(r.headers.origin).toBeUndefined()
      expect(r.headers.referer).toBeUndefined()
    }
  })

  it('logs in: watches the bus first, then asks for the login, and answers the URL; the state becomes Running', async () => {
    standIn.requests.length = 0
    const res = await post('/api/vpn/login')
    expect(res.statusCode, res.body).toBe(200)
    const { authUrl, backendState } = res.json()
    expect(authUrl).toMatch(/^https:\/\/login\.example\.invalid\/a\/[0-9a-f]{12}$/)
    expect(backendState).toBe('NeedsLogin')
    const paths = standIn.requests.map((r) => `${r.method} ${r.url}`)
    expect(paths.indexOf('GET /localapi/v0/watch-ipn-bus?mask=0')).toBeGreaterThanOrEqual(0)
    expect(paths.indexOf('GET /localapi/v0/watch-ipn-bus?mask=0')).toBeLessThan(
      paths.indexOf('POST /localapi/v0/login-interactive'),
    )
    expect(paths).not.toContain('POST /localapi/v0/start') // the backend was started already

    // Pending: admins see the URL, viewers only that a login waits.
    expect(await get('admin')).toMatchObject({ loginPending: true, authUrl })
    expect(await get('viewer')).toMatchObject({ loginPending: true, authUrl: null })
    // Asking again hands out the same URL without a second login.
    expect((await post('/api/vpn/login')).json()).toEqual({ authUrl, backendState: 'NeedsLogin' })
    expect(standIn.requests.filter((r) => r.url === '/localapi/v0/login-interactive')).toHaveLength(1)

    standIn.finishLogin() // the control server's side: the user opened the URL
    const state = await until(
      'Running',
      () => get(),
      (s) => s.backendState === 'Running',
    )
    expect(state).toMatchObject({
      loggedIn: true,
      loginPending: false,
      authUrl: null,
      prefs: { wantRunning: true, loggedOut: false },
    })
    expect(state.self).toEqual({
      id: 'nSELF1CNTRL',
      name: 'homeserver',
      hostName: 'homeserver',
      dnsName: 'homeserver.tail0f00d.ts.net',
      os: 'linux',
      addresses: ['100.101.102.103', 'fd7a:115c:a1e0::1'],
      online: true,
    })
    expect(state.tailnet).toEqual({
      name: 'admin@example.com',
      magicDnsSuffix: 'tail0f00d.ts.net',
      magicDnsEnabled: true,
    })
    expect(state.peers.map((p: any) => p.name)).toEqual(['alices-macbook-pro', 'nas', 'vps-amsterdam'])
    expect(state.peers[0]).toEqual({
      id: 'nLAPTOP1CNTRL',
      name: 'alices-macbook-pro',
      hostName: 'Alices-MacBook-Pro',
      dnsName: 'alices-macbook-pro.tail0f00d.ts.net',
      os: 'macOS',
      addresses: ['100.64.20.2', 'fd7a:115c:a1e0::14'],
      online: false,
      lastSeen: '2026-11-20T21:14:00Z',
      exitNode: false,
      exitNodeOption: false,
      active: false,
      rxBytes: 0,
      txBytes: 0,
      relay: 'fra',
    })
    expect(state.peers[2]).toMatchObject({
      name: 'vps-amsterdam',
      online: true,
      lastSeen: null,
      exitNodeOption: true,
      rxBytes: 5242880,
      txBytes: 1048576,
      active: true,
    })

    const entries = await until('the login audit', audit, (e) => e.some((x) => x.action === 'vpn.login.finished'))
    expect(entries.find((e) => e.action === 'vpn.login.finished')).toMatchObject({
      result: 'success',
      username: 'vpn-admin',
    })
    expect(entries.find((e) => e.action === 'vpn.login')).toMatchObject({
      result: 'success',
      detail: { authUrlIssued: true },
    })
    expect(JSON.stringify(entries)).not.toContain('login.example.invalid') // the URL is never written down
    expect(standIn.watchers()).toBe(0) // the login's bus watch ended with the login
  })

  it('changes every setting with a masked edit: only the fields sent change, and GET shows them', async () => {
    standIn.edits.length = 0
    const res = await post('/api/vpn/settings', {
      acceptRoutes: true,
      acceptDns: false,
      ssh: true,
      shieldsUp: true,
      hostname: 'hostd-box',
    })
    expect(res.statusCode, res.body).toBe(200)
    const expected = {
      acceptRoutes: true,
      acceptDns: false,
      ssh: true,
      shieldsUp: true,
      exitNodeId: '',
      hostname: 'hostd-box',
      wantRunning: true,
      loggedOut: false,
    }
    expect(res.json().prefs).toEqual(expected)
    expect(standIn.edits).toEqual([
      {
        RouteAll: true,
        RouteAllSet: true,
        CorpDNS: false,
        CorpDNSSet: true,
        RunSSH: true,
        RunSSHSet: true,
        ShieldsUp: true,
        ShieldsUpSet: true,
        Hostname: 'hostd-box',
        HostnameSet: true,
      },
    ])
    const state = await get()
    expect(state.prefs).toEqual(expected)
    expect(state.remoteAccess.ssh).toBe(true)
    expect(state.self.hostName).toBe('hostd-box')
    expect(standIn.prefs()).toMatchObject({
      RouteAll: true,
      CorpDNS: false,
      RunSSH: true,
      ShieldsUp: true,
      Hostname: 'hostd-box',
      NetfilterMode: 2,
    })

    // One field at a time leaves the others alone.
    expect((await post('/api/vpn/settings', { shieldsUp: false })).json().prefs).toEqual({
      ...expected,
      shieldsUp: false,
    })
    expect(standIn.edits.at(-1)).toEqual({ ShieldsUp: false, ShieldsUpSet: true })
    expect((await post('/api/vpn/settings', { hostname: '' })).json().prefs.hostname).toBe('')
    expect(
      (await audit()).find((e) => e.action === 'vpn.settings' && e.detail.changes.hostname === 'hostd-box'),
    ).toMatchObject({
      result: 'success',
      username: 'vpn-admin',
      detail: { before: { hostname: '', ssh: false } },
    })
  })

  it('picks an exit node among the peers that offer one, and clears it', async () => {
    const res = await post('/api/vpn/settings', { exitNodeId: 'nEXIT1CNTRL' })
    expect(res.statusCode, res.body).toBe(200)
    expect(standIn.edits.at(-1)).toEqual({
      ExitNodeID: 'nEXIT1CNTRL',
      ExitNodeIDSet: true,
      ExitNodeIP: '',
      ExitNodeIPSet: true,
    })
    const state = await get()
    expect(state.prefs.exitNodeId).toBe('nEXIT1CNTRL')
    expect(state.exitNode).toEqual({
      id: 'nEXIT1CNTRL',
      name: 'vps-amsterdam',
      online: true,
      addresses: ['100.64.10.1', 'fd7a:115c:a1e0::a'],
    })
    expect(state.peers.find((p: any) => p.id === 'nEXIT1CNTRL').exitNode).toBe(true)
    expect((await post('/api/vpn/settings', { exitNodeId: '' })).json()).toMatchObject({
      exitNode: null,
      prefs: { exitNodeId: '' },
    })
  })

  it('refuses invalid settings with 400 and changes nothing', async () => {
    const before = standIn.prefs()
    const edits = standIn.edits.length
    const cases: [object, string][] = [
      [{ exitNodeId: 'nNAS1CNTRL' }, 'HOSTD_VPN_SETTING_INVALID'], // a peer, but not an exit node
      [{ exitNodeId: 'nNOSUCH1CNTRL' }, 'HOSTD_VPN_SETTING_INVALID'],
      [{ ssh: true, exitNodeId: 'nNAS1CNTRL' }, 'HOSTD_VPN_SETTING_INVALID'], // the valid half does not go through either
      [{ hostname: 'bad_name' }, 'HOSTD_REQUEST_INVALID'],
      [{ hostname: '-leading' }, 'HOSTD_REQUEST_INVALID'],
      [{ hostname: 'has.dot' }, 'HOSTD_REQUEST_INVALID'],
      [{ hostname: 'x'.repeat(64) }, 'HOSTD_REQUEST_INVALID'],
      [{ exitNodeId: 'n1;rm' }, 'HOSTD_REQUEST_INVALID'],
      [{ ssh: 'yes' }, 'HOSTD_REQUEST_INVALID'],
      [{ sshh: true }, 'HOSTD_REQUEST_INVALID'],
      [{}, 'HOSTD_REQUEST_INVALID'],
    ]
    for (const [body, code] of cases) {
      const res = await post('/api/vpn/settings', body)
      expect([res.statusCode, res.json().error], JSON.stringify(body)).toEqual([400, code])
    }
    expect((await post('/api/vpn/settings', { exitNodeId: 'nNAS1CNTRL' })).json().message).toMatch(
      /nas .*does not offer to be an exit node/,
    )
    expect(standIn.prefs()).toEqual(before)
    expect(standIn.edits.length).toBe(edits)
  })

  it('disconnects and connects again (WantRunning)', async () => {
    const down = await post('/api/vpn/connect', { up: false })
    expect(down.statusCode, down.body).toBe(200)
    expect(standIn.edits.at(-1)).toEqual({ WantRunning: false, WantRunningSet: true })
    expect(down.json()).toMatchObject({ backendState: 'Stopped', loggedIn: true, prefs: { wantRunning: false } })
    expect((await get()).backendState).toBe('Stopped')
    expect((await post('/api/vpn/connect', { up: true })).json()).toMatchObject({
      backendState: 'Running',
      prefs: { wantRunning: true },
    })
    expect((await post('/api/vpn/connect', {})).statusCode).toBe(400)
  })

  it('refuses every action to viewers and operators (403) and changes nothing', async () => {
    const before = standIn.prefs()
    for (const role of ['viewer', 'operator'] as const) {
      for (const action of ACTIONS) {
        const res = await t.inject({ method: 'POST', url: action.url, as: role, payload: action.body })
        expect([res.statusCode, res.json().error], `${role} ${action.url}`).toEqual([403, 'HOSTD_AUTH_FORBIDDEN'])
      }
    }
    expect(standIn.prefs()).toEqual(before)
    expect(standIn.backendState()).toBe('Running')
  })

  it('logs out: the node key and the preferences go, and connecting needs a login again', async () => {
    const res = await post('/api/vpn/logout')
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({
      backendState: 'NeedsLogin',
      loggedIn: false,
      self: null,
      peers: [],
      exitNode: null,
      prefs: { loggedOut: true, wantRunning: false, ssh: false },
    })
    expect((await get()).backendState).toBe('NeedsLogin')
    const up = await post('/api/vpn/connect', { up: true })
    expect([up.statusCode, up.json().error]).toEqual([409, 'HOSTD_VPN_NEEDS_LOGIN'])
    const actions = (await audit()).map((e) => `${e.action} ${e.result}`)
    for (const a of [
      'vpn.login success',
      'vpn.login.finished success',
      'vpn.settings success',
      'vpn.connect success',
      'vpn.logout success',
    ])
      expect(actions).toContain(a)
  })
})

describe('vpn plugin: what tailscaled refuses, and a login that does not come', () => {
  let standIn: StandInLocalApi
  let t: TestKernel
  async function start(options: StandInOptions, loginTimeoutMs = 5000) {
    standIn = await startStandInLocalApi(options)
    t = await kernelFor(standIn.socketPath, loginTimeoutMs)
  }
  const post = (url: string, payload?: object) => t.inject({ method: 'POST', url, as: 'admin', payload })
  afterEach(async () => {
    await t?.close()
    await standIn?.stop()
    await standIn?.remove()
  })

  it("shows tailscale serve and Funnel, and passes on tailscaled's own refusal as 409", async () => {
    await start({ state: 'Running', funnel: true })
    const state = (await t.inject({ url: '/api/vpn', as: 'viewer' })).json()
    expect(state.remoteAccess.serve).toEqual({
      enabled: true,
      funnel: true,
      tcpPorts: [443],
      web: ['homeserver.tail0f00d.ts.net:443'],
    })
    const res = await post('/api/vpn/settings', { shieldsUp: true })
    expect([res.statusCode, res.json().error]).toEqual([409, 'HOSTD_VPN_REFUSED'])
    expect(res.json().message).toContain('Cannot enable shields-up when Funnel is enabled.')
    expect(standIn.prefs().ShieldsUp).toBe(false)
  })

  it('read-only to hostd (not root, not the operator): GET works, actions are 503 saying how to fix it', async () => {
    await start({ state: 'Running', readOnly: true })
    expect((await t.inject({ url: '/api/vpn', as: 'viewer' })).json()).toMatchObject({
      running: true,
      backendState: 'Running',
    })
    for (const action of [
      { url: '/api/vpn/settings', body: { ssh: true } },
      { url: '/api/vpn/logout' },
      { url: '/api/vpn/connect', body: { up: false } },
    ]) {
      const res = await post(action.url, action.body)
      expect([res.statusCode, res.json().error], action.url).toEqual([503, 'HOSTD_VPN_NOT_PERMITTED'])
      expect(res.json().message).toMatch(/operator/)
    }
    const failed = (await t.inject({ url: '/api/audit?range=all', as: 'admin' }))
      .json()
      .items.find((e: any) => e.action === 'vpn.logout')
    expect(failed).toMatchObject({ result: 'failure' })
    expect(standIn.backendState()).toBe('Running')
  })

  it('starts a backend that never started before asking for the login', async () => {
    await start({ state: 'NoState' })
    const res = await post('/api/vpn/login')
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json().authUrl).toMatch(/^https:\/\/login\.example\.invalid\//)
    const paths = standIn.requests.map((r) => `${r.method} ${r.url}`)
    expect(paths.indexOf('POST /localapi/v0/start')).toBeGreaterThan(
      paths.indexOf('GET /localapi/v0/watch-ipn-bus?mask=0'),
    )
    expect(paths.indexOf('POST /localapi/v0/start')).toBeLessThan(paths.indexOf('POST /localapi/v0/login-interactive'))
  })

  it("answers the control server's refusal as 502 and a silent one as 504, and closes its bus watch", async () => {
    await start({ state: 'NeedsLogin' }, 500)
    standIn.control = { refuses: 'register request: http 403: node not authorized' }
    const refused = await post('/api/vpn/login')
    expect([refused.statusCode, refused.json().error]).toEqual([502, 'HOSTD_VPN_LOGIN_FAILED'])
    expect(refused.json().message).toContain('node not authorized')
    standIn.control = 'silent'
    const silent = await post('/api/vpn/login')
    expect([silent.statusCode, silent.json().error]).toEqual([504, 'HOSTD_VPN_LOGIN_TIMEOUT'])
    await until(
      'the watch to close',
      async () => standIn.watchers(),
      (n) => n === 0,
    )
    const entries = (await t.inject({ url: '/api/audit?range=all', as: 'admin' }))
      .json()
      .items.filter((e: any) => e.action === 'vpn.login')
    expect(entries.map((e: any) => e.result)).toEqual(['failure', 'failure'])
  })

  it('is a faithful stand-in: it refuses Origin, Referer and other Hosts with 403, as tailscaled does', async () => {
    await start({ state: 'Running' })
    const ask = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ socketPath: standIn.socketPath, path: '/localapi/v0/status', headers }, (res) => {
          let body = ''
          res
            .setEncoding('utf8')
            .on('data', (c: string) => (body += c))
            .on('end', () => resolve({ status: res.statusCode!, body }))
        })
        req.on('error', reject)
        req.end()
      })
    expect(await ask({ Host: 'local-tailscaled.sock', Origin: 'https://evil.example' })).toEqual({
      status: 403,
      body: 'invalid localapi request\n',
    })
    expect(await ask({ Host: 'local-tailscaled.sock', Referer: 'https://evil.example/' })).toEqual({
      status: 403,
      body: 'invalid localapi request\n',
    })
    expect(await ask({ Host: 'evil.example' })).toEqual({ status: 403, body: 'invalid localapi request\n' })
    expect((await ask({ Host: 'local-tailscaled.sock' })).status).toBe(200)
  })

  it('lists the fields the API promises', async () => {
    await start({ state: 'Running' })
    const state = (await t.inject({ url: '/api/vpn', as: 'viewer' })).json()
    for (const field of STATE_FIELDS) expect(state).toHaveProperty(field)
  })
})
