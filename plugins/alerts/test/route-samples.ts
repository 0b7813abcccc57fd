/**
 * One sample request per route for test/route-table.test.ts (the default plugin: no metrics or engine events
 * needed). Channels point at a closed loopback port: a test message answers 200 with the reason it failed.
 */
import type { RouteSampleContext, RouteSamples } from '@hostd/sdk/testing'

async function post(c: RouteSampleContext, url: string, payload: Record<string, unknown>): Promise<string> {
  const res = await c.t.inject({ method: 'POST', url, as: 'admin', payload })
  return res.json().id
}
const rule = (c: RouteSampleContext) =>
  post(c, '/api/alerts/rules', { name: 'Sample', source: 'metric', metric: 'cpu.usage', threshold: 99 })
const channel = (c: RouteSampleContext) =>
  post(c, '/api/alerts/channels', { name: 'Sample', type: 'webhook', options: { url: 'http://127.0.0.1:9/hook' } })
const silence = (c: RouteSampleContext) =>
  post(c, '/api/alerts/silences', { target: 'sample', endsAt: new Date(Date.now() + 3600_000).toISOString() })

export const samples: RouteSamples = {
  'GET /api/alerts': async () => ({ url: '/api/alerts' }),
  'GET /api/alerts/badge': async () => ({ url: '/api/alerts/badge' }),
  'GET /api/alerts/history': async () => ({ url: '/api/alerts/history?limit=5' }),
  'GET /api/alerts/prometheus': async () => ({ url: '/api/alerts/prometheus' }),
  'GET /api/alerts/rules': async () => ({ url: '/api/alerts/rules' }),
  'POST /api/alerts/rules': async () => ({
    url: '/api/alerts/rules',
    body: { name: 'Made', source: 'container', condition: 'unhealthy' },
  }),
  'PUT /api/alerts/rules/:id': async (c) => ({ url: `/api/alerts/rules/${await rule(c)}`, body: { threshold: 98 } }),
  'DELETE /api/alerts/rules/:id': async (c) => ({ url: `/api/alerts/rules/${await rule(c)}` }),
  'GET /api/alerts/channels': async () => ({ url: '/api/alerts/channels' }),
  'POST /api/alerts/channels': async () => ({
    url: '/api/alerts/channels',
    body: { name: 'Made', type: 'ntfy', options: { url: 'http://127.0.0.1:9/topic' } },
  }),
  'PUT /api/alerts/channels/:id': async (c) => ({
    url: `/api/alerts/channels/${await channel(c)}`,
    body: { name: 'Renamed' },
  }),
  'DELETE /api/alerts/channels/:id': async (c) => ({ url: `/api/alerts/channels/${await channel(c)}` }),
  'POST /api/alerts/channels/:id/test': async (c) => ({ url: `/api/alerts/channels/${await channel(c)}/test` }),
  'GET /api/alerts/deliveries': async () => ({ url: '/api/alerts/deliveries' }),
  'GET /api/alerts/silences': async () => ({ url: '/api/alerts/silences' }),
  'POST /api/alerts/silences': async () => ({
    url: '/api/alerts/silences',
    body: { target: 'made', endsAt: new Date(Date.now() + 3600_000).toISOString() },
  }),
  'POST /api/alerts/silences/:id/expire': async (c) => ({ url: `/api/alerts/silences/${await silence(c)}/expire` }),
  'GET /api/alerts/settings': async () => ({ url: '/api/alerts/settings' }),
  'PUT /api/alerts/settings': async () => ({
    url: '/api/alerts/settings',
    body: { externalUrl: 'https://hostd.test:4443' },
  }),
}
