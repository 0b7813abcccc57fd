import { randomUUID } from 'node:crypto'
import { sha256 } from './blobs.ts'
import {
  base64Size,
  checkFileSize,
  checkManifest,
  decodeBase64,
  normalizePath,
  pathKey,
  type ManifestEntry,
} from './bundle.ts'
import { SkillDraftEntity, SkillEntity } from './entities.ts'
import { SkillErrors } from './errors.ts'
import { parseSkillMarkdown } from './frontmatter.ts'
import { LIMITS } from './limits.ts'
import type { CreateDraft, SkillDetail, SkillDraft } from './schemas.ts'
import type { ActorLike, SkillService } from './service.ts'

type DraftRow = (typeof SkillDraftEntity)['~entity']

const DRAFT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function ownerOf(actor: ActorLike): string {
  const id = actor?.user?.id
  if (!id) throw new Error('a draft needs a signed-in owner')
  return id
}

/** The creating request, canonically: a retry must send exactly this again. */
function requestHash(input: CreateDraft): string {
  return sha256(
    JSON.stringify([input.name ?? null, input.body, input.targetSkillId ?? null, input.baseRevision ?? null]),
  )
}

/**
 * Drafts: a client stages a SKILL.md and supporting files under its own draftId (a lowercase UUID), then
 * publishes them as a new skill or as a new revision of the skill it edits. A draft belongs to its creator
 * (another user's draftId is 404), lives 24 hours from creation, and stays readable after its publish so a
 * retried publish gets the same answer.
 */
export class DraftService {
  readonly #skills: SkillService

  constructor(skills: SkillService) {
    this.#skills = skills
  }

