import type { RouteSamples } from '@hostd/sdk/testing'

// The route-table test reads the machine's own dpkg database and apt lists (reads only; nothing is installed).
export const samples: RouteSamples = {
  'GET /api/packages': async () => ({ url: '/api/packages' }),
  'GET /api/packages/search': async () => ({ url: '/api/packages/search?q=bash' }),
  // apt is Priority: required on every Debian machine: refused (409) before the root helper is asked.
  'GET /api/packages/removal': async () => ({ url: '/api/packages/removal?name=apt', ok: [409] }),
}
