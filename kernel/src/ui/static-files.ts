import { createHash } from 'node:crypto'
import { lstat, readdir, readFile } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { extname, join } from 'node:path'
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib'

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
}
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.map', '.svg', '.txt'])

export interface StaticFile {
  body: Buffer
  gzip: Buffer | null
  brotli: Buffer | null
  type: string
  etag: string
}

export interface LoadLimits {
  maxFiles: number
  maxBytes: number
}

/** A folder over the limits (a plugin's ui/ folder); its files are not served. */
export class StaticFolderError extends Error {
  override name = 'StaticFolderError'
}

/**
 * A folder of web files held in memory, with their gzip and brotli forms: the UI is small (a few hundred KB with
 * both encodings), so serving is a map lookup and one write, with no file system access per request. Files the
 * build precompressed (`x.js.gz`, `x.js.br` beside `x.js`) are taken as they are; otherwise, with `compress`, they
 * are compressed here once. Only regular files are read: links are skipped, so nothing outside the folder is served.
 */
export class StaticFiles {
  readonly #files: Map<string, StaticFile>

  private constructor(files: Map<string, StaticFile>) {
    this.#files = files
  }

  static async load(root: string, options: { compress: boolean; limits?: LoadLimits }): Promise<StaticFiles> {
    const limits = options.limits
    const overLimits = (count: number, bytes: number) =>
      limits !== undefined && (count > limits.maxFiles || bytes > limits.maxBytes)
    const tooLarge = () =>
      new StaticFolderError(`${root} holds more than ${limits!.maxFiles} files or ${limits!.maxBytes} bytes`)
    // First every regular file and its size, a directory's entries side by side; the limits are checked on those
    // sizes before anything is read. Then the files are read side by side too: one by one, the shell's ~180 files
    // took 65-90 ms of every start.
    const found: { rel: string; full: string }[] = []
    let listed = 0
    const walk = async (dir: string, prefix: string): Promise<void> => {
      const entries = (await readdir(dir, { withFileTypes: true })).filter((entry) => !entry.name.startsWith('.'))
      const kinds = await Promise.all(
        entries.map(async (entry) => {
          const full = join(dir, entry.name)
          if (entry.isDirectory()) return { full, directory: true, size: 0 }
          if (!entry.isFile()) return null
          const stats = await lstat(full)
          return stats.isFile() ? { full, directory: false, size: stats.size } : null
        }),
      )
      for (const [i, kind] of kinds.entries()) {
        if (kind === null) continue
        const rel = prefix + entries[i]!.name
        if (kind.directory) {
          await walk(kind.full, `${rel}/`)
          continue
        }
        found.push({ rel, full: kind.full })
        listed += kind.size
        if (overLimits(found.length, listed)) throw tooLarge()
      }
    }
    await walk(root, '')
    const bodies = await Promise.all(found.map((file) => readFile(file.full)))
    // A file may have grown since it was listed.
    if (
      overLimits(
        found.length,
        bodies.reduce((sum, body) => sum + body.length, 0),
      )
    )
      throw tooLarge()
    const raw = new Map(found.map((file, i) => [file.rel, bodies[i]!]))
    const files = new Map<string, StaticFile>()
    for (const [rel, body] of raw) {
      if (rel.endsWith('.gz') || rel.endsWith('.br')) continue
      const ext = extname(rel)
      const compressible = COMPRESSIBLE.has(ext) && body.length > 256
      files.set(rel, {
        body,
        gzip: raw.get(`${rel}.gz`) ?? (compressible && options.compress ? gzipSync(body, { level: 9 }) : null),
        brotli:
          raw.get(`${rel}.br`) ??
          (compressible && options.compress
            ? brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 9 } })
            : null),
        type: TYPES[ext] ?? 'application/octet-stream',
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      })
    }
    return new StaticFiles(files)
  }

  get(path: string): StaticFile | undefined {
    return this.#files.get(path)
  }

  paths(): string[] {
    return [...this.#files.keys()]
  }
}

/**
 * Answers one file: the smallest encoding the client accepts, 304 for a matching ETag, HEAD without a body.
 * `headers` adds the caller's (cache policy, CSP). Cross-origin reads are allowed: these are public code and
 * styles without data, and the sandboxed plugin frame (an opaque origin) loads its modules in CORS mode.
 */
export function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: StaticFile,
  headers: Record<string, string>,
): void {
  const accept = req.headers['accept-encoding'] ?? ''
  const [body, encoding] =
    file.brotli && /\bbr\b/.test(accept)
      ? [file.brotli, 'br']
      : file.gzip && /\bgzip\b/.test(accept)
        ? [file.gzip, 'gzip']
        : [file.body, null]
  const head: Record<string, string | number> = {
    'content-type': file.type,
    etag: file.etag,
    'access-control-allow-origin': '*',
    ...headers,
  }
  if (file.gzip || file.brotli) head.vary = 'Accept-Encoding'
  if (req.headers['if-none-match'] === file.etag) {
    res.writeHead(304, head)
    res.end()
    return
  }
  if (encoding) head['content-encoding'] = encoding
  head['content-length'] = body.length
  res.writeHead(200, head)
  res.end(req.method === 'HEAD' ? undefined : body)
}
