import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, writeFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { c as tar } from 'tar'
import { roleSatisfies, ROLES, type HostdPlugin, type Role, type RouteRole } from '@hostd/sdk'
import { startTestKernel, type RouteSampleContext, type RouteSamples, type TestKernel } from '@hostd/kernel/testing'
import hello from '../examples/hello-plugin/src/index.ts'

/**
 * Proves deny-by-default on the whole route table: every route the daemon serves (kernel, every built-in plugin
 * under plugins/, an example and an installed plugin) has a role, has a sample request, and answers 401 without
 * sign-in, 403 to a lower role, and 2xx to every role that satisfies it. A new route without a sample fails this
 * test. Each built-in plugin keeps its samples beside its code in `plugins/<name>/test/route-samples.ts`.
 */
const PASSWORD = 'route table password'
interface Ctx extends RouteSampleContext {
  pluginArchive: Buffer
}
type Sample = (ctx: Ctx) => ReturnType<RouteSamples[string]>

const PLUGINS_DIR = join(import.meta.dirname, '..', 'plugins')
const builtins: { plugin: HostdPlugin; samples: RouteSamples }[] = []
for (const name of existsSync(PLUGINS_DIR) ? readdirSync(PLUGINS_DIR).sort() : []) {
  const entry = join(PLUGINS_DIR, name, 'src', 'index.ts')
  if (!existsSync(entry)) continue
  const plugin = (await import(pathToFileURL(entry).href)).default as HostdPlugin
  const samplesFile = join(PLUGINS_DIR, name, 'test', 'route-samples.ts')
  const samples = existsSync(samplesFile) ? ((await import(pathToFileURL(samplesFile).href)).samples as RouteSamples) : {}
  builtins.push({ plugin, samples })
}

let n = 0
const SAMPLES: Record<string, Sample> = {
  ...Object.assign({}, ...builtins.map((b) => b.samples)),
  'GET /health': async () => ({ url: '/health' }),
  'GET /api/setup': async () => ({ url: '/api/setup' }),
  // Setup is public and happens once; afterwards it answers 409 to everyone, never 401/403.
  'POST /api/setup': async () => ({ url: '/api/setup', body: { username: `late${++n}`, password: PASSWORD }, ok: [409] }),
  'POST /api/auth/login': async () => ({ url: '/api/auth/login', body: { username: 'table-admin', password: PASSWORD } }),
  'POST /api/auth/logout': async () => ({ url: '/api/auth/logout' }),
  'GET /api/auth/me': async () => ({ url: '/api/auth/me' }),
  'GET /api/version': async () => ({ url: '/api/version' }),
  'GET /api/openapi.json': async () => ({ url: '/api/openapi.json' }),
  'GET /api/users': async () => ({ url: '/api/users' }),
  'POST /api/users': async () => ({ url: '/api/users', body: { username: `made${++n}`, password: PASSWORD, role: 'viewer' } }),
  'POST /api/users/:id/role': async (c) => ({ url: `/api/users/${await c.freshUser()}/role`, body: { role: 'operator' } }),
  'POST /api/users/:id/username': async (c) => ({ url: `/api/users/${await c.freshUser()}/username`, body: { username: `renamed${++n}` } }),
  'POST /api/users/:id/disabled': async (c) => ({ url: `/api/users/${await c.freshUser()}/disabled`, body: { disabled: true } }),
  'POST /api/users/:id/password': async (c) => ({ url: `/api/users/${await c.freshUser()}/password`, body: { password: 'another good secret' } }),
  'POST /api/users/:id/remove': async (c) => ({ url: `/api/users/${await c.freshUser()}/remove`, body: {} }),
  'POST /api/me/password': async () => ({ url: '/api/me/password', body: { currentPassword: PASSWORD, newPassword: PASSWORD } }),
  'GET /api/audit': async () => ({ url: '/api/audit?range=24h&limit=5' }),
  'GET /api/extensions': async () => ({ url: '/api/extensions' }),
  'POST /api/extensions/install': async (c) => ({ url: '/api/extensions/install', raw: c.pluginArchive }),
  'POST /api/extensions/:id/disable': async (c) => {
    await c.t.kernel.registry.enable('hello')
    return { url: '/api/extensions/hello/disable' }
  },
  'POST /api/extensions/:id/enable': async (c) => {
    await c.t.kernel.registry.disable('hello')
    return { url: '/api/extensions/hello/enable' }
  },
  'POST /api/extensions/:id/remove': async (c) => {
    await c.t.inject({ method: 'POST', url: '/api/extensions/install', as: 'admin', headers: { 'content-type': 'application/gzip' }, payload: c.pluginArchive })
    return { url: '/api/extensions/tabletest/remove' }
  },
  'GET /api/hello': async (c) => {
    await c.t.kernel.registry.enable('hello')
    return { url: '/api/hello' }
  },
  'GET /api/tabletest': async (c) => {
    // The remove sample above uninstalls it; put it back.
    if (c.t.kernel.registry.find('tabletest')?.state !== 'active') {
      await c.t.inject({ method: 'POST', url: '/api/extensions/install', as: 'admin', headers: { 'content-type': 'application/gzip' }, payload: c.pluginArchive })
    }
    return { url: '/api/tabletest' }
  },
}

