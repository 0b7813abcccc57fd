/**
 * The fleet end to end on loopback, set up once: a three-node nats-server cluster (real processes, JetStream, the
 * per-member users and permissions the plugin documents), three real daemons (A and B joined by configuration, C by a
 * join code made on A), B with a private Docker engine (plugins/containers' test engine). One test walks the issue's
 * cases in order, since each needs the fleet the previous one left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPairSync, sign } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { eventually } from '@hostd/sdk/testing'
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { startDaemon, type Daemon } from '../../../test/support/daemon.ts'
import { startPluginDaemon, type PluginDaemon } from '../../../test/support/plugin-daemon.ts'
import { importTestImage, startEngine, type TestEngine } from '../../containers/test/support/engine.ts'
import { startCluster, type NatsCluster } from './support/cluster.ts'
import WebSocket from 'ws'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'
import { running, TerminalClient } from '../../terminal/test/support.ts'

const PASSWORDS = { a: 'nats-pass-a', b: 'nats-pass-b', c: 'nats-pass-c' }
const IMAGE = 'hostd-test/fleet:1'

interface HostView {
  host: string
  self: boolean
  up: boolean
  lastSeen: string
  inventory: { memory: { total: number } } | null
}

describe('fleet end to end', () => {
  let cluster: NatsCluster
  let engine: TestEngine
  let a: PluginDaemon
  let b: PluginDaemon
  let c: PluginDaemon | Daemon
  let cToken: string
  let cDataDir: string

  const memberEnv = (host: 'a' | 'b') => ({
    HOSTD_FLEET_NATS_URL: cluster.urls,
    HOSTD_FLEET_NATS_USER: host,
    HOSTD_FLEET_NATS_PASSWORD: PASSWORDS[host],
    HOSTD_FLEET_HOST: host,
    HOSTD_FLEET_KV_REPLICAS: '3',
  })
  const call = async (d: Daemon, token: string, path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await d.fetch(path, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    })
    const text = await res.text()
    let json: any = null
    try {
      json = JSON.parse(text)
    } catch {
      /* not JSON */
    }
    return { status: res.status, json, text }
  }
  const hosts = async (d: Daemon, token: string): Promise<HostView[]> =>
    ((await call(d, token, '/api/hosts')).json?.hosts as HostView[] | undefined) ?? []
  const upSet = async (d: Daemon, token: string) =>
    (await hosts(d, token))
      .filter((h) => h.up)
      .map((h) => h.host)
      .sort()
      .join(',')

  beforeAll(async () => {
    cluster = await startCluster(3, [
      { user: 'a', password: PASSWORDS.a, host: 'a' },
      { user: 'b', password: PASSWORDS.b, host: 'b' },
      { user: 'c', password: PASSWORDS.c, host: 'c' },
    ])
    engine = await startEngine()
    await importTestImage(engine, IMAGE)
    await engine.docker('create', '--name', 'fleet-b-web', IMAGE, 'sleep', '3600')
    await engine.docker('run', '-d', '--name', 'fleet-b-log', IMAGE, 'sh', '-c', 'echo log-line-from-b; sleep 3600')
    const account = await ensureTestAccount()
    ;[a, b, c] = await Promise.all([
      startPluginDaemon(['fleet'], memberEnv('a')),
      startPluginDaemon(['fleet', 'containers', 'widgets', 'metrics', 'terminal'], {
        ...memberEnv('b'),
        DOCKER_HOST: engine.host,
        HOSTD_TERMINAL_USER: account.name,
      }),
      startPluginDaemon(['fleet']),
    ])
    cToken = (c as PluginDaemon).adminToken
    cDataDir = c.dataDir
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop(), c?.stop()])
    if (cDataDir) await rm(cDataDir, { recursive: true, force: true })
    await engine?.stop()
    await cluster?.stop()
  })

  it('joins by code, calls across members as the verified user, shows members down and back, survives a NATS node', async () => {
    // A and B joined by configuration; the presence bucket (3 replicas) needs the cluster's JetStream first.
    await eventually(async () => (await upSet(a, a.adminToken)) === 'a,b', 200)

    // C joins with a code an admin made on A (carrying the NATS URL, C's credentials and A's public key).
    const made = await call(a, a.adminToken, '/api/fleet/join-codes', {
      method: 'POST',
      body: { host: 'c', user: 'c', password: PASSWORDS.c },
    })
    expect(made.status, made.text).toBe(201)
    const joined = await call(c, cToken, '/api/fleet/join', { method: 'POST', body: { code: made.json.code } })
    expect(joined.status, joined.text).toBe(200)
    expect(joined.json).toMatchObject({ joined: true, host: 'c' })
    // Good once: the same code again (on a fresh host it would connect, then A refuses the used nonce).
    const again = await call(c, cToken, '/api/fleet/join', { method: 'POST', body: { code: made.json.code } })
    expect(again.json?.error).toBe('HOSTD_FLEET_ALREADY_JOINED')
    const aAudit = await call(a, a.adminToken, '/api/audit?limit=50')
    expect(JSON.stringify(aAudit.json)).toContain('fleet.member.join')
    await eventually(async () => (await upSet(a, a.adminToken)) === 'a,b,c', 200)
    const listed = await hosts(a, a.adminToken)
    expect(listed[0]).toMatchObject({ host: 'a', self: true })
    expect(listed.find((h) => h.host === 'b')!.inventory!.memory.total).toBeGreaterThan(0)

    // From A's API, B's containers (B's real engine).
    const remote = await call(a, a.adminToken, '/api/hosts/b/api/containers')
    expect(remote.status, remote.text).toBe(200)
    expect(JSON.stringify(remote.json)).toContain('fleet-b-web')
    const unknown = await call(a, a.adminToken, '/api/hosts/zz/api/containers')
    expect(unknown.json?.error).toBe('HOSTD_FLEET_HOST_UNKNOWN')
    const hop = await call(a, a.adminToken, '/api/hosts/b/api/hosts/c/api/containers')
    expect(hop.json?.error).toBe('HOSTD_FLEET_PATH_REFUSED')

    // A change on B from A: B's audit log names A's user and A.
    const widget = await call(a, a.adminToken, '/api/hosts/b/api/bento/widgets', {
      method: 'POST',
      body: { title: 'From A', type: 'text', script: 'echo hi' },
    })
    expect(widget.status, widget.text).toBe(201)
    const bAudit = await call(b, b.adminToken, '/api/audit?limit=50')
    const created = bAudit.json.items.find((e: any) => e.action === 'widget.create')
    expect(created?.username).toBe('admin@a')
    // What needs a session on B is refused to a remote caller, whatever its role.
    const users = await call(a, a.adminToken, '/api/hosts/b/api/users', {
      method: 'POST',
      body: { username: 'mallory', password: 'mallory password 123', role: 'admin' },
    })
    expect(users.json?.error, users.text).toBe('HOSTD_AUTH_SESSION_REQUIRED')

    // B's terminal through A's socket: a real PTY on B, opened there as admin@a (B's audit log), closed with A's socket.
    const wss = a.url.replace(/^https/, 'wss')
    const term = new TerminalClient(`${wss}/api/hosts/b/api/terminal?cols=100&rows=30`, { token: a.adminToken })
    const ready = await term.waitForFrame('ready')
    expect(await term.run('echo $((6*7))')).toBe('42')
    expect(ancestors(ready.pid)).toContain(b.pid)
    expect(ancestors(ready.pid)).not.toContain(a.pid)
    const opened = (await call(b, b.adminToken, '/api/audit?limit=50')).json.items.find(
      (e: any) => e.action === 'terminal.open',
    )
    expect(opened?.username).toBe('admin@a')
    await term.close()
    await eventually(async () => !(await running(ready.pid)), 50)
    // The shell on B exits: A's socket closes as B's did.
    const exiting = new TerminalClient(`${wss}/api/hosts/b/api/terminal`, { token: a.adminToken })
    await exiting.waitForFrame('ready')
    exiting.type('exit 0\n')
    expect(await exiting.closed).toMatchObject({ code: 1000 })
    // The session on A ends: A closes its socket (4401), and B's shell with it.
    const login2 = await a.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-client': 'fleet-test' },
      body: JSON.stringify({ username: 'admin', password: 'plugin daemon password' }),
    })
    const second = ((await login2.json()) as { token: string }).token
    const ending = new TerminalClient(`${wss}/api/hosts/b/api/terminal`, { token: second })
    const endingPid = (await ending.waitForFrame('ready')).pid
    expect((await call(a, second, '/api/auth/logout', { method: 'POST' })).status).toBeLessThan(300)
    expect((await ending.closed).code).toBe(4401)
    await eventually(async () => !(await running(endingPid)), 50)
    // An API token of A is no person: B's terminal (sessionOnly) refuses it, and A's socket says why (4000 + 403).
    const made2 = await call(a, a.adminToken, '/api/me/tokens', {
      method: 'POST',
      body: { name: 'script', role: 'admin' },
    })
    expect(made2.status, made2.text).toBe(201)
    const scripted = new TerminalClient(`${wss}/api/hosts/b/api/terminal`, { token: made2.json.secret })
    expect(await scripted.closed).toMatchObject({ code: 4403, reason: 'HOSTD_AUTH_SESSION_REQUIRED' })
    // B's container logs followed through A.
    const logs = new WebSocket(`${wss}/api/hosts/b/api/containers/logs?id=fleet-b-log`, {
      headers: { authorization: `Bearer ${a.adminToken}` },
      rejectUnauthorized: false,
    })
    let logText = ''
    logs.on('message', (data: Buffer) => {
      logText += data.toString('utf8')
    })
    await eventually(() => logText.includes('log-line-from-b'), 50)
    logs.close()

    // A viewer on A is a viewer on B: reads work, an admin route is refused by B's own rules.
    const viewer = await call(a, a.adminToken, '/api/users', {
      method: 'POST',
      body: { username: 'vera', password: 'quiet harbor lantern 47', role: 'viewer' },
    })
    expect(viewer.status, viewer.text).toBe(201)
    const login = await a.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-client': 'fleet-test' },
      body: JSON.stringify({ username: 'vera', password: 'quiet harbor lantern 47' }),
    })
    const vera = ((await login.json()) as { token: string }).token
    expect((await call(a, vera, '/api/hosts/b/api/containers')).status).toBe(200)
    const veraTerm = new TerminalClient(`${wss}/api/hosts/b/api/terminal`, { token: vera })
    expect(await veraTerm.closed).toMatchObject({ code: 4403, reason: 'HOSTD_AUTH_FORBIDDEN' })
    const refused = await call(a, vera, '/api/hosts/b/api/bento/widgets', {
      method: 'POST',
      body: { title: 'No', type: 'text', script: 'echo no' },
    })
    expect(refused.status).toBe(403)
    // ...unless B says otherwise: B maps vera@a to admin, and A's admin to viewer.
    const map = await call(b, b.adminToken, '/api/fleet/roles', {
      method: 'PUT',
      body: {
        rules: [
          { who: 'vera@a', role: 'admin' },
          { who: 'admin@a', role: 'viewer' },
        ],
      },
    })
    expect(map.status, map.text).toBe(200)
    const mapped = await call(a, vera, '/api/hosts/b/api/bento/widgets', {
      method: 'POST',
      body: { title: 'Vera on B', type: 'text', script: 'echo vera' },
    })
    expect(mapped.status, mapped.text).toBe(201)
    const demoted = await call(a, a.adminToken, '/api/hosts/b/api/bento/widgets', {
      method: 'POST',
      body: { title: 'No', type: 'text', script: 'echo no' },
    })
    expect(demoted.status).toBe(403)

    // B's metrics as server-sent events through A: a stream carried piece by piece with flow control.
    const abort = new AbortController()
    const sse = await a.fetch('/api/hosts/b/api/metrics/stream', {
      headers: { authorization: `Bearer ${a.adminToken}`, accept: 'text/event-stream' },
      signal: abort.signal,
    })
    expect(sse.status).toBe(200)
    expect(sse.headers.get('content-type')).toContain('text/event-stream')
    const reader = sse.body!.getReader()
    let seen = ''
    const metricsEvent = /id: \d+\nevent: metrics\ndata: (.*)\n\n/
    while (!metricsEvent.test(seen)) {
      const { value, done } = await reader.read()
      if (done) break
      seen += new TextDecoder().decode(value)
    }
    const event = metricsEvent.exec(seen)
    expect(JSON.parse(event![1]!)).toHaveProperty('memory')
    abort.abort()
    await reader.cancel().catch(() => {})

    // Stolen credentials of B: cannot answer for C, cannot call C as A, cannot write C's presence, and a call in B's
    // own name with an assertion B's signing key did not make is refused by C.
    const thief: NatsConnection = await connect({
      servers: cluster.nodes[1]!.url,
      user: 'b',
      pass: PASSWORDS.b,
      inboxPrefix: '_INBOX_b',
    })
    try {
      const stolenSub = thief.subscribe('hostd.fleet.req.c.*')
      await expect(
        (async () => {
          for await (const _ of stolenSub) return 'received'
          return 'closed'
        })(),
      ).rejects.toThrow(/permission/i)
      await expect(thief.request('hostd.fleet.req.c.a', new Uint8Array(), { timeout: 3000 })).rejects.toThrow(
        /permission|timeout|no responders/i,
      )
      const forged = forgedAssertion({ iss: 'a', aud: 'c', method: 'GET', path: '/api/fleet' })
      const h = natsHeaders()
      h.set('Hostd-Assertion', forged)
      h.set('Hostd-Method', 'GET')
      h.set('Hostd-Path', '/api/containers')
      const answer = await thief.request('hostd.fleet.req.c.b', new Uint8Array(), { timeout: 5000, headers: h })
      expect(answer.headers?.get('Hostd-Status')).toBe('403')
      expect(new TextDecoder().decode(answer.data)).toContain('HOSTD_FLEET_ASSERTION_REFUSED')
      const { Kvm } = await import('@nats-io/kv')
      const kv = await new Kvm(thief).open('hostd_fleet')
      await expect(kv.put('c', '{"host":"c","publicKey":"x","status":"up"}')).rejects.toThrow(/permission|timeout/i)
    } finally {
      await thief.close()
    }

    // C stopped (killed: no goodbye) is shown down within 15 s, and up again when it returns.
    process.kill(c.pid, 'SIGKILL')
    const killedAt = Date.now()
    await c.exited
    await eventually(async () => (await upSet(a, a.adminToken)) === 'a,b', 200)
    const downAfter = Date.now() - killedAt
    console.log(`member killed -> shown down after ${downAfter} ms (goal under 15 s)`)
    expect(downAfter).toBeLessThan(15_000)
    c = await startDaemon({ dataDir: cDataDir, env: { HOSTD_BUILTIN_PLUGINS: 'fleet' } })
    await eventually(async () => (await upSet(a, a.adminToken)) === 'a,b,c', 200)
    // Its membership (from the code) survived the restart: A calls C.
    expect((await call(a, a.adminToken, '/api/hosts/c/api/fleet')).json?.error).toBe('HOSTD_FLEET_PATH_REFUSED')
    const cFromA = await call(a, a.adminToken, '/api/hosts/c/api/extensions')
    expect(cFromA.status, cFromA.text).toBe(200)

    // One NATS node killed: every member keeps writing its presence (the bucket has three replicas), all stay up and
    // remote calls go on.
    await cluster.nodes[0]!.kill()
    const nodeKilledAt = Date.now()
    const seenDown = new Set<string>()
    await eventually(async () => {
      const list = await hosts(b, b.adminToken)
      for (const h of list) if (!h.up) seenDown.add(h.host)
      return list.length === 3 && list.every((h) => h.up && Date.parse(h.lastSeen) > nodeKilledAt + 1000)
    }, 250)
    console.log(`one NATS node killed -> every member's presence written again after ${Date.now() - nodeKilledAt} ms`)
    expect([...seenDown]).toEqual([])
    expect(await upSet(a, a.adminToken)).toBe('a,b,c')
    const afterKill = await call(a, a.adminToken, '/api/hosts/b/api/containers')
    expect(afterKill.status, afterKill.text).toBe(200)
  }, 120_000)
})

/** The process ids above `pid`, up to init. */
function ancestors(pid: number): number[] {
  const out: number[] = []
  for (let at = pid; at > 1; ) {
    const stat = readFileSync(`/proc/${at}/stat`, 'latin1')
    at = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    out.push(at)
  }
  return out
}

/** An assertion signed with a key nobody in the fleet knows. */
function forgedAssertion(claims: { iss: string; aud: string; method: string; path: string }): string {
  const { privateKey } = generateKeyPairSync('ed25519')
  const payload = Buffer.from(
    JSON.stringify({
      v: 1,
      ...claims,
      sub: 'x',
      name: 'admin',
      role: 'admin',
      body: '',
      exp: Math.floor(Date.now() / 1000) + 30,
      jti: 'forged',
    }),
  ).toString('base64url')
  return `${payload}.${sign(null, Buffer.from(payload), privateKey).toString('base64url')}`
}
