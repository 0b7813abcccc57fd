/**
 * Managing files: new folder, rename, move, copy, delete, and image thumbnails. The same rule as the other file
 * routes (paths.ts): the folders named in a request are each opened once and checked against their root, and every
 * entry is then reached as `<opened folder>/<name>` (`/proc/self/fd/<n>/<name>`), whose last component the system
 * calls used here never follow (rename, link, unlink, rmdir, mkdir, symlink, and open with O_NOFOLLOW). Walking into
 * a folder (copy, delete) opens it with O_NOFOLLOW|O_DIRECTORY from its opened parent and goes on from that
 * descriptor, so a folder swapped for a symlink meanwhile is refused, never followed out of the root.
 */
import { constants, type Stats } from 'node:fs'
import { copyFile, link, lstat, mkdir, open, readdir, readlink, rename, rmdir, symlink, unlink } from 'node:fs/promises'
import { StorageErrors } from './errors.ts'
import { checkName, pathError, type Resolved } from './paths.ts'

const O_PATH = 0o10000000
const PIN_ENTRY = O_PATH | constants.O_NOFOLLOW
const PIN_DIR = PIN_ENTRY | constants.O_DIRECTORY

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code
}

/** An entry of an opened folder, itself opened (not followed when it is a symlink). */
async function withEntry<T>(
  dirProc: string,
  name: string,
  flags: number,
  shown: string,
  fn: (proc: string, stat: Stats) => Promise<T>,
): Promise<T> {
  const handle = await open(`${dirProc}/${name}`, flags).catch((err: unknown) => Promise.reject(pathError(err, shown)))
  try {
    return await fn(`/proc/self/fd/${handle.fd}`, await handle.stat())
  } finally {
    await handle.close()
  }
}

const exists = (name: string) => StorageErrors.fileExists(`${name} exists in the destination folder`)
const notFound = (name: string) => StorageErrors.notFound(`${name} does not exist`)

async function present(path: string): Promise<Stats | null> {
  return lstat(path).catch((err: unknown) => (errno(err) === 'ENOENT' ? null : Promise.reject(err)))
}

function requireDirectory(dir: Resolved): void {
  if (!dir.stat.isDirectory()) throw StorageErrors.notADirectory(`${dir.relative || '/'} is not a directory`)
}

/** A new folder `name` in the opened folder; 409 if the name is taken (by anything, a symlink too). */
export async function makeFolder(dir: Resolved, name: string): Promise<void> {
  checkName(name)
  requireDirectory(dir)
  await mkdir(`${dir.proc}/${name}`, 0o755).catch((err: unknown) =>
    Promise.reject(errno(err) === 'EEXIST' ? StorageErrors.fileExists(`${name} exists`) : pathError(err, dir.relative)),
  )
}

/**
 * Puts entry `name` of `from` at `as` in `to`, never replacing anything: a file or symlink by link() then unlink()
 * (link fails if the name exists, atomically), a folder by rename() after checking the name is free (a folder
 * cannot be linked; a name made in between by another local process is the one case a rename could replace, and
 * only an empty folder, inside the same root). Across file systems (EXDEV): a copy, then the original removed.
 */
async function moveEntry(from: Resolved, name: string, to: Resolved, as: string): Promise<void> {
  const source = `${from.proc}/${name}`
  const dest = `${to.proc}/${as}`
  const st = await present(source)
  if (!st) throw notFound(name)
  if (st.isDirectory()) {
    await refuseIntoItself(from, name, to)
    if (await present(dest)) throw exists(as)
    try {
      await rename(source, dest)
      return
    } catch (err) {
      if (errno(err) === 'EEXIST' || errno(err) === 'ENOTEMPTY') throw exists(as)
      if (errno(err) !== 'EXDEV') throw pathError(err, name)
    }
  } else {
    try {
      await link(source, dest)
      await unlink(source)
      return
    } catch (err) {
      if (errno(err) === 'EEXIST') throw exists(as)
      if (errno(err) === 'EPERM' || errno(err) === 'ENOTSUP') {
        // A file system without hard links (vfat, some network ones): check, then rename.
        if (await present(dest)) throw exists(as)
        await rename(source, dest).catch((e: unknown) => Promise.reject(pathError(e, name)))
        return
      }
      if (errno(err) !== 'EXDEV') throw pathError(err, name)
    }
  }
  await copyEntry(from.proc, name, to.proc, as, name)
  await removeEntry(from.proc, name, name)
}

/** A folder may not go into itself or below itself (rename says EINVAL; a copy would never end). */
async function refuseIntoItself(from: Resolved, name: string, to: Resolved): Promise<void> {
  await withEntry(from.proc, name, PIN_ENTRY, name, async (proc, st) => {
    if (!st.isDirectory()) return
    const real = await readlink(proc)
    if (to.real === real || to.real.startsWith(`${real}/`))
      throw StorageErrors.intoItself(`${name} cannot be moved or copied into itself`)
  })
}

/**
 * Copies entry `name` of the opened folder `fromProc` to `as` in the opened folder `toProc`: a file with its bytes
 * and mode (the copy is created with O_EXCL: an existing name or a symlink there is never opened), a symlink as a
 * symlink (its text, never what it points to), a folder entry by entry through descriptors. FIFOs, sockets and
 * devices are skipped and counted.
 */