describe('route table', () => {
  let t: TestKernel
  let ctx: Ctx
  const users = new Map<Role, { id: string }>()
  let work: string

  beforeAll(async () => {
    // Inside the repository, so an installed plugin resolves @hostd/sdk through the workspace.
    await mkdir(join(import.meta.dirname, '..', '.hostd-test'), { recursive: true })
    work = await mkdtemp(join(import.meta.dirname, '..', '.hostd-test', 'routes-'))
    const pkg = join(work, 'pkg', 'package')
    await mkdir(join(pkg, 'src'), { recursive: true })
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'hostd-plugin-tabletest', version: '1.0.0', type: 'module', hostd: { entry: 'src/index.ts' } }))
    await writeFile(join(pkg, 'src', 'index.ts'), `import { definePlugin } from '@hostd/sdk'
export default definePlugin({ id: 'tabletest', version: '1.0.0', kernel: '^1.0.0',
  routes: (r) => r.get('/api/tabletest', { role: 'operator' }, () => ({ ok: true })) })\n`)
    const chunks: Buffer[] = []
    for await (const chunk of tar({ gzip: true, cwd: join(work, 'pkg') }, ['package'])) chunks.push(chunk as Buffer)
    t = await startTestKernel({ plugins: [hello, ...builtins.map((b) => b.plugin)], env: { HOSTD_PLUGINS_DIR: join(work, 'plugins'), HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS: '10000' } })
    for (const role of ROLES) {
      users.set(role, await t.kernel.services.users.create(role === 'admin' ? 'table-admin' : `table-${role}`, PASSWORD, role))
    }
    ctx = {
      t,
      pluginArchive: Buffer.concat(chunks),
      freshUser: async () => (await t.kernel.services.users.create(`target${++n}`, PASSWORD, 'viewer')).id,
    }
    // Install once so the installed plugin's own route is part of the table.
    const installed = await t.inject({ method: 'POST', url: '/api/extensions/install', as: 'admin', headers: { 'content-type': 'application/gzip' }, payload: ctx.pluginArchive })
    expect(installed.statusCode).toBe(201)
  })
  afterAll(async () => {
    await t.close()
    await rm(work, { recursive: true, force: true })
  })

  it('has a role on every route and a sample for every route', () => {
    const table = t.kernel.registry.routeTable()
    expect(table.length).toBeGreaterThan(20)
    for (const route of table) {
      expect(['public', ...ROLES], `${route.method} ${route.path}`).toContain(route.role)
      expect(SAMPLES, `no sample request for ${route.method} ${route.path}`).toHaveProperty(`${route.method} ${route.path}`)
    }
  })

  it('documents every route in the OpenAPI document with its role', async () => {
    const doc = (await t.inject({ url: '/api/openapi.json', as: 'viewer' })).json() as { openapi: string; paths: Record<string, Record<string, { 'x-hostd-role': string; requestBody?: unknown }>> }
    expect(doc.openapi).toBe('3.1.0')
    for (const route of t.kernel.registry.routeTable()) {
      const op = doc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[route.method.toLowerCase()]
      expect(op?.['x-hostd-role'], `${route.method} ${route.path}`).toBe(route.role)
    }
    expect(doc.paths['/api/users']!.post!.requestBody).toMatchObject({ content: { 'application/json': { schema: { required: ['username', 'password', 'role'] } } } })
    expect(doc.paths['/api/hello']!.get!['x-hostd-role']).toBe('viewer')
  })

  it('answers each role as declared: 401 signed out, 403 below the role, 2xx at or above it', async () => {
    const results: string[] = []
    for (const route of t.kernel.registry.routeTable()) {
      const key = `${route.method} ${route.path}`
      for (const who of ['anonymous', ...ROLES] as const) {
        const sample = await SAMPLES[key]!(ctx)
        // A fresh session each call: logout and password routes end or keep sessions as they should.
        const token = who === 'anonymous' ? undefined : t.kernel.services.sessions.create(users.get(who)!.id, '127.0.0.1')
        const res = await t.inject({
          method: route.method as 'GET',
          url: sample.url,
          headers: {
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            'content-type': sample.contentType ?? (sample.raw ? 'application/gzip' : 'application/json'),
          },
          payload: sample.raw ?? (sample.body === undefined ? undefined : JSON.stringify(sample.body)),
        })
        const role = route.role as RouteRole
        const allowed = role === 'public' || (who !== 'anonymous' && roleSatisfies(who, role))
        const expected = allowed ? 'ok' : who === 'anonymous' ? '401' : '403'
        const got = allowed
          ? ((sample.ok ?? []).includes(res.statusCode) || (res.statusCode >= 200 && res.statusCode < 300) ? 'ok' : String(res.statusCode))
          : String(res.statusCode)
        if (got !== expected) results.push(`${key} as ${who}: expected ${expected}, got ${res.statusCode} ${res.body.slice(0, 120)}`)
        if (!allowed) expect(res.json().error, `${key} as ${who}`).toMatch(/^HOSTD_AUTH_/)
      }
    }
    expect(results).toEqual([])
  })
})
