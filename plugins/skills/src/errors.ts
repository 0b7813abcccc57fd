import { defineError } from '@hostd/sdk'

/** Stable error codes of the skills plugin (see README for the table). */
export const SkillErrors = {
  notFound: defineError('HOSTD_SKILLS_NOT_FOUND', 404, 'No such skill'),
  revisionNotFound: defineError('HOSTD_SKILLS_REVISION_NOT_FOUND', 404, 'No such revision of this skill'),
  fileNotFound: defineError('HOSTD_SKILLS_FILE_NOT_FOUND', 404, 'No such file in this skill'),
  staleRevision: defineError('HOSTD_SKILLS_STALE_REVISION', 409, 'The skill changed since your base revision'),
  readOnly: defineError(
    'HOSTD_SKILLS_READ_ONLY',
    409,
    'This skill is synced and read-only: duplicate it to edit a local copy',
  ),
  nameTaken: defineError('HOSTD_SKILLS_NAME_TAKEN', 409, 'Another local skill has that name'),
  invalidName: defineError('HOSTD_SKILLS_NAME_INVALID', 400, 'Invalid skill name'),
  invalidFrontmatter: defineError('HOSTD_SKILLS_FRONTMATTER_INVALID', 400, 'Invalid SKILL.md frontmatter'),
  invalidPath: defineError('HOSTD_SKILLS_PATH_INVALID', 400, 'Invalid file path in the bundle'),
  invalidBase64: defineError('HOSTD_SKILLS_BASE64_INVALID', 400, 'File content is not valid base64'),
  tooManyFiles: defineError('HOSTD_SKILLS_TOO_MANY_FILES', 400, 'Too many files in the bundle'),
  tooDeep: defineError('HOSTD_SKILLS_TOO_DEEP', 400, 'A file lies too deep in folders'),
  fileTooLarge: defineError('HOSTD_SKILLS_FILE_TOO_LARGE', 413, 'A file is larger than the per-file limit'),
  bundleTooLarge: defineError('HOSTD_SKILLS_BUNDLE_TOO_LARGE', 413, 'The bundle is larger than the bundle limit'),
  draftNotFound: defineError('HOSTD_SKILLS_DRAFT_NOT_FOUND', 404, 'No such draft'),
  draftConflict: defineError('HOSTD_SKILLS_DRAFT_CONFLICT', 409, 'This draftId was already used with a different body'),
  draftFixed: defineError(
    'HOSTD_SKILLS_DRAFT_TARGET_FIXED',
    409,
    'targetSkillId and baseRevision of a draft cannot change',
  ),
  draftTargetIncomplete: defineError(
    'HOSTD_SKILLS_DRAFT_TARGET_INCOMPLETE',
    400,
    'An edit draft names both targetSkillId and baseRevision',
  ),
  draftPublished: defineError(
    'HOSTD_SKILLS_DRAFT_PUBLISHED',
    409,
    'This draft is already published; start a new draft',
  ),
  invalidDraftId: defineError('HOSTD_SKILLS_DRAFT_ID_INVALID', 400, 'draftId must be a lowercase UUID'),
} as const
