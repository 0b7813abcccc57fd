import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { c as tar } from 'tar'
import { roleSatisfies, ROLES, type Role, type RouteRole } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/kernel/testing'
import { writePluginFolder } from '@hostd/sdk/testing'
import hello from '../examples/hello-plugin/src/index.ts'
import { builtins, PASSWORD, SAMPLES, type Ctx } from './support/route-samples.ts'

/**
 * Proves deny-by-default on the whole route table: every route the daemon serves (kernel, every built-in plugin
 * under plugins/, an example and an installed plugin) has a role, has a sample request, and answers 401 without
 * sign-in, 403 to a lower role, and 2xx to every role that satisfies it. A new route without a sample fails this
 * test. Each built-in plugin keeps its samples beside its code in `plugins/<name>/test/route-samples.ts`; the
 * kernel's are in test/support/route-samples.ts.
 */
describe('route table', () => {
  let t: TestKernel
  let ctx: Ctx
  const users = new Map<Role, { id: string }>()
  let work: string
  let targets = 0

  beforeAll(async () => {
    // Inside the repository, so an installed plugin resolves @hostd/sdk through the workspace.
    await mkdir(join(import.meta.dirname, '..', '.hostd-test'), { recursive: true })
    work = await mkdtemp(join(import.meta.dirname, '..', '.hostd-test', 'routes-'))
    const pkg = join(work, 'pkg', 'package')
    await writePluginFolder(pkg, {
      name: 'hostd-plugin-tabletest',
      files: {
        'src/index.ts': `import { definePlugin } from '@hostd/sdk'
export default definePlugin({ id: 'tabletest', version: '1.0.0', kernel: '^1.0.0',
  routes: (r) => r.get('/api/tabletest', { role: 'operator' }, () => ({ ok: true })) })\n`,
      },
    })
    const chunks: Buffer[] = []
    for await (const chunk of tar({ gzip: true, cwd: join(work, 'pkg') }, ['package'])) chunks.push(chunk as Buffer)
    t = await startTestKernel({
      plugins: [hello, ...builtins.map((b) => b.plugin)],
      env: { HOSTD_PLUGINS_DIR: join(work, 'plugins'), HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS: '10000' },
    })
    for (const role of ROLES) {
      users.set(
        role,
        await t.kernel.services.users.create(role === 'admin' ? 'table-admin' : `table-${role}`, PASSWORD, role),
      )
    }
    ctx = {
      t,
      pluginArchive: Buffer.concat(chunks),
      freshUser: async () => (await t.kernel.services.users.create(`target${++targets}`, PASSWORD, 'viewer')).id,
    }
    // Install once so the installed plugin's own route is part of the table.
    const installed = await t.inject({
      method: 'POST',
      url: '/api/extensions/install',
      as: 'admin',
      headers: { 'content-type': 'application/gzip' },
      payload: ctx.pluginArchive,
    })
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
      expect(SAMPLES, `no sample request for ${route.method} ${route.path}`).toHaveProperty(
        `${route.method} ${route.path}`,
      )
    }
  })

  it('documents every route in the OpenAPI document with its role', async () => {
    const doc = (await t.inject({ url: '/api/openapi.json', as: 'viewer' })).json() as {
      openapi: string
      paths: Record<string, Record<string, { 'x-hostd-role': string; requestBody?: unknown }>>
    }
    expect(doc.openapi).toBe('3.1.0')
    for (const route of t.kernel.registry.routeTable()) {
      const op = doc.paths[route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[route.method.toLowerCase()]
      expect(op?.['x-hostd-role'], `${route.method} ${route.path}`).toBe(route.role)
    }
    expect(doc.paths['/api/users']!.post!.requestBody).toMatchObject({
      content: { 'application/json': { schema: { required: ['username', 'password', 'role'] } } },
    })
    expect(doc.paths['/api/hello']!.get!['x-hostd-role']).toBe('viewer')
  })

  it('answers each role as declared: 401 signed out, 403 below the role, 2xx at or above it', async () => {
    const results: string[] = []
    for (const route of t.kernel.registry.routeTable()) {
      const key = `${route.method} ${route.path}`
      for (const who of ['anonymous', ...ROLES] as const) {
        const sample = await SAMPLES[key]!({ ...ctx, userId: who === 'anonymous' ? undefined : users.get(who)!.id })
        // A fresh session each call: logout and password routes end or keep sessions as they should.
        const token =
          who === 'anonymous' ? undefined : t.kernel.services.sessions.create(users.get(who)!.id, '127.0.0.1')
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
          ? (sample.ok ?? []).includes(res.statusCode) || (res.statusCode >= 200 && res.statusCode < 300)
            ? 'ok'
            : String(res.statusCode)
          : String(res.statusCode)
        if (got !== expected)
          results.push(`${key} as ${who}: expected ${expected}, got ${res.statusCode} ${res.body.slice(0, 120)}`)
        if (!allowed) expect(res.json().error, `${key} as ${who}`).toMatch(/^HOSTD_AUTH_/)
      }
    }
    expect(results).toEqual([])
  }, 180_000) // ~140 routes x 4 roles, some signing in with argon2: minutes on a loaded machine
})
