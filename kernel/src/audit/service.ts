import type {
  ApiTokenRef,
  AuditActor,
  AuditEntry,
  AuditEvent,
  AuditService,
  Actor,
  SessionUser,
  Settings,
} from '@hostd/sdk'
import type { Logger } from 'pino'
import type { KernelDatabase } from '../db/database.ts'
import { storageFullError } from '../db/storage.ts'
import { AuditEntity } from '../db/entities.ts'
import type { KernelEventHub } from '../events.ts'

export const AUDIT_RANGES = {
  '24h': 24 * 3600_000,
  '7d': 7 * 24 * 3600_000,
  '30d': 30 * 24 * 3600_000,
  all: Infinity,
} as const
export type AuditRange = keyof typeof AUDIT_RANGES

/** How long the audit log keeps records, by age and by count; whichever limit is reached first applies. */
export interface AuditRetention {
  maxAgeDays: number
  maxRows: number
}
/** A year, and about 20 MB of records: enough to look back on anything, bounded whatever happens. */
export const DEFAULT_RETENTION: AuditRetention = { maxAgeDays: 365, maxRows: 100_000 }
export const RETENTION_LIMITS = {
  maxAgeDays: { minimum: 1, maximum: 3650 },
  maxRows: { minimum: 1000, maximum: 10_000_000 },
} as const
const RETENTION_SETTING = 'audit.retention'
/** Old records are removed this often (and at start, and when the retention changes). */
const PRUNE_EVERY_MS = 3600_000
/** Repeated failures being counted at most (one per address, action and reason); the oldest are forgotten first. */
const MAX_REPEATS = 10_000
/** Distinct targets a repeated failure lists (the user names tried), at most. */
const MAX_REPEAT_TARGETS = 20

function actorOf(actor: AuditActor | undefined): Actor & { apiToken?: ApiTokenRef } {
  if (!actor) return {}
  if ('user' in actor || ('ip' in actor && !('userId' in actor))) {
    const a = actor as { user?: SessionUser | null; ip?: string; apiToken?: ApiTokenRef | null }
    const who = { userId: a.user?.id ?? null, username: a.user?.username ?? null, ip: a.ip ?? null }
    return a.apiToken ? { ...who, apiToken: { id: a.apiToken.id, name: a.apiToken.name } } : who
  }
  return actor as Actor
}

/** A write that found the disk full: 507 saying the audit record is what was not saved. */
function throwIfFull(err: unknown): void {
  const full = storageFullError(err, { unsaved: 'the audit record of this request was not saved' })
  if (full) throw full
}

/** A row of the audit table as SQLite answers it (time in ms since the epoch, detail as JSON text). */
interface AuditRow {
  id: number
  time: number
  user_id: string | null
  username: string | null
  ip: string | null
  action: string
  target: string | null
  result: string
  detail: string | null
}

const COLUMNS = 'id, time, user_id, username, ip, action, target, result, detail'

/**
 * The log's pages and counts as prepared statements (KernelAudit.list). `+time` keeps SQLite off the time index where
 * the rows are to be read by id (it would otherwise take that index for `time >= ?` and sort the whole range).
 */
function prepareAuditQueries(db: KernelDatabase['native']) {
  return {
    lastId: db.prepare('select max(id) from audit').pluck(),
    lowAll: db.prepare('select min(id) from audit').pluck(),
    countSince: db.prepare('select count(*) from audit where time >= ?').pluck(),
    lowSince: db.prepare('select min(id) from audit where time >= ?').pluck(),
    /** Records that left the range since it was counted (the time index, over that short span only). */
    countAged: db.prepare('select count(*) from audit where time >= ? and time < ? and id <= ?').pluck(),
    /** Records written since it was counted (the ids above the last one counted). */
    countNewer: db.prepare('select count(*) from audit where id > ? and +time >= ?').pluck(),
    /** The range's first record at or above an id (by id, stopping at the first). */
    lowFrom: db.prepare('select id from audit where id >= ? and +time >= ? order by id limit 1').pluck(),
    before: db.prepare(`select ${COLUMNS} from audit where id < ? and id >= ? and +time >= ? order by id desc limit ?`),
    after: db.prepare(`select ${COLUMNS} from audit where id > ? and +time >= ? order by id asc limit ?`),
    offset: db.prepare(`select ${COLUMNS} from audit where id >= ? and +time >= ? order by id desc limit ? offset ?`),
  }
}
type AuditQueries = ReturnType<typeof prepareAuditQueries>

/** A failure being counted into one record until its window ends. */
interface Repeat {
  id: number
  count: number
  targets: string[]
  until: number
}

/** The kernel's audit log: every host change, sign-in and plugin change, written before the reply. */
export class KernelAudit implements AuditService {
  readonly #db: KernelDatabase
  readonly #log: Logger
  readonly #settings: Settings
  readonly #repeatWindowMs: number
  readonly #repeats = new Map<string, Repeat>()
  readonly #events: KernelEventHub | null
  #retention: AuditRetention = DEFAULT_RETENTION
  #pruneTimer: NodeJS.Timeout | null = null

