/**
 * One sample request per route for test/route-table.test.ts. That test starts no engine (and no DOCKER_HOST): a
 * deploy answers 503 (no engine) once its files and role rules pass (200 where an engine holds the image); the lists and lifecycle actions find no
 * containers; an adoption finds no project (404).
 */
import type { RouteSampleContext, RouteSamples } from '@hostd/sdk/testing'

let n = 0
// In the route-table test there is no engine, so a deploy answers 503; the malformed-input test names an image of its
// local registry (there is no network here), which a deploy and an update then pull.
const image = () => process.env.HOSTD_TEST_STACK_IMAGE ?? 'hostd-test/busybox:1'
const compose = () => `services:\n  app:\n    image: ${image()}\n`

/** A fresh stack made as an admin, so each role's call has its own. */
async function made(c: RouteSampleContext): Promise<string> {
  const name = `sample-${process.pid}-${++n}`
  await c.t.inject({ method: 'POST', url: '/api/stacks', as: 'admin', payload: { name, compose: compose() } })
  return name
}

export const samples: RouteSamples = {
  'GET /api/stacks': async () => ({ url: '/api/stacks' }),
  'POST /api/stacks': async () => ({
    url: '/api/stacks',
    body: { name: `sample-new-${process.pid}-${++n}`, compose: compose(), env: 'A=1\n' },
  }),
  'POST /api/stacks/validate': async () => ({
    url: '/api/stacks/validate',
    body: { name: 'sample', compose: compose() },
  }),
  'POST /api/stacks/adopt': async () => ({ url: '/api/stacks/adopt', body: { project: 'sample-none' }, ok: [404] }),
  'GET /api/stacks/:name': async (c) => ({ url: `/api/stacks/${await made(c)}` }),
  'POST /api/stacks/:name/files': async (c) => ({ url: `/api/stacks/${await made(c)}/files`, body: { env: 'B=2\n' } }),
  'POST /api/stacks/:name/deploy': async (c) => ({
    url: `/api/stacks/${await made(c)}/deploy`,
    body: {},
    ok: [503, 200],
  }),
  'POST /api/stacks/:name/update': async (c) => ({
    url: `/api/stacks/${await made(c)}/update`,
    body: {},
    ok: [503, 200],
  }),
  'POST /api/stacks/:name/start': async (c) => ({ url: `/api/stacks/${await made(c)}/start` }),
  'POST /api/stacks/:name/stop': async (c) => ({ url: `/api/stacks/${await made(c)}/stop` }),
  'POST /api/stacks/:name/restart': async (c) => ({ url: `/api/stacks/${await made(c)}/restart` }),
  'POST /api/stacks/:name/down': async (c) => ({ url: `/api/stacks/${await made(c)}/down`, body: {} }),
  'POST /api/stacks/:name/delete': async (c) => ({ url: `/api/stacks/${await made(c)}/delete` }),
  'POST /api/stacks/:name/services/:service/:action': async (c) => ({
    url: `/api/stacks/${await made(c)}/services/app/restart`,
    ok: [404],
  }),
}
