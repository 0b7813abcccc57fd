import { Type } from '@sinclair/typebox'
import type { RouteRegistrar } from '@hostd/sdk'
import type { KernelServices } from '../services.ts'
import { DisabledBody, NewUserSchema, OwnPasswordBody, PasswordBody, RoleBody, UserIdParams, UserSchema, UsernameBody } from './schemas.ts'

/** The Users table of the interface document. Every change is audited with who, from where, and what. */
export function userRoutes(r: RouteRegistrar, k: KernelServices): void {
  r.get('/api/users', { role: 'admin', schema: { response: { 200: Type.Array(UserSchema) } } }, () => k.users.list())

  r.post('/api/users', { role: 'admin', schema: { body: NewUserSchema, response: { 201: UserSchema } } }, async (req, reply) => {
    const user = await k.users.create(req.body.username, req.body.password, req.body.role)
    await k.audit.record({ action: 'user.create', target: user.username, detail: { role: user.role } }, req)
    return reply.code(201).send(user)
  })

  r.post('/api/users/:id/role', { role: 'admin', schema: { params: UserIdParams, body: RoleBody } }, async (req) => {
    const user = await k.users.setRole(req.params.id, req.body.role)
    await k.audit.record({ action: 'user.role', target: user.username, detail: { role: user.role } }, req)
  })

  r.post('/api/users/:id/username', { role: 'admin', schema: { params: UserIdParams, body: UsernameBody } }, async (req) => {
    const before = await k.users.get(req.params.id)
    const user = await k.users.rename(req.params.id, req.body.username)
    await k.audit.record({ action: 'user.rename', target: user.username, detail: { from: before.username } }, req)
  })

  r.post('/api/users/:id/disabled', { role: 'admin', schema: { params: UserIdParams, body: DisabledBody } }, async (req) => {
    const user = await k.users.setDisabled(req.params.id, req.body.disabled)
    await k.audit.record({ action: user.disabled ? 'user.disable' : 'user.enable', target: user.username }, req)
  })

  r.post('/api/users/:id/password', { role: 'admin', sessionOnly: true, schema: { params: UserIdParams, body: PasswordBody } }, async (req) => {
    const user = await k.users.resetPassword(req.params.id, req.body.password)
    await k.audit.record({ action: 'user.password.reset', target: user.username }, req)
  })

  r.post('/api/users/:id/remove', { role: 'admin', schema: { params: UserIdParams } }, async (req) => {
    const user = await k.users.remove(req.params.id)
    await k.audit.record({ action: 'user.remove', target: user.username }, req)
  })

  r.post('/api/me/password', { role: 'viewer', sessionOnly: true, schema: { body: OwnPasswordBody } }, async (req) => {
    try {
      await k.users.changeOwnPassword(req.user!.id, req.body.currentPassword, req.body.newPassword, req.sessionToken)
    } catch (err) {
      await k.audit.record({ action: 'user.password.change', target: req.user!.username, result: 'failure' }, req)
      throw err
    }
    await k.audit.record({ action: 'user.password.change', target: req.user!.username }, req)
  })
}
