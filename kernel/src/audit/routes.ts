import { Type } from '@sinclair/typebox'
import type { KernelServices } from '../services.ts'
import type { KernelRouteRegistrar } from '../http/registrar.ts'
import { RETENTION_LIMITS } from './service.ts'

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
    range: Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('all')], {
      default: '7d',
    }),
    limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
    offset: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 }),
    /** Paging by key: the records older than this id (then `offset` is ignored). */
    before: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    /** The records newer than this id, the `limit` just above it (newest first, like every page). */
    after: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  },
  { additionalProperties: false },
)

/** How long records are kept: by age and by count, whichever is reached first. */
export const RetentionSchema = Type.Object(
  {
    maxAgeDays: Type.Integer(RETENTION_LIMITS.maxAgeDays),
    maxRows: Type.Integer(RETENTION_LIMITS.maxRows),
  },
  { additionalProperties: false },
)

export function auditRoutes(r: KernelRouteRegistrar, k: KernelServices): void {
  r.get(
    '/api/audit',
    {
      role: 'admin',
      schema: {
        querystring: AuditQuery,
        response: { 200: Type.Object({ items: Type.Array(AuditEntrySchema), total: Type.Integer() }) },
      },
    },
    (req) =>
      k.audit.list(req.query.range, req.query.limit, req.query.offset, {
        before: req.query.before,
        after: req.query.after,
      }),
  )

  r.get(
    '/api/audit/retention',
    { role: 'admin', schema: { response: { 200: RetentionSchema } } },
    () => k.audit.retention,
  )

  // Shortening the log erases history: a person's recent sign-in, never a token. Recorded after the pruning, so the
  // record of the change is kept whatever the new limits.
  r.put(
    '/api/audit/retention',
    { role: 'admin', recentSignIn: true, schema: { body: RetentionSchema, response: { 200: RetentionSchema } } },
    async (req) => {
      const previous = k.audit.retention
      const removed = await k.audit.setRetention(req.body)
      await k.audit.record({ action: 'audit.retention', detail: { ...req.body, previous, removed } }, req)
      return k.audit.retention
    },
  )
}
