import { Type } from '@sinclair/typebox'
import { defineError, HostdError } from '@hostd/sdk'
import type { FastifyRequest } from 'fastify'
import type { KernelServices } from '../services.ts'
import type { KernelRouteRegistrar } from '../http/registrar.ts'
import { OwnPasswordBody, UserIdParams } from '../users/schemas.ts'
import { UserErrors } from '../users/service.ts'
import { AuthErrors } from './routes.ts'
import { TwoFactorErrors } from './two-factor.ts'
import { clearedSessionCookie } from './sessions.ts'
import {
  ApiTokenSchema,
  CodeBody,
  DisableBody,
  EnrollmentSchema,
  NewApiTokenBody,
  NewApiTokenSchema,
  PasswordConfirmBody,
  PolicySchema,
  RecoveryCodesSchema,
  SessionIdParams,
  SessionSchema,
  TokenIdParams,
  TwoFactorStatusSchema,
  UserTokenParams,
} from './schemas.ts'

export const AccountErrors = {
  sessionNotFound: defineError('HOSTD_SESSIONS_NOT_FOUND', 404, 'No such session (it may have ended already)'),
  policyLockout: defineError(
    'HOSTD_AUTH_POLICY_LOCKOUT',
    409,
    'Turn on two-factor sign-in for yourself first: this policy would otherwise lock you out',
  ),
} as const

const DAY_MS = 24 * 3600_000
/** Failed checks that count like failed sign-ins (a guessed password or code from a stolen session). */
const GUESSES = new Set([TwoFactorErrors.badCode.code, UserErrors.wrongPassword.code])

/**
 * Account security: your own two-factor, API tokens and sessions (`/api/me/...`, sessions only: an API token can
 * change none of it), and the admin's view of another user's (two-factor reset, sessions, tokens) and the two-factor
 * policy. Every change needs a session whose password was given in the last few minutes (`recentSignIn`, "sudo
 * mode"), or carries the password itself; every change is audited.
 */
