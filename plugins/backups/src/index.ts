/**
 * The backups plugin: hostd's own state, containers' data and chosen folders backed up with restic to a local
 * folder, SFTP or a REST server; schedules, retention, checks; snapshots browsed and restored. See README.md.
 */
import { join } from 'node:path'
import { bind, createServiceToken, definePlugin, tokens } from '@hostd/sdk'
import type { ProvidedServices } from './api.ts'
import { backupRoutes, backupSockets } from './routes.ts'
import { BackupService } from './service.ts'
import { setupRestorer } from './setup-restore.ts'

export const backupStatus = createServiceToken<ProvidedServices['backups.status']>('backups.status')
export const setupRestore = createServiceToken<ProvidedServices['backups.setup-restore']>('backups.setup-restore')

export interface BackupsPluginOptions {
  /** Where restores to another place may write (default HOSTD_FILE_ROOTS as the storage plugin reads it). */
  roots?: { name: string; path: string }[]
  /** The scheduler's clock (tests move it forward); default Date.now. */
  now?: () => number
  /** Back up through the root helper (default HOSTD_BACKUPS_ROOT_HELPER=1). */
  rootHelper?: boolean
}

/** `HOSTD_FILE_ROOTS=name=/abs/path,...` (the storage plugin's setting); default `files=<data dir>/files`. */
export function fileRoots(raw: string | undefined, dataDir: string): { name: string; path: string }[] {
  if (!raw || raw.trim() === '') return [{ name: 'files', path: join(dataDir, 'files') }]
  return raw.split(',').flatMap((pair) => {
    const at = pair.indexOf('=')
    const name = pair.slice(0, at).trim()
    const path = pair.slice(at + 1).trim()
    return at > 0 && path.startsWith('/') ? [{ name, path }] : []
  })
}

export function createBackupsPlugin(options: BackupsPluginOptions = {}) {
  return definePlugin({
    id: 'backups',
    version: '1.0.0',
    kernel: '^1.3.0',
    description: "Backups with restic: hostd's own state, containers' volumes and chosen folders; restores.",
    deps: {
      settings: tokens.settings,
      audit: tokens.audit,
      log: tokens.logger,
      kernel: tokens.kernel,
      database: tokens.database,
      optional: tokens.optional,
      secrets: tokens.secrets,
      helper: tokens.helper,
    },
    setup: ({ settings, audit, log, kernel, database, optional, secrets, helper }) =>
      BackupService.create(
        { settings, audit, log, database, optional, secrets, helper, dataDir: kernel.dataDir },
        {
          roots: options.roots ?? fileRoots(process.env.HOSTD_FILE_ROOTS, kernel.dataDir),
          now: options.now,
          rootHelper: options.rootHelper ?? process.env.HOSTD_BACKUPS_ROOT_HELPER === '1',
        },
      ),
    // Built-in consumers only (the alerts plugin, the kernel's setup): nothing exposed to third-party plugins.
    provides: ({ kernel }, backups) => [
      bind(backupStatus, { jobs: () => backups.status() }),
      bind(setupRestore, setupRestorer(kernel.dataDir)),
    ],
    routes: (r, _deps, backups) => backupRoutes(r, backups),
    sockets: (s, _deps, backups) => backupSockets(s, backups),
    start: (_deps, backups) => backups.start(),
    stop: (_deps, backups) => backups.stop(),
    ui: {
      pages: [
        {
          path: '/backups',
          title: 'Backups',
          icon: 'hard-drive',
          role: 'admin',
          module: 'ui/backups.tsx',
          element: 'backups-page',
        },
      ],
    },
  })
}

export default createBackupsPlugin()
