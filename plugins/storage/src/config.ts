import { isAbsolute, join, normalize } from 'node:path'

export interface FileRoot {
  name: string
  path: string
}

export interface StorageConfig {
  roots: FileRoot[]
  /** Largest upload in bytes (HOSTD_STORAGE_UPLOAD_MAX_BYTES, default 16 GiB). */
  uploadMaxBytes: number
  /** Text preview cap in bytes (64 KiB). */
  previewBytes: number
  /** Largest image the thumbnail route serves (HOSTD_STORAGE_THUMBNAIL_MAX_BYTES, default 4 MiB). */
  thumbnailMaxBytes: number
  /** Where network shares are mounted: must match the helper's HOSTD_HELPER_MOUNT_ROOT. */
  mountRoot: string
}

export const PREVIEW_BYTES = 64 * 1024
export const THUMBNAIL_MAX_BYTES = 4 * 1024 * 1024
const ROOT_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/

/**
 * `HOSTD_FILE_ROOTS=name=/abs/path,name2=/other`. The kernel does not hand plugins its environment
 * (KernelInfo has only version and data dir), so this is read from process.env. Default: `files=<data dir>/files`.
 */
export function parseRoots(raw: string | undefined, dataDir: string): FileRoot[] {
  if (!raw || raw.trim() === '') return [{ name: 'files', path: join(dataDir, 'files') }]
  const roots: FileRoot[] = []
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=')
    const name = pair.slice(0, at).trim()
    const path = pair.slice(at + 1).trim()
    if (at < 0 || !ROOT_NAME.test(name))
      throw new Error(`HOSTD_FILE_ROOTS: "${pair}" is not name=/absolute/path (name: ${ROOT_NAME})`)
    const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path
    if (!isAbsolute(path) || normalize(trimmed) !== trimmed) {
      throw new Error(`HOSTD_FILE_ROOTS: ${name} must be an absolute, normalized path`)
    }
    if (roots.some((r) => r.name === name)) throw new Error(`HOSTD_FILE_ROOTS: root ${name} is named twice`)
    roots.push({ name, path: trimmed })
  }
  return roots
}

export function configFromEnv(env: NodeJS.ProcessEnv, dataDir: string): StorageConfig {
  const max = Number(env.HOSTD_STORAGE_UPLOAD_MAX_BYTES ?? 16 * 1024 ** 3)
  if (!Number.isSafeInteger(max) || max < 1)
    throw new Error('HOSTD_STORAGE_UPLOAD_MAX_BYTES must be a positive integer')
  const thumbnail = Number(env.HOSTD_STORAGE_THUMBNAIL_MAX_BYTES ?? THUMBNAIL_MAX_BYTES)
  if (!Number.isSafeInteger(thumbnail) || thumbnail < 0)
    throw new Error('HOSTD_STORAGE_THUMBNAIL_MAX_BYTES must be a positive integer')
  return {
    roots: parseRoots(env.HOSTD_FILE_ROOTS, dataDir),
    uploadMaxBytes: max,
    previewBytes: PREVIEW_BYTES,
    thumbnailMaxBytes: thumbnail,
    mountRoot: env.HOSTD_STORAGE_MOUNT_ROOT || '/mnt/hostd',
  }
}
