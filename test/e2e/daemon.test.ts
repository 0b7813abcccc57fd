/**
 * End-to-end: the real daemon (its build, `node kernel/dist/main.mjs`, as npm start runs it) spawned per scenario, spoken to over a real TLS
 * socket with undici fetch and `ws`. Nothing here runs the kernel in-process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { X509Certificate } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:tls'
import { create as createTar } from 'tar'
import { generate } from 'selfsigned'
import WebSocket from 'ws'
import { writePluginFolder } from '@hostd/sdk/testing'
import {
  REPO_ROOT,
  runDaemonExpectingExit,
  startDaemon,
  waitFor,
  type Daemon,
  type RunResult,
} from '../support/daemon.ts'

const HELLO_DIR = join(REPO_ROOT, 'examples', 'hello-plugin')
const PASSWORD = 'correct horse battery'
const ADMIN = 'admin'

type Json = Record<string, any>

// ---------- small client helpers ----------

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

async function getJson(
  d: Daemon,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json; headers: Headers }> {
  const res = await d.fetch(path, { headers })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers as unknown as Headers }
}

async function postJson(d: Daemon, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await d.fetch(path, {
    method: 'POST',
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Json, headers: res.headers }
}

/** Signs in as a client (X-Svc-Client) and returns the session token. */
async function token(d: Daemon, username: string, password = PASSWORD): Promise<string> {
  const res = await postJson(d, '/api/auth/login', { username, password }, { 'x-svc-client': 'e2e' })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  expect(typeof res.body.token).toBe('string')
  return res.body.token as string
}

/** First-run setup of the admin, then a client sign-in. */
async function setupAdmin(d: Daemon): Promise<string> {
  const res = await postJson(d, '/api/setup', { username: ADMIN, password: PASSWORD })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return token(d, ADMIN)
}

async function createUser(
  d: Daemon,
  adminToken: string,
  username: string,
  role: 'viewer' | 'operator' | 'admin',
): Promise<string> {
  const res = await postJson(d, '/api/users', { username, password: PASSWORD, role }, bearer(adminToken))
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return token(d, username)
}

async function extensions(d: Daemon, tok: string): Promise<Json[]> {
  const res = await getJson(d, '/api/extensions', bearer(tok))
  expect(res.status).toBe(200)
  return res.body as unknown as Json[]
}

async function audit(d: Daemon, adminToken: string): Promise<Json[]> {
  const res = await getJson(d, '/api/audit?range=all&limit=1000', bearer(adminToken))
  expect(res.status).toBe(200)
  return res.body.items as Json[]
}

/** The certificate the daemon presents on its TLS socket. */
function servedCertificate(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerX509Certificate()
      socket.end()
      if (cert) resolve(cert)
      else reject(new Error('no peer certificate'))
    })
    socket.once('error', reject)
  })
}

// ---------- WebSocket helpers ----------

const wsUrl = (d: Daemon, path: string) => d.url.replace(/^https:/, 'wss:') + path

function openSocket(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { rejectUnauthorized: false, headers })
    ws.once('open', () => resolve(ws))
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with ${res.statusCode}`)))
    ws.once('error', reject)
  })
}

/** The HTTP response an upgrade is refused with (rejects if the upgrade succeeds). */
function refusedUpgradeResponse(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { rejectUnauthorized: false, headers })
    ws.once('open', () => {
      ws.terminate()
      reject(new Error('upgrade unexpectedly accepted'))
    })
    ws.once('unexpected-response', (req, res) => {
      resolve({ status: res.statusCode ?? 0, headers: { ...res.headers } })
      req.destroy()
    })
    ws.once('error', () => undefined)
  })
}

/** The HTTP status an upgrade is refused with (rejects if the upgrade succeeds). */
const refusedUpgrade = async (url: string, headers: Record<string, string>): Promise<number> =>
  (await refusedUpgradeResponse(url, headers)).status

function echo(ws: WebSocket, message: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no echo')), timeoutMs)
    ws.once('message', (data) => {
      clearTimeout(timer)
      resolve(String(data))
    })
    ws.send(message)
  })
}

// ---------- plugin folders written by the tests ----------

async function writePlugin(dir: string, pkgName: string, version: string, source: string): Promise<void> {
  await writePluginFolder(dir, { name: pkgName, version, files: { 'src/index.ts': source } })
}

/**
 * The `second` test plugin. Its slow route says it is in flight (`gate.started`), then holds until `gate` exists, both
 * in its own data folder (`tokens.kernel.dataDir`): a third-party plugin runs sandboxed and sees no other folder of the
 * daemon's. On the host that folder is `<data dir>/plugin-data/second`.
 */
const secondPluginSource = (version: string, answer: string) => `
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { definePlugin, tokens } from '@hostd/sdk'

