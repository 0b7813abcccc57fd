/**
 * The fleet plugin: this hostd as a member of a fleet over NATS (README.md). Members, presence and inventory in a
 * JetStream key-value bucket; any API route of a member from any member's API, answered by that member as the
 * verified caller; join codes; roles per host. The NATS clients are imported only when this host joins a fleet.
 */
import { definePlugin, tokens } from '@hostd/sdk'
import { fleetRoutes, fleetSockets } from './routes.ts'
import { FleetService, readFleetEnv, type FleetEnv } from './service.ts'
import { dispatchToken } from './tokens.ts'

export function createFleetPlugin(env: FleetEnv = readFleetEnv()) {
  return definePlugin({
    id: 'fleet',
    version: '1.0.0',
    kernel: '^1.3.0',
    description: 'A fleet of hostd hosts over NATS: members, presence, remote calls as a verified identity.',
    deps: {
      settings: tokens.settings,
      audit: tokens.audit,
      log: tokens.logger,
      kernel: tokens.kernel,
      secrets: tokens.secrets,
      optional: tokens.optional,
      dispatch: dispatchToken,
    },
    setup: (deps) => new FleetService(deps, env),
    routes: (r, _deps, fleet) => fleetRoutes(r, fleet),
    sockets: (s, _deps, fleet) => fleetSockets(s, fleet),
    start: (_deps, fleet) => fleet.start(),
    stop: (_deps, fleet) => fleet.stop(),
    ui: {
      pages: [
        {
          path: '/fleet',
          title: 'Fleet',
          icon: 'server',
          module: 'ui/fleet.tsx',
          element: 'fleet-page',
          role: 'viewer',
        },
      ],
    },
  })
}

export default createFleetPlugin()
