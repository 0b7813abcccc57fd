import type { RouteSamples } from '@hostd/sdk/testing'

/** One sample request per route for test/route-table.test.ts. The stream sample ends after one event. */
export const samples: RouteSamples = {
  'GET /api/metrics': async () => ({ url: '/api/metrics' }),
  'GET /api/metrics/stream': async () => ({ url: '/api/metrics/stream?limit=1' }),
  'GET /api/metrics/history': async () => ({ url: '/api/metrics/history?range=1h' }),
  'GET /api/metrics/prometheus': async () => ({ url: '/api/metrics/prometheus' }),
  'GET /api/activity/processes': async () => ({ url: '/api/activity/processes' }),
  // The route-table test runs without a root helper: an admin gets 423 (and pid 1 would be refused anyway).
  'POST /api/activity/processes/:pid/signal': async () => ({
    url: '/api/activity/processes/1/signal',
    body: { signal: 'TERM' },
    ok: [423],
  }),
}
