import { lstat, mkdir, mkdtemp, open, readdir, readFile, realpath, rename, rm, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Logger } from 'pino'
import { Mutex, defineError, type AuditService } from '@hostd/sdk'
import { storageFullError } from '../db/storage.ts'

export const InstallErrors = {
  badArchive: defineError(
    'HOSTD_PLUGIN_BAD_ARCHIVE',
    400,
    'The upload is not a packed plugin (a .tgz holding package.json)',
  ),
  builtin: defineError('HOSTD_PLUGIN_BUILTIN', 409, 'Built-in plugins can be disabled, not removed'),
} as const

const MAX_ENTRIES = 5000
const MAX_UNPACKED_BYTES = 256 * 1024 * 1024

/**
 * An install or upgrade works in a staging folder of its own inside the plugins dir (a dot-folder: the watcher and the
 * start-time scan pass it by). Its steps, and what a start finds after a crash at each (`recoverInstalls`):
 *
 * 1. the archive is unpacked into `<staging>/unpacked`, its package root moved to `<staging>/next`. No intent yet:
 *    the staging folder is deleted, the installed version (if any) was never touched.
 * 2. `<staging>/intent.json` (`{ "folder": "<name>" }`) is written and synced: the commit point. From here on a start
 *    finishes the install (the steps below, each run only if its source is still there).
 * 3. the installed folder, if any, is renamed to `<staging>/previous`: none is in place, `next` and `previous` are
 *    both in the staging folder, and the start puts `next` in place.
 * 4. `<staging>/next` is renamed to the folder's name: the new version is in place.
 * 5. the intent is deleted, then the staging folder with the old version: a staging folder without an intent is
 *    deleted.
 *
 * So after a crash at any point a start shows the old version or the new one, never none, and leaves no staging
 * behind. Each rename is one `rename(2)` within one file system, so it happened or it did not. The intent is synced
 * and each rename's folder synced after it; the unpacked files are not synced one by one: a crash of the process
 * (kill -9, the OOM killer) leaves them in the page cache, but a power cut right after an install may need the
 * install again. test/e2e/install-crash.test.ts kills a real daemon at each step (`HOSTD_TEST_INSTALL_CRASH_AT`).
 */
const STAGING = '.staging-'
const INTENT = 'intent.json'
const NEXT = 'next'
const PREVIOUS = 'previous'

/** The points of an install a test may crash the daemon at: see `crashPoint`. */
export type InstallStep = 'unpacked' | 'intent' | 'previous-aside' | 'next-in-place' | 'cleaning'

/**
 * A test-only fault point: with `HOSTD_TEST_INSTALL_CRASH_AT=<step>` in its environment, the daemon kills itself with
 * SIGKILL at that step, as a crash or a `kill -9` would, so install-crash.test.ts sees what a start makes of the disk
 * left there. Unset (always, outside that test), it does nothing.
 */
function crashPoint(step: InstallStep): void {
  if (process.env.HOSTD_TEST_INSTALL_CRASH_AT === step) process.kill(process.pid, 'SIGKILL')
}

/** Installs and removals one at a time: two uploads of one plugin must not interleave their renames. */
const installs = new Mutex()

/** Folder name for a package: `@acme/hostd-plugin-hello` -> `hello`. */
export function folderNameFor(packageName: string): string {
  const base = packageName.split('/').pop() ?? ''
  const name = base.replace(/^hostd-plugin-/, '').toLowerCase()
  if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name))
    throw InstallErrors.badArchive(`package name "${packageName}" does not make a safe folder name`)
  return name
}

/**
 * Unpacks an `npm pack` tarball in a staging folder inside the plugins dir (links and devices refused, paths
 * confined), then moves it into place (the steps above); the watcher or the caller then loads it. A disk that fills
 * up is a 507 naming the plugins dir, with the installed version (if any) untouched. `placing` is told the folder just
 * before the new version goes in place (the install route marks its load as the admin's).
 */
