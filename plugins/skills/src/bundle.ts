import { SkillErrors } from './errors.ts'
import { LIMITS, mib } from './limits.ts'

/** A supporting file as the API receives it. */
export interface IncomingFile {
  path: string
  content: string
}

/** A manifest entry: where a file sits in the bundle and which blob holds it. */
export interface ManifestEntry {
  path: string
  sha256: string
  size: number
}

/** A checked, not yet written supporting file: either new content or an existing blob. */
export interface PendingFile {
  path: string
  size: number
  sha256?: string
  /** The content (decoded from the request, or a synced folder's file). */
  data?: Buffer
}

const CONTROL = /[\u0000-\u001f\u007f]/
export const SKILL_MD = 'SKILL.md'

function show(raw: string): string {
  return JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw)
}

/**
 * The one path rule for bundles: relative, `/`-separated, no `..`, no backslash, no NUL or control
 * characters, no drive letter. Normalization: Unicode NFC, empty and `.` segments dropped.
 */
export function normalizePath(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0) throw SkillErrors.invalidPath('A file path is empty')
  if (raw.length > LIMITS.pathChars)
    throw SkillErrors.invalidPath(`The path ${show(raw)} is longer than ${LIMITS.pathChars} characters`)
  if (raw.includes('\0')) throw SkillErrors.invalidPath(`The path ${show(raw)} holds a NUL byte`)
  if (raw.includes('\\'))
    throw SkillErrors.invalidPath(`The path ${show(raw)} holds a backslash: separate folders with /`)
  if (CONTROL.test(raw)) throw SkillErrors.invalidPath(`The path ${show(raw)} holds a control character`)
  if (raw.startsWith('/'))
    throw SkillErrors.invalidPath(`The path ${show(raw)} is absolute: paths are relative to the skill folder`)
  if (/^[A-Za-z]:/.test(raw)) throw SkillErrors.invalidPath(`The path ${show(raw)} starts with a drive letter`)
  if (raw.endsWith('/')) throw SkillErrors.invalidPath(`The path ${show(raw)} names a folder, not a file`)
  const segments = raw
    .normalize('NFC')
    .split('/')
    .filter((s) => s !== '' && s !== '.')
  if (segments.length === 0) throw SkillErrors.invalidPath(`The path ${show(raw)} names no file`)
  if (segments.includes('..'))
    throw SkillErrors.invalidPath(`The path ${show(raw)} climbs out of the skill folder with ..`)
  const long = segments.find((s) => Buffer.byteLength(s) > LIMITS.segmentBytes)
  if (long) throw SkillErrors.invalidPath(`A name in ${show(raw)} is longer than ${LIMITS.segmentBytes} bytes`)
  return segments.join('/')
}

/** Files collide when their paths are equal ignoring case (case-insensitive file systems, zip tools). */
export const pathKey = (path: string) => path.toLowerCase()

/** Decoded size of a base64 string, or an error when it is not canonical base64 (checked before decoding). */
export function base64Size(path: string, content: string): number {
  if (content.length % 4 !== 0)
    throw SkillErrors.invalidBase64(
      `The content of ${show(path)} is not valid base64 (length is not a multiple of 4; send it unwrapped, e.g. base64 -w0)`,
    )
  const padding = content.endsWith('==') ? 2 : content.endsWith('=') ? 1 : 0
  return (content.length / 4) * 3 - padding
}

const BASE64_VALUES = new Int8Array(128).fill(-1)
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries())
  BASE64_VALUES[c.charCodeAt(0)] = i

/**
 * Decodes canonical base64 only: text that decodes and encodes back to itself. Decided in one decode, without
 * encoding again (that took 2-4x the decode on MiBs): Node's decoder skips characters outside the alphabet and
 * stops at inner padding, which shows as a short result; it also reads URL-safe `-` and `_`, refused here; and
 * the bits that padding leaves unused must be zero. test/bundle-rules.test.ts checks it against re-encoding.
 */