  /**
   * `repeatWindowSeconds`: how long repeated failures go into one record (the sign-in throttle's window). `events`:
   * where each record written (and each repeated failure counted) is announced (`hostd.events`).
   */
  constructor(
    db: KernelDatabase,
    log: Logger,
    settings: Settings,
    repeatWindowSeconds: number,
    events: KernelEventHub | null = null,
  ) {
    this.#events = events
    this.#db = db
    this.#log = log
    this.#settings = settings
    this.#repeatWindowMs = repeatWindowSeconds * 1000
  }

  /**
   * A record made for someone (`actor` given: a request waits for its answer) that finds the disk full throws 507
   * HOSTD_STORAGE_FULL, so they learn the record is missing; one made for no one (a plugin's load, a timer) is
   * logged, as any failed audit write is.
   */
  async record(event: AuditEvent, actor?: AuditActor): Promise<void> {
    await this.#insert(event, actorOf(actor), actor !== undefined)
  }

  /**
   * A failure that anyone can repeat without signing in (a wrong password, an unknown sign-in challenge, a throttled
   * attempt): the first of a window is written like any record, with `detail.count` 1; the same failure again from the
   * same address within the window (same action, reason and target) only raises that record's `count` and `lastAt`.
   * So a flood of failures costs one row per address, reason and target per window instead of one row each, and the
   * log still says how many there were. The throttle bounds how many targets an address gets to try; what it refuses
   * is recorded with `anyTarget`, one record for every name tried (listed in `targets`).
   */
  async recordRepeated(
    event: AuditEvent & { result: 'failure' },
    actor?: AuditActor,
    { anyTarget = false } = {},
  ): Promise<void> {
    const who = actorOf(actor)
    const now = Date.now()
    const key = JSON.stringify([
      event.action,
      who.ip ?? null,
      who.userId ?? null,
      event.detail?.reason ?? null,
      anyTarget ? null : (event.target ?? null),
    ])
    const seen = this.#repeats.get(key)
    if (seen && seen.until > now) {
      seen.count++
      if (event.target && !seen.targets.includes(event.target) && seen.targets.length < MAX_REPEAT_TARGETS)
        seen.targets.push(event.target)
      const detail = {
        ...event.detail,
        count: seen.count,
        lastAt: new Date(now).toISOString(),
        ...(anyTarget ? { targets: seen.targets } : {}),
      }
      try {
        // Still there (the retention may have removed it): otherwise a new record starts the count again.
        if ((await this.#db.em().nativeUpdate(AuditEntity, { id: seen.id }, { detail })) === 1) {
          this.#announce(event, who, seen.count)
          return
        }
      } catch (err) {
        this.#log.error({ err, action: event.action }, 'audit write failed')
        if (actor) throwIfFull(err)
        return
      }
    }
    const targets = event.target ? [event.target] : []
    const id = await this.#insert(
      { ...event, detail: { ...event.detail, count: 1, ...(anyTarget ? { targets } : {}) } },
      who,
      actor !== undefined,
      1,
    )
    if (id === null) return
    if (this.#repeats.size >= MAX_REPEATS) this.#forgetRepeats(now)
    this.#repeats.delete(key) // re-inserted last, so the oldest windows are forgotten first
    this.#repeats.set(key, { id, count: 1, targets, until: now + this.#repeatWindowMs })
  }

  async #insert(
    event: AuditEvent,
    who: Actor & { apiToken?: ApiTokenRef },
    answered = false,
    count: number | null = null,
  ): Promise<number | null> {
    try {
      const em = this.#db.em()
      const row = em.create(AuditEntity, {
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
      this.#announce(event, who, count)
      return row.id
    } catch (err) {
      // An audit write must never be lost silently; the action itself has already happened.
      this.#log.error({ err, action: event.action }, 'audit write failed')
      if (answered) throwIfFull(err)
      return null
    }
  }

  /** Tells `hostd.events` of a record written (its detail's plain values; records hold no secrets). */
  #announce(event: AuditEvent, who: Actor, count: number | null): void {
    this.#events?.audit(
      {
        action: event.action,
        target: event.target ?? null,
        result: event.result ?? 'success',
        username: who.username ?? null,
        ip: who.ip ?? null,
        count,
      },
      event.detail ?? null,
    )
  }

