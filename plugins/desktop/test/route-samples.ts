/**
 * One sample request per route for test/route-table.test.ts. No VNC server runs there (the default target,
 * 127.0.0.1:5900): the status answers 200 with `available: false`. The `/api/desktop` socket is tested in desktop.test.ts.
 */
import type { RouteSamples } from '@hostd/sdk/testing'

export const samples: RouteSamples = {
  'GET /api/system/desktop': async () => ({ url: '/api/system/desktop' }),
}
