import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import type { PluginRecord, PluginRegistry } from '../plugins/registry.ts'
import { StaticFiles, sendFile, type StaticFile } from './static-files.ts'
import { showsUi, uiProblem, uiRoot } from './manifest.ts'

const IMMUTABLE = 'public, max-age=31536000, immutable'
const REVALIDATE = 'no-cache'
/** A third-party plugin's UI files: no document of theirs runs as the daemon's origin (see #servePlugin). */
const THIRD_PARTY_FILE_HEADERS = {
  'cache-control': REVALIDATE,
  'content-security-policy': "sandbox; default-src 'none'; frame-ancestors 'none'",
}
/** A third-party plugin's ui/ folder is held in memory: these bound what one plugin may put there. */
const PLUGIN_UI_LIMITS = { maxFiles: 500, maxBytes: 20 * 1024 * 1024 }

/**
 * The policy of every UI document. Scripts: only files from this origin, plus the one inline element the page
 * needs, the import map, allowed by its hash (computed from the served file, so it cannot drift). Styles allow
 * inline `<style>` elements and attributes because xterm.js and noVNC create them and cannot be given a nonce;
 * what injected CSS could do is read the page and send it away in a url(), and every fetch directive here is
 * 'self' (or 'none'), so it has nowhere to send it. Everything else is this origin only; nothing may frame it.
 */
function documentPolicy(
  scriptHashes: string[],
  extra: { frameAncestors: string; connect: string; sandbox?: string },
): string {
  return [
    ...(extra.sandbox ? [`sandbox ${extra.sandbox}`] : []),
    "default-src 'none'",
    `script-src 'self' ${scriptHashes.map((h) => `'${h}'`).join(' ')}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "media-src 'self' blob:",
    `connect-src ${extra.connect}`,
    "worker-src 'self' blob:",
    "frame-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${extra.frameAncestors}`,
  ].join('; ')
}

/** sha256 sources of a document's inline scripts (ours: the import map and the boot retry, ui/build.mjs). */
function inlineScriptHashes(html: Buffer): string[] {
  const hashes: string[] = []
  for (const match of html.toString('utf8').matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)) {
    if (/\bsrc=/.test(match[0].slice(0, match[0].indexOf('>')))) continue
    hashes.push(`sha256-${createHash('sha256').update(match[1]!).digest('base64')}`)
  }
  return hashes
}

interface Document {
  file: StaticFile
  headers: Record<string, string>
}

export interface UiServerOptions {
  /** The build's output (`ui/dist`): the shell, and the compiled UI of built-in plugins. Null: no UI. */
  dist: string | null
  registry: PluginRegistry
  log: Logger
}

/**
 * Serves the web UI on the API's port, for requests the routing table did not take (so API requests pay nothing
 * for it): the shell's hashed assets under /ui/, each active plugin's UI files under /plugins/<id>/<version>/, and
 * index.html for every other GET path (client routes). Unknown /api paths never get here: they stay JSON 404s.
 */
export class UiServer {
  readonly #opts: UiServerOptions
  readonly #shell: StaticFiles | null
  readonly #index: Document | null
  readonly #frame: Document | null
  readonly #pluginFiles = new WeakMap<PluginRecord, Promise<StaticFiles | null>>()

  private constructor(opts: UiServerOptions, shell: StaticFiles | null) {
    this.#opts = opts
    this.#shell = shell
    const index = shell?.get('index.html')
    this.#index = index
      ? {
          file: index,
          headers: {
            'cache-control': REVALIDATE,
            'content-security-policy': documentPolicy(inlineScriptHashes(index.body), {
              frameAncestors: "'none'",
              connect: "'self'",
            }),
          },
        }
      : null
    const frame = shell?.get('frame.html')
    // The sandboxed plugin frame: framed by the shell only, an opaque origin even when opened on its own (the
    // CSP sandbox), and no network access of its own (its API calls go through the shell's bridge).
    this.#frame = frame
      ? {
          file: frame,
          headers: {
            'cache-control': REVALIDATE,
            'x-frame-options': 'SAMEORIGIN',
            'content-security-policy': documentPolicy(inlineScriptHashes(frame.body), {
              frameAncestors: "'self'",
              connect: "'none'",
              sandbox: 'allow-scripts allow-forms',
            }),
          },
        }
      : null
  }

