import { defineEntity, p } from '@hostd/sdk'

/** One row per skill: its current metadata (copied from its current revision) and its flags. */
export const SkillEntity = defineEntity({
  name: 'SkillsSkill',
  tableName: 'skills',
  properties: {
    id: p.string().primary(),
    name: p.string(),
    /** Lower-cased name: local names are unique case-insensitively (checked under the service's lock). */
    nameKey: p.string().index(),
    description: p.text(),
    icon: p.string(),
    category: p.string(),
    tags: p.json<string[]>(),
    /** `local` or `synced`. */
    source: p.string(),
    /** For synced skills: the folder name inside the sync directory. */
    syncFolder: p.string().nullable().index(),
    enabled: p.boolean(),
    /** Content revision: bumped by every publish; clients send it back as baseRevision. */
    revision: p.integer(),
    /** Bumped by every change of the entry (content or flags). */
    version: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
})

/** One row per published revision; file contents live in the blob store, named by sha256. */
export const SkillRevisionEntity = defineEntity({
  name: 'SkillsRevision',
  tableName: 'skills_revisions',
  uniques: [{ properties: ['skillId', 'revision'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    skillId: p.string().index(),
    revision: p.integer(),
    name: p.string(),
    description: p.text(),
    icon: p.string(),
    category: p.string(),
    tags: p.json<string[]>(),
    /** SKILL.md as stored. */
    markdownSha: p.string(),
    markdownSize: p.integer(),
    /** Supporting files: [{path, sha256, size}], sorted by path. */
    files: p.json<{ path: string; sha256: string; size: number }[]>(),
    /** Total bytes of SKILL.md and the files. */
    size: p.integer(),
    /** Hash of the content (SKILL.md and every path and hash): equal digests, equal bundles. */
    digest: p.string(),
    /** create, update, restore, duplicate, draft, sync. */
    origin: p.string(),
    createdAt: p.datetime(),
    createdBy: p.string().nullable(),
  },
})

/** A client's draft: a staged SKILL.md and staged files, kept 24 hours. */
export const SkillDraftEntity = defineEntity({
  name: 'SkillsDraft',
  tableName: 'skills_drafts',
  properties: {
    /** The client's lowercase UUID. */
    id: p.string().primary(),
    ownerId: p.string().index(),
    /** Hash of the creating request's body: a retry must match it exactly. */
    requestHash: p.string(),
    /** The name sent with the draft (it wins over the frontmatter's), or null. */
    requestName: p.string().nullable(),
    markdownSha: p.string(),
    markdownSize: p.integer(),
    targetSkillId: p.string().nullable(),
    baseRevision: p.integer().nullable(),
    /** The skill a publish creates or updates; chosen at creation so a retried publish is idempotent. */
    publishSkillId: p.string(),
    files: p.json<{ path: string; sha256: string; size: number }[]>(),
    publishedRevision: p.integer().nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime().index(),
  },
})

export const skillEntities = [SkillEntity, SkillRevisionEntity, SkillDraftEntity]
