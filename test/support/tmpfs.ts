/**
 * A small tmpfs of its own, for tests that need a disk that really fills up (the tests run as root). `fill()` writes
 * one file until the file system answers ENOSPC; `free()` deletes it; `unmount()` takes the tmpfs away (lazily, so a
 * daemon still holding a file in it cannot keep it mounted) and removes the mount point.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, open, rm, statfs } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface Tmpfs {
  dir: string
  /** Writes `<dir>/.fill` until no byte fits; resolves with the bytes the file system still reports free (0). */
  fill(): Promise<number>
  free(): Promise<void>
  unmount(): Promise<void>
}

export async function mountTmpfs(sizeMiB: number): Promise<Tmpfs> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-tmpfs-'))
  await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0755`, 'tmpfs', dir])
  const filler = join(dir, '.fill')
  return {
    dir,
    async fill() {
      const file = await open(filler, 'a')
      try {
        // Big writes first, then smaller ones into what is left, down to a byte.
        for (const size of [1 << 20, 1 << 16, 4096, 512, 1]) {
          const chunk = Buffer.alloc(size)
          for (;;) {
            const written = await file.write(chunk).then(
              ({ bytesWritten }) => bytesWritten,
              (err: NodeJS.ErrnoException) => {
                if (err.code === 'ENOSPC') return 0
                throw err
              },
            )
            if (written < size) break
          }
        }
      } finally {
        await file.close()
      }
      const s = await statfs(dir)
      return s.bavail * s.bsize
    },
    free: () => rm(filler, { force: true }),
    async unmount() {
      await run('umount', ['-l', dir]).catch(() => undefined)
      await rm(dir, { recursive: true, force: true })
    },
  }
}