  #expired(row: DraftRow): boolean {
    return row.expiresAt.getTime() <= this.#skills.now().getTime()
  }

  async toDraft(row: DraftRow): Promise<SkillDraft> {
    const markdown = (await this.#skills.blobs.read(row.markdownSha)).toString('utf8')
    const doc = parseSkillMarkdown(markdown, row.requestName ?? undefined)
    return {
      id: row.id,
      expiresAt: row.expiresAt.toISOString(),
      ...(row.targetSkillId ? { targetSkillId: row.targetSkillId } : {}),
      ...(row.baseRevision ? { baseRevision: row.baseRevision } : {}),
      publishSkillId: row.publishSkillId,
      files: row.files.map((f) => f.path),
      name: doc.meta.name,
      markdown: doc.markdown,
      createdAt: row.createdAt.toISOString(),
      publishedRevision: row.publishedRevision ?? null,
    }
  }

  /**
   * The caller's live draft, or 404 (missing, expired, or someone else's: indistinguishable on purpose). Pass the
   * EntityManager you will flush when you change the row.
   */
  async #own(draftId: string, actor: ActorLike, em = this.#skills.db.em()): Promise<DraftRow> {
    const row = await em.findOne(SkillDraftEntity, { id: draftId })
    if (!row || row.ownerId !== ownerOf(actor) || this.#expired(row))
      throw SkillErrors.draftNotFound(`You have no draft ${draftId}`)
    return row
  }

  async list(actor: ActorLike): Promise<SkillDraft[]> {
    const rows = await this.#skills.db
      .em()
      .find(
        SkillDraftEntity,
        { ownerId: ownerOf(actor), expiresAt: { $gt: this.#skills.now() } },
        { orderBy: { createdAt: 'desc' } },
      )
    return Promise.all(rows.map((r) => this.toDraft(r)))
  }

  async get(draftId: string, actor: ActorLike): Promise<SkillDraft> {
    return this.toDraft(await this.#own(draftId, actor))
  }

  /** Creates a draft, or returns it again for an exact retry. `created` tells which. */
  create(input: CreateDraft, actor: ActorLike): Promise<{ draft: SkillDraft; created: boolean }> {
    if (!DRAFT_ID.test(input.draftId))
      throw SkillErrors.invalidDraftId(
        `draftId ${JSON.stringify(input.draftId.slice(0, 64))} is not a lowercase UUID (make one with crypto.randomUUID())`,
      )
    if ((input.targetSkillId === undefined) !== (input.baseRevision === undefined)) {
      throw SkillErrors.draftTargetIncomplete(
        'An edit draft names both targetSkillId and baseRevision; a new-skill draft names neither',
      )
    }
    const owner = ownerOf(actor)
    const hash = requestHash(input)
    return this.#skills.lock.run(async () => {
      const em = this.#skills.db.em()
      const existing = await em.findOne(SkillDraftEntity, { id: input.draftId })
      if (existing && this.#expired(existing)) {
        // An expired draft is gone: its id may start a new one.
        await em.nativeDelete(SkillDraftEntity, { id: existing.id })
        await this.#skills.gcLocked()
      } else if (existing) {
        if (existing.ownerId !== owner) throw SkillErrors.draftNotFound(`You have no draft ${input.draftId}`)
        if (existing.requestHash !== hash) {
          throw SkillErrors.draftConflict(
            `Draft ${input.draftId} was created with a different body: a retry must send exactly the same body, a new draft needs a new draftId`,
          )
        }
        return { draft: await this.toDraft(existing), created: false }
      }
      const doc = parseSkillMarkdown(input.body, input.name)
      let files: ManifestEntry[] = []
      if (input.targetSkillId !== undefined && input.baseRevision !== undefined) {
        const target = await this.#skills.row(input.targetSkillId)
        if (target.source === 'synced') {
          throw SkillErrors.readOnly(
            `"${target.name}" is synced and read-only: duplicate it (POST /api/skills/${target.id}/duplicate) and draft an edit of the copy`,
          )
        }
        files = (await this.#skills.revisionRow(target.id, input.baseRevision)).files.map((f) => ({ ...f }))
      }
      checkManifest(Buffer.byteLength(doc.markdown), files)
      const md = await this.#skills.blobs.put(Buffer.from(doc.markdown, 'utf8'))
      const now = this.#skills.now()
      const row = em.create(SkillDraftEntity, {
        id: input.draftId,
        ownerId: owner,
        requestHash: hash,
        requestName: input.name ?? null,
        markdownSha: md.sha256,
        markdownSize: md.size,
        targetSkillId: input.targetSkillId ?? null,
        baseRevision: input.baseRevision ?? null,
        publishSkillId: input.targetSkillId ?? randomUUID(),
        files,
        publishedRevision: null,
        createdAt: now,
        expiresAt: new Date(now.getTime() + LIMITS.draftLifetimeMs),
      })
      try {
        await em.flush()
      } catch (err) {
        await this.#skills.gcLocked()
        throw err
      }
      await this.#skills.audit(
        {
          action: 'skill.draft.create',
          target: row.id,
          detail: { name: doc.meta.name, targetSkillId: row.targetSkillId, baseRevision: row.baseRevision },
        },
        actor,
      )
      return { draft: await this.toDraft(row), created: true }
    })
  }

  #unpublished(row: DraftRow): void {
    if (row.publishedRevision !== null && row.publishedRevision !== undefined) {
      throw SkillErrors.draftPublished(
        `Draft ${row.id} was published as revision ${row.publishedRevision} and can no longer change: start a new draft`,
      )
    }
  }

  /** Changes the draft's name or SKILL.md; its target and base revision never change. */
  update(
    draftId: string,
    input: { name?: string; body?: string; targetSkillId?: string; baseRevision?: number },
    actor: ActorLike,
  ): Promise<SkillDraft> {
    return this.#skills.lock.run(async () => {
      const em = this.#skills.db.em()
      const row = await this.#own(draftId, actor, em)
      this.#unpublished(row)
      if (input.targetSkillId !== undefined && input.targetSkillId !== (row.targetSkillId ?? ''))
        throw SkillErrors.draftFixed("A draft's targetSkillId cannot change: start a new draft")
      if (input.baseRevision !== undefined && input.baseRevision !== row.baseRevision)
        throw SkillErrors.draftFixed("A draft's baseRevision cannot change: start a new draft")
      const markdown = input.body ?? (await this.#skills.blobs.read(row.markdownSha)).toString('utf8')
      const name = input.name ?? row.requestName ?? undefined
      const doc = parseSkillMarkdown(markdown, name)
      checkManifest(Buffer.byteLength(doc.markdown), row.files)
      const md = await this.#skills.blobs.put(Buffer.from(doc.markdown, 'utf8'))
      row.markdownSha = md.sha256
      row.markdownSize = md.size
      row.requestName = name ?? null
      await em.flush()
      await this.#skills.gcLocked()
      await this.#skills.audit({ action: 'skill.draft.update', target: row.id, detail: { name: doc.meta.name } }, actor)
      return this.toDraft(row)
    })
  }

  /** Stages one supporting file (replacing a file at the same path, compared ignoring case). */
  stageFile(draftId: string, file: { path: string; content: string }, actor: ActorLike): Promise<SkillDraft> {
    const path = normalizePath(file.path)
    const size = base64Size(path, file.content)
    checkFileSize(path, size)
    return this.#skills.lock.run(async () => {
      const em = this.#skills.db.em()
      const row = await this.#own(draftId, actor, em)
      this.#unpublished(row)
      const others = row.files.filter((f) => pathKey(f.path) !== pathKey(path))
      checkManifest(row.markdownSize, [...others, { path, size }])
      const data = decodeBase64(path, file.content)
      const replaced = others.length !== row.files.length
      try {
        const stored = await this.#skills.blobs.put(data)
        row.files = [...others, { path, ...stored }].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
        await em.flush()
      } catch (err) {
        await this.#skills.gcLocked()
        throw err
      }
      // Only a replaced file can have left a blob nobody refers to.
      if (replaced) await this.#skills.gcLocked()
      await this.#skills.audit({ action: 'skill.draft.stage', target: row.id, detail: { path, size } }, actor)
      return this.toDraft(row)
    })
  }

  unstageFile(draftId: string, rawPath: string, actor: ActorLike): Promise<SkillDraft> {
    const path = normalizePath(rawPath)
    return this.#skills.lock.run(async () => {
      const em = this.#skills.db.em()
      const row = await this.#own(draftId, actor, em)
      this.#unpublished(row)
      const kept = row.files.filter((f) => pathKey(f.path) !== pathKey(path))
      if (kept.length === row.files.length)
        throw SkillErrors.fileNotFound(`Draft ${draftId} has no file ${JSON.stringify(path)}`)
      row.files = kept
      await em.flush()
      await this.#skills.gcLocked()
      await this.#skills.audit({ action: 'skill.draft.unstage', target: row.id, detail: { path } }, actor)
      return this.toDraft(row)
    })
  }

  /**
   * Publishes the draft: a new skill (its id is the draft's publishSkillId), or a new revision of the target,
   * refused (409) when the target moved past the draft's base revision. Publishing twice answers the same skill.
   */
  publish(draftId: string, actor: ActorLike): Promise<{ detail: SkillDetail; created: boolean }> {
    return this.#skills.lock.run(async () => {
      const em = this.#skills.db.em()
      const row = await this.#own(draftId, actor)
      if (row.publishedRevision !== null && row.publishedRevision !== undefined) {
        return { detail: await this.#skills.detail(row.publishSkillId), created: false }
      }
      const markdown = (await this.#skills.blobs.read(row.markdownSha)).toString('utf8')
      const doc = parseSkillMarkdown(markdown, row.requestName ?? undefined)
      const isEdit = row.targetSkillId !== null && row.targetSkillId !== undefined
      if (isEdit) {
        const target = await em.findOne(SkillEntity, { id: row.targetSkillId! })
        if (!target) throw SkillErrors.notFound(`The skill this draft edits (${row.targetSkillId}) no longer exists`)
        if (target.revision !== row.baseRevision) {
          throw SkillErrors.staleRevision(
            `This draft edits revision ${row.baseRevision}, but the skill is at revision ${target.revision} now: start a new draft from the current revision`,
          )
        }
      }
      const other = await em.findOne(SkillEntity, { nameKey: doc.meta.name.toLowerCase(), source: 'local' })
      if (other && other.id !== row.publishSkillId)
        throw SkillErrors.nameTaken(`A local skill named "${other.name}" exists already: choose another name`)
      checkManifest(row.markdownSize, row.files)
      const skill = await this.#skills.publishLocked(
        isEdit
          ? { skillId: row.publishSkillId, baseRevision: row.baseRevision! }
          : { skillId: row.publishSkillId, create: { source: 'local' } },
        doc,
        row.files.map((f) => ({ ...f })),
        'draft',
        actor,
        // Marked published in the same transaction: a crash leaves either both or neither.
        async (tx, published) => {
          const managed = await tx.findOneOrFail(SkillDraftEntity, { id: row.id })
          managed.publishedRevision = published.revision
        },
      )
      await this.#skills.audit(
        {
          action: 'skill.draft.publish',
          target: skill.id,
          detail: {
            draftId: row.id,
            name: skill.name,
            revision: skill.revision,
            ...(isEdit ? { before: { revision: row.baseRevision } } : { created: true }),
          },
        },
        actor,
      )
      return { detail: await this.#skills.detail(skill.id), created: !isEdit }
    })
  }

  discard(draftId: string, actor: ActorLike): Promise<void> {
    return this.#skills.lock.run(async () => {
      const row = await this.#own(draftId, actor)
      await this.#skills.db.em().nativeDelete(SkillDraftEntity, { id: row.id })
      await this.#skills.gcLocked()
      await this.#skills.audit(
        { action: 'skill.draft.discard', target: row.id, detail: { files: row.files.length } },
        actor,
      )
    })
  }

  /** Removes drafts past their 24 hours (and the blobs only they held). */
  sweep(): Promise<number> {
    return this.#skills.lock.run(async () => {
      const removed = await this.#skills.db
        .em()
        .nativeDelete(SkillDraftEntity, { expiresAt: { $lte: this.#skills.now() } })
      if (removed > 0) await this.#skills.gcLocked()
      return removed
    })
  }
}
