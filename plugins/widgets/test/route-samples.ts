/**
 * One sample request per route for test/route-table.test.ts. That test runs the default plugin, with no
 * HOSTD_WIDGETS_USER: runs answer 503 (no account), everything else works.
 */
import type { RouteSampleContext, RouteSamples } from '@hostd/sdk/testing'

async function widget(c: RouteSampleContext): Promise<string> {
  const res = await c.t.inject({
    method: 'POST',
    url: '/api/bento/widgets',
    as: 'admin',
    payload: { title: 'Sample', type: 'text', script: 'echo sample', refreshSeconds: 86400 },
  })
  return res.json().id
}

export const samples: RouteSamples = {
  'GET /api/bento/widgets': async () => ({ url: '/api/bento/widgets' }),
  'POST /api/bento/widgets': async () => ({
    url: '/api/bento/widgets',
    body: { title: 'Made', type: 'stat', script: 'echo 1' },
  }),
  'POST /api/bento/widgets/:id/update': async (c) => ({
    url: `/api/bento/widgets/${await widget(c)}/update`,
    body: { title: 'Changed' },
  }),
  'POST /api/bento/widgets/:id/delete': async (c) => ({ url: `/api/bento/widgets/${await widget(c)}/delete` }),
  'POST /api/bento/widgets/:id/run': async (c) => ({ url: `/api/bento/widgets/${await widget(c)}/run`, ok: [503] }),
}