export function decodeBase64(path: string, content: string): Buffer {
  const size = base64Size(path, content)
  const data = Buffer.from(content, 'base64')
  const padding = (content.length / 4) * 3 - size
  const last = BASE64_VALUES[content.charCodeAt(content.length - 1 - padding)] ?? -1
  const unusedBits = padding === 2 ? 0x0f : padding === 1 ? 0x03 : 0
  if (
    data.length !== size ||
    content.includes('-') ||
    content.includes('_') ||
    (padding > 0 && (last < 0 || (last & unusedBits) !== 0))
  ) {
    throw SkillErrors.invalidBase64(
      `The content of ${show(path)} is not valid base64 (only A-Z a-z 0-9 + / and = padding; no line breaks)`,
    )
  }
  return data
}

export function checkFileSize(path: string, size: number): void {
  if (size > LIMITS.fileBytes)
    throw SkillErrors.fileTooLarge(`${path} is ${size} bytes: the limit is ${mib(LIMITS.fileBytes)} per file`)
}

/**
 * The bundle-wide rules, given the SKILL.md size and every supporting file: file count, folder depth, total
 * size, duplicates (case-insensitively), a collision with SKILL.md, and a path that is both a file and a folder.
 */
export function checkManifest(skillMdBytes: number, files: { path: string; size: number }[]): void {
  if (files.length + 1 > LIMITS.files) {
    throw SkillErrors.tooManyFiles(
      `The bundle has ${files.length + 1} files including SKILL.md: the limit is ${LIMITS.files}`,
    )
  }
  checkFileSize(SKILL_MD, skillMdBytes)
  let total = skillMdBytes
  const seen = new Map<string, string>()
  const folders = new Set<string>()
  for (const file of files) {
    const key = pathKey(file.path)
    if (key === pathKey(SKILL_MD))
      throw SkillErrors.invalidPath(`${show(file.path)} collides with SKILL.md: send the instructions as "body"`)
    const other = seen.get(key)
    if (other !== undefined)
      throw SkillErrors.invalidPath(
        `${show(file.path)} and ${show(other)} are the same path (paths are compared ignoring case)`,
      )
    seen.set(key, file.path)
    const segments = key.split('/')
    if (segments.length - 1 > LIMITS.depth) {
      throw SkillErrors.tooDeep(
        `${show(file.path)} lies ${segments.length - 1} folders deep: the limit is ${LIMITS.depth} levels`,
      )
    }
    for (let i = 1; i < segments.length; i++) folders.add(segments.slice(0, i).join('/'))
    checkFileSize(file.path, file.size)
    total += file.size
  }
  for (const [key, path] of seen) {
    if (folders.has(key)) throw SkillErrors.invalidPath(`${show(path)} is both a file and a folder in this bundle`)
  }
  if (total > LIMITS.bundleBytes)
    throw SkillErrors.bundleTooLarge(`The bundle is ${total} bytes: the limit is ${mib(LIMITS.bundleBytes)}`)
}

/**
 * Checks supporting files sent as `{path, content(base64)}`: paths, per-file and total sizes from the base64
 * length, count and depth first (nothing decoded yet), then decodes each once, refusing what is not canonical
 * base64. Nothing is written here.
 */
export function checkIncomingFiles(skillMdBytes: number, incoming: IncomingFile[]): PendingFile[] {
  if (incoming.length + 1 > LIMITS.files) {
    throw SkillErrors.tooManyFiles(
      `The bundle has ${incoming.length + 1} files including SKILL.md: the limit is ${LIMITS.files}`,
    )
  }
  const checked = incoming.map((f) => {
    const path = normalizePath(f.path)
    const size = base64Size(path, f.content)
    checkFileSize(path, size)
    return { path, size, content: f.content }
  })
  checkManifest(skillMdBytes, checked)
  return checked.map(({ path, size, content }) => ({ path, size, data: decodeBase64(path, content) }))
}