export default definePlugin({
  id: 'second',
  version: '${version}',
  kernel: '^1.0.0',
  deps: { kernel: tokens.kernel },
  routes: (r, { kernel }) => {
    const gate = join(kernel.dataDir, 'gate')
    r.get('/api/second', { role: 'viewer' }, () => (${answer}))
    r.get('/api/second/slow', { role: 'viewer' }, async () => {
      writeFileSync(gate + '.started', '')
      for (let i = 0; i < 1000 && !existsSync(gate); i++) await new Promise((resolve) => setTimeout(resolve, 10))
      return { slow: true, version: '${version}' }
    })
  },
})
`

const SECURITY_HEADERS = {
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

// =====================================================================================================

describe('TLS certificate', () => {
  const dirs: string[] = []
  const daemons: Daemon[] = []
  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop()))
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  })

  it('first start generates a SHA-256 certificate for localhost, 127.0.0.1 and ::1; a restart reuses it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hostd-e2e-tls-'))
    dirs.push(dataDir)
    const first = await startDaemon({ dataDir })
    daemons.push(first)

    const certFile = join(dataDir, 'tls', 'cert.pem')
    const keyFile = join(dataDir, 'tls', 'key.pem')
    const pem = await readFile(certFile, 'utf8')
    const cert = new X509Certificate(pem)
    const sans = (cert.subjectAltName ?? '').split(', ')
    expect(sans).toContain('DNS:localhost')
    expect(sans).toContain('IP Address:127.0.0.1')
    expect(sans.some((s) => s === 'IP Address:::1' || s === 'IP Address:0:0:0:0:0:0:0:1')).toBe(true)
    expect(cert.checkHost('localhost')).toBe('localhost')
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1')
    expect(cert.checkIP('::1')).toBe('::1')
    expect(cert.signatureAlgorithm).toMatch(/sha256/i)
    // ecdsa-with-SHA256 or sha256WithRSAEncryption
    expect(['1.2.840.10045.4.3.2', '1.2.840.113549.1.1.11']).toContain(cert.signatureAlgorithmOid)
    expect((await stat(keyFile)).mode & 0o077).toBe(0) // the private key is not readable by others
    // The socket really presents that certificate.
    expect((await servedCertificate(first.port)).fingerprint256).toBe(cert.fingerprint256)

    // SIGTERM stops it cleanly; a second start on the same data dir serves the same certificate.
    expect(await first.stop({ keepDataDir: true })).toBe(0)
    const second = await startDaemon({ dataDir })
    daemons.push(second)
    expect(await readFile(certFile, 'utf8')).toBe(pem)
    expect((await servedCertificate(second.port)).fingerprint256).toBe(cert.fingerprint256)
  })

  it('a certificate supplied with HOSTD_TLS_CERT and HOSTD_TLS_KEY replaces the generated one', async () => {
    const certDir = await mkdtemp(join(tmpdir(), 'hostd-e2e-usercert-'))
    dirs.push(certDir)
    const pems = await generate([{ name: 'commonName', value: 'user-supplied.test' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      extensions: [
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
          ],
        },
      ],
    } as never)
    const certFile = join(certDir, 'my-cert.pem')
    const keyFile = join(certDir, 'my-key.pem')
    await writeFile(certFile, pems.cert)
    await writeFile(keyFile, pems.private, { mode: 0o600 })
    const d = await startDaemon({ env: { HOSTD_TLS_CERT: certFile, HOSTD_TLS_KEY: keyFile } })
    daemons.push(d)

    const served = await servedCertificate(d.port)
    expect(served.fingerprint256).toBe(new X509Certificate(pems.cert).fingerprint256)
    expect(served.subject).toContain('CN=user-supplied.test')
    expect(existsSync(join(d.dataDir, 'tls', 'cert.pem'))).toBe(false)
    const health = await getJson(d, '/health')
    expect(health.status).toBe(200)
  })
})

describe('first run and sign-in with a real client', () => {
  let d: Daemon
  beforeAll(async () => {
    d = await startDaemon()
  })
  afterAll(() => d?.stop())

  it('setup answers 201 once, then 409', async () => {
    await waitFor(async () => d.stdout().includes('no users yet: create the first admin'), 2000)
    expect((await getJson(d, '/health')).body).toMatchObject({ status: 'ok', version: expect.any(String) })
    expect((await getJson(d, '/api/setup')).body).toEqual({ needsSetup: true })
    // Before setup the password policy applies.
    const weak = await postJson(d, '/api/setup', { username: ADMIN, password: 'short' })
    expect(weak.status).toBe(400)
    expect(weak.body.error).toBe('HOSTD_USERS_WEAK_PASSWORD')

    const first = await postJson(d, '/api/setup', { username: ADMIN, password: PASSWORD })
    expect(first.status).toBe(201)
    expect(first.body).toEqual({
      id: expect.any(String),
      username: ADMIN,
      role: 'admin',
      disabled: false,
      twoFactor: false,
    })

    const again = await postJson(d, '/api/setup', { username: 'other', password: PASSWORD })
    expect(again.status).toBe(409)
    expect(again.body.error).toBe('HOSTD_SETUP_ALREADY_DONE')
    // Afterwards the state is checked first: 409 whatever the password, never a password complaint.
    for (const password of ['short', 'password', 'aaaaaaaaaaaa', `${ADMIN}-secret-1`, '']) {
      const late = await postJson(d, '/api/setup', { username: ADMIN, password })
      expect([late.status, late.body.error], password).toEqual([409, 'HOSTD_SETUP_ALREADY_DONE'])
    }
    expect((await getJson(d, '/api/setup')).body).toEqual({ needsSetup: false })
  })

  it('login sets an HttpOnly, SameSite=Strict, Secure, Path=/ session cookie; the token is in the body only for X-Svc-Client', async () => {
    const browser = await d.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: ADMIN, password: PASSWORD }),
    })
    expect(browser.status).toBe(200)
    const body = (await browser.json()) as Json
    expect(body).toMatchObject({ username: ADMIN, role: 'admin' })
    expect(body).not.toHaveProperty('token')

    const cookies = browser.headers.getSetCookie()
    const session = cookies.find((c) => c.startsWith('svc_session='))
    expect(session, cookies.join(' | ')).toBeDefined()
    const [pair, ...attrs] = session!.split(';').map((s) => s.trim())
    expect(pair).toMatch(/^svc_session=[A-Za-z0-9_-]{20,}$/)
    const lower = attrs.map((a) => a.toLowerCase())
    expect(lower).toContain('httponly')
    expect(lower).toContain('samesite=strict')
    expect(lower).toContain('secure')
    expect(lower).toContain('path=/')

    const client = await postJson(
      d,
      '/api/auth/login',
      { username: ADMIN, password: PASSWORD },
      { 'x-svc-client': 'anything' },
    )
    expect(client.status).toBe(200)
    expect(client.body.token).toMatch(/^[A-Za-z0-9_-]{20,}$/)
  })

  it('the cookie signs in /api/auth/me, and logout ends the session server-side', async () => {
    const login = await d.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: ADMIN, password: PASSWORD }),
    })
    const cookie = login.headers
      .getSetCookie()
      .find((c) => c.startsWith('svc_session='))!
      .split(';')[0]!
    await login.arrayBuffer()

    const me = await getJson(d, '/api/auth/me', { cookie })
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ username: ADMIN, role: 'admin' })

    // A browser sends its Origin on every POST; the daemon requires it with the cookie.
    const logout = await d.fetch('/api/auth/logout', { method: 'POST', headers: { cookie, origin: d.url } })
    expect(logout.status).toBe(204)
    await logout.arrayBuffer()
    const cleared = logout.headers.getSetCookie().find((c) => c.startsWith('svc_session='))
    expect(cleared).toMatch(/Max-Age=0/)

    // Replaying the old cookie (a client that ignores the clearing cookie) is refused: the session is gone.
    const after = await getJson(d, '/api/auth/me', { cookie })
    expect(after.status).toBe(401)
    expect(after.body.error).toBe('HOSTD_AUTH_REQUIRED')
  })

  it('a bearer token works until logout, then answers 401', async () => {
    const tok = await token(d, ADMIN)
    expect((await getJson(d, '/api/auth/me', bearer(tok))).status).toBe(200)
    expect((await getJson(d, '/api/extensions', bearer(tok))).status).toBe(200)
    const logout = await postJson(d, '/api/auth/logout', undefined, bearer(tok))
    expect(logout.status).toBe(204)
    const after = await getJson(d, '/api/auth/me', bearer(tok))
    expect(after.status).toBe(401)
  })

  it('security headers are on a 200, a 401 and a 404', async () => {
    const ok = await d.fetch('/health')
    const unauthenticated = await d.fetch('/api/auth/me')
    // A path without a file extension is a client route of the web UI (index.html, tested in test/ui/serving.test.ts).
    const missing = await d.fetch('/no/such/file.js')
    const missingApi = await d.fetch('/api/no-such-route')
    for (const [res, status] of [
      [ok, 200],
      [unauthenticated, 401],
      [missing, 404],
      [missingApi, 404],
    ] as const) {
      expect(res.status).toBe(status)
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(res.headers.get(name), `${name} on ${status}`).toBe(value)
      await res.arrayBuffer()
    }
  })
})

describe('concurrent first-run setup', () => {
  let d: Daemon
  beforeAll(async () => {
    d = await startDaemon()
  })
  afterAll(() => d?.stop())

  it('five setups in parallel against a fresh daemon: exactly one 201, the rest 409', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => postJson(d, '/api/setup', { username: `admin${i}`, password: PASSWORD })),
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses).toEqual([201, 409, 409, 409, 409])
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.error).toBe('HOSTD_SETUP_ALREADY_DONE')
    const winner = results.find((r) => r.status === 201)!.body.username as string
    const users = await getJson(d, '/api/users', bearer(await token(d, winner)))
    expect(users.status).toBe(200)
    expect((users.body as unknown as Json[]).map((u) => u.username)).toEqual([winner])
  })
})

describe('bad configuration', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['HOSTD_PORT=abc', { HOSTD_PORT: 'abc' }, /HOSTD_PORT/],
    ['HOSTD_PORT=70000', { HOSTD_PORT: '70000' }, /HOSTD_PORT/],
    ['HOSTD_LOG_LEVEL=loud', { HOSTD_LOG_LEVEL: 'loud' }, /HOSTD_LOG_LEVEL/],
    ['HOSTD_BUILTIN_PLUGINS=../etc', { HOSTD_BUILTIN_PLUGINS: '../etc' }, /HOSTD_BUILTIN_PLUGINS/],
    ['only HOSTD_TLS_CERT', { HOSTD_TLS_CERT: '/tmp/some-cert.pem' }, /HOSTD_TLS_CERT/],
    ['only HOSTD_TLS_KEY', { HOSTD_TLS_KEY: '/tmp/some-key.pem' }, /HOSTD_TLS_KEY/],
    [
      'HOSTD_TLS_CERT and KEY naming missing files',
      { HOSTD_TLS_CERT: '/nonexistent/cert.pem', HOSTD_TLS_KEY: '/nonexistent/key.pem' },
      /HOSTD_TLS_CERT.*not found/,
    ],
    ['HOSTD_CONFIG pointing at a missing file', { HOSTD_CONFIG: '/nonexistent/hostd-e2e.json' }, /HOSTD_CONFIG/],
    ['HOSTD_CONFIG pointing at invalid JSON', { HOSTD_CONFIG: '<bad-json>' }, /HOSTD_CONFIG.*JSON/],
  ]
  const results = new Map<string, RunResult>()
  let scratch: string

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hostd-e2e-conf-'))
    const badJson = join(scratch, 'bad.json')
    await writeFile(badJson, '{ "HOSTD_PORT": 4443, ')
    // Two at a time (two cores): each is a separate node process that should give up before binding anything.
    const queue = [...cases]
    const worker = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const [name, env] = c
        const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === '<bad-json>' ? badJson : v]))
        results.set(name, await runDaemonExpectingExit({ HOSTD_PORT: '0', ...resolved }))
      }
    }
    await Promise.all([worker(), worker()])
  })
  afterAll(() => rm(scratch, { recursive: true, force: true }))

  it.each(cases)('%s: exit code 1 and one "hostd:" line on stderr, no stack trace', (name, _env, mentions) => {
    const r = results.get(name)!
    expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(1)
    const lines = r.stderr.split('\n').filter((l) => l.length > 0)
    expect(lines, r.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(/^hostd: /)
    expect(lines[0]).toMatch(mentions)
    expect(r.stderr).not.toMatch(/^\s*at /m)
    expect(r.stderr).not.toMatch(/\bat .+:\d+:\d+\)?$/m)
    expect(r.stdout).not.toContain('serving')
  })
})

describe('hot loading on a running daemon', () => {
  let d: Daemon
  let admin: string
  let echoSocket: WebSocket | undefined
  const echoClosed: { code: number | null } = { code: null }
  beforeAll(async () => {
    d = await startDaemon()
    admin = await setupAdmin(d)
  })
  afterAll(async () => {
    echoSocket?.terminate()
    await d?.stop()
  })

  // How fast a swap is, is the bench's figure (test/bench), not an assertion here.
  it('a copied-in plugin folder is served', async () => {
    expect((await getJson(d, '/api/hello', bearer(admin))).status).toBe(404)
    await cp(HELLO_DIR, join(d.pluginsDir, 'hello'), { recursive: true })
    await waitFor(async () => {
      const res = await d.fetch('/api/hello', { headers: bearer(admin) })
      res.body?.cancel()
      return res.status === 200
    }, 5000)
    const hello = await getJson(d, '/api/hello', bearer(admin))
    expect(hello.body).toEqual({ message: `Hello, ${ADMIN}!` })
    expect((await extensions(d, admin)).find((e) => e.id === 'hello')).toMatchObject({
      state: 'active',
      version: '1.0.0',
      builtin: false,
    })
  })

  it('the echo socket opens with the bearer token; no sign-in is 401, a foreign Origin is 403', async () => {
    const url = wsUrl(d, '/api/hello/echo?prefix=%3E')
    expect(await refusedUpgrade(url, {})).toBe(401)
    expect(await refusedUpgrade(url, { ...bearer(admin), origin: 'https://evil.example' })).toBe(403)
    echoSocket = await openSocket(url, bearer(admin))
    echoSocket.on('close', (code) => (echoClosed.code = code))
    expect(await echo(echoSocket, 'ping')).toBe('>ping')
  })

  // @fastify/websocket answers 'upgrade' requests with a plain ServerResponse of its own, past the server's
  // SecureResponse; the socket hub sets the headers on those itself (kernel/src/plugins/socket-hub.ts).
  it('refused WebSocket upgrades (401, 403, 404) carry the security headers too', async () => {
    const refusals = [
      await refusedUpgradeResponse(wsUrl(d, '/api/hello/echo'), {}),
      await refusedUpgradeResponse(wsUrl(d, '/api/hello/echo'), { ...bearer(admin), origin: 'https://evil.example' }),
      await refusedUpgradeResponse(wsUrl(d, '/api/no-such-socket'), bearer(admin)),
    ]
    expect(refusals.map((r) => r.status)).toEqual([401, 403, 404])
    for (const r of refusals) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(r.headers[name], `${name} on a refused upgrade (${r.status})`).toBe(value)
    }
  })

  it('a second plugin loads, upgrades with a request in flight, and is removed; the hello socket stays open', async () => {
    expect(echoSocket).toBeDefined()
    const dir = join(d.pluginsDir, 'second')
    const gate = join(d.dataDir, 'plugin-data', 'second', 'gate') // its data folder: the watcher does not see it
    await writePlugin(dir, 'hostd-plugin-second', '1.0.0', secondPluginSource('1.0.0', '{ ok: true }'))
    await waitFor(async () => (await getJson(d, '/api/second', bearer(admin))).status === 200, 5000)
    expect((await getJson(d, '/api/second', bearer(admin))).body).toEqual({ ok: true })

    // Upgrade with a request in flight: 1.0.0's slow request is running when the files are rewritten, and is
    // held until 1.1.0 answers; it must still finish, served by 1.0.0 (the old version drains, it is not cut).
    const slow = d
      .fetch('/api/second/slow', { headers: bearer(admin) })
      .then(async (res) => ({ status: res.status, body: (await res.json()) as Json }))
    await waitFor(async () => existsSync(`${gate}.started`), 5000)
    await writePlugin(
      dir,
      'hostd-plugin-second',
      '1.1.0',
      secondPluginSource('1.1.0', "{ ok: true, version: '1.1.0' }"),
    )
    await waitFor(async () => (await getJson(d, '/api/second', bearer(admin))).body?.version === '1.1.0', 5000, 15)
    await writeFile(gate, '')
    const slowResult = await slow
    expect(slowResult.status).toBe(200)
    expect(slowResult.body).toEqual({ slow: true, version: '1.0.0' })

    const second = (await extensions(d, admin)).find((e) => e.id === 'second')
    expect(second).toMatchObject({ version: '1.1.0', state: 'active' })
    // The audit entry is written after the old version has drained: wait for it.
    await waitFor(
      async () => (await audit(d, admin)).some((e) => e.action === 'plugin.upgrade' && e.target === 'second'),
      3000,
    )
    const upgrade = (await audit(d, admin)).find((e) => e.action === 'plugin.upgrade' && e.target === 'second')!
    expect(upgrade).toMatchObject({ result: 'success', detail: { version: '1.1.0', from: '1.0.0' } })

    // Remove it.
    await rm(dir, { recursive: true, force: true })
    await waitFor(async () => (await getJson(d, '/api/second', bearer(admin))).status === 404, 3000)
    await waitFor(async () => !(await extensions(d, admin)).some((e) => e.id === 'second'), 2000)

    // Through all of that the hello socket stayed open and still echoes.
    expect(echoClosed.code).toBeNull()
    expect(echoSocket!.readyState).toBe(WebSocket.OPEN)
    expect(await echo(echoSocket!, 'still here')).toBe('>still here')
  })

  it('a folder written slowly (its entry in many small writes, a comment first) is loaded once, complete', async () => {
    // Any load before the last write would import a file cut inside its opening comment and fail; the watcher
    // waits for the folder to be quiet, so the audit shows exactly one load, a successful one.
    const dir = join(d.pluginsDir, 'third')
    await writePluginFolder(dir, { name: 'hostd-plugin-third' })
    await mkdir(join(dir, 'src'), { recursive: true })
    const source =
      `/*\n${'padding line\n'.repeat(150_000)}*/\nimport { definePlugin } from '@hostd/sdk'\n` +
      "export default definePlugin({ id: 'third', version: '1.0.0', kernel: '^1.0.0', " +
      "routes: (r) => { r.get('/api/third', { role: 'viewer' }, () => ({ ok: true })) } })\n"
    const file = await open(join(dir, 'src', 'index.ts'), 'w')
    for (let at = 0; at < source.length; at += 2048) await file.write(source.slice(at, at + 2048))
    await file.close()
    await waitFor(async () => (await getJson(d, '/api/third', bearer(admin))).status === 200, 10_000)
    const loads = (await audit(d, admin)).filter(
      (e) => e.target === 'third' && (e.action === 'plugin.load' || e.action === 'plugin.upgrade'),
    )
    expect(loads.map((e) => [e.action, e.result])).toEqual([['plugin.load', 'success']])
    await rm(dir, { recursive: true, force: true })
    await waitFor(async () => (await getJson(d, '/api/third', bearer(admin))).status === 404, 5000)
  })

  it('deleting the hello folder unloads it and closes its socket', async () => {
    await rm(join(d.pluginsDir, 'hello'), { recursive: true, force: true })
    await waitFor(async () => (await getJson(d, '/api/hello', bearer(admin))).status === 404, 5000)
    const missing = await getJson(d, '/api/hello', bearer(admin))
    expect(missing.body.error).toBe('HOSTD_ROUTE_NOT_FOUND')
    await waitFor(async () => echoClosed.code !== null, 2000)
    expect(echoClosed.code).toBe(1012)
    // The socket closes as the unload begins; the record is written once its process has stopped, a moment later.
    await waitFor(
      async () => (await audit(d, admin)).some((e) => e.action === 'plugin.unload' && e.target === 'hello'),
      3000,
    )
  })
})

describe('plugins that fail to load', () => {
  let d: Daemon
  let admin: string
  beforeAll(async () => {
    d = await startDaemon()
    admin = await setupAdmin(d)
    await cp(HELLO_DIR, join(d.pluginsDir, 'hello'), { recursive: true })
    await writePlugin(
      join(d.pluginsDir, 'broken'),
      'hostd-plugin-broken',
      '1.0.0',
      `
