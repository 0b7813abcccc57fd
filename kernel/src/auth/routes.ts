import { Type } from '@sinclair/typebox'
import { defineError } from '@hostd/sdk'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { KernelServices } from '../services.ts'
import type { KernelRouteRegistrar } from '../http/registrar.ts'
import { CredentialsSchema, LoginResponseSchema, UserSchema, type User } from '../users/schemas.ts'
import { toUser } from '../users/service.ts'
import { verifyDecoy, verifyPassword } from './passwords.ts'
import { clearedSessionCookie, sessionCookie } from './sessions.ts'
import { CHALLENGE_SECONDS } from './challenges.ts'
import { ChallengeSchema, MeSchema, VerifyBody } from './schemas.ts'

export const AuthErrors = {
  badCredentials: defineError('HOSTD_AUTH_BAD_CREDENTIALS', 401, 'Wrong username or password'),
  throttled: defineError('HOSTD_AUTH_THROTTLED', 429, 'Too many failed sign-ins; try again later'),
  challengeExpired: defineError(
    'HOSTD_AUTH_CHALLENGE_EXPIRED',
    401,
    'This sign-in step expired or was already used: sign in again with your password',
  ),
  badCode: defineError(
    'HOSTD_AUTH_BAD_CODE',
    401,
    'Wrong code: use the current code of your authenticator app, or an unused recovery code',
  ),
} as const

