import { closeSync, openSync, readSync } from 'node:fs'

/**
 * Reads a /proc or /sys file synchronously into a shared buffer: open, read until EOF, close, no stat and
 * no per-call allocation beyond the string. These files are generated on read (no disk I/O), so a synchronous
 * read costs a few microseconds, less than a round trip through libuv's thread pool.
 * Returns null when the file cannot be read (process gone, permission denied, absent sensor).
 */
let buffer = Buffer.allocUnsafe(16 * 1024)

export function readProcFile(path: string): string | null {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return null
  }
  try {
    let length = 0
    for (;;) {
      if (length === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2)
        buffer.copy(bigger, 0, 0, length)
        buffer = bigger
      }
      const n = readSync(fd, buffer, length, buffer.length - length, null)
      if (n === 0) break
      length += n
    }
    return buffer.toString('utf8', 0, length)
  } catch {
    return null
  } finally {
    closeSync(fd)
  }
}
