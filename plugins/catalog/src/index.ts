/**
 * The catalog plugin: single-container apps (the built-in catalog file plus directories and HTTPS URLs an admin
 * adds), installed through the containers plugin's one validated creation path. See README.md.
 */
import { join } from 'node:path'
import { definePlugin, tokens } from '@hostd/sdk'
import { containersService } from './containers.ts'
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

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value)
  return Number.isInteger(n) && n > 0 ? n : fallback
}

export function createCatalogPlugin(options: CatalogPluginOptions = {}) {
  return definePlugin({
    id: 'catalog',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'App catalog: single-container apps with form fields, installed through the containers plugin.',
    dependsOn: { containers: '^1.0.0' },
    deps: {
      containers: containersService,
      settings: tokens.settings,
      audit: tokens.audit,
      log: tokens.logger,
      optional: tokens.optional,
    },
    setup: (deps) =>
      new CatalogService(deps, {
        builtinFile: options.builtinFile ?? join(import.meta.dirname, '..', 'catalog', 'builtin.json'),
        fetch: {
          timeoutMs: options.fetch?.timeoutMs ?? positive(process.env.HOSTD_CATALOG_FETCH_TIMEOUT_MS, 10_000),
          maxBytes: options.fetch?.maxBytes ?? positive(process.env.HOSTD_CATALOG_FETCH_MAX_BYTES, 1024 * 1024),
          ca: options.fetch?.ca,
        },
      }),
    routes: (r, _deps, catalog) => catalogRoutes(r, () => catalog),
    sockets: (s, _deps, catalog) => catalogSockets(s, () => catalog),
    start: (_deps, catalog) => catalog.start(),
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
      // Umbrel and CasaOS lead with the apps: the installed ones, their state and Open, near the top of the overview.
      cards: [
        { title: 'Apps', module: 'ui/card.tsx', element: 'catalog-apps', role: 'viewer', size: 'medium', order: 12 },
      ],
    },
  })
}

export default createCatalogPlugin()
