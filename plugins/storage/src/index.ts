import { mkdir } from 'node:fs/promises'
import { definePlugin, tokens } from '@hostd/sdk'
import { configFromEnv, type StorageConfig } from './config.ts'
import { storageRoutes } from './routes.ts'
import { Exports, NetworkMounts } from './shares.ts'

export type { ContainerVolumesService } from './routes.ts'
export { containerVolumesToken } from './routes.ts'

/**
 * The storage plugin. `config` overrides the environment (tests pass roots and limits); by default it is read
 * from process.env at activation (HOSTD_FILE_ROOTS, HOSTD_STORAGE_UPLOAD_MAX_BYTES, HOSTD_STORAGE_MOUNT_ROOT).
 */
export function storagePlugin(config?: Partial<StorageConfig>) {
  return definePlugin({
    id: 'storage',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'Disks, SMART, eject, SMB shares mounted and exported, and the file browser.',
    ui: {
      pages: [
        {
          path: '/storage',
          title: 'Storage',
          icon: 'hard-drive',
          role: 'viewer',
          module: 'ui/storage.tsx',
          element: 'storage-page',
        },
      ],
      cards: [
        { title: 'Storage', module: 'ui/card.tsx', element: 'storage-card', role: 'viewer', size: 'medium', order: 10 },
      ],
    },
    deps: {
      log: tokens.logger,
      audit: tokens.audit,
      helper: tokens.helper,
      settings: tokens.settings,
      kernel: tokens.kernel,
      optional: tokens.optional,
    },
    setup: ({ settings, helper, audit, kernel }) => {
      const resolved: StorageConfig = { ...configFromEnv(process.env, kernel.dataDir), ...config }
      const current = () => resolved
      const shared = { settings, helper, audit, config: current }
      return { config: current, exports: new Exports(shared), mounts: new NetworkMounts(shared) }
    },
    routes: (r, { helper, audit, optional, log }, load) => storageRoutes(r, { ...load, helper, audit, optional, log }),
    start: async ({ kernel }, { config }) => {
      // The default root lives in the data dir; create it so a fresh install can browse and upload at once.
      for (const root of config().roots)
        if (root.path.startsWith(kernel.dataDir)) await mkdir(root.path, { recursive: true, mode: 0o750 })
    },
  })
}

export default storagePlugin()
