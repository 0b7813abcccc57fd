import { mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { defineError } from '@hostd/sdk'

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

/** Folder name for a package: `@acme/hostd-plugin-hello` -> `hello`. */
export function folderNameFor(packageName: string): string {
  const base = packageName.split('/').pop() ?? ''
  const name = base.replace(/^hostd-plugin-/, '').toLowerCase()
  if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name))
    throw InstallErrors.badArchive(`package name "${packageName}" does not make a safe folder name`)
  return name
}

/**
 * Unpacks an `npm pack` tarball into a staging folder inside the plugins dir (links and devices refused,
 * paths confined), then moves it into place in one rename; the watcher or the caller then loads it.
 */
export async function unpackPlugin(pluginsDir: string, archive: Buffer): Promise<{ dir: string; replaced: boolean }> {
  await mkdir(pluginsDir, { recursive: true })
  const staging = await mkdtemp(join(pluginsDir, '.staging-'))
  try {
    let entries = 0
    let bytes = 0
    // tar is loaded on first use (docs/ARCHITECTURE.md, "Runtime": libraries a start does not need).
    const { x: untar } = await import('tar')
    await pipeline(
      Readable.from(archive),
      untar({
        cwd: staging,
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
    ).catch((err: Error) => {
      throw err.name === 'HostdError' ? err : InstallErrors.badArchive(`Could not unpack the archive: ${err.message}`)
    })
    // npm pack puts everything under package/; a plain tarball may not.
    const top = await readdir(staging)
    const root = top.length === 1 && top[0] === 'package' ? join(staging, 'package') : staging
    let pkg: { name?: string }
    try {
      pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
    } catch {
      throw InstallErrors.badArchive()
    }
    if (!pkg.name) throw InstallErrors.badArchive('package.json has no name')
    const target = join(pluginsDir, folderNameFor(pkg.name))
    const replaced = await stat(target).then(
      () => true,
      () => false,
    )
    if (replaced) {
      const trash = join(staging, '.previous')
      await rename(target, trash)
    }
    await rename(root, target)
    return { dir: target, replaced }
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

/** Deletes an installed plugin folder, after checking it really lies inside the plugins dir. */
export async function deletePluginFolder(pluginsDir: string, dir: string): Promise<void> {
  const [root, real] = await Promise.all([realpath(pluginsDir), realpath(dir)])
  const rel = relative(root, real)
  if (!rel || rel.startsWith('..') || rel.includes(sep))
    throw InstallErrors.builtin('This plugin does not live in the plugins dir')
  await rm(real, { recursive: true, force: true })
}
