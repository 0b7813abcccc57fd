import { lstat, realpath, rm, unlink } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { defineError } from '@hostd/sdk'

export const PluginDataErrors = {
  outsideRoot: defineError(
    'HOSTD_PLUGIN_DATA_OUTSIDE_ROOT',
    409,
    "The plugin's data folder does not lead inside the plugin-data folder: it was left alone",
  ),
}

/** Where a third-party plugin's data folder is: `<data dir>/plugin-data/<id>` (see kernel/src/isolation). */
export const dataFolderPath = (dataDir: string, id: string): string => join(dataDir, 'plugin-data', id)

/** The plugin's data folder if there is one (a folder, or a symbolic link in its place), else null. */
export async function dataFolderOf(dataDir: string, id: string): Promise<string | null> {
  const path = dataFolderPath(dataDir, id)
  return (await lstat(path).catch(() => null)) ? path : null
}

/**
 * Refuses (HOSTD_PLUGIN_DATA_OUTSIDE_ROOT) a data folder whose real path is not directly inside the plugin-data
 * folder's; a symbolic link in its place is fine (it is unlinked, never followed). Returns its lstat, or null.
 */
async function confined(dataDir: string, id: string) {
  const path = dataFolderPath(dataDir, id)
  const stat = await lstat(path).catch(() => null)
  if (!stat || stat.isSymbolicLink()) return stat
  const root = join(dataDir, 'plugin-data')
  const [realRoot, real] = await Promise.all([realpath(root), realpath(path)])
  if (real !== join(realRoot, id) || !real.startsWith(realRoot + sep)) throw PluginDataErrors.outsideRoot()
  return stat
}

/** Throws as deleteDataFolder would, before anything is removed. */
export async function checkDataFolder(dataDir: string, id: string): Promise<void> {
  await confined(dataDir, id)
}

/**
 * Deletes the plugin's data folder, confined to the plugin-data folder: a symbolic link in its place is unlinked,
 * never followed, and a folder whose real path is not directly inside the plugin-data folder's is refused. Links inside
 * the folder are deleted as links (fs.rm does not follow them). Returns the path deleted, or null when there was none.
 */
export async function deleteDataFolder(dataDir: string, id: string): Promise<string | null> {
  const path = dataFolderPath(dataDir, id)
  const stat = await confined(dataDir, id)
  if (!stat) return null
  if (stat.isSymbolicLink()) await unlink(path)
  else await rm(path, { recursive: true, force: true })
  return path
}
