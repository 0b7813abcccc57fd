import { Type } from '@sinclair/typebox'
import { defineError, type RouteRegistrar } from '@hostd/sdk'
import type { KernelServices } from '../services.ts'
import { CredentialsSchema, LoginResponseSchema, UserSchema } from '../users/schemas.ts'
import { toUser } from '../users/service.ts'
import { verifyDecoy, verifyPassword } from './passwords.ts'
import { clearedSessionCookie, sessionCookie } from './sessions.ts'

export const AuthErrors = {
  badCredentials: defineError('HOSTD_AUTH_BAD_CREDENTIALS', 401, 'Wrong username or password'),
  throttled: defineError('HOSTD_AUTH_THROTTLED', 429, 'Too many failed sign-ins; try again later'),
} as const

export function authRoutes(r: RouteRegistrar, k: KernelServices): void {
  r.get('/api/setup', { role: 'public', schema: { response: { 200: Type.Object({ needsSetup: Type.Boolean() }) } } }, async () => ({
    needsSetup: await k.users.needsSetup(),
  }))

  r.post('/api/setup', { role: 'public', schema: { body: CredentialsSchema, response: { 201: UserSchema } } }, async (req, reply) => {
    const user = await k.users.setup(req.body.username, req.body.password)
    await k.audit.record({ action: 'setup.admin', target: user.username }, { userId: user.id, username: user.username, ip: req.ip })
    return reply.code(201).send(user)
  })

  r.post('/api/auth/login', { role: 'public', schema: { body: CredentialsSchema, response: { 200: LoginResponseSchema } } }, async (req, reply) => {
    const { username, password } = req.body
    const key = username.toLowerCase()
    const ip = req.ip
    const wait = k.throttle.retryAfter(key, ip)
    if (wait > 0) {
      await k.audit.record({ action: 'auth.login', target: username, result: 'failure', detail: { reason: 'throttled' } }, { ip })
      throw AuthErrors.throttled(`Too many failed sign-ins; try again in ${wait} s`, { 'retry-after': String(wait) })
    }
    const row = await k.users.findByUsername(username)
    const ok = row ? await verifyPassword(row.passwordHash, password) : await verifyDecoy(password)
    if (!row || !ok || row.disabled) {
      k.throttle.fail(key, ip)
      const reason = !row ? 'unknown user' : !ok ? 'wrong password' : 'account disabled'
      await k.audit.record({ action: 'auth.login', target: username, result: 'failure', detail: { reason } }, { ip })
      // The same answer for all three, so the reply does not tell which names exist.
      throw AuthErrors.badCredentials()
    }
    k.throttle.succeed(key)
    const token = k.sessions.create(row.id, ip)
    await k.audit.record({ action: 'auth.login', target: row.username }, { userId: row.id, username: row.username, ip })
    reply.header('set-cookie', sessionCookie(token, k.config.sessionMaxSeconds, req.protocol === 'https'))
    return req.headers['x-svc-client'] !== undefined ? { ...toUser(row), token } : toUser(row)
  })

  r.post('/api/auth/logout', { role: 'viewer' }, async (req, reply) => {
    if (req.sessionToken) k.sessions.revoke(req.sessionToken)
    await k.audit.record({ action: 'auth.logout', target: req.user!.username }, req)
    reply.header('set-cookie', clearedSessionCookie(req.protocol === 'https'))
  })

  r.get('/api/auth/me', { role: 'viewer', schema: { response: { 200: UserSchema } } }, (req) => ({
    id: req.user!.id,
    username: req.user!.username,
    role: req.user!.role,
    disabled: false,
    twoFactor: false,
  }))
}
