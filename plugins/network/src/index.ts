import { definePlugin, tokens } from '@hostd/sdk'
import { NetworkManagerAdapter } from './nmcli.ts'
import { networkRoutes } from './routes.ts'
import { NetworkConfiguration, type NetworkOptions } from './service.ts'

export type { NetworkOptions } from './service.ts'

/** Reads HOSTD_NETWORK_CONFIRM_SECONDS (default 60) and HOSTD_NETWORK_CONFIRM (auto | always | never; default auto). */
export function networkOptionsFromEnv(env: Record<string, string | undefined> = process.env): NetworkOptions {
  const seconds = Number(env.HOSTD_NETWORK_CONFIRM_SECONDS ?? 60)
  const confirm = env.HOSTD_NETWORK_CONFIRM ?? 'auto'
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600)
    throw new Error('HOSTD_NETWORK_CONFIRM_SECONDS must be 1..600')
  if (confirm !== 'auto' && confirm !== 'always' && confirm !== 'never')
    throw new Error('HOSTD_NETWORK_CONFIRM must be auto, always or never')
  return { confirmSeconds: seconds, confirm }
}

/** The network plugin with explicit options (tests use a short confirm window). */
export function createNetworkPlugin(options: Partial<NetworkOptions> = {}) {
  return definePlugin({
    id: 'network',
    version: '1.0.0',
    kernel: '^1.1.0',
    description:
      'Network configuration: NetworkManager connections (DNS, IPv4, enabled) through the root helper, with confirm-or-revert.',
    ui: {
      pages: [
        {
          path: '/network',
          title: 'Network',
          icon: 'network',
          role: 'admin',
          module: 'ui/network.tsx',
          element: 'network-page',
        },
      ],
    },
    deps: { helper: tokens.helper, audit: tokens.audit, log: tokens.logger },
    setup: ({ helper, audit, log }) =>
      new NetworkConfiguration(new NetworkManagerAdapter(helper), audit, log, {
        ...networkOptionsFromEnv(),
        ...options,
      }),
    routes: (r, _deps, network) => networkRoutes(r, () => network),
    stop: (_deps, network) => network.stop(),
  })
}

export default createNetworkPlugin()
