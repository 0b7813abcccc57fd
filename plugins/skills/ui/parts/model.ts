/**
 * What the skills pages share besides components: the API's shapes (the plugin's own schemas, as types), paths,
 * the bundle limits checked before anything is sent, files read as base64, and drafts started with a
 * client-generated id.
 */
import { ApiError, formatBytes, type PageContext } from '@hostd/ui'
import { LIMITS, mib } from '../../src/limits.ts'
import type { RevisionInfo, SkillDetail, SkillDraft, SkillSummary, SyncStatus } from '../../src/schemas.ts'

export type { RevisionInfo, SkillDetail, SkillDraft, SkillSummary, SyncStatus }
export { LIMITS, mib }

export const api = {
  skills: '/api/skills',
  skill: (id: string) => `/api/skills/${id}`,
  revisions: (id: string) => `/api/skills/${id}/revisions`,
  revision: (id: string, n: number) => `/api/skills/${id}/revisions/${n}`,
  file: (id: string, path: string, revision?: number) =>
    `/api/skills/${id}/file?path=${encodeURIComponent(path)}${revision ? `&revision=${revision}` : ''}`,
  exportZip: (id: string) => `/api/skills/${id}/export`,
  drafts: '/api/skills/drafts',
  draft: (draftId: string) => `/api/skills/drafts/${draftId}`,
  sync: '/api/skills/sync',
}

/** Error codes that concern the supporting files: shown in the files section. */
export const FILE_ERRORS = new Set([
  'HOSTD_SKILLS_FILE_TOO_LARGE',
  'HOSTD_SKILLS_BUNDLE_TOO_LARGE',
  'HOSTD_SKILLS_TOO_MANY_FILES',
  'HOSTD_SKILLS_TOO_DEEP',
  'HOSTD_SKILLS_PATH_INVALID',
  'HOSTD_SKILLS_BASE64_INVALID',
  'HOSTD_REQUEST_TOO_LARGE',
])

/** Server errors shown at the SKILL.md or name field. */
export const FIELD_ERRORS = {
  HOSTD_SKILLS_NAME_TAKEN: 'name',
  HOSTD_SKILLS_NAME_INVALID: 'name',
  HOSTD_SKILLS_FRONTMATTER_INVALID: 'body',
}

/** A supporting file picked in the browser, with the path it will have inside the skill. */
export interface PickedFile {
  file: File
  path: string
}

const depth = (path: string) => path.split('/').filter(Boolean).length - 1

/**
 * The interface document's bundle limits, checked before reading or sending anything, with a message that names
 * the limit. `existing` are files already in the bundle (a draft's staged files). Null when everything fits.
 */
export function limitError(
  skillMdBytes: number,
  picked: { path: string; size: number }[],
  existing: { path: string; size: number }[] = [],
): string | null {
  const all = [...existing, ...picked]
  if (all.length + 1 > LIMITS.files)
    return `A skill holds at most ${LIMITS.files} files including SKILL.md; this one would hold ${all.length + 1}.`
  const big = picked.find((f) => f.size > LIMITS.fileBytes)
  if (big) return `${big.path} is ${formatBytes(big.size)}: a file may be at most ${mib(LIMITS.fileBytes)}.`
  const deep = picked.find((f) => depth(f.path) > LIMITS.depth)
  if (deep) return `${deep.path} lies ${depth(deep.path)} folders deep: at most ${LIMITS.depth} levels are allowed.`
  const total = all.reduce((sum, f) => sum + f.size, skillMdBytes)
  if (total > LIMITS.bundleBytes)
    return `The skill would hold ${formatBytes(total)}: a skill may hold at most ${mib(LIMITS.bundleBytes)} (SKILL.md and every file).`
  return null
}

export const utf8Bytes = (text: string) => new TextEncoder().encode(text).length

/** A file's content as standard base64 without line breaks (the API's supporting-file content). */
export function readBase64(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => {
      const url = reader.result as string
      resolve(url.slice(url.indexOf(',') + 1))
    }
    reader.onerror = () => reject(reader.error ?? new Error('The file could not be read'))
    reader.readAsDataURL(file)
  })
}

/** A JSON body sent with upload progress (large bundles take a while). */
export function sendJson<T>(
  ctx: PageContext,
  method: string,
  path: string,
  body: unknown,
  onProgress?: (sent: number, total: number) => void,
): Promise<T> {
  return ctx.upload<T>(path, new Blob([JSON.stringify(body)], { type: 'application/json' }), { method, onProgress })
}

/**
 * Creates a draft with an id made here (a lowercase UUID, as the interface asks), retrying with the SAME id and
 * body when the network failed: the server answers an exact retry with the draft it already made.
 */
export async function createDraft(
  ctx: PageContext,
  body: { body: string; name?: string; targetSkillId?: string; baseRevision?: number },
): Promise<SkillDraft> {
  const request = { draftId: crypto.randomUUID().toLowerCase(), ...body }
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.api.post<SkillDraft>(api.drafts, request)
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 0) || attempt >= 3) throw err
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt))
    }
  }
}

/** A live, unpublished draft of this skill by the signed-in user, if any. */
export const pendingDraftOf = (drafts: SkillDraft[], skillId: string) =>
  drafts.find((d) => d.targetSkillId === skillId && d.publishedRevision === null)
