/**
 * The catalog plugin: single-container apps (the built-in catalog file plus directories and HTTPS URLs an admin
 * adds), installed through the containers plugin's one validated creation path. See README.md.
 */
import { join } from 'node:path'
import { definePlugin, tokens, type AuditService, type Logger, type Settings } from '@hostd/sdk'
import { containersService, type ContainersService } from './containers.ts'
import { catalogRoutes } from './routes.ts'
import { CatalogService } from './service.ts'
import { catalogSockets } from './sockets.ts'
import type { FetchOptions } from './sources.ts'

export interface CatalogPluginOptions {
  /** The built-in catalog file; default `catalog/builtin.json` in this plugin's folder. */
  builtinFile?: string
  /** Fetching HTTPS sources. `ca` adds trusted authorities (tests trust their own local server this way). */
  fetch?: Partial<FetchOptions>
}

interface CatalogDeps {
  containers: ContainersService
  settings: Settings
  audit: AuditService
  log: Logger
}

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value)
  return Number.isInteger(n) && n > 0 ? n : fallback
}

export function createCatalogPlugin(options: CatalogPluginOptions = {}) {
  // One service per load, shared by routes, sockets and start (the deps object is per load).
  const services = new WeakMap<CatalogDeps, CatalogService>()
  const service = (deps: CatalogDeps): CatalogService => {
    let found = services.get(deps)
    if (!found) {
      found = new CatalogService(deps, {
        builtinFile: options.builtinFile ?? join(import.meta.dirname, '..', 'catalog', 'builtin.json'),
        fetch: {
          timeoutMs: options.fetch?.timeoutMs ?? positive(process.env.HOSTD_CATALOG_FETCH_TIMEOUT_MS, 10_000),
          maxBytes: options.fetch?.maxBytes ?? positive(process.env.HOSTD_CATALOG_FETCH_MAX_BYTES, 1024 * 1024),
          ca: options.fetch?.ca,
        },
      })
      services.set(deps, found)
    }
    return found
  }
  return definePlugin({
    id: 'catalog',
    version: '1.0.0',
    kernel: '^1.0.0',
    description: 'App catalog: single-container apps with form fields, installed through the containers plugin.',
    dependsOn: { containers: '^1.0.0' },
    deps: { containers: containersService, settings: tokens.settings, audit: tokens.audit, log: tokens.logger },
    routes: (r, deps) => catalogRoutes(r, () => service(deps)),
    sockets: (s, deps) => catalogSockets(s, () => service(deps)),
    start: (deps) => service(deps).start(),
    ui: {
      pages: [
        {
          path: '/catalog',
          title: 'App catalog',
          icon: 'store',
          role: 'viewer',
          module: 'ui/catalog.tsx',
          element: 'catalog-page',
        },
      ],
    },
  })
}

export default createCatalogPlugin()
