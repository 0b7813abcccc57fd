import type { RouteSamples } from '@hostd/sdk/testing'

// The route-table test runs without a root helper: every network route but the pending one is gated, so an allowed role gets 423.
const svc = encodeURIComponent('Wired connection 1')
export const samples: RouteSamples = {
  'GET /api/system/network/services': async () => ({ url: '/api/system/network/services', ok: [423] }),
  'POST /api/system/network/services/:service/dns': async () => ({
    url: `/api/system/network/services/${svc}/dns`,
    body: { servers: ['192.0.2.53'] },
    ok: [423],
  }),
  'POST /api/system/network/services/:service/ipv4': async () => ({
    url: `/api/system/network/services/${svc}/ipv4`,
    body: { dhcp: true },
    ok: [423],
  }),
  'POST /api/system/network/services/:service/enabled': async () => ({
    url: `/api/system/network/services/${svc}/enabled`,
    body: { enabled: true },
    ok: [423],
  }),
  'POST /api/system/network/services/:service/confirm': async () => ({
    url: `/api/system/network/services/${svc}/confirm`,
    ok: [423],
  }),
  'POST /api/system/network/services/:service/revert': async () => ({
    url: `/api/system/network/services/${svc}/revert`,
    ok: [423],
  }),
  'GET /api/system/network/pending': async () => ({ url: '/api/system/network/pending', ok: [200] }),
}
