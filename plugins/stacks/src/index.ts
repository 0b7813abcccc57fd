/**
 * The stacks plugin: compose stacks, one folder per stack (compose.yaml and .env) under the data folder, applied
 * through the containers plugin's one validated creation path. See README.md.
 */
import { join } from 'node:path'
import { bind, createServiceToken, definePlugin, tokens } from '@hostd/sdk'
import type { ProvidedServices } from './api.ts'
import { containersService, projectsService } from './containers.ts'
import { stackRoutes } from './routes.ts'
import { StacksService } from './service.ts'
import { stackSockets } from './sockets.ts'

/** The service other plugins use (api.ts). */
export const stacksInstaller = createServiceToken<ProvidedServices['hostd.stacks']>('hostd.stacks')

export interface StacksPluginOptions {
  /** The stacks folder; default HOSTD_STACKS_DIR, else `stacks` in the plugin's data folder. */
  dir?: string
}

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value)
  return Number.isInteger(n) && n > 0 ? n : fallback
}

export function createStacksPlugin(options: StacksPluginOptions = {}) {
  return definePlugin({
    id: 'stacks',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'Compose stacks: multi-container apps from compose files on disk, under the run form’s role rules.',
    dependsOn: { containers: '^1.0.0' },
    deps: {
      containers: containersService,
      projects: projectsService,
      audit: tokens.audit,
      log: tokens.logger,
      kernel: tokens.kernel,
    },
    setup: ({ containers, projects, audit, log, kernel }) =>
      new StacksService(
        { containers, projects, audit, log },
        {
          dir: options.dir ?? (process.env.HOSTD_STACKS_DIR || join(kernel.dataDir, 'stacks')),
          healthTimeoutMs: positive(process.env.HOSTD_STACKS_HEALTH_TIMEOUT_MS, 300_000),
        },
      ),
    provides: (_deps, stacks) => [
      bind(stacksInstaller, {
        install: (input, role, actor, onProgress) => stacks.install(input, role, actor, onProgress),
        uninstall: (name, actor, options) => stacks.uninstall(name, actor, options),
      }),
    ],
    routes: (r, _deps, stacks) => stackRoutes(r, () => stacks),
    sockets: (s, _deps, stacks) => stackSockets(s, () => stacks),
    start: (_deps, stacks) => stacks.start(),
    stop: (_deps, stacks) => stacks.stop(),
    ui: {
      pages: [
        {
          path: '/stacks',
          title: 'Stacks',
          icon: 'layout-grid',
          role: 'viewer',
          module: 'ui/stacks.tsx',
          element: 'stacks-page',
        },
      ],
    },
  })
}

export default createStacksPlugin()