export function accountRoutes(r: KernelRouteRegistrar, k: KernelServices): void {
  const own = { role: 'viewer', sessionOnly: true } as const
  const ownChange = { ...own, recentSignIn: true } as const
  const adminChange = { role: 'admin', recentSignIn: true } as const

  /**
   * Checks a password or code of the signed-in user under the sign-in throttle: a wrong one counts like a failed
   * sign-in (per user and per address) and is audited as a failure of `action`.
   */
  const guarded = async <T>(req: FastifyRequest, action: string, check: () => Promise<T>): Promise<T> => {
    const user = req.user!
    const key = user.username.toLowerCase()
    const wait = k.throttle.retryAfter(key, req.ip)
    if (wait > 0)
      throw AuthErrors.throttled(`Too many wrong passwords or codes; try again in ${wait} s`, {
        'retry-after': String(wait),
      })
    try {
      return await check()
    } catch (err) {
      if (err instanceof HostdError && GUESSES.has(err.code)) {
        k.throttle.fail(key, req.ip)
        await k.audit.recordRepeated(
          { action, target: user.username, result: 'failure', detail: { reason: err.code } },
          req,
        )
      }
      throw err
    }
  }
  /** The user's password, given again: it also renews the session's re-authentication window. */
  const checkPassword = async (req: FastifyRequest, password: string) => {
    if (!(await k.users.passwordMatches(req.user!.id, password)))
      throw UserErrors.wrongPassword('The password is wrong')
    k.sessions.reauthenticated(req.sessionToken!)
  }

  // Re-authentication ("sudo mode"): the password again, for changes that need a recent sign-in.
  r.post('/api/auth/reauth', { ...own, duringEnrollment: true, schema: { body: PasswordConfirmBody } }, async (req) => {
    await guarded(req, 'auth.reauth', () => checkPassword(req, req.body.password))
    await k.audit.record({ action: 'auth.reauth', target: req.user!.username }, req)
  })

  // Two-factor, your own. Open to a session the policy sends to enrollment.
  const enrolling = { ...own, duringEnrollment: true } as const
  r.get('/api/me/two-factor', { ...enrolling, schema: { response: { 200: TwoFactorStatusSchema } } }, async (req) => ({
    ...(await k.twoFactor.status(req.user!.id)),
    required: k.policy.covers(req.user!.role),
  }))

  r.post(
    '/api/me/two-factor/start',
    { ...enrolling, schema: { body: PasswordConfirmBody, response: { 200: EnrollmentSchema } } },
    async (req) => {
      await guarded(req, 'user.two-factor.start', () => checkPassword(req, req.body.password))
      const enrollment = await k.twoFactor.start(req.user!.id)
      await k.audit.record({ action: 'user.two-factor.start', target: req.user!.username }, req)
      return enrollment
    },
  )

  // Confirming needs no recent sign-in of its own: only `start`, which takes the password, makes a secret to confirm.
  // From now on a password alone is not enough: every other session, and the API tokens they minted, end.
  r.post(
    '/api/me/two-factor/confirm',
    { ...enrolling, schema: { body: CodeBody, response: { 200: RecoveryCodesSchema } } },
    async (req) => {
      const recoveryCodes = await guarded(req, 'user.two-factor.enable', () =>
        k.twoFactor.confirm(req.user!.id, req.body.code),
      )
      const ended = k.sessions.revokeAccess(req.user!.id, req.sessionToken)
      await k.audit.record({ action: 'user.two-factor.enable', target: req.user!.username, detail: { ended } }, req)
      return { recoveryCodes }
    },
  )

  r.post(
    '/api/me/two-factor/recovery-codes',
    { ...ownChange, schema: { body: CodeBody, response: { 200: RecoveryCodesSchema } } },
    async (req) => {
      const recoveryCodes = await guarded(req, 'user.two-factor.recovery-codes', () =>
        k.twoFactor.regenerate(req.user!.id, req.body.code),
      )
      await k.audit.record({ action: 'user.two-factor.recovery-codes', target: req.user!.username }, req)
      return { recoveryCodes }
    },
  )

  r.post('/api/me/two-factor/disable', { ...own, schema: { body: DisableBody } }, async (req) => {
    const user = req.user!
    if (k.policy.covers(user.role)) throw TwoFactorErrors.required()
    await guarded(req, 'user.two-factor.disable', async () => {
      await checkPassword(req, req.body.password)
      if (!(await k.twoFactor.status(user.id)).enabled) throw TwoFactorErrors.notOn()
      if (!(await k.twoFactor.verify(user.id, req.body.code))) throw TwoFactorErrors.badCode()
    })
    await k.twoFactor.disable(user.id)
    const ended = k.sessions.revokeAccess(user.id, req.sessionToken)
    await k.audit.record({ action: 'user.two-factor.disable', target: user.username, detail: { ended } }, req)
  })

  // Your password: the current one is the confirmation (wrong guesses count like failed sign-ins). Your other sessions
  // end, and the API tokens not minted from this one.
  r.post('/api/me/password', { ...own, schema: { body: OwnPasswordBody } }, async (req) => {
    await guarded(req, 'user.password.change', () =>
      k.users.changeOwnPassword(req.user!.id, req.body.currentPassword, req.body.newPassword, req.sessionToken),
    )
    await k.audit.record({ action: 'user.password.change', target: req.user!.username }, req)
  })

  // API tokens, your own.
  r.get('/api/me/tokens', { ...own, schema: { response: { 200: Type.Array(ApiTokenSchema) } } }, (req) =>
    k.sessions.apiTokens.list(req.user!.id),
  )

  r.post(
    '/api/me/tokens',
    { ...ownChange, schema: { body: NewApiTokenBody, response: { 201: NewApiTokenSchema } } },
    async (req, reply) => {
      const { name, role, expiresInDays, prefixes } = req.body
      const { info, secret } = k.sessions.apiTokens.create(
        req.user!,
        {
          name: name.trim(),
          role,
          expiresAt: expiresInDays === undefined ? null : Date.now() + expiresInDays * DAY_MS,
          prefixes: prefixes ?? null,
        },
        k.sessions.idOf(req.sessionToken!),
      )
      await k.audit.record(
        {
          action: 'token.create',
          target: req.user!.username,
          detail: { token: info.name, role, expiresAt: info.expiresAt, prefixes: info.prefixes },
        },
        req,
      )
      return reply.code(201).send({ ...info, secret })
    },
  )

  r.post('/api/me/tokens/:id/revoke', { ...ownChange, schema: { params: TokenIdParams } }, async (req) => {
    const name = k.sessions.apiTokens.revoke(req.user!.id, req.params.id)
    await k.audit.record({ action: 'token.revoke', target: req.user!.username, detail: { token: name } }, req)
  })

  // Sessions, your own.
  r.get('/api/me/sessions', { ...own, schema: { response: { 200: Type.Array(SessionSchema) } } }, (req) =>
    k.sessions.list(req.user!.id, req.sessionToken),
  )

  r.post('/api/me/sessions/:id/end', { ...ownChange, schema: { params: SessionIdParams } }, async (req, reply) => {
    const current = k.sessions.list(req.user!.id, req.sessionToken).some((s) => s.current && s.id === req.params.id)
    if (!k.sessions.revokeById(req.user!.id, req.params.id)) throw AccountErrors.sessionNotFound()
    await k.audit.record(
      { action: 'session.end', target: req.user!.username, detail: { session: req.params.id, current } },
      req,
    )
    if (current) reply.header('set-cookie', clearedSessionCookie(req.protocol === 'https'))
  })

  r.post('/api/me/sessions/end-others', ownChange, async (req) => {
    k.sessions.revokeUser(req.user!.id, req.sessionToken)
    await k.audit.record({ action: 'session.end-others', target: req.user!.username }, req)
  })

  // Another user's, for admins: reading is open to admin tokens, every change needs a session.
  r.get(
    '/api/users/:id/sessions',
    { role: 'admin', schema: { params: UserIdParams, response: { 200: Type.Array(SessionSchema) } } },
    async (req) => {
      await k.users.get(req.params.id)
      return k.sessions.list(req.params.id, req.sessionToken)
    },
  )

  r.post('/api/users/:id/sessions/end', { ...adminChange, schema: { params: UserIdParams } }, async (req) => {
    const user = await k.users.get(req.params.id)
    k.sessions.revokeUser(user.id)
    await k.audit.record({ action: 'session.end-all', target: user.username }, req)
  })

  r.get(
    '/api/users/:id/tokens',
    { role: 'admin', schema: { params: UserIdParams, response: { 200: Type.Array(ApiTokenSchema) } } },
    async (req) => {
      await k.users.get(req.params.id)
      return k.sessions.apiTokens.list(req.params.id)
    },
  )

  r.post(
    '/api/users/:id/tokens/:tokenId/revoke',
    { ...adminChange, schema: { params: UserTokenParams } },
    async (req) => {
      const user = await k.users.get(req.params.id)
      const name = k.sessions.apiTokens.revoke(user.id, req.params.tokenId)
      await k.audit.record({ action: 'token.revoke', target: user.username, detail: { token: name } }, req)
    },
  )

  r.post('/api/users/:id/two-factor/reset', { ...adminChange, schema: { params: UserIdParams } }, async (req) => {
    const { username, wasOn } = await k.twoFactor.reset(req.user!.id, req.params.id)
    await k.audit.record({ action: 'user.two-factor.reset', target: username, detail: { wasOn } }, req)
  })

  // The policy: who must have two-factor.
  r.get('/api/auth/policy', { role: 'admin', schema: { response: { 200: PolicySchema } } }, () => ({
    requireTwoFactor: k.policy.requirement,
  }))

  r.put(
    '/api/auth/policy',
    { ...adminChange, schema: { body: PolicySchema, response: { 200: PolicySchema } } },
    async (req) => {
      const { requireTwoFactor } = req.body
      const previous = k.policy.requirement
      if (!req.user!.twoFactor && requireTwoFactor !== 'nobody') throw AccountErrors.policyLockout()
      await k.policy.set(requireTwoFactor)
      // Sockets and streams of users it now sends to enrollment close (4403).
      k.sessions.connections.recheck()
      await k.audit.record({ action: 'auth.policy', detail: { requireTwoFactor, previous } }, req)
      return { requireTwoFactor }
    },
  )
}
