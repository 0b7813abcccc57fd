/**
 * The file browser's operations, each on an object opened and checked once (paths.ts): entries, reads and new
 * files are reached through the opened directory's `/proc/self/fd/<n>` name, never through the path again.
 */
import { randomBytes } from 'node:crypto'
import { constants, type Stats } from 'node:fs'
import { lstat, link, open, opendir, readlink, rename, unlink, type FileHandle } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { StorageErrors } from './errors.ts'
import { checkName, pathError, type Resolved } from './paths.ts'

export interface Entry {
  name: string
  type: 'file' | 'directory' | 'symlink' | 'other'
  size: number
  mode: string
  modified: string
  linkTarget: string | null
}

function typeOf(st: Stats): Entry['type'] {
  if (st.isFile()) return 'file'
  if (st.isDirectory()) return 'directory'
  if (st.isSymbolicLink()) return 'symlink'
  return 'other'
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0')

/** The most entries one listing answers (`limit`); a client pages with `offset` for more. */
export const LIST_MAX_ENTRIES = 10_000

/**
 * Keeps the `k` smallest keys seen (a max-heap), so a page near the start of a huge folder needs memory for the page,
 * not for the folder.
 */
export function smallest(k: number) {
  const heap: string[] = []
  const swap = (i: number, j: number) => {
    const t = heap[i]!
    heap[i] = heap[j]!
    heap[j] = t
  }
  return {
    push(key: string) {
      if (heap.length < k) {
        heap.push(key)
        for (let i = heap.length - 1, p = (i - 1) >> 1; i > 0 && heap[p]! < heap[i]!; i = p, p = (i - 1) >> 1)
          swap(i, p)
      } else if (k > 0 && key < heap[0]!) {
        heap[0] = key
        for (let i = 0; ; ) {
          const l = 2 * i + 1
          const r = l + 1
          let m = i
          if (l < heap.length && heap[l]! > heap[m]!) m = l
          if (r < heap.length && heap[r]! > heap[m]!) m = r
          if (m === i) break
          swap(i, m)
          i = m
        }
      }
    },
    sorted: () => heap.sort(),
  }
}

/**
 * One page of the opened directory's entries, directories first, then by name (UTF-16 code units, as before paging).
 * The folder is read as a stream (names and types from getdents, no stat) and only the first `offset + limit` keys in
 * that order are kept (a bounded heap): the first page of a folder of 100 000 files holds 200 names, not 100 000, so
 * the daemon's memory does not grow with the folder (see the storage bench). Only the page's entries are lstat'ed (a
 * symlink is shown as one, with its target).
 */
export async function listDirectory(
  target: Resolved,
  page: { offset: number; limit: number } = { offset: 0, limit: LIST_MAX_ENTRIES },
): Promise<{ entries: Entry[]; total: number; offset: number; truncated: boolean }> {
  if (!target.stat.isDirectory()) throw StorageErrors.notADirectory(`${target.relative || '/'} is not a directory`)
  const limit = Math.min(page.limit, LIST_MAX_ENTRIES)
  const keep = smallest(page.offset + limit)
  let total = 0
  // 256 entries a read: larger batches made the daemon's heap (and RSS) grow more for no faster listing.
  for await (const dirent of await opendir(target.proc, { bufferSize: 256 })) {
    total++
    keep.push(`${dirent.isDirectory() ? '0' : '1'}${dirent.name}`)
  }
  const names = keep
    .sorted()
    .slice(page.offset)
    .map((key) => key.slice(1))
  const stated = await Promise.all(
    names.map(async (name): Promise<Entry | null> => {
      const path = `${target.proc}/${name}`
      const est = await lstat(path).catch(() => null)
      if (!est) return null // removed meanwhile
      return {
        name,
        type: typeOf(est),
        size: est.size,
        mode: octal(est.mode),
        modified: est.mtime.toISOString(),
        linkTarget: est.isSymbolicLink() ? await readlink(path).catch(() => null) : null,
      }
    }),
  )
  const entries = stated.filter((e): e is Entry => e !== null)
  return { entries, total, offset: page.offset, truncated: page.offset + names.length < total }
}

/**
 * Opens the checked object for reading: only a regular file (known from the O_PATH descriptor's stat, so a FIFO
 * or a device is never opened), reopened through its descriptor, so it is the same file.
 */
export async function openForRead(target: Resolved): Promise<{ handle: FileHandle; stat: Stats }> {
  if (!target.stat.isFile()) throw StorageErrors.notAFile(`${target.relative || '/'} is not a regular file`)
  // The name is the descriptor's magic link, which must be followed (to the opened inode, not by path).
  const handle = await open(target.proc, constants.O_RDONLY)
  try {
    const stat = await handle.stat()
    if (stat.ino !== target.stat.ino || stat.dev !== target.stat.dev)
      throw StorageErrors.pathForbidden('The file changed while it was opened')
    return { handle, stat }
  } catch (err) {
    await handle.close()
    throw err
  }
}

/** True when the bytes look like text: no NUL and valid UTF-8 (a multi-byte character cut by the cap is allowed). */
export function looksLikeText(bytes: Buffer, cut: boolean): boolean {
  if (bytes.includes(0)) return false
  const decoder = new TextDecoder('utf-8', { fatal: true })
  for (let drop = 0; drop <= (cut ? 3 : 0); drop++) {
    try {
      decoder.decode(bytes.subarray(0, bytes.length - drop))
      return true
    } catch {
      // try again without a possibly cut trailing character
    }
  }
  return false
}

export async function preview(target: Resolved, cap: number) {
  const { handle, stat } = await openForRead(target)
  try {
    const buffer = Buffer.alloc(Math.min(cap, stat.size))
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const bytes = buffer.subarray(0, bytesRead)
    const truncated = stat.size > bytesRead
    if (!looksLikeText(bytes, truncated)) throw StorageErrors.binaryFile()
    let content = bytes.toString('utf8')
    if (truncated && content.endsWith('\uFFFD')) content = content.replace(/\uFFFD+$/, '') // a character cut by the cap
    return { size: stat.size, modified: stat.mtime.toISOString(), truncated, cap, content }
  } finally {
    await handle.close()
  }
}

/** Strong validator from inode, size and modification time (like nginx's). */
export function etagOf(stat: Stats): string {
  return `"${stat.ino.toString(16)}-${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`
}

export type RangeResult = { start: number; end: number } | 'unsatisfiable' | null

/**
 * One `bytes=` range (RFC 9110 14.1.2). null means "send the whole file": no header, a syntax we ignore, or
 * several ranges (allowed: a server may ignore Range).
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (!header) return null
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    const suffix = Number(m[2])
    if (suffix === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Number(m[2])
  if (m[2] !== '' && end < start) return null
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}

/** If-Range holds when it names the current ETag (strong match) or the exact Last-Modified date. */
export function ifRangeHolds(header: string | undefined, etag: string, stat: Stats): boolean {
  if (!header) return true
  if (header.startsWith('"') || header.startsWith('W/')) return header === etag
  const date = Date.parse(header)
  return !Number.isNaN(date) && Math.floor(stat.mtimeMs / 1000) === Math.floor(date / 1000)
}

/** RFC 6266: an ASCII fallback with unsafe characters replaced, plus the exact name as UTF-8 in filename*. */
export function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_') || 'download'
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`
}

/** Passes at most `max` bytes and counts them (`seen`). */
function sizeLimit(max: number): Transform & { seen: number } {
  const limit = Object.assign(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        limit.seen += chunk.length
        if (limit.seen > max) done(StorageErrors.uploadTooLarge(`The upload is larger than the limit of ${max} bytes`))
        else done(null, chunk)
      },
    }),
    { seen: 0 },
  )
  return limit
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code
}

/** Creates a new file only: never follows a symlink, never opens an existing name. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

/**
 * Streams `body` to a temporary file in the opened directory, then puts it in place in that same directory:
 * link() when it must not replace anything (atomic "create if absent"), rename() when overwrite is asked (a
 * symlink at the name is replaced, not followed). Files are created 0644.
 */
export async function upload(dir: Resolved, name: string, body: Readable, opts: { overwrite: boolean; max: number }) {
  checkName(name)
  if (!dir.stat.isDirectory()) throw StorageErrors.notADirectory(`${dir.relative || '/'} is not a directory`)
  const dest = `${dir.proc}/${name}`
  const exists = () => StorageErrors.fileExists(`${name} exists; send overwrite=1 to replace it`)
  const existing = await lstat(dest).catch(() => null)
  if (existing && !opts.overwrite) throw exists()
  if (existing?.isDirectory()) throw StorageErrors.fileExists(`${name} is a directory`)
  const temp = `${dir.proc}/.${name.slice(0, 200)}.upload-${randomBytes(6).toString('hex')}`
  const handle = await open(temp, CREATE_NEW, 0o644).catch((err: unknown) =>
    Promise.reject(pathError(err, dir.relative)),
  )
  let placed = false
  try {
    await handle.chmod(0o644) // independent of the daemon's umask
    const limit = sizeLimit(opts.max)
    await pipeline(body, limit, handle.createWriteStream({ highWaterMark: 1024 * 1024 }))
    const size = limit.seen
    try {
      if (opts.overwrite) {
        await rename(temp, dest)
      } else {
        try {
          await link(temp, dest)
        } catch (err) {
          if (errno(err) === 'EEXIST') throw exists()
          if (errno(err) !== 'EPERM' && errno(err) !== 'ENOTSUP') throw err
          // A filesystem without hard links: check, then rename (not atomic there).
          if (await lstat(dest).catch(() => null)) throw exists()
          await rename(temp, dest)
          placed = true
        }
      }
    } catch (err) {
      // A directory appeared at the name meanwhile.
      if (errno(err) === 'EISDIR' || errno(err) === 'ENOTEMPTY' || errno(err) === 'EEXIST')
        throw StorageErrors.fileExists(`${name} is a directory`)
      throw err
    }
    placed = placed || opts.overwrite
    return { size, replaced: Boolean(existing) }
  } finally {
    await handle.close().catch(() => undefined)
    if (!placed) await unlink(temp).catch(() => undefined)
  }
}

/** 128 KiB chunks, two of them: one being written while the next is read. */
export const SEND_CHUNK = 128 * 1024
const SEND_RING = 2
/** Full-size send buffers kept between downloads, so a short ranged request allocates nothing. */
const spare: Buffer[] = []

/**
 * Writes bytes [start, end] of an open file to the response through a ring of two reused buffers: a buffer is read
 * into again only after the socket reported it written (the write callback), so no buffer is allocated per chunk (a
 * stream with fresh chunks spent about a quarter of the daemon's busy time in garbage collection in the download
 * benchmark), and the buffers outlive the download, so a ranged request allocates none. Two, not more: a third chunk
 * waiting behind a slow socket made Node write the waiting ones as one write of several buffers, which its TLS layer
 * copies into a new allocation first. Small chunks stay in the CPU's cache from the file read through the
 * encryption; with 1 MiB chunks and four of them, 1 MiB ranged downloads reached 0.72 of nginx's rate, with 128 KiB
 * and two 0.83-0.88 (two storage benches each, alternating), the whole-file rate unchanged. Stops (and resolves) if
 * the client goes away.
 */
export async function sendFileRange(
  handle: FileHandle,
  res: ServerResponse,
  start: number,
  end: number,
): Promise<void> {
  // The head goes out on its own. Written together with the first chunk, it made one write of two buffers, which
  // Node's TLS layer copies into one new allocation before encrypting: a whole 1 MiB range copied into fresh pages on
  // every ranged request (a third of the server CPU per request in the download benchmark).
  res.flushHeaders()
  // Only what the range needs: a short range takes one buffer.
  const length = end - start + 1
  const free = Array.from(
    { length: Math.min(SEND_RING, Math.ceil(length / SEND_CHUNK)) },
    () => spare.pop() ?? Buffer.allocUnsafeSlow(Math.min(SEND_CHUNK, length)),
  )
  const waiting: (() => void)[] = []
  let closed = false
  const wake = () => waiting.splice(0).forEach((resume) => resume())
  const onClose = () => {
    closed = true
    wake()
  }
  res.once('close', onClose)
  try {
    let position = start
    while (position <= end && !closed) {
      while (!free.length && !closed) await new Promise<void>((resume) => waiting.push(resume))
      if (closed) break
      const buffer = free.pop()!
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - position + 1), position)
      if (bytesRead === 0) break // the file shrank meanwhile: the client sees a short body for the declared length
      position += bytesRead
      res.write(bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead), () => {
        free.push(buffer)
        wake()
      })
    }
    if (!closed) {
      if (position <= end) res.destroy()
      else await new Promise<void>((resolve) => res.end(resolve))
    }
  } catch (err) {
    res.destroy(err as Error)
  } finally {
    res.off('close', onClose)
    await handle.close().catch(() => undefined)
    // Buffers back from the socket go to the spare list (full-size ones, up to one ring's worth).
    for (const buffer of free) if (buffer.length === SEND_CHUNK && spare.length < SEND_RING) spare.push(buffer)
  }
}
