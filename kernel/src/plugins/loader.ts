import { registerHooks } from 'node:module'
import { readFile, readdir, realpath, stat } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createHash } from 'node:crypto'
import { isHostdPlugin, type HostdPlugin } from '@hostd/sdk'

/**
 * True when the kernel runs from its build (kernel/dist, what `npm start` and the spawned daemons of the tests run),
 * false when it runs from its TypeScript sources (the in-process test kernels under vitest).
 */
export const RUNS_BUILT = !import.meta.url.endsWith('.ts')
const REPO = fileURLToPath(new URL(RUNS_BUILT ? '../../' : '../../../', import.meta.url))
/** Where `@hostd/sdk` resolves for plugins: the one copy the kernel itself imports (sdk/dist when built). */
const SDK_ENTRIES: Record<string, string> = {
  '@hostd/sdk': pathToFileURL(join(REPO, 'sdk', RUNS_BUILT ? 'dist/index.mjs' : 'src/index.ts')).href,
  '@hostd/sdk/testing': pathToFileURL(join(REPO, 'sdk', 'src', 'testing.ts')).href,
}
/** A built-in plugin's build (kernel/build.mjs), which the built daemon loads instead of its TypeScript entry. */
const BUILT_PLUGIN_ENTRY = join('dist', 'index.mjs')

/** load tag -> root folder URL of the plugin version it loaded. */
const loadRoots = new Map<string, string>()
const TAG = /[?&]hostd-load=([\w.-]+)/

/**
 * ES modules cannot be unloaded, so each load of a plugin imports its files under a fresh URL
 * (`?hostd-load=<tag>`): an upgrade gets new modules, not cached old ones. This hook carries the tag from
 * a plugin module to the files it imports inside its own folder, and resolves `@hostd/sdk` for plugins
 * installed outside this repository to the kernel's own copy, so every plugin shares one sdk instance.
 */
registerHooks({
  resolve(specifier, context, nextResolve) {
    const sdk = SDK_ENTRIES[specifier]
    const parentTag = context.parentURL ? TAG.exec(context.parentURL)?.[1] : undefined
    if (sdk && parentTag) return { url: sdk, shortCircuit: true }
    const resolved = nextResolve(specifier, context)
    if (parentTag && resolved.url.startsWith('file:') && !TAG.test(resolved.url)) {
      const root = loadRoots.get(parentTag)
      if (root && resolved.url.startsWith(root)) return { ...resolved, url: `${resolved.url}?hostd-load=${parentTag}` }
    }
    return resolved
  },
})

export interface PluginPackage {
  name: string
  version?: string
  entry: string
}

/**
 * Reads a plugin folder's package.json: `hostd.entry`, else `main`, else index.ts / index.js. A built-in plugin run by
 * the built daemon loads its build, `dist/index.mjs`, instead.
 */
export async function readPluginPackage(dir: string, builtin = false): Promise<PluginPackage> {
  const raw = await readFile(join(dir, 'package.json'), 'utf8').catch(() => {
    throw new Error('no package.json in the plugin folder')
  })
  let pkg: { name?: string; version?: string; main?: string; hostd?: { entry?: string } }
  try {
    pkg = JSON.parse(raw)
  } catch (err) {
    throw new Error(`package.json is not valid JSON: ${(err as Error).message}`)
  }
  let entry = pkg.hostd?.entry ?? pkg.main
  if (!entry) {
    for (const candidate of ['src/index.ts', 'index.ts', 'index.js']) {
      if (
        await stat(join(dir, candidate)).then(
          () => true,
          () => false,
        )
      ) {
        entry = candidate
        break
      }
    }
  }
  if (!entry) throw new Error('package.json names no entry (hostd.entry or main) and there is no index.ts or index.js')
  if (builtin && RUNS_BUILT) {
    const built = join(dir, BUILT_PLUGIN_ENTRY)
    if (
      !(await stat(built).then(
        (s) => s.isFile(),
        () => false,
      ))
    )
      throw new Error(`${built} is missing: run npm run build:daemon`)
    return { name: pkg.name ?? 'unnamed', version: pkg.version, entry: built }
  }
  const full = join(dir, entry)
  if (relative(dir, full).startsWith('..')) throw new Error(`entry ${entry} lies outside the plugin folder`)
  return { name: pkg.name ?? 'unnamed', version: pkg.version, entry: full }
}

let loads = 0

/**
 * Imports a plugin entry as a fresh module graph and returns its default export. The root is the folder's real path:
 * Node resolves a module to its real path, so for a plugin folder that is a symbolic link the files the entry imports
 * resolve outside `dir` and, compared with `dir`, would keep the first load's modules (only the entry reloaded).
 */
export async function importPlugin(dir: string, entry: string): Promise<unknown> {
  const tag = `${Date.now().toString(36)}.${++loads}`
  loadRoots.set(tag, pathToFileURL((await realpath(dir)) + sep).href)
  const mod = (await import(`${pathToFileURL(entry).href}?hostd-load=${tag}`)) as { default?: unknown }
  return mod.default
}

/** A folder's plugin definition, or why it has none (a sentence, the plugin's error). */
export async function loadDefinition(dir: string, builtin: boolean): Promise<HostdPlugin | string> {
  try {
    const pkg = await readPluginPackage(dir, builtin)
    const exported = await importPlugin(dir, pkg.entry)
    if (!isHostdPlugin(exported))
      throw new Error('its entry does not export default definePlugin({...}) from @hostd/sdk')
    return exported
  } catch (err) {
    return `could not load: ${(err as Error).message}`
  }
}

/** A plugin folder as the watcher and the registry compare it. */
export interface FolderState {
  /** A digest of the file names, sizes and modification times: equal digests mean nothing to reload. */
  print: string
  /** The newest status change (ctime, ms since the epoch) of the folder, its subfolders and files. */
  changedAt: number
}

/**
 * Reads a plugin folder's state; null when the folder is not there. node_modules and dot-entries are left out.
 * Each folder's entries are examined side by side (one at a time, a start's 13 built-in folders, about 500 entries,
 * took 60-80 ms of waiting on the thread pool); the digest still lists them in name order.
 */
export async function folderState(dir: string, depth = 6): Promise<FolderState | null> {
  const top = await stat(dir).catch(() => null)
  if (!top?.isDirectory()) return null
  const lines: string[] = []
  let changedAt = top.ctimeMs
  async function walk(current: string, level: number): Promise<void> {
    if (level > depth) return
    const entries = (await readdir(current, { withFileTypes: true }).catch(() => [])).filter(
      (entry) => entry.name !== 'node_modules' && !entry.name.startsWith('.'),
    )
    await Promise.all(
      entries.map(async (entry) => {
        const full = join(current, entry.name)
        const s = await stat(full).catch(() => null)
        if (!s) return
        changedAt = Math.max(changedAt, s.ctimeMs)
        if (entry.isDirectory()) await walk(full, level + 1)
        else lines.push(`${relative(dir, full)}:${s.size}:${s.mtimeMs}\n`)
      }),
    )
  }
  await walk(dir, 0)
  const hash = createHash('sha1')
  for (const line of lines.sort()) hash.update(line)
  return { print: hash.digest('hex'), changedAt }
}

/** The folder's digest (see FolderState): the registry skips reloads that would change nothing. */
export async function fingerprint(dir: string, depth = 6): Promise<string> {
  return (await folderState(dir, depth))?.print ?? ''
}
