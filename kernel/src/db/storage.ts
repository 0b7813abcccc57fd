import { dirname } from 'node:path'
import { HostdError, defineError } from '@hostd/sdk'

export const StorageErrors = {
  full: defineError(
    'HOSTD_STORAGE_FULL',
    507,
    'The disk holding hostd data is full: nothing was saved. Free some space there and try again',
  ),
} as const

/**
 * The errors of a write that found no room: SQLite's (it reports a write the file system refused with ENOSPC as
 * SQLITE_FULL) and the file system's (ENOSPC, and EDQUOT for a user over quota).
 */
const FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT'])

const NOTHING = 'nothing was saved'
const FREE = 'Free some space there and try again (no restart needed)'

/** Set on a failed statement's error by the database layer: the database file it wrote to (write-counter.ts). */
const FILE = 'hostdFile'

/**
 * Names the database file on a write's error, so the answer can say which disk is full. A plain property, not a
 * symbol: MikroORM copies the own string properties of a driver's error into the error it throws instead.
 */
export function noteFile(err: unknown, file: string): unknown {
  if (err && typeof err === 'object' && !(FILE in err)) Object.defineProperty(err, FILE, { value: file })
  return err
}

/**
 * `507 HOSTD_STORAGE_FULL` naming the full disk by a path on it (`folder` when given, else the file the write went
 * to), when `err` (or an error it wraps) is a write that found no room; otherwise null. Nothing of the failed write is
 * kept: SQLite rolls the statement or transaction back, an install deletes what it had unpacked (install.ts).
 */
export function storageFullError(err: unknown, { folder, unsaved }: FullDetail = {}): HostdError | null {
  let current = err as { code?: unknown; path?: unknown; cause?: unknown; [FILE]?: unknown } | undefined
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    if (current instanceof HostdError) return current.code === StorageErrors.full.code ? current : null
    if (typeof current.code === 'string' && FULL_CODES.has(current.code)) {
      if (folder) return storageFull(folder, { folder: true, unsaved })
      const file = current[FILE] ?? current.path
      return typeof file === 'string'
        ? storageFull(file, { unsaved })
        : StorageErrors.full(`The disk holding hostd data is full: ${unsaved ?? NOTHING}. ${FREE}`)
    }
    current = current.cause as typeof current
  }
  return null
}

export interface FullDetail {
  /** The folder to name (else the file's own folder). */
  folder?: string
  /** What was not saved, when it is not "nothing" (an audit record after its action was done). */
  unsaved?: string
}

/** `507 HOSTD_STORAGE_FULL` for a write to `path`: a file, or with `folder`, the folder the write went into. */
export function storageFull(path: string, { folder = false, unsaved }: { folder?: boolean; unsaved?: string } = {}) {
  const where = folder ? path : dirname(path)
  return StorageErrors.full(`The disk holding ${where} is full: ${unsaved ?? NOTHING}. ${FREE}`)
}

/**
 * Runs a write that is bookkeeping, not what the request asked for (a session's or token's last-used time): on a full
 * disk it is skipped and the request goes on, so reading keeps working while nothing can be written.
 */
export function runUnlessFull<A extends unknown[]>(statement: { run(...args: A): unknown }, ...args: A): void {
  try {
    statement.run(...args)
  } catch (err) {
    if (!storageFullError(err)) throw err
  }
}