  static async create(opts: UiServerOptions): Promise<UiServer> {
    let shell: StaticFiles | null = null
    if (opts.dist && existsSync(`${opts.dist}/index.html`))
      shell = await StaticFiles.load(opts.dist, { compress: false })
    else if (opts.dist)
      opts.log.warn(
        `the web UI is not built (${opts.dist} has no index.html): run npm run build:ui, or npm start, which builds it`,
      )
    return new UiServer(opts, shell)
  }

  /**
   * Answers GET and HEAD for UI paths; returns false for anything else (the caller answers it), and always when no
   * UI is configured (in-process test kernels).
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.#opts.dist || (req.method !== 'GET' && req.method !== 'HEAD')) return false
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q < 0 ? url : url.slice(0, q)
    if (path === '/api' || path.startsWith('/api/')) return false
    if (path.startsWith('/plugins/')) {
      void this.#servePlugin(req, res, path)
      return true
    }
    if (path.startsWith('/ui/')) {
      const rel = path.slice('/ui/'.length)
      const file = rel === 'index.html' || rel === 'frame.html' ? undefined : this.#shell?.get(rel)
      if (file) sendFile(req, res, file, { 'cache-control': rel.startsWith('assets/') ? IMMUTABLE : REVALIDATE })
      else if (rel === 'frame.html' && this.#frame) sendFile(req, res, this.#frame.file, this.#frame.headers)
      else notFound(res, path)
      return true
    }
    // A path whose last part has a dot is a file: missing is a 404, never the app's HTML in its place.
    if (path.slice(path.lastIndexOf('/')).includes('.')) {
      const file = this.#shell?.get(path.slice(1))
      if (file && path !== '/index.html' && path !== '/frame.html')
        sendFile(req, res, file, { 'cache-control': REVALIDATE })
      else notFound(res, path)
      return true
    }
    if (!this.#index) {
      json(res, 503, 'HOSTD_UI_NOT_BUILT', 'The web UI is not built: run npm run build:ui (npm start builds it)')
      return true
    }
    sendFile(req, res, this.#index.file, this.#index.headers)
    return true
  }

  async #servePlugin(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const [, , id, version, ...rest] = path.split('/')
    const record = id ? this.#opts.registry.find(id) : undefined
    const file =
      record &&
      showsUi(record.state) &&
      !this.#opts.registry.isHeld(record) && // a version held for approval runs nothing, its pages included
      record.definition?.version === version &&
      rest.length > 0
        ? (await this.#filesOf(record))?.get(rest.join('/'))
        : undefined
    // A version that is not the active one is a 404: after a hot upgrade an old page never gets a mix of files. A
    // third-party plugin's file opened as a document (an .html or .svg of its ui/ folder) is sandboxed: an opaque
    // origin, no script, so it cannot act as the daemon's origin with the user's session. Its modules still load.
    if (file) sendFile(req, res, file, record?.builtin ? { 'cache-control': REVALIDATE } : THIRD_PARTY_FILE_HEADERS)
    else notFound(res, path)
  }

  #filesOf(record: PluginRecord): Promise<StaticFiles | null> {
    let files = this.#pluginFiles.get(record)
    if (!files) {
      const root = uiProblem(record) ? null : uiRoot(record, this.#opts.dist)
      files =
        !root || !existsSync(root)
          ? Promise.resolve(null)
          : StaticFiles.load(root, { compress: !record.builtin, limits: PLUGIN_UI_LIMITS }).catch((err: Error) => {
              this.#opts.log.warn({ plugin: record.id }, `plugin UI files not served: ${err.message}`)
              return null
            })
      this.#pluginFiles.set(record, files)
    }
    return files
  }
}

function json(res: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: code, message })
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  })
  res.end(body)
}

function notFound(res: ServerResponse, path: string): void {
  json(res, 404, 'HOSTD_ROUTE_NOT_FOUND', `No file ${path}`)
}