async function copyEntry(fromProc: string, name: string, toProc: string, as: string, shown: string): Promise<number> {
  return withEntry(fromProc, name, PIN_ENTRY, shown, async (proc, st) => {
    const dest = `${toProc}/${as}`
    if (st.isSymbolicLink()) {
      const text = await readlink(`${fromProc}/${name}`)
      await symlink(text, dest).catch((err: unknown) =>
        Promise.reject(errno(err) === 'EEXIST' ? exists(as) : pathError(err, shown)),
      )
      return 0
    }
    if (st.isFile()) {
      // The descriptor's magic link reopens that same file; COPYFILE_EXCL creates the copy with O_CREAT|O_EXCL.
      await copyFile(proc, dest, constants.COPYFILE_EXCL).catch((err: unknown) =>
        Promise.reject(errno(err) === 'EEXIST' ? exists(as) : pathError(err, shown)),
      )
      return 0
    }
    if (!st.isDirectory()) return 1
    await mkdir(dest, st.mode & 0o7777).catch((err: unknown) =>
      Promise.reject(errno(err) === 'EEXIST' ? exists(as) : pathError(err, shown)),
    )
    return withEntry(toProc, as, PIN_DIR, as, async (made) => {
      let skipped = 0
      for (const child of await readdir(proc)) skipped += await copyEntry(proc, child, made, child, `${shown}/${child}`)
      return skipped
    })
  })
}

/** Removes entry `name` of the opened folder `dirProc`; a folder is emptied through its own descriptor first. */
async function removeEntry(dirProc: string, name: string, shown: string): Promise<void> {
  const path = `${dirProc}/${name}`
  const st = await present(path)
  if (!st) throw notFound(shown)
  if (st.isDirectory()) {
    await withEntry(dirProc, name, PIN_DIR, shown, async (proc) => {
      for (const child of await readdir(proc)) await removeEntry(proc, child, `${shown}/${child}`)
    })
    await rmdir(path).catch((err: unknown) => Promise.reject(pathError(err, shown)))
  } else {
    await unlink(path).catch((err: unknown) => Promise.reject(pathError(err, shown)))
  }
}

/** Renames entry `name` of the opened folder to `to` in the same folder (never replacing anything). */
export async function renameEntry(dir: Resolved, name: string, to: string): Promise<void> {
  checkName(name)
  checkName(to)
  requireDirectory(dir)
  if (name === to) return
  await moveEntry(dir, name, dir, to)
}

export interface Done {
  /** The entries handled, in order: each as it is named in the destination. */
  done: { name: string; as: string }[]
  /** FIFOs, sockets and devices a copy left out. */
  skipped: number
}

/** A failure partway: what was done before it goes with the error (the UI reloads the listing either way). */
function partway(err: unknown, done: Done['done']): unknown {
  if (done.length && err instanceof Error) err.message = `${err.message} (${done.length} done before it)`
  return err
}

/** Same folder (the same opened directory inode). */
const sameFolder = (a: Resolved, b: Resolved) => a.stat.dev === b.stat.dev && a.stat.ino === b.stat.ino

/** "photo.jpg" -> "photo (copy).jpg", "photo (copy 2).jpg"... for a copy into the folder it comes from. */
async function freeCopyName(dir: Resolved, name: string): Promise<string> {
  const dot = name.lastIndexOf('.')
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, '']
  for (let n = 1; n < 1000; n++) {
    const candidate = `${stem} (copy${n > 1 ? ` ${n}` : ''})${ext}`
    if (Buffer.byteLength(candidate) <= 255 && !(await present(`${dir.proc}/${candidate}`))) return candidate
  }
  throw StorageErrors.fileExists(`Too many copies of ${name}`)
}

/** Moves or copies entries of one opened folder into another (both checked against their roots). */
export async function transfer(kind: 'move' | 'copy', from: Resolved, names: string[], to: Resolved): Promise<Done> {
  requireDirectory(from)
  requireDirectory(to)
  for (const name of names) checkName(name)
  const same = sameFolder(from, to)
  if (kind === 'move' && same) throw StorageErrors.fileExists('The entries are already in that folder')
  const done: Done['done'] = []
  let skipped = 0
  try {
    for (const name of names) {
      if (kind === 'move') {
        await moveEntry(from, name, to, name)
        done.push({ name, as: name })
      } else {
        if (!(await present(`${from.proc}/${name}`))) throw notFound(name)
        await refuseIntoItself(from, name, to)
        const as = same ? await freeCopyName(to, name) : name
        if (await present(`${to.proc}/${as}`)) throw exists(as)
        skipped += await copyEntry(from.proc, name, to.proc, as, name)
        done.push({ name, as })
      }
    }
  } catch (err) {
    throw Object.assign(partway(err, done) as object, { done })
  }
  return { done, skipped }
}

/** Deletes entries of an opened folder (folders with everything in them). */
export async function removeEntries(dir: Resolved, names: string[]): Promise<Done> {
  requireDirectory(dir)
  for (const name of names) checkName(name)
  const done: Done['done'] = []
  try {
    for (const name of names) {
      await removeEntry(dir.proc, name, name)
      done.push({ name, as: name })
    }
  } catch (err) {
    throw Object.assign(partway(err, done) as object, { done })
  }
  return { done, skipped: 0 }
}

/** Image types served as thumbnails, known by their first bytes (never by the name; no SVG: it can hold scripts). */
export function imageType(head: Buffer): string | null {
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png'
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg'
  const ascii = head.toString('latin1')
  if (ascii.startsWith('GIF87a') || ascii.startsWith('GIF89a')) return 'image/gif'
  if (ascii.startsWith('RIFF') && ascii.slice(8, 12) === 'WEBP') return 'image/webp'
  if (ascii.slice(4, 12) === 'ftypavif' || ascii.slice(4, 12) === 'ftypavis') return 'image/avif'
  if (ascii.startsWith('BM')) return 'image/bmp'
  if (head.subarray(0, 4).equals(Buffer.from([0, 0, 1, 0]))) return 'image/x-icon'
  return null
}
