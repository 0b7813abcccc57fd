/** One sample request per route for test/route-table.test.ts. */
import type { RouteSamples } from '@hostd/sdk/testing'
import { png } from './images.ts'

export const samples: RouteSamples = {
  'GET /api/branding': async () => ({ url: '/api/branding' }),
  'PUT /api/branding': async () => ({ url: '/api/branding', body: { headline: 'Route table' } }),
  'GET /api/branding/background': async (c) => {
    await c.t.inject({
      method: 'PUT',
      url: '/api/branding/background',
      as: 'admin',
      headers: { 'content-type': 'image/png' },
      payload: png(),
    })
    return { url: '/api/branding/background' }
  },
  'PUT /api/branding/background': async () => ({
    url: '/api/branding/background',
    raw: png(),
    contentType: 'image/png',
  }),
  'DELETE /api/branding/background': async () => ({ url: '/api/branding/background' }),
}
