/**
 * The containers plugin: containers, images, networks, registry search and container icons through the Docker
 * Engine API (dockerode), with live install/update/logs sockets. See README.md.
 */
import { bind, definePlugin, tokens } from '@hostd/sdk'
import { containersService, containerStatesService, containerVolumesService } from './tokens.ts'
import { checkedBySchema } from './errors.ts'
import { RunSpecSchema, type RunSpec } from './runspec.ts'
import { listVolumes } from './adapters/volumes.ts'
import { containerState, containerStates, watchContainerEvents } from './adapters/states.ts'
import { Runtime } from './service.ts'
import { backupService } from './adapters/backup.ts'
import { containerBackupService } from './tokens.ts'
import { containerRoutes } from './routes.ts'
import { projectsService } from './projects.ts'
import { containerProjectsService } from './tokens.ts'
import { containerSockets } from './sockets.ts'
import { liveSocket } from './live-socket.ts'

export default definePlugin({
  id: 'containers',
  version: '1.0.0',
  kernel: '^1.1.0',
  description: 'Containers, images, networks, registry search and container icons (Docker Engine API).',
  ui: {
    pages: [
      {
        path: '/containers',
        title: 'Containers',
        icon: 'container',
        role: 'viewer',
        module: 'ui/containers.tsx',
        element: 'containers-page',
      },
    ],
    cards: [
      {
        title: 'Containers',
        module: 'ui/cards.tsx',
        element: 'containers-summary',
        role: 'viewer',
        size: 'small',
        order: 30,
      },
    ],
  },
  deps: { audit: tokens.audit, log: tokens.logger, settings: tokens.settings, kernel: tokens.kernel },
  setup: (deps) => new Runtime(deps),
  // The catalog (and any plugin that depends on this one) creates containers through the same validated path.
  provides: (_deps, runtime) => [
    bind(
      containersService,
      {
        // A calling plugin's spec has passed no route schema: checked here, as the REST route checks its body.
        run: async (spec, role, actor, hooks, options) =>
          runtime.runSpec(checkedBySchema<RunSpec>(RunSpecSchema, spec), role, actor, hooks, options),
        engineStatus: () => runtime.engine.status(),
        listLabelled: (key) => runtime.containers.listLabelled(key),
        remove: (idOrName, actor, options) => runtime.removeWithVolumes(idOrName, actor, options?.volumes ?? false),
      },
      // Third-party plugins read only: `run` and `remove` take the caller's role and actor, which they could forge.
      { read: ['engineStatus', 'listLabelled'] },
    ),
    bind(containerVolumesService, { listVolumes: () => listVolumes(runtime.engine) }, { read: ['listVolumes'] }),
    bind(containerProjectsService, projectsService(runtime)),
    bind(containerBackupService, backupService(runtime)),
    bind(
      containerStatesService,
      {
        list: () => containerStates(runtime.engine),
        get: (id) => containerState(runtime.engine, id),
        watch: (onEvent, signal, onConnect) => watchContainerEvents(runtime.engine, onEvent, signal, onConnect),
      },
      // `watch` takes a callback and a signal, which cannot cross to an isolated plugin.
      { read: ['list', 'get'] },
    ),
  ],
  routes: (r, _deps, runtime) => containerRoutes(r, runtime),
  sockets: (s, _deps, runtime) => {
    containerSockets(s, runtime)
    liveSocket(s, runtime)
  },
  start: async (_deps, runtime) => {
    // Auto-start marked containers; a missing engine is logged, never fatal to the plugin.
    const { started, failed } = await runtime.startMarked()
    if (started.length || failed.length) runtime.log.info({ started, failed }, 'auto-start')
  },
})

export { RunSpecSchema } from './runspec.ts'
export { normalizeSpec } from './runspec/normalize.ts'
export { shellSplit } from './runspec/shell-words.ts'
export { authorizeSpec, requiredRole } from './policy.ts'
export { containersService } from './tokens.ts'
export type { ContainersService, LabelledContainer, RemovedContainer, RunOptions } from './api.ts'
