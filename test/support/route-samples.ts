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
import { enrollTwoFactor, totp } from './two-factor.ts'

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
  const samples = existsSync(samplesFile)
    ? ((await import(pathToFileURL(samplesFile).href)).samples as RouteSamples)
    : {}
  builtins.push({ plugin, samples })
}

let n = 0

/** A well-formed user id nobody has: enough for a request that is refused before any lookup (signed out). */
const NOBODY = '00000000-0000-4000-8000-000000000000'
/**
 * One user per kernel that admin samples act on (sessions, tokens, two-factor reset), made once: samples run for
 * every role of every route, and each new user costs an argon2 hash.
 */
const targets = new WeakMap<object, Promise<{ id: string; username: string }>>()
const target = (c: Ctx) => {
  if (!targets.has(c.t)) targets.set(c.t, c.t.kernel.services.users.create(`sampletarget${++n}`, PASSWORD, 'viewer'))
  return targets.get(c.t)!
}
/** Two-factor on for the requesting user, and a code they have not used yet. */
async function withTwoFactor(c: Ctx): Promise<string> {
  if (!c.userId) return '000000'
  const { secret, step } = await enrollTwoFactor(c.t, c.userId)
  return totp(secret, step + 1)
}
/** A session of `userId` other than the request's own, by its public id. */
function otherSession(c: Ctx, userId: string): string {
  const token = c.t.kernel.services.sessions.create(userId, '127.0.0.1', 'route table')
  return c.t.kernel.services.sessions.list(userId, token).find((s) => s.current)!.id
}
const newToken = (c: Ctx, userId: string) =>
  c.t.kernel.services.sessions.apiTokens.create(
    { id: userId, role: 'viewer' },
    { name: `sample${++n}`, role: 'viewer', expiresAt: null, prefixes: null },
    null,
  ).info.id

