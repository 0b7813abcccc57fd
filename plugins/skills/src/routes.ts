import type { RouteRegistrar } from '@hostd/sdk'
import { BUNDLE_BODY_LIMIT, FILE_BODY_LIMIT, LIMITS, mib } from './limits.ts'
import {
  CreateDraftSchema,
  CreateSkillSchema,
  DraftFileQuery,
  DraftListSchema,
  DraftParams,
  EnabledSchema,
  FileQuery,
  FileSchema,
  IdParams,
  ListQuery,
  ReplaceSkillSchema,
  RestoreSchema,
  RevisionListSchema,
  RevisionParams,
  SkillDetailSchema,
  SkillDraftSchema,
  SkillListSchema,
  SkillSummarySchema,
  SyncStatusSchema,
  UpdateDraftSchema,
} from './schemas.ts'
import type { SkillService } from './service.ts'
import type { DraftService } from './drafts.ts'
import type { SkillSync } from './sync.ts'
import { zipStream } from './zip.ts'

const tags = ['skills']
const bundleTooLarge =
  `The request is larger than ${mib(BUNDLE_BODY_LIMIT)}, more than a skill bundle can take: ` +
  `the bundle limit is ${mib(LIMITS.bundleBytes)} (files are sent in base64, which adds a third)`
const fileTooLarge =
  `The request is larger than ${mib(FILE_BODY_LIMIT)}, more than one file can take: ` +
  `the limit is ${mib(LIMITS.fileBytes)} per file (sent in base64, which adds a third)`

/** A file name for Content-Disposition: letters, digits, dot, dash and underscore only. */
function safeFileName(name: string): string {
  return (
    name
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[-.]+|-+$/g, '')
      .slice(0, 64) || 'skill'
  )
}

