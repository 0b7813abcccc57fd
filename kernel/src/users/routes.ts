import { Type } from '@sinclair/typebox'
import type { KernelServices } from '../services.ts'
import type { KernelRouteRegistrar } from '../http/registrar.ts'
import {
  DisabledBody,
  NewUserSchema,
  PasswordBody,
  RoleBody,
  UserIdParams,
  UserSchema,
  UsernameBody,
} from './schemas.ts'

/**
 * The Users table of the interface document (your own password is in account-routes.ts). Reading is open to admin
 * API tokens; every change needs a person's session whose password was given in the last few minutes, so an admin
 * token, or a stolen cookie, cannot make a new admin (who could then open a shell). Every change is audited with
 * who, from where, and what.
 */
export function userRoutes(r: KernelRouteRegistrar, k: KernelServices): void {
  const change = { role: 'admin', recentSignIn: true } as const
  r.get('/api/users', { role: 'admin', schema: { response: { 200: Type.Array(UserSchema) } } }, () => k.users.list())

  r.post(
    '/api/users',
    { ...change, schema: { body: NewUserSchema, response: { 201: UserSchema } } },
    async (req, reply) => {
      const user = await k.users.create(req.body.username, req.body.password, req.body.role)
      await k.audit.record({ action: 'user.create', target: user.username, detail: { role: user.role } }, req)
      return reply.code(201).send(user)
    },
  )

  r.post('/api/users/:id/role', { ...change, schema: { params: UserIdParams, body: RoleBody } }, async (req) => {
    const user = await k.users.setRole(req.params.id, req.body.role)
    await k.audit.record({ action: 'user.role', target: user.username, detail: { role: user.role } }, req)
  })

  r.post(
    '/api/users/:id/username',
    { ...change, schema: { params: UserIdParams, body: UsernameBody } },
    async (req) => {
      const before = await k.users.get(req.params.id)
      const user = await k.users.rename(req.params.id, req.body.username)
      await k.audit.record({ action: 'user.rename', target: user.username, detail: { from: before.username } }, req)
    },
  )

  r.post(
    '/api/users/:id/disabled',
    { ...change, schema: { params: UserIdParams, body: DisabledBody } },
    async (req) => {
      const user = await k.users.setDisabled(req.params.id, req.body.disabled)
      await k.audit.record({ action: user.disabled ? 'user.disable' : 'user.enable', target: user.username }, req)
    },
  )

  r.post(
    '/api/users/:id/password',
    { ...change, schema: { params: UserIdParams, body: PasswordBody } },
    async (req) => {
      const user = await k.users.resetPassword(req.params.id, req.body.password)
      await k.audit.record({ action: 'user.password.reset', target: user.username }, req)
    },
  )

  r.post('/api/users/:id/remove', { ...change, schema: { params: UserIdParams } }, async (req) => {
    const user = await k.users.remove(req.params.id)
    await k.audit.record({ action: 'user.remove', target: user.username }, req)
  })
}
