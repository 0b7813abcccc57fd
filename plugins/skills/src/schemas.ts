import { Type, UuidSchema, type Static } from '@hostd/sdk'

/** A revision number (1, 2, ...); bounded so a number past the safe integers is a 400, not a lookup. */
const Revision = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })

/** Skill (local workflow) summary: the interface document's table, field for field. */
export const SkillSummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  icon: Type.String(),
  category: Type.String(),
  updatedAt: Type.String({ format: 'date-time' }),
  tags: Type.Array(Type.String()),
  version: Type.Integer(),
  source: Type.Union([Type.Literal('local'), Type.Literal('synced')]),
  enabled: Type.Boolean(),
  revision: Type.Integer(),
})
export type SkillSummary = Static<typeof SkillSummarySchema>

/** Skill detail (returned by create, replace, duplicate, get, publish, restore). */
export const SkillDetailSchema = Type.Object({
  skill: SkillSummarySchema,
  body: Type.String(),
  files: Type.Array(Type.String()),
  frontmatter: Type.Object({}, { additionalProperties: true }),
  markdown: Type.String(),
})
export type SkillDetail = Static<typeof SkillDetailSchema>

export const SkillListSchema = Type.Array(SkillSummarySchema)

export const FileSchema = Type.Object(
  {
    path: Type.String({ maxLength: 4096 }),
    content: Type.String({ description: 'File content, standard base64 without line breaks' }),
  },
  { additionalProperties: false },
)

const Name = Type.String({ minLength: 1, maxLength: 256, description: 'Wins over the frontmatter name' })
const Body = Type.String({
  description: 'The whole SKILL.md: YAML frontmatter (name, description; optional icon, category, tags) and markdown',
})

export const CreateSkillSchema = Type.Object(
  { name: Type.Optional(Name), body: Body, files: Type.Optional(Type.Array(FileSchema)) },
  { additionalProperties: false },
)
export const ReplaceSkillSchema = Type.Object(
  {
    name: Type.Optional(Name),
    body: Body,
    baseRevision: Revision,
    files: Type.Optional(Type.Array(FileSchema, { description: 'Omitted: the supporting files stay as they are' })),
  },
  { additionalProperties: false },
)
export const EnabledSchema = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false })
export const RestoreSchema = Type.Object({ baseRevision: Revision }, { additionalProperties: false })

export const IdParams = Type.Object({ id: UuidSchema })
export const RevisionParams = Type.Object({ id: UuidSchema, revision: Revision })

export const ListQuery = Type.Object(
  {
    category: Type.Optional(Type.String({ maxLength: 64 })),
    tag: Type.Optional(Type.String({ maxLength: 64 })),
    source: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('synced')])),
    q: Type.Optional(
      Type.String({
        maxLength: 256,
        description: 'Text found in name, description, category or tags (case-insensitive)',
      }),
    ),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const FileQuery = Type.Object(
  { path: Type.String({ minLength: 1, maxLength: 4096 }), revision: Type.Optional(Revision) },
  { additionalProperties: false },
)

export const RevisionInfoSchema = Type.Object({
  revision: Type.Integer(),
  name: Type.String(),
  description: Type.String(),
  files: Type.Integer({ description: 'Supporting files in this revision' }),
  size: Type.Integer({ description: 'Bytes of SKILL.md and every supporting file' }),
  origin: Type.String({ description: 'create, update, restore, duplicate, draft or sync' }),
  createdAt: Type.String({ format: 'date-time' }),
  createdBy: Type.Union([Type.String(), Type.Null()]),
})
export const RevisionListSchema = Type.Array(RevisionInfoSchema)
export type RevisionInfo = Static<typeof RevisionInfoSchema>

/** Skill draft: the interface document's fields, plus name, markdown, createdAt and publishedRevision. */
export const SkillDraftSchema = Type.Object({
  id: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
  targetSkillId: Type.Optional(Type.String()),
  baseRevision: Type.Optional(Type.Integer()),
  publishSkillId: Type.String(),
  files: Type.Array(Type.String()),
  name: Type.String(),
  markdown: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  publishedRevision: Type.Union([Type.Integer(), Type.Null()]),
})
export type SkillDraft = Static<typeof SkillDraftSchema>
export const DraftListSchema = Type.Array(SkillDraftSchema)

export const CreateDraftSchema = Type.Object(
  {
    draftId: Type.String({ minLength: 1, maxLength: 64 }),
    name: Type.Optional(Name),
    body: Body,
    targetSkillId: Type.Optional(UuidSchema),
    baseRevision: Type.Optional(Revision),
  },
  { additionalProperties: false },
)
export type CreateDraft = Static<typeof CreateDraftSchema>
export const UpdateDraftSchema = Type.Object(
  {
    name: Type.Optional(Name),
    body: Type.Optional(Body),
    targetSkillId: Type.Optional(Type.String({ maxLength: 64 })),
    baseRevision: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
)
export const DraftParams = Type.Object({ draftId: UuidSchema })
export const DraftFileQuery = Type.Object(
  { path: Type.String({ minLength: 1, maxLength: 4096 }) },
  { additionalProperties: false },
)

export const SyncStatusSchema = Type.Object({
  dir: Type.String(),
  watching: Type.Boolean(),
  skills: Type.Integer(),
  errors: Type.Array(Type.Object({ folder: Type.String(), message: Type.String() })),
})
export type SyncStatus = Static<typeof SyncStatusSchema>
