import { registerHooks, stripTypeScriptTypes } from 'node:module'
import { readFile, readdir, realpath, stat } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createHash } from 'node:crypto'
import { execFile } from 'node:child_process'
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
  const tag = `${Date.now().toString(36)}-${++loads}`
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
  /** A digest of the file names and contents: equal digests mean nothing to reload. */
  print: string
  /** The newest status change (ctime, ms since the epoch) of the folder, its subfolders and files. */
  changedAt: number
}

/** A file's content digest, by path, with what its stat said when it was read (contentDigest). */
const contentCache = new Map<string, { stamp: string; digest: string }>()

/**
 * The sha1 of a file's content. Read again only when its size, modification time, status change time or inode
 * differ from the last read: a version unpacked over another gets new inodes and change times even where `npm pack`
 * gave every file the same modification time and the sizes agree (issue 28, item 10), and an edit in place changes
 * the modification time. Unchanged files cost one stat, as before.
 */
async function contentDigest(file: string, s: { size: number; mtimeMs: number; ctimeMs: number; ino: number }) {
  const stamp = `${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.ino}`
  const cached = contentCache.get(file)
  if (cached?.stamp === stamp) return cached.digest
  const content = await readFile(file).catch(() => null)
  if (!content) return 'unreadable'
  const digest = createHash('sha1').update(content).digest('hex')
  if (contentCache.size > 50_000) contentCache.clear()
  contentCache.set(file, { stamp, digest })
  return digest
}

/**
 * Reads a plugin folder's state; null when the folder is not there. node_modules and dot-entries are left out.
 * Each folder's entries are examined side by side (one at a time, a start's 13 built-in folders, about 500 entries,
 * took 60-80 ms of waiting on the thread pool); the digest still lists them in name order. Files are compared by
 * content (contentDigest): sizes and modification times alone missed an upgrade packed by `npm pack`.
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
        else lines.push(`${relative(dir, full)}:${s.size}:${await contentDigest(full, s)}\n`)
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

/** The version its package.json states, or null (none, or no readable package.json). */
export async function packageVersion(dir: string): Promise<string | null> {
  try {
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : null
  } catch {
    return null
  }
}

/** A syntax error found in a plugin's files: where (`file:line:column`, the file absolute) and what. */
export interface SyntaxProblem {
  origin: string
  message: string
}

const SOURCE = /\.(?:[cm]?ts|[cm]?js)$/

/** The plugin's source files, its entry first; node_modules, dot-entries and `.d.ts` files left out. */
async function sourceFiles(dir: string, entry: string | null): Promise<string[]> {
  const files: string[] = []
  async function walk(current: string, level: number): Promise<void> {
    if (level > 6 || files.length > 400) return
    for (const item of await readdir(current, { withFileTypes: true }).catch(() => [])) {
      if (item.name === 'node_modules' || item.name.startsWith('.')) continue
      const full = join(current, item.name)
      if (item.isDirectory()) await walk(full, level + 1)
      else if (SOURCE.test(item.name) && !item.name.endsWith('.d.ts')) files.push(full)
    }
  }
  await walk(dir, 0)
  files.sort()
  return entry && files.includes(entry) ? [entry, ...files.filter((file) => file !== entry)] : files
}

/** The column a caret line (`    ^^^`, under the source line Node shows) points at, 1-based; 1 without one. */
const caretColumn = (lines: string[]) => (lines.find((line) => /^\s*\^+\s*$/.test(line))?.indexOf('^') ?? 0) + 1

/**
 * Whether one file parses, as Node would import it: TypeScript's types stripped first (`stripTypeScriptTypes`, whose
 * error names the line; strip mode keeps every position), then `node --check` (which parses and runs nothing) on the
 * code, the only parser of Node that names line and column for a module.
 */
async function checkSyntax(file: string): Promise<SyntaxProblem | null> {
  let code = await readFile(file, 'utf8').catch(() => null)
  if (code === null) return null
  if (/\.[cm]?ts$/.test(file)) {
    try {
      code = stripTypeScriptTypes(code, { mode: 'strip' })
    } catch (err) {
      const lines = String((err as Error).stack ?? '').split('\n')
      const line = /^:(\d+)$/.exec(lines[0] ?? '')?.[1]
      return line ? { origin: `${file}:${line}:${caretColumn(lines)}`, message: (err as Error).message } : null
    }
  }
  const type = /\.c[jt]s$/.test(file) ? 'commonjs' : 'module'
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--check', `--input-type=${type}`, '-'],
      { timeout: 10_000 },
      (err, _out, stderr) => {
        if (!err) return resolve(null)
        const lines = String(stderr).split('\n')
        const line = /^\[stdin\]:(\d+)$/.exec(lines[0] ?? '')?.[1]
        const message = lines.find((l) => /^SyntaxError\b/.test(l))?.replace(/^SyntaxError(?: \[\w+\])?: /, '')
        resolve(line && message ? { origin: `${file}:${line}:${caretColumn(lines)}`, message } : null)
      },
    )
    child.stdin?.end(code)
  })
}

/**
 * Where a plugin that failed to import does not parse. Node names no location in the SyntaxError of an ES module it
 * imports (and only the line, in the first line of the stack, for TypeScript), so each source file is parsed again on
 * its own by `node --check`, the entry first, four at a time, until one fails: about 40 ms a file, run only for a load
 * that failed with no `file:line:column`. Null when every file parses (the failure was something else).
 */
export async function locateSyntaxError(dir: string, entry: string | null): Promise<SyntaxProblem | null> {
  const files = await sourceFiles(dir, entry)
  for (let i = 0; i < files.length; i += 4) {
    const found = (await Promise.all(files.slice(i, i + 4).map(checkSyntax))).find((problem) => problem !== null)
    if (found) return found
  }
  return null
}