export function unpackPlugin(
  pluginsDir: string,
  archive: Buffer,
  placing?: (dir: string) => void,
): Promise<{ dir: string; replaced: boolean }> {
  return installs.run(async () => {
    await mkdir(pluginsDir, { recursive: true })
    const staging = await mkdtemp(join(pluginsDir, STAGING))
    try {
      const folder = await unpack(staging, archive)
      crashPoint('unpacked')
      await writeIntent(staging, folder)
      crashPoint('intent')
      const replaced = await exists(join(pluginsDir, folder))
      placing?.(join(pluginsDir, folder))
      await finish(pluginsDir, staging, folder)
      return { dir: join(pluginsDir, folder), replaced }
    } catch (err) {
      throw storageFullError(err, { folder: pluginsDir }) ?? err
    } finally {
      // With the intent written and the install not finished (an error between the renames), the staging folder is
      // left for the next start to finish: deleting it could delete the only copy of either version.
      await discard(staging).catch(() => undefined)
    }
  })
}

/** Unpacks the archive into `<staging>/next`; resolves with the folder name its package.json asks for. */
async function unpack(staging: string, archive: Buffer): Promise<string> {
  const into = join(staging, 'unpacked')
  await mkdir(into)
  let entries = 0
  let bytes = 0
  // tar is loaded on first use (docs/ARCHITECTURE.md, "Runtime": libraries a start does not need).
  const { x: untar } = await import('tar')
  await pipeline(
    Readable.from(archive),
    untar({
      cwd: into,
      strict: true,
      preservePaths: false,
      filter: (_path, entry) => {
        const type = (entry as { type?: string }).type
        entries++
        bytes += (entry as { size?: number }).size ?? 0
        if (entries > MAX_ENTRIES || bytes > MAX_UNPACKED_BYTES)
          throw InstallErrors.badArchive('The archive is too large')
        return type === 'File' || type === 'Directory' || type === 'OldFile' || type === 'ContiguousFile'
      },
    }),
  ).catch((err: Error & { code?: string }) => {
    if (err.name === 'HostdError' || storageFullError(err)) throw err
    throw InstallErrors.badArchive(`Could not unpack the archive: ${err.message}`)
  })
  // npm pack puts everything under package/; a plain tarball may not.
  const top = await readdir(into)
  const root = top.length === 1 && top[0] === 'package' ? join(into, 'package') : into
  let pkg: { name?: string }
  try {
    pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
  } catch {
    throw InstallErrors.badArchive()
  }
  if (!pkg.name) throw InstallErrors.badArchive('package.json has no name')
  const folder = folderNameFor(pkg.name)
  await rename(root, join(staging, NEXT))
  return folder
}

/** Step 2: the intent, written to a temporary file, synced, renamed into place, and its folder synced. */
async function writeIntent(staging: string, folder: string): Promise<void> {
  const temporary = join(staging, `${INTENT}.part`)
  const file = await open(temporary, 'w', 0o600)
  try {
    await file.writeFile(JSON.stringify({ folder }))
    await file.sync()
  } finally {
    await file.close()
  }
  await rename(temporary, join(staging, INTENT))
  await syncFolder(staging)
}

/**
 * Steps 3 and 4, each only if its source is still there: what a start runs after a crash too. With the new version
 * gone from the staging folder and none in place (the folder was deleted by hand meanwhile), the old one goes back.
 */
async function finish(pluginsDir: string, staging: string, folder: string): Promise<void> {
  const target = join(pluginsDir, folder)
  const next = join(staging, NEXT)
  if (await exists(next)) {
    if (await exists(target)) {
      await rename(target, await freeName(staging, PREVIOUS))
      crashPoint('previous-aside')
    }
    await rename(next, target)
    await syncFolder(pluginsDir)
    crashPoint('next-in-place')
  } else if (!(await exists(target)) && (await exists(join(staging, PREVIOUS)))) {
    await rename(join(staging, PREVIOUS), target)
    await syncFolder(pluginsDir)
  }
}

/**
 * Step 5: the intent first, so a crash while the rest is deleted leaves a staging folder a start deletes. An install
 * that failed between its intent and its end keeps its staging folder for the next start to finish, unless `anyway`
 * (a start, which has finished what could be).
 */
