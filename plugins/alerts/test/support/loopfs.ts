/**
 * A small real file system for the disk alert: an ext4 image on a loop device (the tests run as root). The metrics
 * plugin leaves `/dev/loop*` devices out of its list (snap images), so the image is mounted through a block device
 * node of its own (`<dir>/hostd-test-disk`, the loop device's numbers): /proc/self/mounts names that node, and the
 * file system is reported like any disk. `fill(percent)` allocates a file to bring it to about that much used.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, stat, statfs } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface LoopFs {
  dir: string
  mountpoint: string
  fill(percent: number): Promise<void>
  free(): Promise<void>
  unmount(): Promise<void>
}

export async function mountLoopFs(sizeMiB: number): Promise<LoopFs> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-alerts-fs-'))
  const image = join(dir, 'image')
  const node = join(dir, 'hostd-test-disk')
  const mountpoint = join(dir, 'mnt')
  await run('truncate', ['-s', `${sizeMiB}M`, image])
  await run('mkfs.ext4', ['-q', '-m', '0', image])
  const loop = (await run('losetup', ['--find', '--show', image])).stdout.trim()
  const { rdev } = await stat(loop)
  await run('mknod', [
    node,
    'b',
    String(Math.floor(rdev / 256) & 0xfff),
    String((rdev & 0xff) | ((rdev >> 12) & 0xfff00)),
  ])
  await mkdir(mountpoint)
  await run('mount', [node, mountpoint])
  const filler = join(mountpoint, 'fill')
  return {
    dir,
    mountpoint,
    async fill(percent) {
      const s = await statfs(mountpoint)
      const want = Math.ceil((s.blocks * percent) / 100) - (s.blocks - s.bfree)
      await run('fallocate', ['-l', String(Math.max(1, want) * s.bsize), filler])
    },
    free: () => rm(filler, { force: true }),
    async unmount() {
      await run('umount', ['-l', mountpoint]).catch(() => undefined)
      await run('losetup', ['-d', loop]).catch(() => undefined)
      await rm(dir, { recursive: true, force: true })
    },
  }
}