import { definePlugin } from '@hostd/sdk'
throw new Error('broken plugin exploded at import')
export default definePlugin({ id: 'broken', version: '1.0.0', kernel: '^1.0.0' })
`,
    )
    await writePlugin(
      join(d.pluginsDir, 'future'),
      'hostd-plugin-future',
      '1.0.0',
      `
import { definePlugin } from '@hostd/sdk'
export default definePlugin({
  id: 'future', version: '1.0.0', kernel: '^2.0.0',
  routes: (r) => r.get('/api/future', { role: 'viewer' }, () => ({ ok: true })),
})
`,
    )
    await writePlugin(
      join(d.pluginsDir, 'norole'),
      'hostd-plugin-norole',
      '1.0.0',
      `
import { definePlugin } from '@hostd/sdk'
export default definePlugin({
  id: 'norole', version: '1.0.0', kernel: '^1.0.0',
  routes: (r) => r.get('/api/x', {} as any, () => ({ open: true })),
})
`,
    )
    // Each is listed `starting` until its load ends (a third-party plugin loads in a process of its own).
    await waitFor(async () => (await extensions(d, admin)).filter((e) => e.state !== 'starting').length === 4, 8000, 50)
  })
  afterAll(() => d?.stop())

  it('each is listed failed with the reason', async () => {
    const list = await extensions(d, admin)
    const byId = Object.fromEntries(list.map((e) => [e.id, e]))
    expect(byId.broken).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('broken plugin exploded at import'),
    })
    expect(byId.future).toMatchObject({ state: 'failed', error: expect.stringContaining('^2.0.0') })
    expect(byId.norole).toMatchObject({ state: 'failed', error: expect.stringMatching(/\/api\/x.*role/) })
    for (const id of ['broken', 'future', 'norole']) expect(byId[id].ui).toBeNull()
    expect(byId.hello).toMatchObject({ state: 'active' })
  })

  it('the daemon and the other plugins keep answering; the failed routes are not served', async () => {
    expect((await getJson(d, '/health')).body.status).toBe('ok')
    expect((await getJson(d, '/api/hello', bearer(admin))).body).toEqual({ message: `Hello, ${ADMIN}!` })
    expect((await getJson(d, '/api/future', bearer(admin))).status).toBe(404)
    // The role-less route must not be served at all, signed in or not.
    expect((await getJson(d, '/api/x')).status).toBe(404)
    expect((await getJson(d, '/api/x', bearer(admin))).status).toBe(404)
    expect(d.process.exitCode).toBeNull()
  })
})

describe('install through the API', () => {
  let d: Daemon
  let admin: string
  let viewer: string
  let archive: Buffer
  let scratch: string
  const install = (body: Buffer, tok: string) =>
    d.fetch('/api/extensions/install', {
      method: 'POST',
      headers: { ...bearer(tok), 'content-type': 'application/gzip' },
      body,
    })

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hostd-e2e-pack-'))
    const file = join(scratch, 'hostd-plugin-hello-1.0.0.tgz')
    // What `npm pack` makes: a gzipped tar with everything under package/ (package.json `files`: src, ui; a page
    // module the manifest names must be in the package).
    await createTar({ gzip: true, cwd: HELLO_DIR, prefix: 'package', file, portable: true }, [
      'package.json',
      'src',
      'ui',
    ])
    archive = await readFile(file)
    d = await startDaemon()
    admin = await setupAdmin(d)
    viewer = await createUser(d, admin, 'watcher', 'viewer')
  })
  afterAll(async () => {
    await d?.stop()
    await rm(scratch, { recursive: true, force: true })
  })

  it('a viewer may not install (403), and nothing lands in the plugins dir', async () => {
    const res = await install(archive, viewer)
    expect(res.status).toBe(403)
    expect(((await res.json()) as Json).error).toBe('HOSTD_AUTH_FORBIDDEN')
    expect(existsSync(join(d.pluginsDir, 'hello'))).toBe(false)
  })

  it('a garbage body answers 400 JSON', async () => {
    for (const garbage of [
      Buffer.from('this is not a tarball at all'),
      Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), Buffer.alloc(64, 0x41)]),
    ]) {
      const res = await install(garbage, admin)
      expect(res.status).toBe(400)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      const body = (await res.json()) as Json
      expect(body.error).toMatch(/^HOSTD_/)
      expect(typeof body.message).toBe('string')
    }
    expect((await getJson(d, '/health')).status).toBe(200)
  })

  it('an admin installs the packed hello plugin: 201, and /api/hello answers', async () => {
    const res = await install(archive, admin)
    const body = (await res.json()) as Json
    expect(res.status, JSON.stringify(body)).toBe(201)
    expect(body).toMatchObject({ id: 'hello', version: '1.0.0', state: 'active', builtin: false })
    expect(existsSync(join(d.pluginsDir, 'hello', 'package.json'))).toBe(true)
    const hello = await getJson(d, '/api/hello', bearer(viewer))
    expect(hello.status).toBe(200)
    expect(hello.body).toEqual({ message: 'Hello, watcher!' })
    expect(
      (await audit(d, admin)).some(
        (e) => e.action === 'plugin.install' && e.target === 'hello' && e.username === ADMIN,
      ),
    ).toBe(true)
  })

  it('disable makes /api/hello 404 (observed: the route leaves the table); enable brings it back', async () => {
    const disabled = await postJson(d, '/api/extensions/hello/disable', undefined, bearer(admin))
    expect(disabled.status).toBe(200)
    expect(disabled.body).toMatchObject({ id: 'hello', state: 'disabled' })
    const off = await getJson(d, '/api/hello', bearer(viewer))
    expect(off.status).toBe(404)
    expect(off.body.error).toBe('HOSTD_ROUTE_NOT_FOUND')
    expect((await audit(d, admin)).some((e) => e.action === 'plugin.disable' && e.target === 'hello')).toBe(true)

    const enabled = await postJson(d, '/api/extensions/hello/enable', undefined, bearer(admin))
    expect(enabled.status).toBe(200)
    expect(enabled.body).toMatchObject({ id: 'hello', state: 'active' })
    expect((await getJson(d, '/api/hello', bearer(viewer))).status).toBe(200)
  })

  it('remove answers 204, /api/hello is 404 and the folder is gone', async () => {
    const removed = await d.fetch('/api/extensions/hello/remove', { method: 'POST', headers: bearer(admin) })
    expect(removed.status).toBe(204)
    await removed.arrayBuffer()
    expect((await getJson(d, '/api/hello', bearer(viewer))).status).toBe(404)
    expect(existsSync(join(d.pluginsDir, 'hello'))).toBe(false)
    expect((await extensions(d, admin)).some((e) => e.id === 'hello')).toBe(false)
  })
})

describe('sign-in throttling and X-Forwarded-For', () => {
  let d: Daemon
  let admin: string
  beforeAll(async () => {
    d = await startDaemon({
      env: { HOSTD_LOGIN_MAX_FAILURES_PER_USER: '3', HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS: '5' },
    })
    admin = await setupAdmin(d)
    const res = await postJson(
      d,
      '/api/users',
      { username: 'carol', password: PASSWORD, role: 'viewer' },
      bearer(admin),
    )
    expect(res.status).toBe(201)
  })
  afterAll(() => d?.stop())

  const login = (username: string, password: string, xff: string) =>
    postJson(d, '/api/auth/login', { username, password }, { 'x-forwarded-for': xff })

  it('after 3 wrong passwords from "different" forwarded addresses, the 4th attempt (right password) is 429 with Retry-After', async () => {
    for (const [i, xff] of ['203.0.113.1', '203.0.113.2', '198.51.100.7'].entries()) {
      const res = await login(ADMIN, `wrong password ${i}`, xff)
      expect(res.status).toBe(401)
      expect(res.body.error).toBe('HOSTD_AUTH_BAD_CREDENTIALS')
    }
    const blocked = await login(ADMIN, PASSWORD, '192.0.2.99')
    expect(blocked.status).toBe(429)
    expect(blocked.body.error).toBe('HOSTD_AUTH_THROTTLED')
    const retryAfter = Number(blocked.headers.get('retry-after'))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(15 * 60)
  })

  it('the per-address bucket is the socket address: a spoofed X-Forwarded-For does not escape it', async () => {
    // 3 failures from 127.0.0.1 so far; two more (unknown users, spoofed addresses) fill the address bucket of 5.
    for (const [i, xff] of ['10.9.8.7', '10.9.8.6'].entries())
      expect((await login(`ghost${i}`, 'nope nope nope', xff)).status).toBe(401)
    // carol has no failures of her own: only the (socket) address bucket can refuse her.
    const res = await login('carol', PASSWORD, '172.16.254.1')
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
  })

  it('the audit log records 127.0.0.1 from the socket, never a forwarded address', async () => {
    const logins = (await audit(d, admin)).filter((e) => e.action === 'auth.login')
    // setup's sign-in; the 3 wrong passwords as one record; 2 unknown users; admin and carol throttled as one record
    expect(logins.map((e) => `${e.result} ${e.detail?.reason ?? ''} ${e.detail?.count ?? ''}`).sort()).toEqual([
      'failure throttled 2',
      'failure unknown user 1',
      'failure unknown user 1',
      'failure wrong password 3',
      'success  ',
    ])
    for (const entry of logins) expect(entry.ip).toBe('127.0.0.1')
    expect(logins.find((e) => e.detail?.reason === 'throttled')?.detail?.targets).toEqual([ADMIN, 'carol'])
    const spoofed = ['203.0.113.1', '203.0.113.2', '198.51.100.7', '192.0.2.99', '10.9.8.7', '10.9.8.6', '172.16.254.1']
    expect(JSON.stringify(logins)).not.toMatch(new RegExp(spoofed.map((s) => s.replace(/\./g, '\\.')).join('|')))
  })
})
