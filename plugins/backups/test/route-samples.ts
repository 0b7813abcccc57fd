/**
 * One sample request per route for test/route-table.test.ts (every route is admins only). Repositories are local
 * folders in a temporary folder, made once per test kernel (restic init takes a second); snapshot routes are
 * asked about a snapshot that does not exist (404 is their answer then).
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RouteSampleContext, RouteSamples } from '@hostd/sdk/testing'

const made = new WeakMap<object, Promise<string>>()
const toDelete = new WeakMap<object, Promise<string>>()
const NO_SNAPSHOT = 'deadbeef'

async function makeRepository(c: RouteSampleContext): Promise<string> {
  const res = await c.t.inject({
    method: 'POST',
    url: '/api/backups/repositories',
    as: 'admin',
    payload: {
      name: `sample-${randomBytes(4).toString('hex')}`,
      location: { kind: 'local', path: join(await mkdtemp(join(tmpdir(), 'hostd-backups-samples-')), 'repo') },
    },
  })
  if (res.statusCode !== 201) throw new Error(`sample repository: ${res.body}`)
  return res.json().repository.id
}

/** One repository shared by the samples of a kernel (and one for the delete sample, which only an admin reaches). */
function repository(c: RouteSampleContext, cache = made): Promise<string> {
  let id = cache.get(c.t)
  if (!id) {
    id = makeRepository(c)
    cache.set(c.t, id)
  }
  return id
}

async function job(c: RouteSampleContext): Promise<string> {
  const res = await c.t.inject({
    method: 'POST',
    url: '/api/backups/jobs',
    as: 'admin',
    payload: {
      name: `sample-${randomBytes(4).toString('hex')}`,
      repositoryId: await repository(c),
      intervalMinutes: null,
    },
  })
  if (res.statusCode !== 201) throw new Error(`sample job: ${res.body}`)
  return res.json().id
}

export const samples: RouteSamples = {
  'GET /api/backups/repositories': async () => ({ url: '/api/backups/repositories' }),
  'POST /api/backups/repositories': async () => ({
    url: '/api/backups/repositories',
    body: {
      name: `made-${randomBytes(4).toString('hex')}`,
      location: { kind: 'local', path: join(await mkdtemp(join(tmpdir(), 'hostd-backups-samples-')), 'repo') },
    },
  }),
  'POST /api/backups/repositories/:id/delete': async (c) => ({
    url: `/api/backups/repositories/${await repository(c, toDelete)}/delete`,
  }),
  'GET /api/backups/ssh-key': async () => ({ url: '/api/backups/ssh-key' }),
  'GET /api/backups/repositories/:id/snapshots': async (c) => ({
    url: `/api/backups/repositories/${await repository(c)}/snapshots`,
  }),
  'GET /api/backups/repositories/:id/snapshots/:snapshot/files': async (c) => ({
    url: `/api/backups/repositories/${await repository(c)}/snapshots/${NO_SNAPSHOT}/files`,
    ok: [404],
  }),
  'POST /api/backups/repositories/:id/snapshots/:snapshot/restore': async (c) => ({
    url: `/api/backups/repositories/${await repository(c)}/snapshots/${NO_SNAPSHOT}/restore`,
    body: { paths: ['/etc/hostname'], target: { root: 'files', path: 'restored' } },
    ok: [404],
  }),
  'POST /api/backups/repositories/:id/snapshots/:snapshot/restore-container': async (c) => ({
    url: `/api/backups/repositories/${await repository(c)}/snapshots/${NO_SNAPSHOT}/restore-container`,
    body: { name: 'nothing-here' },
    // 503 without the containers plugin's engine; 404: no such snapshot.
    ok: [404, 503],
  }),
  'GET /api/backups/jobs': async () => ({ url: '/api/backups/jobs' }),
  'POST /api/backups/jobs': async (c) => ({
    url: '/api/backups/jobs',
    body: { name: `made-${randomBytes(4).toString('hex')}`, repositoryId: await repository(c), intervalMinutes: null },
  }),
  'GET /api/backups/jobs/:id': async (c) => ({ url: `/api/backups/jobs/${await job(c)}` }),
  'POST /api/backups/jobs/:id/update': async (c) => ({
    url: `/api/backups/jobs/${await job(c)}/update`,
    body: { intervalMinutes: 120 },
  }),
  'POST /api/backups/jobs/:id/delete': async (c) => ({ url: `/api/backups/jobs/${await job(c)}/delete` }),
  'POST /api/backups/jobs/:id/run': async (c) => ({ url: `/api/backups/jobs/${await job(c)}/run` }),
  'GET /api/backups/containers': async () => ({ url: '/api/backups/containers' }),
}
