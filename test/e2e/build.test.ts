/**
 * The daemon's build (kernel/build.mjs, what `npm start` runs) against its sources: the same built-in plugins
 * load from both, third-party plugins still hot-load from TypeScript and from JavaScript on the build, and stack
 * traces of built code name the TypeScript lines.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { cp, mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { REPO_ROOT, startDaemon, waitFor, type Daemon, type DaemonEntry } from '../support/daemon.ts'

const ADMIN = { username: 'admin', password: 'build test password' }
const started: Daemon[] = []
const temps: string[] = []
afterAll(async () => {
  await Promise.all(started.splice(0).map((d) => d.stop()))
  await Promise.all(temps.map((t) => rm(t, { recursive: true, force: true })))
})

async function adminToken(d: Daemon): Promise<string> {
  const body = JSON.stringify(ADMIN)
  const headers = { 'content-type': 'application/json' }
  expect((await d.fetch('/api/setup', { method: 'POST', headers, body })).status).toBe(201)
  const login = await d.fetch('/api/auth/login', {
    method: 'POST',
    headers: { ...headers, 'x-svc-client': 'build-test' },
    body,
  })
  return ((await login.json()) as { token: string }).token
}

type Extension = { id: string; state: string; builtin: boolean; error?: string }
async function extensions(d: Daemon, token: string): Promise<Extension[]> {
  const res = await d.fetch('/api/extensions', { headers: { authorization: `Bearer ${token}` } })
  expect(res.status).toBe(200)
  return ((await res.json()) as Extension[]).sort((a, b) => a.id.localeCompare(b.id))
}

async function startWithBuiltins(entry: DaemonEntry, pluginsDir: string): Promise<{ d: Daemon; token: string }> {
  const d = await startDaemon({
    entry,
    env: { HOSTD_BUILTIN_PLUGINS: '1', HOSTD_PLUGINS_DIR: pluginsDir },
    startTimeoutMs: 60_000,
  })
  started.push(d)
  return { d, token: await adminToken(d) }
}

describe('the daemon build', () => {
  it('loads the same built-in plugins as the sources, and third-party plugins in .ts and .js', async () => {
    const pluginsDir = await mkdtemp(join(tmpdir(), 'hostd-build-plugins-'))
    temps.push(pluginsDir)
    await cp(join(REPO_ROOT, 'examples', 'hello-plugin'), join(pluginsDir, 'hello'), { recursive: true })
    await mkdir(join(pluginsDir, 'plainjs'))
    await writeFile(
      join(pluginsDir, 'plainjs', 'package.json'),
      JSON.stringify({ name: 'plainjs', version: '1.0.0', type: 'module', main: 'index.js' }),
    )
    await writeFile(
      join(pluginsDir, 'plainjs', 'index.js'),
      `import { definePlugin } from '@hostd/sdk'
export default definePlugin({ id: 'plainjs', version: '1.0.0', kernel: '^1.0.0',
  routes: (r) => { r.get('/api/plainjs', { role: 'viewer' }, () => ({ plain: true })) } })
`,
    )
    const emptyDir = await mkdtemp(join(tmpdir(), 'hostd-build-none-'))
    temps.push(emptyDir)

    const built = await startWithBuiltins('built', pluginsDir)
    const sources = await startWithBuiltins('sources', emptyDir)
    const builtList = await extensions(built.d, built.token)
    const sourcesList = await extensions(sources.d, sources.token)

    expect(builtList.filter((e) => e.builtin).length).toBeGreaterThan(5)
    expect(builtList.filter((e) => e.state === 'failed')).toEqual([])
    const summary = (list: Extension[]) => list.filter((e) => e.builtin).map((e) => `${e.id}:${e.state}`)
    expect(summary(builtList)).toEqual(summary(sourcesList))
    expect(builtList.filter((e) => !e.builtin).map((e) => `${e.id}:${e.state}`)).toEqual([
      'hello:active',
      'plainjs:active',
    ])

    const auth = { authorization: `Bearer ${built.token}` }
    await waitFor(async () => (await built.d.fetch('/api/plainjs', { headers: auth })).status === 200, 10_000)
    expect(await (await built.d.fetch('/api/plainjs', { headers: auth })).json()).toEqual({ plain: true })
    expect(await (await built.d.fetch('/api/hello', { headers: auth })).json()).toEqual({ message: 'Hello, admin!' })
  })

  it('stack traces of built code name the TypeScript file and line', async () => {
    // What main.ts does before it loads the daemon: enable source maps, then import built code.
    const script = `process.setSourceMapsEnabled(true)
const { defineError } = await import(${JSON.stringify(join(REPO_ROOT, 'sdk', 'dist', 'index.mjs'))})
console.log(defineError('HOSTD_BUILDTEST_X', 400, 'x')().stack)`
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
    })
    expect(stdout).toMatch(/sdk\/src\/errors\.ts:\d+:\d+/)
  })
})
