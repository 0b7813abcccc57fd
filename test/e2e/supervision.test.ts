/**
 * End-to-end, the daemon is never silently down (issue 26, items 5 and 6, plugins in the daemon's process): it listens
 * before its plugins finish starting and /health answers within 100 ms while a plugin's start hangs; a start that never
 * resolves, a stop that never resolves, a setup that throws late and an import slower than its deadline each end with
 * their plugin reported and nothing held; SIGTERM ends it with one line even while a start hangs, and the next start
 * works; a plugin's process.exit is refused with a line naming its caller. The real daemon (its build), spawned per
 * scenario, over TLS; the plugins are the fixtures of test/fixtures/hostile-plugins and the hello example.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetch } from 'undici'
import { freePort } from '@hostd/sdk/testing'
import { DAEMON_ENTRIES, insecureAgent, REPO_ROOT, startDaemon, waitFor, type Daemon } from '../support/daemon.ts'

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'hostile-plugins')
const HELLO = join(REPO_ROOT, 'examples', 'hello-plugin')
const PASSWORD = 'correct horse battery'

type Json = Record<string, any>

/** A daemon spawned without waiting for its "serving" line: the tests look at it while its plugins start. */
interface Spawned {
  child: ChildProcess
  port: number
  dataDir: string
  pluginsDir: string
  stdout(): string
  stderr(): string
  exited: Promise<number | string>
  api(path: string, init?: { method?: string; token?: string; body?: unknown }): Promise<{ status: number; body: Json }>
}

const spawned: Spawned[] = []
const scratch: string[] = []

/** The environment without the host's hostd settings (as test/support/daemon.ts does). */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('HOSTD_') && key !== 'NODE_OPTIONS' && !key.startsWith('VITEST')) env[key] = value
  return { ...env, ...extra }
}

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  scratch.push(dir)
  return dir
}

/** A data dir whose plugins folder holds copies of `plugins` (fixture names, or absolute folders). */
async function dataDirWith(plugins: string[]): Promise<string> {
  const dataDir = await tempDir('hostd-e2e-supervision-')
  for (const plugin of plugins) {
    const from = plugin.startsWith('/') ? plugin : join(FIXTURES, plugin)
    const name = plugin.startsWith('/') ? 'hello' : plugin
    await cp(from, join(dataDir, 'plugins', name), { recursive: true, filter: (src) => !src.includes('node_modules') })
  }
  return dataDir
}

async function spawnDaemon(dataDir: string, env: Record<string, string>): Promise<Spawned> {
  const port = await freePort()
  const child = spawn(process.execPath, [DAEMON_ENTRIES.built], {
    cwd: REPO_ROOT,
    env: cleanEnv({
      HOSTD_DATA_DIR: dataDir,
      HOSTD_HOST: '127.0.0.1',
      HOSTD_PORT: String(port),
      HOSTD_HELPER_SOCKET: join(dataDir, 'no-helper.sock'),
      HOSTD_BUILTIN_PLUGINS: '0',
      HOSTD_LOG_LEVEL: 'warn',
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d))
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  )
  const daemon: Spawned = {
    child,
    port,
    dataDir,
    pluginsDir: join(dataDir, 'plugins'),
    stdout: () => out,
    stderr: () => err,
    exited,
    async api(path, init = {}) {
      const res = await fetch(`https://127.0.0.1:${port}${path}`, {
        dispatcher: insecureAgent,
        method: init.method ?? 'GET',
        headers: {
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
          ...(init.body ? { 'content-type': 'application/json' } : {}),
          'x-svc-client': 'e2e',
        },
        body: init.body ? JSON.stringify(init.body) : undefined,
      })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : null }
    },
  }
  spawned.push(daemon)
  return daemon
}

/** SIGTERM, and what it ended with; SIGKILL only if it is still there after `graceMs` (then the answer says SIGKILL). */
async function terminate(d: { child: ChildProcess; exited: Promise<number | string> }, graceMs = 15_000) {
  d.child.kill('SIGTERM')
  const killer = setTimeout(() => d.child.kill('SIGKILL'), graceMs)
  const code = await d.exited
  clearTimeout(killer)
  return code
}

async function signIn(d: Pick<Spawned, 'api'>): Promise<string> {
  expect((await d.api('/api/setup', { method: 'POST', body: { username: 'admin', password: PASSWORD } })).status).toBe(
    201,
  )
  const login = await d.api('/api/auth/login', { method: 'POST', body: { username: 'admin', password: PASSWORD } })
  expect(login.status, JSON.stringify(login.body)).toBe(200)
  return login.body.token as string
}

const listed = async (d: Pick<Spawned, 'api'>, token: string, id: string): Promise<Json | undefined> =>
  ((await d.api('/api/extensions', { token })).body as Json[]).find((e) => e.id === id)

/** /health's answer time as this client sees it, in ms. */
async function healthMs(port: number): Promise<number> {
  const began = performance.now()
  const res = await fetch(`https://127.0.0.1:${port}/health`, { dispatcher: insecureAgent })
  await res.text()
  expect(res.status).toBe(200)
  return performance.now() - began
}

