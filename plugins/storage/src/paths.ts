import { realpath } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { FileRoot } from './config.ts'
import { StorageErrors } from './errors.ts'

export interface Resolved {
  root: FileRoot
  /** The root's real path (symlinks resolved). */
  rootReal: string
  /** Root-relative path as the client named it, normalized ('' is the root itself). */
  relative: string
  /** The real path of the target (symlinks resolved), known to lie inside rootReal. */
  real: string
}

export function findRoot(roots: FileRoot[], name: string): FileRoot {
  const root = roots.find((r) => r.name === name)
  if (!root) throw StorageErrors.rootNotFound(`No file root "${name}"; roots: ${roots.map((r) => r.name).join(', ')}`)
  return root
}

export function inside(rootReal: string, candidate: string): boolean {
  return candidate === rootReal || candidate.startsWith(rootReal === sep ? sep : rootReal + sep)
}

/**
 * Splits a root-relative path (already percent-decoded once by the HTTP layer; never decoded again) into
 * segments, refusing what could leave the root: an absolute path, a `..` segment, or a segment that would
 * become a separator or `..` if something decoded it again (`%2e%2e`, `%2f`, `%5c`).
 */
export function segmentsOf(path: string): string[] {
  if (path.includes('\0')) throw StorageErrors.pathInvalid('The path holds a NUL character')
  if (path.length > 4096) throw StorageErrors.pathInvalid('The path is longer than 4096 characters')
  if (path.startsWith('/')) throw StorageErrors.pathForbidden('Paths are relative to their root; an absolute path is refused')
  const segments = path.split('/').filter((s) => s !== '' && s !== '.')
  for (const segment of segments) {
    if (segment === '..') throw StorageErrors.pathForbidden('A ".." segment is refused')
    let again = segment
    try {
      again = decodeURIComponent(segment)
    } catch {
      // not percent-encoding: a literal name
    }
    if (again !== segment && (again === '..' || again === '.' || again.includes('/') || again.includes('\\'))) {
      throw StorageErrors.pathForbidden('An encoded traversal ("%2e%2e", "%2f", "%5c") is refused')
    }
  }
  return segments
}

async function realOrMissing(path: string): Promise<string> {
  try {
    return await realpath(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') throw StorageErrors.notFound()
    throw err
  }
}

/** Resolves `path` in `root` with symlinks resolved; 403 if the result is not inside the root's real path. */
export async function resolveInRoot(root: FileRoot, path: string): Promise<Resolved> {
  const segments = segmentsOf(path)
  const rootReal = await realOrMissing(root.path)
  const real = await realOrMissing(join(rootReal, ...segments))
  if (!inside(rootReal, real)) throw StorageErrors.pathForbidden('The path leads outside its root (through a symlink)')
  return { root, rootReal, relative: segments.join('/'), real }
}

/** A new entry's name inside a directory: one segment, not `.`/`..`, no separator or NUL, at most 255 bytes. */
export function checkName(name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0') || Buffer.byteLength(name) > 255) {
    throw StorageErrors.pathInvalid('The name must be one path segment of at most 255 bytes, not "." or ".."')
  }
  return name
}
