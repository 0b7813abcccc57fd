/**
 * One sample request per route for test/route-table.test.ts. That test starts no engine (and no DOCKER_HOST), so
 * an install answers 503 (no engine; 502 where an engine exists but cannot reach the public registry) and an
 * uninstall 404 (no catalog container); reading and source changes work.
 */
import type { RouteSamples } from '@hostd/sdk/testing'

let n = 0

export const samples: RouteSamples = {
  'GET /api/catalog': async () => ({ url: '/api/catalog' }),
  'GET /api/catalog/sources': async () => ({ url: '/api/catalog/sources' }),
  'POST /api/catalog/sources': async () => ({
    url: '/api/catalog/sources',
    body: { kind: 'directory', location: `/nonexistent/hostd-sample-${++n}` },
  }),
  'POST /api/catalog/sources/:id/refresh': async () => ({ url: '/api/catalog/sources/builtin/refresh' }),
  'POST /api/catalog/sources/:id/remove': async (c) => {
    const id = `sample-${++n}`
    await c.t.inject({
      method: 'POST',
      url: '/api/catalog/sources',
      as: 'admin',
      payload: { kind: 'directory', location: `/nonexistent/${id}`, id },
    })
    return { url: `/api/catalog/sources/${id}/remove` }
  },
  'POST /api/catalog/install': async () => ({
    url: '/api/catalog/install',
    body: { appId: 'uptime-kuma', values: { webPort: 3001 } },
    ok: [503, 502],
  }),
  'POST /api/catalog/uninstall': async () => ({
    url: '/api/catalog/uninstall',
    body: { container: 'sample' },
    ok: [404],
  }),
}
