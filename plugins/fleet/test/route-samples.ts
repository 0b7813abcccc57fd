/**
 * One sample request per route for test/route-table.test.ts. That test runs the default plugin in no fleet (no
 * HOSTD_FLEET_NATS_URL): the member list is empty, remote calls and join codes answer 409 (not joined), a join with a
 * malformed code 400.
 */
import type { RouteSamples } from '@hostd/sdk/testing'

const forwarded = async () => ({ url: '/api/hosts/b/api/containers', body: {}, ok: [409] })

export const samples: RouteSamples = {
  'GET /api/hosts': async () => ({ url: '/api/hosts' }),
  'GET /api/hosts/:host/*': async () => ({ url: '/api/hosts/b/api/containers', ok: [409] }),
  'POST /api/hosts/:host/*': forwarded,
  'PUT /api/hosts/:host/*': forwarded,
  'PATCH /api/hosts/:host/*': forwarded,
  'DELETE /api/hosts/:host/*': async () => ({ url: '/api/hosts/b/api/containers/x', ok: [409] }),
  'GET /api/fleet': async () => ({ url: '/api/fleet' }),
  'POST /api/fleet/join-codes': async () => ({ url: '/api/fleet/join-codes', body: { host: 'newhost' }, ok: [409] }),
  'POST /api/fleet/join': async () => ({ url: '/api/fleet/join', body: { code: 'not-a-code' }, ok: [400] }),
  'GET /api/fleet/roles': async () => ({ url: '/api/fleet/roles' }),
  'PUT /api/fleet/roles': async () => ({ url: '/api/fleet/roles', body: { rules: [{ who: '*@b', role: 'viewer' }] } }),
}
