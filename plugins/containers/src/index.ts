/**
 * The containers plugin: containers, images, networks, registry search and container icons through the Docker
 * Engine API (dockerode), with live install/update/logs sockets. See README.md.
 */
import { bind, definePlugin, tokens } from '@hostd/sdk'
import { containersService } from './service-token.ts'
import { checkedBySchema } from './errors.ts'
import { RunSpecSchema, type RunSpec } from './runspec.ts'
import { containerVolumesService, listVolumes } from './volumes.ts'
import { Runtime, type PluginDeps } from './runtime.ts'
import { containerRoutes } from './routes.ts'
import { containerSockets } from './sockets.ts'

// One runtime per load (the deps object is per load), shared by routes, sockets and start.
const runtimes = new WeakMap<object, Runtime>()
function runtime(deps: PluginDeps): Runtime {
  let rt = runtimes.get(deps)
  if (!rt) runtimes.set(deps, (rt = new Runtime(deps)))
  return rt
}

export default definePlugin({
  id: 'containers',
  version: '1.0.0',
  kernel: '^1.0.0',
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
  // The catalog (and any plugin that depends on this one) creates containers through the same validated path.
  provides: (deps) => [
    bind(containersService, {
      // A calling plugin's spec has passed no route schema: checked here, as the REST route checks its body.
      run: async (spec, role, actor, hooks, options) =>
        runtime(deps).runSpec(checkedBySchema<RunSpec>(RunSpecSchema, spec), role, actor, hooks, options),
      engineStatus: () => runtime(deps).engine.status(),
      listLabelled: (key) => runtime(deps).containers.listLabelled(key),
      remove: (idOrName, actor, options) => runtime(deps).removeWithVolumes(idOrName, actor, options?.volumes ?? false),
    }),
    bind(containerVolumesService, { listVolumes: () => listVolumes(runtime(deps).engine) }),
  ],
  routes: (r, deps) => containerRoutes(r, runtime(deps)),
  sockets: (s, deps) => containerSockets(s, runtime(deps)),
  start: async (deps) => {
    const rt = runtime(deps)
    // Auto-start marked containers; a missing engine is logged, never fatal to the plugin.
    const { started, failed } = await rt.startMarked()
    if (started.length || failed.length) rt.log.info({ started, failed }, 'auto-start')
  },
})

export { normalizeSpec, RunSpecSchema, shellSplit } from './runspec.ts'
export { authorizeSpec, requiredRole } from './policy.ts'
export { containersService } from './service-token.ts'
export type { ContainersService, LabelledContainer, RemovedContainer, RunOptions } from './service-token.ts'
