import {
  bind,
  conditions,
  createServiceToken,
  definePlugin,
  tokens,
  type AuditService,
  type HelperClient,
  type Logger,
} from '@hostd/sdk'
import type { ProvidedServices } from './api.ts'
import { AptCatalog } from './apt.ts'
import { DpkgDatabase } from './dpkg.ts'
import { packageRoutes } from './routes.ts'
import { Packages } from './service.ts'
import { packageSockets } from './sockets.ts'

export interface PackagesOptions {
  /** dpkg's database directory (dpkg-query --admindir). */
  admindir: string
  /** APT_CONFIG for the daemon's own apt reads (apt-cache, apt-config); null: apt's default configuration. */
  aptConfig: string | null
}

/** HOSTD_PACKAGES_DPKG_ADMINDIR (default /var/lib/dpkg) and HOSTD_PACKAGES_APT_CONFIG (default unset). */
export function packagesOptionsFromEnv(env: Record<string, string | undefined> = process.env): PackagesOptions {
  return {
    admindir: env.HOSTD_PACKAGES_DPKG_ADMINDIR || '/var/lib/dpkg',
    aptConfig: env.HOSTD_PACKAGES_APT_CONFIG || null,
  }
}

export const packageUpdates = createServiceToken<ProvidedServices['packages.updates']>('packages.updates')

/** One load's services: the package list and actions, over the apt catalog it reads (stopped with the load). */
function packagesLoad(options: PackagesOptions, deps: { helper: HelperClient; audit: AuditService; log: Logger }) {
  const { admindir, aptConfig } = options
  // The daemon's reads run with a fixed environment: the host's locale or APT_CONFIG cannot change what they parse.
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', ...(aptConfig ? { APT_CONFIG: aptConfig } : {}) }
  const dpkg = new DpkgDatabase(admindir, env)
  const catalog = new AptCatalog(env, dpkg, deps.log)
  return { catalog, packages: new Packages(dpkg, catalog, deps.helper, deps.audit, deps.log) }
}

/** The packages plugin; `options` override the environment (tests point it at an isolated apt and dpkg root). */
export function createPackagesPlugin(options: Partial<PackagesOptions> = {}) {
  return definePlugin({
    id: 'packages',
    version: '1.0.0',
    kernel: '^1.3.0',
    description:
      "The host's Debian packages: installed list with upgrades, search, and live install, upgrade and removal through the root helper.",
    ui: {
      pages: [
        {
          path: '/packages',
          title: 'Packages',
          icon: 'package',
          role: 'viewer',
          module: 'ui/packages.tsx',
          element: 'packages-page',
        },
      ],
    },
    deps: { helper: tokens.helper, audit: tokens.audit, log: tokens.logger },
    conditions: [
      conditions.pathExists('/usr/bin/dpkg-query', 'dpkg is not installed: this host has no Debian package manager'),
    ],
    setup: (deps) => packagesLoad({ ...packagesOptionsFromEnv(), ...options }, deps),
    provides: (_deps, { packages }) => [
      bind(
        packageUpdates,
        {
          upgradable: async () => {
            const { items, upgradableCount, upgradesCheckedAt } = await packages.list()
            const names = items.filter((p) => p.upgradable).map((p) => p.name)
            return { count: upgradableCount, names: [...new Set(names)], checkedAt: upgradesCheckedAt }
          },
        },
        { read: ['upgradable'] },
      ),
    ],
    routes: (r, _deps, { packages }) => packageRoutes(r, packages),
    sockets: (s, _deps, { packages }) => packageSockets(s, packages),
    stop: (_deps, { catalog }) => catalog.stop(),
  })
}

export default createPackagesPlugin()
