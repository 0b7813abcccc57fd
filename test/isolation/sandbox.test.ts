/**
 * Third-party plugins run in a sandboxed process of their own (kernel/src/isolation; docs/ARCHITECTURE.md, "Third-party
 * plugins: the trust boundary"): against the real daemon (its build, spawned), with the hostile fixtures of issue 26
 * dropped into its plugins folder. Each case was measured on main, where plugins ran in the daemon's process: the
 * secrets were read, the sign-in password captured, every route hung. Here none of that reaches the daemon.
 */
import { existsSync } from 'node:fs'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, writePluginFolder } from '@hostd/sdk/testing'
import { REPO_ROOT } from '../support/daemon.ts'
import { FIXTURES, HELLO, allGone, pluginProcesses, startIsolationDaemon, type IsolationDaemon } from './support.ts'

let d: IsolationDaemon

beforeAll(async () => {
  d = await startIsolationDaemon({
    hello: HELLO,
    'secrets-reader': join(FIXTURES, 'secrets-reader'),
    'json-parse-hijack': join(FIXTURES, 'json-parse-hijack'),
    'prototype-then': join(FIXTURES, 'prototype-then'),
  })
  for (const id of ['hello', 'secrets-reader', 'json-parse-hijack', 'prototype-then'])
    await d.until(id, (e) => e.state === 'active' || e.state === 'failed')
}, 60_000)
afterAll(() => d?.close())

describe('a third-party plugin', () => {
  it('runs in a sandboxed process of its own and serves its routes through the kernel', async () => {
    expect(await d.extension('hello')).toMatchObject({ state: 'active', builtin: false })
    const res = await d.api('/api/hello')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ message: 'Hello, admin!' })
    const procs = await pluginProcesses(d.pid, join(d.pluginsDir, 'hello'))
    // bwrap, its init inside the new PID namespace, and Node running the sdk's runner.
    expect(procs.map((p) => p.cmdline)).toEqual([
      expect.stringMatching(/^\S*bwrap .*--unshare-all/),
      expect.stringMatching(/bwrap/),
      expect.stringMatching(/^\/hostd\/node .*--max-old-space-size=\d+ .*isolated\/runner\.(mjs|ts)$/),
    ])
  })

  it('answers as a sandboxed document: what it sends cannot run as the daemon’s origin, nor its UI files', async () => {
    const res = await d.fetch('/api/hello', { headers: { authorization: `Bearer ${d.adminToken}` } })
    expect(res.headers.get('content-security-policy')).toContain('sandbox')
    // So does every file of its ui/ folder: an .html or .svg of it opened as a page cannot act as the daemon's origin.
    const file = await d.fetch('/plugins/hello/1.0.0/page.js')
    expect(file.status).toBe(200)
    expect(file.headers.get('content-security-policy')).toMatch(/^sandbox; default-src 'none'/)
  })
})

describe('secrets-reader: nothing of the daemon is visible', () => {
  it('finds none of the daemon’s files, nor another plugin’s, nor the kernel’s code', async () => {
    const targets = [
      join(d.dataDir, 'secret.key'),
      join(d.dataDir, 'tls', 'key.pem'),
      join(d.dataDir, 'hostd.sqlite'),
      join(d.pluginsDir, 'hello', 'src', 'index.ts'),
      join(d.pluginsDir, 'hello'),
      join(d.dataDir, 'plugin-data', 'hello'),
      join(REPO_ROOT, 'package.json'),
      '/etc/passwd',
      '/root',
    ]
    // They are there, to be found: the daemon made them.
    for (const path of targets) expect(existsSync(path), path).toBe(true)
    for (const path of targets) {
      const res = await d.api(`/api/secrets-reader/read?path=${encodeURIComponent(path)}`)
      expect(res.status).toBe(200)
      expect(res.body.result, path).toMatch(/^(ENOENT|ERR_ACCESS_DENIED|EACCES)$/)
    }
    const secretBox = join(REPO_ROOT, 'kernel', 'src', 'auth', 'secret-box.ts')
    const imported = await d.api(`/api/secrets-reader/import?path=${encodeURIComponent(secretBox)}`)
    expect(imported.body.result).toMatch(/^(ERR_MODULE_NOT_FOUND|ERR_ACCESS_DENIED)$/)
  })

  it('found nothing at load either, and its own view holds no secret, no environment and no privilege', async () => {
    const { body } = await d.api('/api/secrets-reader/report')
    expect(body.dataDir).toBe('/data')
    for (const attempt of [...body.atLoad, ...body.tried])
      expect(attempt.result, attempt.path).toMatch(/^(ENOENT|ERR_MODULE_NOT_FOUND|ERR_ACCESS_DENIED)$/)
    expect(body.env.filter((name: string) => name.startsWith('HOSTD') || name === 'NODE_CHANNEL_FD')).toEqual([])
    expect(body.uid).toBe(65534)
  })
})