export function authRoutes(r: KernelRouteRegistrar, k: KernelServices): void {
  r.get(
    '/api/setup',
    { role: 'public', schema: { response: { 200: Type.Object({ needsSetup: Type.Boolean() }) } } },
    async () => ({
      needsSetup: await k.users.needsSetup(),
    }),
  )

  r.post(
    '/api/setup',
    { role: 'public', schema: { body: CredentialsSchema, response: { 201: UserSchema } } },
    async (req, reply) => {
      k.setup.assertOpen()
      const user = await k.users.setup(req.body.username, req.body.password)
      await k.audit.record(
        { action: 'setup.admin', target: user.username },
        { userId: user.id, username: user.username, ip: req.ip },
      )
      return reply.code(201).send(user)
    },
  )

  /** A failed sign-in step: counted into one audit record per address, reason and name (KernelAudit.recordRepeated). */
  const failed = (reason: string, ip: string, username?: string) =>
    k.audit.recordRepeated(
      { action: 'auth.login', ...(username ? { target: username } : {}), result: 'failure', detail: { reason } },
      { ip },
      { anyTarget: reason === 'throttled' },
    )

  /** 429 while the user name (when known) or the address is over its limit of failures. */
  const throttle = async (key: string | null, username: string | undefined, ip: string) => {
    const wait = k.throttle.retryAfter(key, ip)
    if (wait === 0) return
    await failed('throttled', ip, username)
    throw AuthErrors.throttled(`Too many failed sign-ins; try again in ${wait} s`, { 'retry-after': String(wait) })
  }

  /** The session, its cookie, and the answer of a completed sign-in. */
  const signIn = async (req: FastifyRequest, reply: FastifyReply, user: User, detail?: Record<string, unknown>) => {
    k.throttle.succeed(user.username.toLowerCase())
    const token = k.sessions.create(user.id, req.ip, req.headers['user-agent'])
    await k.audit.record(
      { action: 'auth.login', target: user.username, ...(detail ? { detail } : {}) },
      { userId: user.id, username: user.username, ip: req.ip },
    )
    reply.header('set-cookie', sessionCookie(token, k.config.sessionMaxSeconds, req.protocol === 'https'))
    const answer = { ...user, mustEnrollTwoFactor: k.policy.mustEnroll(user.role, user.twoFactor) || undefined }
    return req.headers['x-svc-client'] !== undefined ? { ...answer, token } : answer
  }

  // Step one: the password. A user with two-factor gets no session yet but a challenge for step two; the answer
  // differs only once the password is right, so it tells nothing about names or two-factor before that.
  r.post(
    '/api/auth/login',
    {
      role: 'public',
      schema: { body: CredentialsSchema, response: { 200: Type.Union([LoginResponseSchema, ChallengeSchema]) } },
    },
    async (req, reply) => {
      const { username, password } = req.body
      const key = username.toLowerCase()
      const ip = req.ip
      await throttle(key, username, ip)
      const row = await k.users.findByUsername(username)
      const ok = row ? await verifyPassword(row.passwordHash, password) : await verifyDecoy(password)
      if (!row || !ok || row.disabled) {
        k.throttle.fail(key, ip)
        await failed(!row ? 'unknown user' : !ok ? 'wrong password' : 'account disabled', ip, username)
        // The same answer for all three, so the reply does not tell which names exist.
        throw AuthErrors.badCredentials()
      }
      if (!row.twoFactor) return signIn(req, reply, toUser(row))
      return {
        twoFactorRequired: true as const,
        challenge: k.challenges.issue(row.id, username, row.passwordHash),
        expiresInSeconds: CHALLENGE_SECONDS,
      }
    },
  )

  // Step two: the challenge and a TOTP code or a recovery code. Every failure counts in the throttle like a wrong
  // password: an unknown challenge for the address alone (it names no user), a wrong code for the user too.
  r.post(
    '/api/auth/login/verify',
    { role: 'public', schema: { body: VerifyBody, response: { 200: LoginResponseSchema } } },
    async (req, reply) => {
      const { challenge, code } = req.body
      const ip = req.ip
      await throttle(null, undefined, ip)
      const pending = k.challenges.take(challenge)
      if (!pending) {
        k.throttle.fail(null, ip)
        await failed('challenge expired or used', ip)
        throw AuthErrors.challengeExpired()
      }
      const key = pending.username.toLowerCase()
      try {
        await throttle(key, pending.username, ip)
      } catch (err) {
        k.challenges.retry(challenge, pending, false)
        throw err
      }
      // The account may have been disabled, removed or given a new password since the password step: the challenge
      // dies with the password it was issued for.
      const row = await k.users.findById(pending.userId)
      if (!row || row.disabled || row.passwordHash !== pending.passwordHash) {
        await failed(
          !row ? 'unknown user' : row.disabled ? 'account disabled' : 'password changed',
          ip,
          pending.username,
        )
        throw AuthErrors.challengeExpired()
      }
      const accepted = await k.twoFactor.verify(pending.userId, code)
      if (!accepted) {
        k.throttle.fail(key, ip)
        k.challenges.retry(challenge, pending)
        await failed('wrong code', ip, pending.username)
        throw AuthErrors.badCode()
      }
      const user = toUser(row)
      if (accepted.kind === 'recovery code') {
        await k.audit.record(
          {
            action: 'user.two-factor.recovery-code-used',
            target: user.username,
            detail: { recoveryCodesLeft: accepted.recoveryCodesLeft },
          },
          { userId: user.id, username: user.username, ip },
        )
      }
      return signIn(req, reply, user, { twoFactor: accepted.kind })
    },
  )

  r.post('/api/auth/logout', { role: 'viewer', sessionOnly: true, duringEnrollment: true }, async (req, reply) => {
    if (req.sessionToken) k.sessions.revoke(req.sessionToken)
    await k.audit.record({ action: 'auth.logout', target: req.user!.username }, req)
    reply.header('set-cookie', clearedSessionCookie(req.protocol === 'https'))
  })

  // The authenticated hot path (the throughput benchmark): everything comes from the session row already read.
  r.get('/api/auth/me', { role: 'viewer', duringEnrollment: true, schema: { response: { 200: MeSchema } } }, (req) => {
    const user = req.user!
    const token = req.apiToken
    return {
      id: user.id,
      username: user.username,
      role: user.role,
      disabled: false,
      twoFactor: user.twoFactor,
      mustEnrollTwoFactor: user.mustEnroll || undefined,
      apiToken: token === null ? undefined : { id: token.id, name: token.name },
    }
  })
}
