/**
 * Reading catalog sources: the built-in file, a directory of `*.json` catalog files on the host, or an HTTPS URL
 * (fetched with a timeout and a size cap, no redirects). Each file is parsed once, then checked entry by entry:
 * a bad entry is reported with its reason and skipped, never fatal; a source that cannot be read at all is
 * reported as not ok and contributes nothing.
 */
import { readdir, readFile, stat } from 'node:fs/promises'
import { request } from 'node:https'
import { join } from 'node:path'
import { findDuplicateKey } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import { entryProblem } from './render.ts'
import { CATALOG_FORMAT, CatalogEntrySchema, type CatalogEntry, type Skipped } from './schemas.ts'

export const MAX_FILE_BYTES = 1024 * 1024
export const MAX_FILES_PER_DIRECTORY = 100

export interface FetchOptions {
  timeoutMs: number
  maxBytes: number
  /** Extra trusted certificate authorities (PEM) for HTTPS sources; production passes none (the system's store). */
  ca?: string
}

export interface Loaded {
  name: string
  apps: CatalogEntry[]
  skipped: Skipped[]
}

/** A catalog file's text -> its valid entries and the skipped ones. Throws only when the file as a whole is unusable. */
export function parseCatalog(text: string, file?: string): Loaded {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (err) {
    throw new Error(`not valid JSON (${(err as Error).message})`)
  }
  const dup = findDuplicateKey(text)
  if (dup !== null) throw new Error(`the key "${dup}" appears twice in one object`)
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new Error('not a catalog: the file must hold an object')
  const catalog = data as { format?: unknown; name?: unknown; apps?: unknown }
  if (catalog.format !== CATALOG_FORMAT) throw new Error(`not a catalog: "format" must be "${CATALOG_FORMAT}"`)
  if (!Array.isArray(catalog.apps)) throw new Error('not a catalog: "apps" must be an array')
  if (catalog.apps.length > 500) throw new Error('more than 500 apps in one file')
  const apps: CatalogEntry[] = []
  const skipped: Skipped[] = []
  const seen = new Set<string>()
  catalog.apps.forEach((raw, index) => {
    const id = typeof (raw as { id?: unknown })?.id === 'string' ? (raw as { id: string }).id.slice(0, 64) : undefined
    const skip = (reason: string) => skipped.push({ ...(file ? { file } : {}), index, ...(id ? { id } : {}), reason })
    if (!Value.Check(CatalogEntrySchema, raw)) {
      const first = [...Value.Errors(CatalogEntrySchema, raw)][0]
      return skip(`${first?.path || '/'} ${first?.message ?? 'is invalid'}`)
    }
    const problem = entryProblem(raw)
    if (problem) return skip(problem)
    if (seen.has(raw.id)) return skip(`app id "${raw.id}" appears twice in this source`)
    seen.add(raw.id)
    apps.push(raw)
  })
  return { name: typeof catalog.name === 'string' ? catalog.name.slice(0, 120) : '', apps, skipped }
}

export async function loadFile(path: string): Promise<Loaded> {
  const st = await stat(path)
  if (st.size > MAX_FILE_BYTES) throw new Error(`${path} is larger than ${MAX_FILE_BYTES} bytes`)
  return parseCatalog(await readFile(path, 'utf8'))
}

/** Every `*.json` in the folder (not below it), in name order; a file that is not a catalog is reported and skipped. */
export async function loadDirectory(dir: string): Promise<Loaded> {
  const names = (await readdir(dir, { withFileTypes: true }))
    .filter((d) => d.isFile() && d.name.endsWith('.json'))
    .map((d) => d.name)
    .sort()
  const out: Loaded = { name: '', apps: [], skipped: [] }
  if (names.length > MAX_FILES_PER_DIRECTORY)
    out.skipped.push({ reason: `only the first ${MAX_FILES_PER_DIRECTORY} of ${names.length} files are read` })
  const ids = new Set<string>()
  for (const file of names.slice(0, MAX_FILES_PER_DIRECTORY)) {
    try {
      const st = await stat(join(dir, file))
      if (st.size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`)
      const loaded = parseCatalog(await readFile(join(dir, file), 'utf8'), file)
      out.name ||= loaded.name
      out.skipped.push(...loaded.skipped)
      for (const app of loaded.apps) {
        if (ids.has(app.id))
          out.skipped.push({ file, id: app.id, reason: `app id "${app.id}" appears twice in this source` })
        else {
          ids.add(app.id)
          out.apps.push(app)
        }
      }
    } catch (err) {
      out.skipped.push({ file, reason: (err as Error).message })
    }
  }
  return out
}

/** GET an https: URL: status 200 only, no redirects, at most `maxBytes`, within `timeoutMs` overall. */
export function fetchText(url: string, options: FetchOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    let settled = false
    const fail = (message: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      reject(new Error(message))
    }
    const timer = setTimeout(() => fail(`no complete answer within ${options.timeoutMs} ms`), options.timeoutMs)
    const req = request(
      url,
      { method: 'GET', headers: { accept: 'application/json' }, ...(options.ca ? { ca: options.ca } : {}) },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume()
          return fail(`answered HTTP ${res.statusCode}${res.headers.location ? ' (redirects are not followed)' : ''}`)
        }
        const declared = Number(res.headers['content-length'])
        if (Number.isFinite(declared) && declared > options.maxBytes)
          return fail(`the answer is larger than ${options.maxBytes} bytes`)
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > options.maxBytes) return fail(`the answer is larger than ${options.maxBytes} bytes`)
          chunks.push(chunk)
        })
        res.on('end', () => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resolve(Buffer.concat(chunks).toString('utf8'))
        })
        res.on('error', (err) => fail(err.message))
      },
    )
    req.on('error', (err) => fail(err.message))
    req.end()
  })
}

export async function loadUrl(url: string, options: FetchOptions): Promise<Loaded> {
  return parseCatalog(await fetchText(url, options))
}

/** An https: URL without credentials in it; anything else is refused before it is stored. */
export function checkUrl(location: string): string | null {
  let url: URL
  try {
    url = new URL(location)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'https:') return 'only https: URLs are fetched'
  if (url.username || url.password) return 'a URL may not carry credentials'
  return null
}