describe('an admin may trust a third-party plugin to run in the daemon’s process', () => {
  it('trusted, it runs there with the daemon’s rights; trusted no more, it is sandboxed again', async () => {
    const dir = join(d.pluginsDir, 'secrets-reader')
    const read = async () =>
      (await d.api(`/api/secrets-reader/read?path=${encodeURIComponent(join(d.dataDir, 'secret.key'))}`)).body.result
    const trust = (trusted: boolean) =>
      d.api('/api/extensions/secrets-reader/trust', { method: 'POST', body: { trusted } })

    expect((await trust(true)).body).toMatchObject({ state: 'active', trusted: true })
    expect(await pluginProcesses(d.pid, dir)).toEqual([])
    expect(await read()).toBe('read 32 bytes') // what trusting it means
    expect((await trust(false)).body).toMatchObject({ state: 'active', trusted: false })
    expect((await pluginProcesses(d.pid, dir)).length).toBe(3)
    expect(await read()).toBe('ENOENT')
  })
})

describe('json-parse-hijack: replacing JSON.parse and fetch captures nothing', () => {
  it('a sign-in and another plugin’s bearer token pass the daemon without reaching it', async () => {
    const password = 'a password nobody else may read'
    const created = await d.api('/api/users', {
      method: 'POST',
      body: { username: 'operator1', password, role: 'operator' },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const login = await d.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-client': 'isolation-test' },
      body: JSON.stringify({ username: 'operator1', password }),
    })
    expect(login.status).toBe(200)
    const { token } = (await login.json()) as { token: string }
    expect((await d.api('/api/hello', { token })).status).toBe(200)
    const captured = await d.fetch('/api/json-parse-hijack/captured')
    expect(captured.status).toBe(200)
    const text = await captured.text()
    expect(text).not.toContain(password)
    expect(text).not.toContain(token)
    expect(JSON.parse(text)).toEqual({ captured: [] })
  })
})

describe('prototype-then: a thenable Object.prototype stays in its own process', () => {
  it('the daemon, the kernel’s routes and another plugin keep answering', async () => {
    expect((await d.fetch('/health')).status).toBe(200)
    expect((await d.api('/api/auth/me')).status).toBe(200)
    expect((await d.api('/api/hello')).status).toBe(200)
    expect((await d.api('/api/prototype-then/ping')).body).toEqual({ pong: true })
  })
})

