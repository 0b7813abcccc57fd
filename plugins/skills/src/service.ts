import { randomUUID } from 'node:crypto'
import type { AuditService, Database, Logger, Mutex, SessionUser } from '@hostd/sdk'
import { type BlobStore, sha256 } from './blobs.ts'
import {
  checkIncomingFiles,
  checkManifest,
  normalizePath,
  pathKey,
  SKILL_MD,
  type IncomingFile,
  type ManifestEntry,
  type PendingFile,
} from './bundle.ts'
import { SkillEntity, SkillRevisionEntity, SkillDraftEntity } from './entities.ts'
import { SkillErrors } from './errors.ts'
import { checkName, parseSkillMarkdown, type SkillDocument } from './frontmatter.ts'
import { LIMITS } from './limits.ts'
import { sharedMutex } from './mutex.ts'
import type { RevisionInfo, SkillDetail, SkillSummary } from './schemas.ts'

/** Who acts: a request (its user and address) or nothing (the sync watcher). */
export type ActorLike = { user?: SessionUser | null; ip?: string } | undefined

/** Seams for tests that cannot be had otherwise: a crash between blob writes and the commit, and the clock. */
export interface SkillHooks {
  /** Runs after a publish wrote its blobs, before its database transaction. Throwing aborts the publish. */
  beforeCommit?: (info: { skillId: string; origin: string }) => Promise<void> | void
  now?: () => number
}

export type SkillRow = (typeof SkillEntity)['~entity']
export type RevisionRow = (typeof SkillRevisionEntity)['~entity']
export type TxEntityManager = ReturnType<Database['em']>

export interface PublishTarget {
  skillId: string
  /** Set when the publish may create the skill. */
  create?: { source: 'local' | 'synced'; syncFolder?: string | null }
  /** Set when the publish must find the skill at this revision (the stale-revision rule). */
  baseRevision?: number
}

export interface ListFilter {
  category?: string
  tag?: string
  source?: 'local' | 'synced'
  q?: string
  enabled?: boolean
}

/** Blob writes in flight at once in a publish (a bundle may hold 512 files). */
const BLOB_WRITES_AT_ONCE = 8