async function discard(staging: string, anyway = false): Promise<void> {
  if (!anyway && (await exists(join(staging, NEXT))) && (await exists(join(staging, INTENT)))) return
  await unlink(join(staging, INTENT)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') throw err
  })
  crashPoint('cleaning')
  await rm(staging, { recursive: true, force: true })
}

/** What a start did with a staging folder a crash left. */
export interface Recovered {
  /** The staging folder's name. */
  staging: string
  /** The plugin folder its intent named, when it had one. */
  folder: string | null
  /** `finished`: the install was completed (the new version is in place); `discarded`: an install not yet committed. */
  outcome: 'finished' | 'discarded'
}

/**
 * At start, before the plugins dir is scanned: finishes each install a crash interrupted after its commit point and
 * deletes every other staging folder (`.staging-*`), logging and auditing what it did (`plugin.install.recover`). A
 * staging folder it cannot handle is logged and left; the scan does not look into dot-folders.
 */
export async function recoverInstalls(pluginsDir: string, log: Logger, audit: AuditService): Promise<Recovered[]> {
  const names = (await readdir(pluginsDir).catch(() => [] as string[])).filter((name) => name.startsWith(STAGING))
  const done: Recovered[] = []
  for (const name of names.sort()) {
    const staging = join(pluginsDir, name)
    try {
      const folder = await readIntent(staging)
      if (folder) await finish(pluginsDir, staging, folder)
      await discard(staging, true)
      const outcome = folder ? 'finished' : 'discarded'
      done.push({ staging: name, folder, outcome })
      log.warn(
        { staging, folder, outcome },
        folder ? 'finished an install a crash interrupted' : 'removed leftover install staging',
      )
      await audit.record({
        action: 'plugin.install.recover',
        target: folder ?? name,
        result: 'success',
        detail: { outcome, staging: name },
      })
    } catch (err) {
      log.error({ err, staging }, 'could not recover an interrupted install')
    }
  }
  return done
}

/** The folder an intent names, or null when there is none (or it is not one this code wrote). */
async function readIntent(staging: string): Promise<string | null> {
  let text: string
  try {
    text = await readFile(join(staging, INTENT), 'utf8')
  } catch {
    return null
  }
  try {
    const { folder } = JSON.parse(text) as { folder?: unknown }
    return typeof folder === 'string' && folder === basename(folder) && folderNameFor(folder) === folder ? folder : null
  } catch {
    return null
  }
}

/**
 * Deletes an installed plugin folder, after checking it is an entry of the plugins dir. A folder that is a symbolic
 * link loses its link, never the folder it points to. The folder is first renamed into a staging folder (one rename:
 * a crash leaves the plugin whole or gone, and a start deletes the leftover), then deleted.
 */
export function deletePluginFolder(pluginsDir: string, dir: string): Promise<void> {
  return installs.run(async () => {
    const [root, parent] = await Promise.all([realpath(pluginsDir), realpath(dirname(dir)).catch(() => null)])
    if (parent !== root || basename(dir).startsWith('.'))
      throw InstallErrors.builtin('This plugin does not live in the plugins dir')
    if (!(await exists(dir))) return // already gone: the caller's reconcile unloads it
    const staging = await mkdtemp(join(pluginsDir, STAGING))
    try {
      await rename(dir, join(staging, 'removed'))
      await syncFolder(pluginsDir)
    } finally {
      await rm(staging, { recursive: true, force: true })
    }
  })
}

/** Whether the path exists, as itself (a symbolic link counts, whatever it points to). */
function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  )
}

/** `<staging>/<name>`, or `<name>-2`, `-3`... when taken. */
async function freeName(staging: string, name: string): Promise<string> {
  for (let i = 1; ; i++) {
    const path = join(staging, i === 1 ? name : `${name}-${i}`)
    if (!(await exists(path))) return path
  }
}

/** Syncs a folder, so the renames in it survive a power cut too (best effort: not every file system can). */
async function syncFolder(path: string): Promise<void> {
  const folder = await open(path, 'r').catch(() => null)
  if (!folder) return
  try {
    await folder.sync().catch(() => undefined)
  } finally {
    await folder.close()
  }
}