describe('the channel: a plugin that forges what it sends the kernel', () => {
  it('is stopped for breaking the protocol (its request in flight gets 503), then restarted', async () => {
    const dir = join(d.dataDir, 'forger-source')
    // It writes straight to its end of the channel (descriptor 3): a frame that says it is 4 GiB long.
    await writePluginFolder(dir, {
      name: 'hostd-plugin-forger',
      files: {
        'src/index.ts': `import { writeSync } from 'node:fs'
import { definePlugin } from '@hostd/sdk'
export default definePlugin({
  id: 'forger', version: '1.0.0', kernel: '^1.1.0',
  routes: (r) => {
    r.post('/api/forger/forge', { role: 'viewer' }, () => {
      writeSync(3, Buffer.from([0xff, 0xff, 0xff, 0xff]))
      return new Promise(() => undefined)
    })
  },
})
`,
      },
    })
    await d.drop(dir, 'forger')
    await d.until('forger', (e) => e.state === 'active')
    const res = await d.api('/api/forger/forge', { method: 'POST' })
    expect(res.status).toBe(503)
    expect(res.body.error).toBe('HOSTD_PLUGIN_UNAVAILABLE')
    expect(res.body.message).toMatch(/broke the channel's protocol: it sent a message of 4294967295 bytes/)
    await d.until('forger', (e) => e.state === 'active')
    expect((await d.api('/api/hello')).status).toBe(200)
  })
})

describe('the channel: a plugin that calls the kernel’s services around their own channels', () => {
  it('cannot write an audit record through a forged service call: no action of another, no record', async () => {
    const dir = join(d.dataDir, 'audit-forger-source')
    // A well-formed frame, written straight to descriptor 3: a `service.call` of hostd.audit's `record`, which would
    // skip the audit channel's rate limit and its prefix (a record as the kernel's `user.create`).
    await writePluginFolder(dir, {
      name: 'hostd-plugin-audit-forger',
      files: {
        'src/index.ts': `import { writeSync } from 'node:fs'
import { definePlugin, tokens } from '@hostd/sdk'
export default definePlugin({
  id: 'audit-forger', version: '1.0.0', kernel: '^1.3.0', deps: { audit: tokens.audit },
  routes: (r) => {
    r.post('/api/audit-forger/forge', { role: 'viewer' }, () => {
      const call = { t: 'call', id: 900000, method: 'service.call',
        args: ['hostd.audit', 'record', [{ action: 'user.create', target: 'forged-admin' }, null]] }
      const text = Buffer.from(JSON.stringify(call))
      const frame = Buffer.alloc(4 + text.length)
      frame.writeUInt32BE(text.length, 0)
      text.copy(frame, 4)
      writeSync(3, frame)
      return { sent: true }
    })
  },
})
`,
      },
    })
    await d.drop(dir, 'audit-forger')
    await d.until('audit-forger', (e) => e.state === 'active')
    expect((await d.api('/api/audit-forger/forge', { method: 'POST' })).status).toBe(200)
    // The kernel answered the forged call (with a refusal the plugin never reads); then nothing was recorded.
    expect((await d.api('/api/hello')).status).toBe(200)
    const audit = await d.api('/api/audit?limit=200')
    const forged = (audit.body.items as { action: string; target: string | null }[]).filter(
      (e) => e.target === 'forged-admin',
    )
    expect(forged).toEqual([])
  })
})

describe('its process ends with its load: no orphans', () => {
  it('after an upgrade, the old version’s processes are gone and the new one serves', async () => {
    const dir = join(d.pluginsDir, 'hello')
    const before = await pluginProcesses(d.pid, dir)
    expect(before.length).toBe(3)
    const entry = join(dir, 'src', 'index.ts')
    await writeFile(entry, (await readFile(entry, 'utf8')).replace("version: '1.0.0'", "version: '1.0.1'"))
    await d.until('hello', (e) => e.version === '1.0.1' && e.state === 'active')
    await eventually(() => allGone(before))
    expect((await d.api('/api/hello')).status).toBe(200)
    const after = await pluginProcesses(d.pid, dir)
    expect(after.length).toBe(3)
  })

  it('after disable, then after removal', async () => {
    const dir = join(d.pluginsDir, 'prototype-then')
    const running = await pluginProcesses(d.pid, dir)
    expect(running.length).toBe(3)
    expect((await d.api('/api/extensions/prototype-then/disable', { method: 'POST' })).status).toBe(200)
    expect(await allGone(running)).toBe(true)
    expect((await d.api('/api/extensions/prototype-then/enable', { method: 'POST' })).status).toBe(200)
    await d.until('prototype-then', (e) => e.state === 'active')
    const again = await pluginProcesses(d.pid, dir)
    expect(again.length).toBe(3)
    await rm(dir, { recursive: true })
    await eventually(async () => (await d.extension('prototype-then')) === undefined)
    expect(await allGone(again)).toBe(true)
  })

  it('after the daemon stops', async () => {
    const running = [
      ...(await pluginProcesses(d.pid, join(d.pluginsDir, 'hello'))),
      ...(await pluginProcesses(d.pid, join(d.pluginsDir, 'secrets-reader'))),
    ]
    expect(running.length).toBe(6)
    await d.stop({ keepDataDir: true })
    await eventually(() => allGone(running))
  })
})

describe('a daemon killed outright takes its plugins’ processes with it', () => {
  it('SIGKILL to the daemon: bwrap’s --die-with-parent ends every process of its sandboxes', async () => {
    const killed = await startIsolationDaemon({ hello: HELLO })
    try {
      await killed.until('hello', (e) => e.state === 'active')
      const running = await pluginProcesses(killed.pid, join(killed.pluginsDir, 'hello'))
      expect(running.length).toBe(3)
      process.kill(killed.pid, 'SIGKILL')
      await killed.exited
      await eventually(() => allGone(running))
    } finally {
      await killed.close()
    }
  })
})
