/**
 * One sample request per route the daemon serves: the kernel's own routes, the example and installed test plugins
 * of the route-table test, and every built-in plugin's (each keeps its samples in `plugins/<name>/test/route-samples.ts`).
 * The route-table test proves each route's role with them; the malformed-input test starts from them.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { HostdPlugin } from '@hostd/sdk'
import type { RouteSampleContext, RouteSamples } from '@hostd/kernel/testing'

export const PASSWORD = 'route table password'
export interface Ctx extends RouteSampleContext {
  pluginArchive: Buffer
}
export type Sample = (ctx: Ctx) => ReturnType<RouteSamples[string]>

const PLUGINS_DIR = join(import.meta.dirname, '..', '..', 'plugins')
/** Every built-in plugin under plugins/, with its samples. */
export const builtins: { plugin: HostdPlugin; samples: RouteSamples }[] = []
for (const name of existsSync(PLUGINS_DIR) ? readdirSync(PLUGINS_DIR).sort() : []) {
  const entry = join(PLUGINS_DIR, name, 'src', 'index.ts')
  if (!existsSync(entry)) continue
  const plugin = (await import(pathToFileURL(entry).href)).default as HostdPlugin
  const samplesFile = join(PLUGINS_DIR, name, 'test', 'route-samples.ts')
  const samples = existsSync(samplesFile) ? ((await import(pathToFileURL(samplesFile).href)).samples as RouteSamples) : {}
  builtins.push({ plugin, samples })
}

let n = 0
export const SAMPLES: Record<string, Sample> = {
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
