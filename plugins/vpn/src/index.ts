import { definePlugin, tokens } from '@hostd/sdk'
import { LocalApi } from './localapi.ts'
import { vpnRoutes } from './routes.ts'
import { Vpn, type VpnOptions } from './service.ts'

export type { VpnOptions } from './service.ts'

/** HOSTD_TAILSCALE_SOCKET (default /var/run/tailscale/tailscaled.sock) and HOSTD_VPN_LOGIN_TIMEOUT_SECONDS (default 30). */
export function vpnOptionsFromEnv(env: Record<string, string | undefined> = process.env): VpnOptions {
  const seconds = Number(env.HOSTD_VPN_LOGIN_TIMEOUT_SECONDS ?? 30)
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600)
    throw new Error('HOSTD_VPN_LOGIN_TIMEOUT_SECONDS must be 1..600')
  return {
    socketPath: env.HOSTD_TAILSCALE_SOCKET || '/var/run/tailscale/tailscaled.sock',
    loginTimeoutMs: seconds * 1000,
  }
}

/** The VPN plugin; `options` override the environment (tests point it at a stand-in LocalAPI). */
export function createVpnPlugin(options: Partial<VpnOptions> = {}) {
  return definePlugin({
    id: 'vpn',
    version: '1.0.0',
    kernel: '^1.1.0',
    description:
      "The VPN client: Tailscale's state, peers and settings, login, logout and connect, through tailscaled's LocalAPI.",
    ui: {
      pages: [
        { path: '/vpn', title: 'VPN', icon: 'shield', role: 'viewer', module: 'ui/vpn.tsx', element: 'vpn-page' },
      ],
    },
    deps: { audit: tokens.audit, log: tokens.logger },
    setup: ({ audit, log }) => {
      const { socketPath, loginTimeoutMs } = { ...vpnOptionsFromEnv(), ...options }
      return new Vpn(new LocalApi(socketPath), audit, log, loginTimeoutMs)
    },
    routes: (r, _deps, vpn) => vpnRoutes(r, vpn),
    stop: (_deps, vpn) => vpn.stop(),
  })
}

export default createVpnPlugin()
