import { conditions, definePlugin, tokens, type AuditService, type HelperClient, type Logger } from '@hostd/sdk'
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

/** The packages plugin; `options` override the environment (tests point it at an isolated apt and dpkg root). */
export function createPackagesPlugin(options: Partial<PackagesOptions> = {}) {
  let packages: Packages | null = null
  let catalog: AptCatalog | null = null
  const service = (deps: { helper: HelperClient; audit: AuditService; log: Logger }) => {
    if (packages) return packages
    const { admindir, aptConfig } = { ...packagesOptionsFromEnv(), ...options }
    // The daemon's reads run with a fixed environment: the host's locale or APT_CONFIG cannot change what they parse.
    const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', ...(aptConfig ? { APT_CONFIG: aptConfig } : {}) }
    const dpkg = new DpkgDatabase(admindir, env)
    catalog = new AptCatalog(env, dpkg, deps.log)
    packages = new Packages(dpkg, catalog, deps.helper, deps.audit, deps.log)
    return packages
  }
  return definePlugin({
    id: 'packages',
    version: '1.0.0',
    kernel: '^1.0.0',
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
    routes: (r, deps) => packageRoutes(r, service(deps)),
    sockets: (s, deps) => packageSockets(s, service(deps)),
    stop: () => catalog?.stop(),
  })
}

export default createPackagesPlugin()
