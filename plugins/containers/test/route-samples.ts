/**
 * One sample request per route for test/route-table.test.ts. That test sets no DOCKER_HOST and starts no engine,
 * so on a machine without one the engine's action routes answer 503 (listed in `ok`); list routes answer 200.
 * The registry search cannot reach the public index from a machine without network: 503 there too.
 */
import type { RouteSamples } from '@hostd/sdk/testing'

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64')
const ENGINE = [503, 404]
let n = 0

export const samples: RouteSamples = {
  'GET /api/system/engine': async () => ({ url: '/api/system/engine' }),
  'GET /api/containers': async () => ({ url: '/api/containers' }),
  'GET /api/containers/:id': async () => ({ url: '/api/containers/sample', ok: ENGINE }),
  'GET /api/containers/:id/stats': async () => ({ url: '/api/containers/sample/stats', ok: ENGINE }),
  'GET /api/containers/:id/logs': async () => ({ url: '/api/containers/sample/logs?tail=10', ok: ENGINE }),
  'POST /api/containers': async () => ({
    url: '/api/containers',
    body: { image: 'hostd-sample/none:1', command: 'true' },
    ok: [503, 502],
  }),
  'POST /api/containers/:id/start': async () => ({ url: '/api/containers/sample/start', ok: ENGINE }),
  'POST /api/containers/:id/stop': async () => ({ url: '/api/containers/sample/stop', ok: ENGINE }),
  'POST /api/containers/:id/restart': async () => ({ url: '/api/containers/sample/restart', ok: ENGINE }),
  'POST /api/containers/:id/kill': async () => ({ url: '/api/containers/sample/kill', ok: ENGINE }),
  'POST /api/containers/:id/remove': async () => ({
    url: '/api/containers/sample/remove',
    body: { force: true },
    ok: ENGINE,
  }),
  'POST /api/containers/:id/recreate': async () => ({
    url: '/api/containers/sample/recreate',
    body: { restartPolicy: 'unless-stopped' },
    ok: ENGINE,
  }),
  'POST /api/containers/:id/autostart': async () => ({
    url: '/api/containers/sample/autostart',
    body: { enabled: true },
    ok: ENGINE,
  }),
  'GET /api/images': async () => ({ url: '/api/images' }),
  'POST /api/images/pull': async () => ({
    url: '/api/images/pull',
    body: { reference: 'hostd-sample/none:1' },
    ok: [503, 502],
  }),
  'POST /api/images/delete': async () => ({
    url: '/api/images/delete',
    body: { reference: 'hostd-sample/none:1' },
    ok: ENGINE,
  }),
  'GET /api/networks': async () => ({ url: '/api/networks' }),
  'POST /api/networks': async () => ({ url: '/api/networks', body: { name: `hostd-sample-${++n}` }, ok: [503] }),
  'POST /api/networks/:name/delete': async () => ({ url: '/api/networks/hostd-sample-none/delete', ok: ENGINE }),
  'GET /api/registry/search': async () => ({ url: '/api/registry/search?q=busybox', ok: [503] }),
  'GET /api/icons/container/:name': async (c) => {
    await c.t.inject({ method: 'PUT', url: '/api/icons/container/sample-icon', as: 'admin', payload: { data: PNG } })
    return { url: '/api/icons/container/sample-icon' }
  },
  'PUT /api/icons/container/:name': async () => ({ url: '/api/icons/container/sample-icon', body: { data: PNG } }),
  'DELETE /api/icons/container/:name': async (c) => {
    await c.t.inject({ method: 'PUT', url: '/api/icons/container/sample-gone', as: 'admin', payload: { data: PNG } })
    return { url: '/api/icons/container/sample-gone' }
  },
}
