import { Type } from '@sinclair/typebox'
import type { RouteRegistrar } from '@hostd/sdk'
import type { KernelServices } from '../services.ts'

export const AuditEntrySchema = Type.Object({
  id: Type.Integer(),
  time: Type.String({ format: 'date-time' }),
  userId: Type.Union([Type.String(), Type.Null()]),
  username: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  action: Type.String(),
  target: Type.Union([Type.String(), Type.Null()]),
  result: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  detail: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
})

export const AuditQuery = Type.Object(
  {
    range: Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('all')], { default: '7d' }),
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    offset: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 }),
  },
  { additionalProperties: false },
)

export function auditRoutes(r: RouteRegistrar, k: KernelServices): void {
  r.get(
    '/api/audit',
    { role: 'admin', schema: { querystring: AuditQuery, response: { 200: Type.Object({ items: Type.Array(AuditEntrySchema), total: Type.Integer() }) } } },
    (req) => k.audit.list(req.query.range, req.query.limit, req.query.offset),
  )
}