export const SAMPLES: Record<string, Sample> = {
  ...Object.assign({}, ...builtins.map((b) => b.samples)),
  'GET /health': async () => ({ url: '/health' }),
  'GET /api/setup': async () => ({ url: '/api/setup' }),
  // Setup is public and happens once; afterwards it answers 409 to everyone, never 401/403.
  'POST /api/setup': async () => ({
    url: '/api/setup',
    body: { username: `late${++n}`, password: PASSWORD },
    ok: [409],
  }),
  'GET /api/setup/restore': async () => ({ url: '/api/setup/restore' }),
  // Restore at setup is public too, and closed once users exist: 409 to everyone (kernel/src/setup-restore.ts).
  'POST /api/setup/restore/snapshots': async () => ({
    url: '/api/setup/restore/snapshots',
    body: { repository: '/srv/backups', password: PASSWORD },
    ok: [409],
  }),
  'POST /api/setup/restore': async () => ({
    url: '/api/setup/restore',
    body: { repository: '/srv/backups', password: PASSWORD, snapshot: '0123abcd' },
    ok: [409],
  }),
  'POST /api/auth/login': async () => ({
    url: '/api/auth/login',
    body: { username: 'table-admin', password: PASSWORD },
  }),
  'POST /api/auth/login/verify': async (c) => {
    // A user with two-factor, through the password step; the second step with one of their recovery codes.
    const user = await target(c)
    const { recoveryCodes } = await enrollTwoFactor(c.t, user.id)
    const first = await c.t.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: user.username, password: PASSWORD },
    })
    return { url: '/api/auth/login/verify', body: { challenge: first.json().challenge, code: recoveryCodes[0] } }
  },
  'POST /api/auth/logout': async () => ({ url: '/api/auth/logout' }),
  'GET /api/auth/policy': async () => ({ url: '/api/auth/policy' }),
  // The policy as it was (nobody): the route-table users have no two-factor, and a stricter one would lock them out.
  'PUT /api/auth/policy': async () => ({ url: '/api/auth/policy', body: { requireTwoFactor: 'nobody' } }),
  'GET /api/me/two-factor': async () => ({ url: '/api/me/two-factor' }),
  'POST /api/me/two-factor/start': async (c) => {
    if (c.userId) await c.t.kernel.services.twoFactor.disable(c.userId)
    return { url: '/api/me/two-factor/start', body: { password: PASSWORD } }
  },
  'POST /api/me/two-factor/confirm': async (c) => {
    if (!c.userId) return { url: '/api/me/two-factor/confirm', body: { code: '000000' } }
    await c.t.kernel.services.twoFactor.disable(c.userId)
    const { secret } = await c.t.kernel.services.twoFactor.start(c.userId)
    return { url: '/api/me/two-factor/confirm', body: { code: totp(secret) } }
  },
  'POST /api/me/two-factor/recovery-codes': async (c) => ({
    url: '/api/me/two-factor/recovery-codes',
    body: { code: await withTwoFactor(c) },
  }),
  'POST /api/me/two-factor/disable': async (c) => ({
    url: '/api/me/two-factor/disable',
    body: { password: PASSWORD, code: await withTwoFactor(c) },
  }),
  'GET /api/me/tokens': async () => ({ url: '/api/me/tokens' }),
  'POST /api/me/tokens': async () => ({
    url: '/api/me/tokens',
    body: { name: `script ${++n}`, role: 'viewer', expiresInDays: 30, prefixes: ['/api/metrics'] },
  }),
  'POST /api/me/tokens/:id/revoke': async (c) => ({
    url: `/api/me/tokens/${c.userId ? newToken(c, c.userId) : NOBODY}/revoke`,
  }),
  'GET /api/me/sessions': async () => ({ url: '/api/me/sessions' }),
  'POST /api/me/sessions/:id/end': async (c) => ({
    url: `/api/me/sessions/${c.userId ? otherSession(c, c.userId) : '0'.repeat(32)}/end`,
  }),
  'POST /api/me/sessions/end-others': async () => ({ url: '/api/me/sessions/end-others' }),
  'GET /api/users/:id/sessions': async (c) => ({ url: `/api/users/${(await target(c)).id}/sessions` }),
  'POST /api/users/:id/sessions/end': async (c) => {
    const user = (await target(c)).id
    otherSession(c, user)
    return { url: `/api/users/${user}/sessions/end` }
  },
  'GET /api/users/:id/tokens': async (c) => ({ url: `/api/users/${(await target(c)).id}/tokens` }),
  'POST /api/users/:id/tokens/:tokenId/revoke': async (c) => {
    const user = (await target(c)).id
    return { url: `/api/users/${user}/tokens/${newToken(c, user)}/revoke` }
  },
  'POST /api/users/:id/two-factor/reset': async (c) => {
    const user = (await target(c)).id
    await enrollTwoFactor(c.t, user)
    return { url: `/api/users/${user}/two-factor/reset` }
  },
  'GET /api/auth/me': async () => ({ url: '/api/auth/me' }),
  'GET /api/version': async () => ({ url: '/api/version' }),
  'GET /api/openapi.json': async () => ({ url: '/api/openapi.json' }),
  'GET /api/users': async () => ({ url: '/api/users' }),
  'POST /api/users': async () => ({
    url: '/api/users',
    body: { username: `made${++n}`, password: PASSWORD, role: 'viewer' },
  }),
  'POST /api/users/:id/role': async (c) => ({
    url: `/api/users/${await c.freshUser()}/role`,
    body: { role: 'operator' },
  }),
  'POST /api/users/:id/username': async (c) => ({
    url: `/api/users/${await c.freshUser()}/username`,
    body: { username: `renamed${++n}` },
  }),
  'POST /api/users/:id/disabled': async (c) => ({
    url: `/api/users/${await c.freshUser()}/disabled`,
    body: { disabled: true },
  }),
  'POST /api/users/:id/password': async (c) => ({
    url: `/api/users/${await c.freshUser()}/password`,
    body: { password: 'another good secret' },
  }),
  'POST /api/users/:id/remove': async (c) => ({ url: `/api/users/${await c.freshUser()}/remove`, body: {} }),
  'POST /api/me/password': async () => ({
    url: '/api/me/password',
    body: { currentPassword: PASSWORD, newPassword: PASSWORD },
  }),
  'GET /api/audit': async () => ({ url: '/api/audit?range=24h&limit=5' }),
  'GET /api/audit/retention': async () => ({ url: '/api/audit/retention' }),
  'PUT /api/audit/retention': async () => ({
    url: '/api/audit/retention',
    body: { maxAgeDays: 365, maxRows: 100_000 },
  }),
  'POST /api/auth/reauth': async () => ({ url: '/api/auth/reauth', body: { password: PASSWORD } }),
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
  // Nothing awaits approval here: an allowed role gets as far as 409 (kernel/test/permissions.test.ts approves one).
  'POST /api/extensions/:id/approve': async () => ({
    url: '/api/extensions/tabletest/approve',
    body: { version: '1.0.0' },
    ok: [409],
  }),
  'POST /api/extensions/:id/trust': async (c) => {
    if (!c.t.kernel.registry.find('tabletest')) {
      await c.t.inject({
        method: 'POST',
        url: '/api/extensions/install',
        as: 'admin',
        headers: { 'content-type': 'application/gzip' },
        payload: c.pluginArchive,
      })
    }
    return { url: '/api/extensions/tabletest/trust', body: { trusted: false } }
  },
  'POST /api/extensions/:id/remove': async (c) => {
    await c.t.inject({
      method: 'POST',
      url: '/api/extensions/install',
      as: 'admin',
      headers: { 'content-type': 'application/gzip' },
      payload: c.pluginArchive,
    })
    return { url: '/api/extensions/tabletest/remove' }
  },
  'GET /api/hello': async (c) => {
    await c.t.kernel.registry.enable('hello')
    return { url: '/api/hello' }
  },
  'GET /api/tabletest': async (c) => {
    // The remove sample above uninstalls it; put it back.
    if (c.t.kernel.registry.find('tabletest')?.state !== 'active') {
      await c.t.inject({
        method: 'POST',
        url: '/api/extensions/install',
        as: 'admin',
        headers: { 'content-type': 'application/gzip' },
        payload: c.pluginArchive,
      })
    }
    return { url: '/api/tabletest' }
  },
}