  #forgetRepeats(now: number): void {
    for (const [key, repeat] of this.#repeats) if (repeat.until <= now) this.#repeats.delete(key)
    while (this.#repeats.size >= MAX_REPEATS) this.#repeats.delete(this.#repeats.keys().next().value!)
  }

  /**
   * A page of the log, newest first, and how many records the range holds. `before` (older than that id) and
   * `after` (newer than that id) page by key: a page answers in the same short time anywhere in a million records
   * (test/bench/audit.ts), where `offset` must step over every record before it. Native prepared statements: the
   * count and the range's first id read only the time index, the page reads at most `limit` rows by id.
   */
  async list(
    range: AuditRange,
    limit: number,
    offset: number,
    cursor: { before?: number; after?: number } = {},
  ): Promise<{ items: AuditEntry[]; total: number }> {
    const q = this.#queries()
    const { since, total, low } = this.#range(range)
    if (total === 0 || low === null) return { total, items: [] }
    let rows: AuditRow[]
    if (cursor.after !== undefined)
      rows = (q.after.all(Math.max(cursor.after, low - 1), since, limit) as AuditRow[]).reverse()
    else if (cursor.before !== undefined) rows = q.before.all(cursor.before, low, since, limit) as AuditRow[]
    else rows = q.offset.all(low, since, limit, offset) as AuditRow[]
    return {
      total,
      items: rows.map((r) => ({
        id: r.id,
        time: new Date(r.time).toISOString(),
        userId: r.user_id,
        username: r.username,
        ip: r.ip,
        action: r.action,
        target: r.target,
        result: r.result as AuditEntry['result'],
        detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
      })),
    }
  }

  /**
   * How many records a range holds and its first id. Counting a million records takes tens of milliseconds, so each
   * range's count is kept and brought up to date from what changed since: the records that aged out of it (a short
   * span of the time index) and those written since (the ids above the last one counted). Pruning forgets them.
   */
  #range(range: AuditRange): { since: number; total: number; low: number | null } {
    const q = this.#queries()
    const span = AUDIT_RANGES[range]
    const since = Number.isFinite(span) ? Date.now() - span : Number.MIN_SAFE_INTEGER
    const lastId = (q.lastId.get() as number | null) ?? 0
    const kept = this.#ranges.get(range)
    let total: number
    let low: number | null
    if (!kept) {
      total = Number(q.countSince.get(since))
      low = (range === 'all' ? q.lowAll.get() : q.lowSince.get(since)) as number | null
    } else {
      const aged = since > kept.since ? Number(q.countAged.get(kept.since, since, kept.lastId)) : 0
      total = kept.total - aged + Number(q.countNewer.get(kept.lastId, since))
      low =
        kept.low !== null && aged === 0
          ? kept.low
          : ((q.lowFrom.get(kept.low ?? kept.lastId + 1, since) as number | undefined) ?? null)
    }
    this.#ranges.set(range, { since, lastId, total, low })
    return { since, total, low }
  }

  #ranges = new Map<AuditRange, { since: number; lastId: number; total: number; low: number | null }>()
  #warm: ReturnType<typeof setTimeout> | undefined

  #prepared: AuditQueries | null = null

  #queries(): AuditQueries {
    this.#prepared ??= prepareAuditQueries(this.#db.native)
    return this.#prepared
  }

  get retention(): AuditRetention {
    return this.#retention
  }

  /** Reads the retention setting, prunes once, and then every hour (the timer does not keep the process alive). */
  async start(): Promise<void> {
    const stored = await this.#settings.get<Partial<AuditRetention>>(RETENTION_SETTING)
    this.#retention = { ...DEFAULT_RETENTION, ...stored }
    await this.prune()
    this.#pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS).unref()
    // The ranges counted once now, so the first page asked for answers as fast as the others.
    this.#warm = setTimeout(() => {
      try {
        for (const range of Object.keys(AUDIT_RANGES) as AuditRange[]) this.#range(range)
      } catch {
        /* closed meanwhile: counted at the first page instead */
      }
    }, 1000).unref()
  }

  stop(): void {
    clearTimeout(this.#warm)
    if (this.#pruneTimer) clearInterval(this.#pruneTimer)
    this.#pruneTimer = null
  }

  /** A new retention, kept across restarts; what it no longer keeps is removed at once. Answers how many records went. */
  async setRetention(retention: AuditRetention): Promise<number> {
    await this.#settings.set(RETENTION_SETTING, retention)
    this.#retention = retention
    return this.prune()
  }

  /** Removes records older than the retention's age, then the oldest beyond its count; answers how many went. */
  async prune(): Promise<number> {
    const { maxAgeDays, maxRows } = this.#retention
    this.#ranges.clear()
    try {
      const em = this.#db.em()
      let removed = await em.nativeDelete(AuditEntity, {
        time: { $lt: new Date(Date.now() - maxAgeDays * 24 * 3600_000) },
      })
      const [newestBeyond] = await em.find(
        AuditEntity,
        {},
        { orderBy: { id: 'desc' }, offset: maxRows, limit: 1, fields: ['id'] },
      )
      if (newestBeyond) removed += await em.nativeDelete(AuditEntity, { id: { $lte: newestBeyond.id } })
      return removed
    } catch (err) {
      this.#log.error({ err }, 'audit retention failed')
      return 0
    } finally {
      this.#ranges.clear() // counted again at the next page
    }
  }
}