/**
 * `fn` over `items`, at most `limit` at a time, results in the order of `items`. After a failure nothing new
 * starts, and the first error is thrown once every call under way has ended (so a cleanup that follows never
 * races a write still in flight).
 */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  let failure = null as { error: unknown } | null
  const worker = async () => {
    while (next < items.length && !failure) {
      const i = next++
      try {
        results[i] = await fn(items[i]!)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failure) throw failure.error
  return results
}

function digestOf(markdownSha: string, files: ManifestEntry[]): string {
  return sha256([markdownSha, ...files.map((f) => `${f.path}\0${f.sha256}`)].join('\n'))
}

function nameOf(actor: ActorLike): string | null {
  return actor?.user?.username ?? null
}

/** Local skills, their revisions and the blob store behind them. Every change runs under one lock. */
export class SkillService {
  readonly blobs: BlobStore
  readonly lock: Mutex
  readonly #db: Database
  readonly #audit: AuditService
  readonly #log: Logger
  readonly #hooks: SkillHooks

  constructor(deps: { db: Database; audit: AuditService; log: Logger; blobs: BlobStore; hooks?: SkillHooks }) {
    this.#db = deps.db
    this.#audit = deps.audit
    this.#log = deps.log
    this.blobs = deps.blobs
    this.lock = sharedMutex(deps.blobs.root)
    this.#hooks = deps.hooks ?? {}
  }

  now(): Date {
    return new Date(this.#hooks.now?.() ?? Date.now())
  }

  /** Blob store ready, then everything no row refers to removed (what a crash mid-publish left behind). */
  async start(): Promise<void> {
    await this.blobs.init()
    const removed = await this.lock.run(() => this.gcLocked())
    if (removed > 0)
      this.#log.warn({ removed }, 'skills: removed blobs no revision or draft refers to (an interrupted publish)')
  }

  /** Call with the lock held. */
  async gcLocked(): Promise<number> {
    const em = this.#db.em()
    const referenced = new Set<string>()
    for (const rev of await em.find(SkillRevisionEntity, {}, { fields: ['markdownSha', 'files'] })) {
      referenced.add(rev.markdownSha)
      for (const f of rev.files) referenced.add(f.sha256)
    }
    for (const draft of await em.find(SkillDraftEntity, {}, { fields: ['markdownSha', 'files'] })) {
      referenced.add(draft.markdownSha)
      for (const f of draft.files) referenced.add(f.sha256)
    }
    return this.blobs.gc(referenced)
  }

  toSummary(row: SkillRow): SkillSummary {
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      icon: row.icon,
      category: row.category,
      updatedAt: row.updatedAt.toISOString(),
      tags: row.tags,
      version: row.version,
      source: row.source === 'synced' ? 'synced' : 'local',
      enabled: row.enabled,
      revision: row.revision,
    }
  }

  async list(filter: ListFilter): Promise<SkillSummary[]> {
    const rows = await this.#db.em().find(SkillEntity, {}, { orderBy: { nameKey: 'asc', id: 'asc' } })
    const lower = (s: string | undefined) => s?.trim().toLowerCase() || undefined
    const category = lower(filter.category)
    const tag = lower(filter.tag)
    const q = lower(filter.q)
    return rows
      .filter((r) => !category || r.category.toLowerCase() === category)
      .filter((r) => !tag || r.tags.some((t) => t.toLowerCase() === tag))
      .filter((r) => !filter.source || r.source === filter.source)
      .filter((r) => filter.enabled === undefined || r.enabled === filter.enabled)
      .filter((r) => !q || [r.name, r.description, r.category, ...r.tags].some((s) => s.toLowerCase().includes(q)))
      .map((r) => this.toSummary(r))
  }

  async row(id: string): Promise<SkillRow> {
    const row = await this.#db.em().findOne(SkillEntity, { id })
    if (!row) throw SkillErrors.notFound(`No skill with id ${id}`)
    return row
  }

  async revisionRow(skillId: string, revision: number): Promise<RevisionRow> {
    const rev = await this.#db.em().findOne(SkillRevisionEntity, { skillId, revision })
    if (!rev) throw SkillErrors.revisionNotFound(`Skill ${skillId} has no revision ${revision}`)
    return rev
  }

  /** Skill detail at a revision (default: the current one); an old revision shows that revision's metadata. */
  async detail(id: string, revision?: number): Promise<SkillDetail> {
    const row = await this.row(id)
    const rev = await this.revisionRow(id, revision ?? row.revision)
    const markdown = (await this.blobs.read(rev.markdownSha)).toString('utf8')
    const doc = parseSkillMarkdown(markdown, rev.name)
    const summary = this.toSummary(row)
    const skill =
      revision === undefined || revision === row.revision
        ? summary
        : {
            ...summary,
            name: rev.name,
            description: rev.description,
            icon: rev.icon,
            category: rev.category,
            tags: rev.tags,
            revision: rev.revision,
          }
    return {
      skill,
      body: doc.body,
      files: rev.files.map((f) => f.path),
      frontmatter: doc.frontmatter,
      markdown: doc.markdown,
    }
  }

  async revisions(id: string): Promise<RevisionInfo[]> {
    await this.row(id)
    const revs = await this.#db.em().find(SkillRevisionEntity, { skillId: id }, { orderBy: { revision: 'desc' } })
    return revs.map((r) => ({
      revision: r.revision,
      name: r.name,
      description: r.description,
      files: r.files.length,
      size: r.size,
      origin: r.origin,
      createdAt: r.createdAt.toISOString(),
      createdBy: r.createdBy ?? null,
    }))
  }

  /** A file of a revision (SKILL.md included) for download. */
  async file(id: string, path: string, revision?: number): Promise<{ sha256: string; size: number; path: string }> {
    const row = await this.row(id)
    const rev = await this.revisionRow(id, revision ?? row.revision)
    const key = pathKey(normalizePath(path.replace(/^\/+/, '')))
    if (key === pathKey(SKILL_MD)) return { sha256: rev.markdownSha, size: rev.markdownSize, path: SKILL_MD }
    const entry = rev.files.find((f) => pathKey(f.path) === key)
    if (!entry)
      throw SkillErrors.fileNotFound(`Revision ${rev.revision} of this skill has no file ${JSON.stringify(path)}`)
    return entry
  }

  async #checkNameFree(name: string, exceptId: string | null): Promise<void> {
    const other = await this.#db.em().findOne(SkillEntity, { nameKey: name.toLowerCase(), source: 'local' })
    if (other && other.id !== exceptId)
      throw SkillErrors.nameTaken(`A local skill named "${other.name}" exists already: choose another name`)
  }

  /**
   * The one publish path (create, replace, restore, duplicate, draft publish, sync). Call with the lock held and
   * every input check done. Blobs first (each written to a temp name, fsynced, renamed), then one database
   * transaction that adds the revision and moves the skill to it. If anything fails before the commit, the
   * previous revision is untouched and the blobs written for this attempt are collected.
   */
  async publishLocked(
    target: PublishTarget,
    doc: SkillDocument,
    files: PendingFile[],
    origin: string,
    actor: ActorLike,
    alsoInTransaction?: (em: TxEntityManager, skill: SkillRow) => Promise<void>,
  ): Promise<SkillRow> {
    try {
      // SKILL.md and the files are written side by side: their fsyncs overlap instead of each waiting its turn.
      const markdown: PendingFile = {
        path: SKILL_MD,
        size: Buffer.byteLength(doc.markdown),
        data: Buffer.from(doc.markdown, 'utf8'),
      }
      const [md, ...manifest] = (await mapLimit(
        [markdown, ...files],
        BLOB_WRITES_AT_ONCE,
        async (file): Promise<ManifestEntry> => {
          if (file.sha256) {
            if (!(await this.blobs.has(file.sha256))) throw new Error(`blob ${file.sha256} of ${file.path} is missing`)
            return { path: file.path, sha256: file.sha256, size: file.size }
          }
          if (!file.data) throw new Error(`${file.path} has neither content nor a blob`)
          return { path: file.path, ...(await this.blobs.put(file.data)) }
        },
      )) as [ManifestEntry, ...ManifestEntry[]]
      manifest.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      await this.#hooks.beforeCommit?.({ skillId: target.skillId, origin })
      const now = this.now()
      return await this.#db.em().transactional(async (em) => {
        let skill = await em.findOne(SkillEntity, { id: target.skillId })
        if (!skill) {
          if (!target.create) throw SkillErrors.notFound(`No skill with id ${target.skillId}`)
          skill = em.create(SkillEntity, {
            id: target.skillId,
            name: doc.meta.name,
            nameKey: doc.meta.name.toLowerCase(),
            description: '',
            icon: '',
            category: '',
            tags: [],
            source: target.create.source,
            syncFolder: target.create.syncFolder ?? null,
            enabled: true,
            revision: 0,
            version: 0,
            createdAt: now,
            updatedAt: now,
          })
        } else if (target.baseRevision !== undefined && skill.revision !== target.baseRevision) {
          throw SkillErrors.staleRevision(
            `baseRevision ${target.baseRevision} is stale: the skill is at revision ${skill.revision}. Reload it and apply your change again`,
          )
        }
        const revision = skill.revision + 1
        em.create(SkillRevisionEntity, {
          skillId: skill.id,
          revision,
          ...doc.meta,
          markdownSha: md.sha256,
          markdownSize: md.size,
          files: manifest,
          size: md.size + manifest.reduce((n, f) => n + f.size, 0),
          digest: digestOf(md.sha256, manifest),
          origin,
          createdAt: now,
          createdBy: nameOf(actor),
        })
        Object.assign(skill, {
          ...doc.meta,
          nameKey: doc.meta.name.toLowerCase(),
          revision,
          version: skill.version + 1,
          updatedAt: now,
        })
        await alsoInTransaction?.(em, skill)
        return skill
      })
    } catch (err) {
      await this.gcLocked().catch((e: unknown) =>
        this.#log.error({ err: e }, 'skills: blob collection after a failed publish failed'),
      )
      throw err
    }
  }

  /** The content digest a publish of this document and these files would get (sync compares it to skip no-ops). */
  digestFor(markdown: string, files: ManifestEntry[]): string {
    const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    return digestOf(sha256(Buffer.from(markdown, 'utf8')), sorted)
  }

  async currentRevision(row: SkillRow): Promise<RevisionRow> {
    return this.revisionRow(row.id, row.revision)
  }

  create(input: { name?: string; body: string; files?: IncomingFile[] }, actor: ActorLike): Promise<SkillDetail> {
    const doc = parseSkillMarkdown(input.body, input.name)
    const files = checkIncomingFiles(Buffer.byteLength(doc.markdown), input.files ?? [])
    return this.lock.run(async () => {
      await this.#checkNameFree(doc.meta.name, null)
      const skill = await this.publishLocked(
        { skillId: randomUUID(), create: { source: 'local' } },
        doc,
        files,
        'create',
        actor,
      )
      await this.#audit.record(
        {
          action: 'skill.create',
          target: skill.id,
          detail: { name: skill.name, revision: skill.revision, files: files.length },
        },
        actor,
      )
      return this.detail(skill.id)
    })
  }

  /** Local skills only: a synced one is read-only (its folder is the source of truth). */
  #writable(row: SkillRow): void {
    if (row.source === 'synced') {
      throw SkillErrors.readOnly(
        `"${row.name}" is synced from the sync directory and read-only: duplicate it (POST /api/skills/${row.id}/duplicate) and edit the local copy`,
      )
    }
  }

  #checkBase(row: SkillRow, baseRevision: number): void {
    if (row.revision !== baseRevision) {
      throw SkillErrors.staleRevision(
        `baseRevision ${baseRevision} is stale: the skill is at revision ${row.revision}. Reload it and apply your change again`,
      )
    }
  }

  replace(
    id: string,
    input: { name?: string; body: string; baseRevision: number; files?: IncomingFile[] },
    actor: ActorLike,
  ): Promise<SkillDetail> {
    const doc = parseSkillMarkdown(input.body, input.name)
    const mdBytes = Buffer.byteLength(doc.markdown)
    const incoming = input.files === undefined ? null : checkIncomingFiles(mdBytes, input.files)
    return this.lock.run(async () => {
      const row = await this.row(id)
      this.#writable(row)
      this.#checkBase(row, input.baseRevision)
      await this.#checkNameFree(doc.meta.name, id)
      let files: PendingFile[]
      if (incoming) files = incoming
      else {
        files = (await this.currentRevision(row)).files.map((f) => ({ ...f }))
        checkManifest(mdBytes, files)
      }
      const before = { name: row.name, revision: row.revision }
      const skill = await this.publishLocked(
        { skillId: id, baseRevision: input.baseRevision },
        doc,
        files,
        'update',
        actor,
      )
      await this.#audit.record(
        {
          action: 'skill.update',
          target: id,
          detail: {
            before,
            after: { name: skill.name, revision: skill.revision },
            files: incoming ? 'replaced' : 'kept',
          },
        },
        actor,
      )
      return this.detail(id)
    })
  }

  /** "Name (copy)", "Name (copy 2)", … : the first free local name, within the name limit. */
  async #copyName(name: string): Promise<string> {
    for (let n = 1; n < 1000; n++) {
      const suffix = n === 1 ? ' (copy)' : ` (copy ${n})`
      const candidate = checkName(
        [...name]
          .slice(0, LIMITS.nameChars - suffix.length)
          .join('')
          .trimEnd() + suffix,
      )
      const other = await this.#db.em().findOne(SkillEntity, { nameKey: candidate.toLowerCase(), source: 'local' })
      if (!other) return candidate
    }
    throw SkillErrors.nameTaken(`Too many copies of "${name}"`)
  }

  duplicate(id: string, actor: ActorLike): Promise<SkillDetail> {
    return this.lock.run(async () => {
      const row = await this.row(id)
      const rev = await this.currentRevision(row)
      const name = await this.#copyName(row.name)
      const markdown = (await this.blobs.read(rev.markdownSha)).toString('utf8')
      const doc = parseSkillMarkdown(markdown, name)
      const files = rev.files.map((f) => ({ ...f }))
      checkManifest(Buffer.byteLength(doc.markdown), files)
      const skill = await this.publishLocked(
        { skillId: randomUUID(), create: { source: 'local' } },
        doc,
        files,
        'duplicate',
        actor,
      )
      await this.#audit.record(
        {
          action: 'skill.duplicate',
          target: skill.id,
          detail: { from: id, fromRevision: rev.revision, name: skill.name, source: row.source },
        },
        actor,
      )
      return this.detail(skill.id)
    })
  }

  restore(id: string, revision: number, baseRevision: number, actor: ActorLike): Promise<SkillDetail> {
    return this.lock.run(async () => {
      const row = await this.row(id)
      this.#writable(row)
      const rev = await this.revisionRow(id, revision)
      this.#checkBase(row, baseRevision)
      await this.#checkNameFree(rev.name, id)
      const markdown = (await this.blobs.read(rev.markdownSha)).toString('utf8')
      const doc = parseSkillMarkdown(markdown, rev.name)
      const skill = await this.publishLocked(
        { skillId: id, baseRevision },
        doc,
        rev.files.map((f) => ({ ...f })),
        'restore',
        actor,
      )
      await this.#audit.record(
        {
          action: 'skill.restore',
          target: id,
          detail: { restored: revision, before: { revision: row.revision }, after: { revision: skill.revision } },
        },
        actor,
      )
      return this.detail(id)
    })
  }

  remove(id: string, actor: ActorLike): Promise<void> {
    return this.lock.run(async () => {
      const row = await this.row(id)
      if (row.source === 'synced') {
        throw SkillErrors.readOnly(
          `"${row.name}" is synced and read-only: remove its folder from the sync directory instead`,
        )
      }
      await this.#db.em().transactional(async (em) => {
        await em.nativeDelete(SkillRevisionEntity, { skillId: id })
        await em.nativeDelete(SkillEntity, { id })
      })
      await this.gcLocked()
      await this.#audit.record(
        { action: 'skill.delete', target: id, detail: { name: row.name, revision: row.revision } },
        actor,
      )
    })
  }

  setEnabled(id: string, enabled: boolean, actor: ActorLike): Promise<SkillSummary> {
    return this.lock.run(async () => {
      const em = this.#db.em()
      const row = await em.findOne(SkillEntity, { id })
      if (!row) throw SkillErrors.notFound(`No skill with id ${id}`)
      const before = row.enabled
      if (before !== enabled) {
        row.enabled = enabled
        row.version += 1
        row.updatedAt = this.now()
        await em.flush()
      }
      await this.#audit.record(
        {
          action: enabled ? 'skill.enable' : 'skill.disable',
          target: id,
          detail: { name: row.name, before: { enabled: before }, after: { enabled } },
        },
        actor,
      )
      return this.toSummary(row)
    })
  }

  /** Synced skills removed from the sync directory (called by the sync watcher with the lock held). */
  async removeSyncedLocked(row: SkillRow): Promise<void> {
    await this.#db.em().transactional(async (em) => {
      await em.nativeDelete(SkillRevisionEntity, { skillId: row.id })
      await em.nativeDelete(SkillEntity, { id: row.id })
    })
    await this.gcLocked()
  }

  syncedRows(): Promise<SkillRow[]> {
    return this.#db.em().find(SkillEntity, { source: 'synced' })
  }

  audit(event: Parameters<AuditService['record']>[0], actor: ActorLike): Promise<void> {
    return this.#audit.record(event, actor)
  }

  get db(): Database {
    return this.#db
  }
}
