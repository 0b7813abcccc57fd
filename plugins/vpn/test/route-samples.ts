import type { RouteSamples } from '@hostd/sdk/testing'

// The route-table test runs without tailscaled (no socket at the default path on this machine): GET answers 200
// saying so; every action answers 503 (HOSTD_VPN_NOT_INSTALLED).
export const samples: RouteSamples = {
  'GET /api/vpn': async () => ({ url: '/api/vpn' }),
  'POST /api/vpn/settings': async () => ({ url: '/api/vpn/settings', body: { ssh: true }, ok: [503] }),
  'POST /api/vpn/login': async () => ({ url: '/api/vpn/login', ok: [503] }),
  'POST /api/vpn/logout': async () => ({ url: '/api/vpn/logout', ok: [503] }),
  'POST /api/vpn/connect': async () => ({ url: '/api/vpn/connect', body: { up: false }, ok: [503] }),
}
