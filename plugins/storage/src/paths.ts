/**
 * Paths under the file roots. A path is opened once, and the object opened is the object checked and the object
 * used: `pin()` opens it with O_PATH (following symlinks, but without opening the file for I/O: no device is
 * touched, no FIFO waited on), reads where the descriptor really is from /proc/self/fd, checks that against the
 * root, and hands out `/proc/self/fd/<n>`. That name IS the opened object: reopening it reads that file, and
 * `<it>/<name>` is an entry of that directory, whatever is swapped in at the path meanwhile. Node has no openat;
 * this gives the same guarantee.
 */
import type { Stats } from 'node:fs'
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { FileRoot } from './config.ts'
import { StorageErrors } from './errors.ts'

/** Linux O_PATH: a descriptor that names a file without opening it for reading or writing. */
const O_PATH = 0o10000000

/** An opened object: the descriptor, the name that reaches it, and where it was when opened. */
export interface Pinned {
  /** `/proc/self/fd/<n>`: the opened object itself; `${proc}/${name}` is an entry of it when it is a directory. */
  proc: string
  /** Its real path when opened (symlinks resolved). */
  real: string
  stat: Stats
  close(): Promise<void>
}

/** A pinned object under a file root. */
export interface Resolved extends Pinned {
  root: FileRoot
  /** The root's real path (symlinks resolved). */
  rootReal: string
  /** Root-relative path as the client named it, normalized ('' is the root itself). */
  relative: string
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
  if (path.startsWith('/'))
    throw StorageErrors.pathForbidden('Paths are relative to their root; an absolute path is refused')
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

/** A file system error on a client's path, as the answer it deserves (anything else stays a 500). */
export function pathError(err: unknown, path: string): unknown {
  switch ((err as NodeJS.ErrnoException)?.code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return StorageErrors.notFound(`${path || '/'} does not exist`)
    case 'ELOOP':
      return StorageErrors.pathInvalid(`${path || '/'} goes through too many symbolic links`)
    case 'ENAMETOOLONG':
      return StorageErrors.pathInvalid('The path is too long')
    case 'EACCES':
    case 'EPERM':
      return StorageErrors.accessDenied(`The daemon may not open ${path || '/'}`)
    default:
      return err
  }
}

/**
 * Opens `path` (absolute) as an O_PATH descriptor and reads, from the descriptor, where it really is; `allowed`
 * judges that real path. The caller closes the result.
 */
export async function pin(
  path: string,
  allowed: (real: string) => void | Promise<void>,
  shown = path,
): Promise<Pinned> {
  let handle: FileHandle
  try {
    handle = await open(path, O_PATH)
  } catch (err) {
    throw pathError(err, shown)
  }
  try {
    const proc = `/proc/self/fd/${handle.fd}`
    const real = await readlink(proc)
    await allowed(real)
    const stat = await handle.stat()
    return { proc, real, stat, close: () => handle.close() }
  } catch (err) {
    await handle.close()
    throw err
  }
}

/**
 * Opens `path` in `root` (symlinks followed) and checks the opened object: 403 if it is not the root's real path
 * or below it. Everything after works on the returned descriptor, never on the path again. The caller closes it.
 */
async function resolveInRoot(root: FileRoot, path: string): Promise<Resolved> {
  const segments = segmentsOf(path)
  let rootReal: string
  try {
    rootReal = await realpath(root.path)
  } catch (err) {
    throw pathError(err, '')
  }
  const relative = segments.join('/')
  const pinned = await pin(
    join(rootReal, ...segments),
    (real) => {
      if (!inside(rootReal, real))
        throw StorageErrors.pathForbidden('The path leads outside its root (through a symlink)')
    },
    relative,
  )
  return { ...pinned, root, rootReal, relative }
}

/** Runs `fn` on `path` opened in `root`, and closes it after. */
export async function withResolved<T>(root: FileRoot, path: string, fn: (target: Resolved) => Promise<T>): Promise<T> {
  const target = await resolveInRoot(root, path)
  try {
    return await fn(target)
  } finally {
    await target.close()
  }
}

/** A new entry's name inside a directory: one segment, not `.`/`..`, no separator or NUL, at most 255 bytes. */
export function checkName(name: string): string {
  if (
    name === '' ||
    name === '.' ||
    name === '..' ||
    name.includes('/') ||
    name.includes('\0') ||
    Buffer.byteLength(name) > 255
  ) {
    throw StorageErrors.pathInvalid('The name must be one path segment of at most 255 bytes, not "." or ".."')
  }
  return name
}