afterEach(async () => {
  for (const d of spawned.splice(0)) if (d.child.exitCode === null && d.child.signalCode === null) await terminate(d)
})
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true })
})

describe('plugins that hang or fail while the daemon starts', () => {
  it('listens first: /health within 100 ms while a start hangs; each bad plugin failed with reason and origin', async () => {
    const dataDir = await dataDirWith(['start-never-resolves', 'setup-throws-late', 'slow-import', HELLO])
    const d = await spawnDaemon(dataDir, { HOSTD_PLUGIN_CALL_TIMEOUT_MS: '3000' })
    await waitFor(async () => (await d.api('/health')).status === 200, 20_000)
    expect(d.stdout()).toMatch(/^hostd \S+ listening on https:\/\/127\.0\.0\.1:\d+, starting plugins$/m)
    // Not serving yet: a plugin's path answers 503 until its plugin is up (kernel routes work: setup, sign-in).
    const ping = await d.api('/api/start-never-resolves/ping')
    expect(ping).toEqual({
      status: 503,
      body: { error: 'HOSTD_PLUGIN_STARTING', message: expect.stringMatching(/starting/) },
    })
    const token = await signIn(d)
    expect(await listed(d, token, 'start-never-resolves')).toMatchObject({ state: 'starting' })
    const samples = []
    for (let i = 0; i < 5; i++) samples.push(await healthMs(d.port))
    expect(await listed(d, token, 'start-never-resolves')).toMatchObject({ state: 'starting' })
    expect(Math.max(...samples), `/health answer times (ms): ${samples.join(', ')}`).toBeLessThan(100)
    expect(d.stdout()).not.toMatch(/ serving https/)

    await waitFor(async () => / serving https:/.test(d.stdout()), 30_000)
    const entry = (name: string) => join(d.pluginsDir, name, 'src', 'index.ts')
    expect(await listed(d, token, 'start-never-resolves')).toMatchObject({
      state: 'failed',
      error: 'start() did not finish within 3 s',
      errorOrigin: 'src/index.ts',
    })
    const throwLine =
      (await readFile(entry('setup-throws-late'), 'utf8')).split('\n').findIndex((l) => l.includes('throw new')) + 1
    expect(await listed(d, token, 'setup-throws-late')).toMatchObject({
      state: 'failed',
      // An isolated plugin's error also names the line in its message ("... (at src/index.ts:13:11)").
      error: expect.stringMatching(/^setup gave up after its first await( \(at src\/index\.ts:\d+:\d+\))?$/),
      errorOrigin: `src/index.ts:${throwLine}`,
    })
    expect(await listed(d, token, 'slow-import')).toMatchObject({
      state: 'failed',
      error: 'could not load: import did not finish within 3 s',
      errorOrigin: 'src/index.ts',
    })
    expect(await listed(d, token, 'hello')).toMatchObject({ state: 'active' })
    expect((await d.api('/api/hello', { token })).status).toBe(200)
    expect((await d.api('/api/start-never-resolves/ping', { token })).status).toBe(404)

    // Nothing is held: a plugin dropped in now loads, and the hanging one can be disabled and removed.
    const late = join(d.pluginsDir, 'latecomer')
    await mkdir(late, { recursive: true })
    await writeFile(
      join(late, 'index.js'),
      "import { definePlugin } from '@hostd/sdk'\nexport default definePlugin({ id: 'latecomer', version: '1.0.0', " +
        "kernel: '^1.1.0', routes: (r) => r.get('/api/latecomer', { role: 'viewer' }, () => ({ late: true })) })\n",
    )
    await writeFile(join(late, 'package.json'), JSON.stringify({ name: 'latecomer', type: 'module', main: 'index.js' }))
    await waitFor(async () => (await d.api('/api/latecomer', { token })).status === 200, 20_000)
    const disabled = await d.api('/api/extensions/start-never-resolves/disable', { method: 'POST', token })
    expect({ status: disabled.status, state: disabled.body.state }).toEqual({ status: 200, state: 'disabled' })
    expect((await d.api('/api/extensions/start-never-resolves/remove', { method: 'POST', token })).status).toBe(204)
    expect(await listed(d, token, 'start-never-resolves')).toBeUndefined()

    expect(await terminate(d)).toBe(0)
    expect(d.stdout()).toMatch(/^hostd: exiting with code 0: SIGTERM \(stopped in [\d.]+ m?s\)$/m)
  }, 90_000)
})