/** Every skills route; all of them need the admin role (the interface document's rule for skills). */
export function skillRoutes(r: RouteRegistrar, skills: SkillService, drafts: DraftService, sync: SkillSync): void {
  const admin = 'admin' as const

  r.get(
    '/api/skills',
    {
      role: admin,
      schema: {
        tags,
        summary: 'List skills (filter by category, tag, source, enabled, text)',
        querystring: ListQuery,
        response: { 200: SkillListSchema },
      },
    },
    (req) => skills.list(req.query),
  )

  r.post(
    '/api/skills',
    {
      role: admin,
      bodyLimit: BUNDLE_BODY_LIMIT,
      bodyLimitMessage: bundleTooLarge,
      schema: { tags, summary: 'Create a local skill', body: CreateSkillSchema, response: { 201: SkillDetailSchema } },
    },
    async (req, reply) => {
      const detail = await skills.create(req.body, req)
      return reply.code(201).send(detail)
    },
  )

  r.get(
    '/api/skills/sync',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Sync directory status: where it is and which folders were skipped',
        response: { 200: SyncStatusSchema },
      },
    },
    () => sync.status(),
  )

  r.post(
    '/api/skills/sync',
    {
      role: admin,
      schema: { tags, summary: 'Rescan the sync directory now', response: { 200: SyncStatusSchema } },
    },
    () => sync.rescan(),
  )

  r.get(
    '/api/skills/:id',
    {
      role: admin,
      schema: { tags, summary: 'One skill in detail', params: IdParams, response: { 200: SkillDetailSchema } },
    },
    (req) => skills.detail(req.params.id),
  )

  r.put(
    '/api/skills/:id',
    {
      role: admin,
      bodyLimit: BUNDLE_BODY_LIMIT,
      bodyLimitMessage: bundleTooLarge,
      schema: {
        tags,
        summary: 'Replace the instructions (and supporting files, when sent) at baseRevision',
        params: IdParams,
        body: ReplaceSkillSchema,
        response: { 200: SkillDetailSchema },
      },
    },
    (req) => skills.replace(req.params.id, req.body, req),
  )

  r.delete(
    '/api/skills/:id',
    {
      role: admin,
      schema: { tags, summary: 'Delete a local skill and its revisions', params: IdParams },
    },
    async (req) => {
      await skills.remove(req.params.id, req)
    },
  )

  r.post(
    '/api/skills/:id/duplicate',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Copy a skill and its supporting files to a new local skill',
        params: IdParams,
        response: { 201: SkillDetailSchema },
      },
    },
    async (req, reply) => reply.code(201).send(await skills.duplicate(req.params.id, req)),
  )

  r.post(
    '/api/skills/:id/enabled',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Enable or disable a skill',
        params: IdParams,
        body: EnabledSchema,
        response: { 200: SkillSummarySchema },
      },
    },
    (req) => skills.setEnabled(req.params.id, req.body.enabled, req),
  )

  r.get(
    '/api/skills/:id/revisions',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Revisions of a skill, newest first',
        params: IdParams,
        response: { 200: RevisionListSchema },
      },
    },
    (req) => skills.revisions(req.params.id),
  )

  r.get(
    '/api/skills/:id/revisions/:revision',
    {
      role: admin,
      schema: {
        tags,
        summary: 'A skill as it was at one revision',
        params: RevisionParams,
        response: { 200: SkillDetailSchema },
      },
    },
    (req) => skills.detail(req.params.id, req.params.revision),
  )

  r.post(
    '/api/skills/:id/revisions/:revision/restore',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Publish an old revision again as a new revision',
        params: RevisionParams,
        body: RestoreSchema,
        response: { 200: SkillDetailSchema },
      },
    },
    (req) => skills.restore(req.params.id, req.params.revision, req.body.baseRevision, req),
  )

  r.get(
    '/api/skills/:id/file',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Download one file of a skill (SKILL.md or a supporting file), optionally of an old revision',
        params: IdParams,
        querystring: FileQuery,
      },
    },
    async (req, reply) => {
      const file = await skills.file(req.params.id, req.query.path, req.query.revision)
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(file.size))
        .header('content-disposition', `attachment; filename="${safeFileName(file.path.split('/').pop() ?? 'file')}"`)
        .send(skills.blobs.stream(file.sha256))
    },
  )

  r.get(
    '/api/skills/:id/export',
    {
      role: admin,
      schema: { tags, summary: 'Download a skill as a zip (a folder with SKILL.md and its files)', params: IdParams },
    },
    async (req, reply) => {
      const row = await skills.row(req.params.id)
      const rev = await skills.currentRevision(row)
      const folder = safeFileName(row.name)
      const entries = [
        { name: `${folder}/SKILL.md`, sha256: rev.markdownSha },
        ...rev.files.map((f) => ({ name: `${folder}/${f.path}`, sha256: f.sha256 })),
      ]
      return reply
        .header('content-type', 'application/zip')
        .header('content-disposition', `attachment; filename="${folder}.zip"`)
        .send(zipStream(skills.blobs, entries, rev.createdAt))
    },
  )

  // Drafts
  r.get(
    '/api/skills/drafts',
    {
      role: admin,
      schema: { tags, summary: 'Your live drafts', response: { 200: DraftListSchema } },
    },
    (req) => drafts.list(req),
  )

  r.post(
    '/api/skills/drafts',
    {
      role: admin,
      bodyLimit: FILE_BODY_LIMIT,
      bodyLimitMessage: fileTooLarge,
      schema: {
        tags,
        summary: 'Create a draft (retrying the exact body returns the same draft)',
        body: CreateDraftSchema,
        response: { 200: SkillDraftSchema, 201: SkillDraftSchema },
      },
    },
    async (req, reply) => {
      const { draft, created } = await drafts.create(req.body, req)
      return reply.code(created ? 201 : 200).send(draft)
    },
  )

  r.get(
    '/api/skills/drafts/:draftId',
    {
      role: admin,
      schema: { tags, summary: 'One of your drafts', params: DraftParams, response: { 200: SkillDraftSchema } },
    },
    (req) => drafts.get(req.params.draftId, req),
  )

  r.patch(
    '/api/skills/drafts/:draftId',
    {
      role: admin,
      bodyLimit: FILE_BODY_LIMIT,
      bodyLimitMessage: fileTooLarge,
      schema: {
        tags,
        summary: "Change a draft's name or SKILL.md (its target and base revision never change)",
        params: DraftParams,
        body: UpdateDraftSchema,
        response: { 200: SkillDraftSchema },
      },
    },
    (req) => drafts.update(req.params.draftId, req.body, req),
  )

  r.put(
    '/api/skills/drafts/:draftId/files',
    {
      role: admin,
      bodyLimit: FILE_BODY_LIMIT,
      bodyLimitMessage: fileTooLarge,
      schema: {
        tags,
        summary: 'Stage one supporting file (replaces a file at the same path)',
        params: DraftParams,
        body: FileSchema,
        response: { 200: SkillDraftSchema },
      },
    },
    (req) => drafts.stageFile(req.params.draftId, req.body, req),
  )

  r.delete(
    '/api/skills/drafts/:draftId/files',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Remove one staged file',
        params: DraftParams,
        querystring: DraftFileQuery,
        response: { 200: SkillDraftSchema },
      },
    },
    (req) => drafts.unstageFile(req.params.draftId, req.query.path, req),
  )

  r.post(
    '/api/skills/drafts/:draftId/publish',
    {
      role: admin,
      schema: {
        tags,
        summary: 'Publish a draft: a new skill, or a new revision of the skill it edits',
        params: DraftParams,
        response: { 200: SkillDetailSchema, 201: SkillDetailSchema },
      },
    },
    async (req, reply) => {
      const { detail, created } = await drafts.publish(req.params.draftId, req)
      return reply.code(created ? 201 : 200).send(detail)
    },
  )

  r.delete(
    '/api/skills/drafts/:draftId',
    {
      role: admin,
      schema: { tags, summary: 'Discard a draft', params: DraftParams },
    },
    async (req) => {
      await drafts.discard(req.params.draftId, req)
    },
  )
}
