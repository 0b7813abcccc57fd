/** The interface document's skill limits, and the few this plugin adds where it is silent (see README). */
const MiB = 1024 * 1024

export const LIMITS = {
  /** Whole bundle: SKILL.md plus every supporting file, decoded. */
  bundleBytes: 64 * MiB,
  /** Files per bundle, SKILL.md included. */
  files: 512,
  /** Folders above a file: `d1/.../d16/file` is the deepest allowed. */
  depth: 16,
  /** One file, decoded (SKILL.md too). */
  fileBytes: 16 * MiB,
  draftLifetimeMs: 24 * 3600_000,
  // Our own, where the document is silent:
  frontmatterBytes: 64 * 1024,
  nameChars: 64,
  descriptionChars: 1024,
  categoryChars: 64,
  iconChars: 256,
  tags: 32,
  tagChars: 64,
  pathChars: 1024,
  segmentBytes: 255,
} as const

/**
 * The largest JSON request body a bundle route accepts: a full bundle in base64 (4/3 of its size) plus room
 * for the JSON around it. Fastify refuses anything larger from Content-Length before reading it.
 */
export const BUNDLE_BODY_LIMIT = Math.ceil((LIMITS.bundleBytes * 4) / 3) + 2 * MiB
/** One staged draft file: a 16 MiB file in base64 plus its path. */
export const FILE_BODY_LIMIT = Math.ceil((LIMITS.fileBytes * 4) / 3) + 64 * 1024

export function mib(bytes: number): string {
  return `${Math.round((bytes / MiB) * 10) / 10} MiB`
}
