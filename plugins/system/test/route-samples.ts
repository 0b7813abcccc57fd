import type { RouteSamples } from '@hostd/sdk/testing'

// The route-table test runs without a root helper: routes that need it answer 423 to an allowed role.
const gated = (url: string, body?: unknown) => async () => ({ url, ...(body === undefined ? {} : { body }), ok: [423] })
export const samples: RouteSamples = {
  'GET /api/system/info': async () => ({ url: '/api/system/info' }),
  'GET /api/system/network': async () => ({ url: '/api/system/network' }),
  'GET /api/system/settings': async () => ({ url: '/api/system/settings' }),
  'GET /api/system/status': async () => ({ url: '/api/system/status' }),
  'GET /api/system/timezones': async () => ({ url: '/api/system/timezones' }),
  'POST /api/system/power/sleep': gated('/api/system/power/sleep'),
  'POST /api/system/power/display-sleep': gated('/api/system/power/display-sleep'),
  'POST /api/system/power/restart': gated('/api/system/power/restart'),
  'POST /api/system/power/shutdown': gated('/api/system/power/shutdown'),
  'GET /api/system/privileged': async () => ({ url: '/api/system/privileged' }),
  'POST /api/system/privileged/:key': gated('/api/system/privileged/ssh', { choice: 'on' }),
  'GET /api/updates': async () => ({ url: '/api/updates' }),
  'POST /api/updates/install': gated('/api/updates/install'),
}
