import type { ApiTokenRef, AuditEntry, AuditEvent, AuditService, Actor, SessionUser } from '@hostd/sdk'
import type { Logger } from 'pino'
import type { KernelDatabase } from '../db/database.ts'
import { AuditEntity } from '../db/entities.ts'

export const AUDIT_RANGES = { '24h': 24 * 3600_000, '7d': 7 * 24 * 3600_000, '30d': 30 * 24 * 3600_000, all: Infinity } as const
export type AuditRange = keyof typeof AUDIT_RANGES

/** An actor, or a request (its user, client address, and the API token it signed in with, if any). */
type ActorLike = Actor | { user?: SessionUser | null; ip?: string; apiToken?: ApiTokenRef | null }

function actorOf(actor: ActorLike | undefined): Actor & { apiToken?: ApiTokenRef } {
  if (!actor) return {}
  if ('user' in actor || ('ip' in actor && !('userId' in actor))) {
    const a = actor as { user?: SessionUser | null; ip?: string; apiToken?: ApiTokenRef | null }
    const who = { userId: a.user?.id ?? null, username: a.user?.username ?? null, ip: a.ip ?? null }
    return a.apiToken ? { ...who, apiToken: { id: a.apiToken.id, name: a.apiToken.name } } : who
  }
  return actor as Actor
}

/** The kernel's audit log: every host change, sign-in and plugin change, written before the reply. */
export class KernelAudit implements AuditService {
  readonly #db: KernelDatabase
  readonly #log: Logger

  constructor(db: KernelDatabase, log: Logger) {
    this.#db = db
    this.#log = log
  }

  async record(event: AuditEvent, actor?: ActorLike): Promise<void> {
    const who = actorOf(actor)
    try {
      const em = this.#db.em()
      em.create(AuditEntity, {
        time: new Date(),
        userId: who.userId ?? null,
        username: who.username ?? null,
        ip: who.ip ?? null,
        action: event.action,
        target: event.target ?? null,
        result: event.result ?? 'success',
        // A script's change says which API token made it.
        detail: who.apiToken ? { ...event.detail, apiToken: who.apiToken } : (event.detail ?? null),
      })
      await em.flush()
    } catch (err) {
      // An audit write must never be lost silently; the action itself has already happened.
      this.#log.error({ err, action: event.action }, 'audit write failed')
    }
  }

  async list(range: AuditRange, limit: number, offset: number): Promise<{ items: AuditEntry[]; total: number }> {
    const span = AUDIT_RANGES[range]
    const where = Number.isFinite(span) ? { time: { $gte: new Date(Date.now() - span) } } : {}
    const [rows, total] = await this.#db.em().findAndCount(AuditEntity, where, { orderBy: { id: 'desc' }, limit, offset })
    return {
      total,
      items: rows.map((r) => ({
        id: r.id,
        time: r.time.toISOString(),
        userId: r.userId ?? null,
        username: r.username ?? null,
        ip: r.ip ?? null,
        action: r.action,
        target: r.target ?? null,
        result: r.result as AuditEntry['result'],
        detail: (r.detail as Record<string, unknown> | null) ?? null,
      })),
    }
  }
}