/** Marks a plugin trusted (it then runs in the daemon's process, where these tests want it); answers its entry. */
async function trust(d: Daemon, token: string, id: string): Promise<Json> {
  const res = await apiOf(d, `/api/extensions/${id}/trust`, { method: 'POST', token, body: { trusted: true } })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

describe('SIGTERM while a start hangs in the daemon process', () => {
  it('ends the daemon at once with its line (exit 0), and the next start on the same data works', async () => {
    const dataDir = await dataDirWith(['start-never-resolves'])
    // First run: trust the plugin, so that it runs in the daemon's process from now on (remembered across restarts).
    const first = await startDaemon({ dataDir, env: { HOSTD_PLUGIN_CALL_TIMEOUT_MS: '2000' } })
    const token = await signIn({ api: (path, init) => apiOf(first, path, init) })
    expect(await trust(first, token, 'start-never-resolves')).toMatchObject({ state: 'failed', trusted: true })
    expect(await first.stop({ keepDataDir: true })).toBe(0)
    // A minute: the start is surely still hanging when the signal comes.
    const d = await spawnDaemon(dataDir, { HOSTD_PLUGIN_CALL_TIMEOUT_MS: '60000' })
    await waitFor(async () => (await d.api('/api/start-never-resolves/ping')).status === 503, 20_000)
    expect(await terminate(d)).toBe(0)
    expect(d.stdout()).toMatch(/^hostd: SIGTERM, stopping$/m)
    expect(d.stdout()).toMatch(/^hostd: exiting with code 0: SIGTERM \(stopped in [\d.]+ m?s\)$/m)
    expect(d.stdout()).not.toMatch(/ serving https/)

    // Main exited 0 in 0.7 s here (nothing kept its event loop alive): now it serves, the plugin reported.
    const again: Daemon = await startDaemon({ dataDir, env: { HOSTD_PLUGIN_CALL_TIMEOUT_MS: '2000' } })
    try {
      expect((await again.fetch('/health')).status).toBe(200)
      expect(
        await listed({ api: (path, init) => apiOf(again, path, init) }, token, 'start-never-resolves'),
      ).toMatchObject({
        state: 'failed',
        error: 'start() did not finish within 2 s',
        trusted: true,
      })
    } finally {
      expect(await again.stop({ keepDataDir: true })).toBe(0)
    }
  }, 90_000)
})

describe('a stop() that never resolves in the daemon process', () => {
  it('SIGTERM still ends the daemon with exit 0 and its line; the stop is logged as abandoned', async () => {
    const dataDir = await dataDirWith(['stop-never-resolves'])
    const d = await startDaemon({ dataDir, env: { HOSTD_PLUGIN_CALL_TIMEOUT_MS: '2000' } })
    const token = await signIn({ api: (path, init) => apiOf(d, path, init) })
    // Trusted: loaded again in the daemon's process (the version it replaces is stopped, and its stop hangs too).
    expect(await trust(d, token, 'stop-never-resolves')).toMatchObject({ state: 'active', trusted: true })
    expect((await apiOf(d, '/api/stop-never-resolves/ping', { token })).body).toEqual({ pong: true })
    // test/support/daemon.ts SIGKILLs after 5 s: an exit code of 0 is a stop within that.
    expect(await d.stop({ keepDataDir: true })).toBe(0)
    expect(d.stdout()).toContain('plugin stop failed: stop() did not finish within 2 s')
    expect(d.stdout()).toMatch(/^hostd: exiting with code 0: SIGTERM \(stopped in [\d.]+ m?s\)$/m)
  }, 60_000)
})

describe('process.exit from a trusted plugin in the daemon process', () => {
  it('is refused with a line naming its caller; the daemon goes on', async () => {
    const dataDir = await tempDir('hostd-e2e-exit-')
    const dir = join(dataDir, 'plugins', 'exiter')
    await mkdir(dir, { recursive: true })
    const source = [
      "import { definePlugin } from '@hostd/sdk'",
      'export default definePlugin({',
      "  id: 'exiter', version: '1.0.0', kernel: '^1.1.0',",
      "  routes: (r) => r.get('/api/exiter/exit', { role: 'viewer' }, () => {",
      '    process.exit(0)',
      '  }),',
      '})',
      '',
    ].join('\n')
    await writeFile(join(dir, 'index.js'), source)
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'exiter', type: 'module', main: 'index.js' }))
    const d = await startDaemon({ dataDir })
    const api = (path: string, init?: Parameters<Spawned['api']>[1]) => apiOf(d, path, init)
    const token = await signIn({ api })
    expect(await trust(d, token, 'exiter')).toMatchObject({ state: 'active', trusted: true })

    const exit = await api('/api/exiter/exit', { token })
    expect(exit.status).toBe(500)
    expect(d.stderr()).toContain(
      `hostd: process.exit(0) called from ${join(dir, 'index.js')}:5: refused, the daemon goes on (only a signal ends it)`,
    )
    expect((await d.fetch('/health')).status).toBe(200)
    expect(d.process.exitCode).toBeNull()
    expect(await d.stop({ keepDataDir: true })).toBe(0)
  }, 60_000)
})

/** `Spawned.api` for a daemon from test/support/daemon.ts. */
async function apiOf(
  d: Daemon,
  path: string,
  init: { method?: string; token?: string; body?: unknown } = {},
): Promise<{ status: number; body: Json }> {
  const res = await d.fetch(path, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      'x-svc-client': 'e2e',
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}
