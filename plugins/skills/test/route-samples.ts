import { randomUUID } from 'node:crypto'
import type { RouteSampleContext, RouteSamples } from '@hostd/sdk/testing'

/** One repeatable sample request per skills route, for test/route-table.test.ts (every route needs admin). */
let n = 0
const md = (description: string) => `---\ndescription: ${JSON.stringify(description)}\n---\nSteps.\n`
const b64 = (s: string) => Buffer.from(s).toString('base64')

async function newSkill(c: RouteSampleContext): Promise<string> {
  const res = await c.t.inject({
    method: 'POST',
    url: '/api/skills',
    as: 'admin',
    payload: { name: `sample ${++n}`, body: md('sample'), files: [{ path: 'f.txt', content: b64('f') }] },
  })
  return res.json().skill.id
}

/** Drafts belong to their creator: the route table's admin must own the sample draft. */
async function tableAdminToken(c: RouteSampleContext): Promise<string> {
  const user = await c.t.kernel.services.users.findByUsername('table-admin')
  return user ? c.t.kernel.services.sessions.create(user.id, '127.0.0.1') : (await c.t.login('admin')).token
}

async function newDraft(c: RouteSampleContext, staged = false): Promise<string> {
  const token = await tableAdminToken(c)
  const draftId = randomUUID()
  await c.t.inject({
    method: 'POST',
    url: '/api/skills/drafts',
    as: { token },
    payload: { draftId, name: `draft sample ${++n}`, body: md('draft') },
  })
  if (staged)
    await c.t.inject({
      method: 'PUT',
      url: `/api/skills/drafts/${draftId}/files`,
      as: { token },
      payload: { path: 'staged.txt', content: b64('s') },
    })
  return draftId
}

export const samples: RouteSamples = {
  'GET /api/skills': async () => ({ url: '/api/skills?source=local' }),
  'POST /api/skills': async () => ({
    url: '/api/skills',
    body: { name: `created ${++n}`, body: md('created'), files: [{ path: 'a/b.txt', content: b64('b') }] },
  }),
  'GET /api/skills/sync': async () => ({ url: '/api/skills/sync' }),
  'POST /api/skills/sync': async () => ({ url: '/api/skills/sync' }),
  'GET /api/skills/:id': async (c) => ({ url: `/api/skills/${await newSkill(c)}` }),
  'PUT /api/skills/:id': async (c) => ({
    url: `/api/skills/${await newSkill(c)}`,
    body: { name: `replaced ${++n}`, body: md('replaced'), baseRevision: 1 },
  }),
  'DELETE /api/skills/:id': async (c) => ({ url: `/api/skills/${await newSkill(c)}` }),
  'POST /api/skills/:id/duplicate': async (c) => ({ url: `/api/skills/${await newSkill(c)}/duplicate` }),
  'POST /api/skills/:id/enabled': async (c) => ({
    url: `/api/skills/${await newSkill(c)}/enabled`,
    body: { enabled: false },
  }),
  'GET /api/skills/:id/revisions': async (c) => ({ url: `/api/skills/${await newSkill(c)}/revisions` }),
  'GET /api/skills/:id/revisions/:revision': async (c) => ({ url: `/api/skills/${await newSkill(c)}/revisions/1` }),
  'POST /api/skills/:id/revisions/:revision/restore': async (c) => ({
    url: `/api/skills/${await newSkill(c)}/revisions/1/restore`,
    body: { baseRevision: 1 },
  }),
  'GET /api/skills/:id/file': async (c) => ({ url: `/api/skills/${await newSkill(c)}/file?path=f.txt` }),
  'GET /api/skills/:id/export': async (c) => ({ url: `/api/skills/${await newSkill(c)}/export` }),
  'GET /api/skills/drafts': async () => ({ url: '/api/skills/drafts' }),
  'POST /api/skills/drafts': async () => ({
    url: '/api/skills/drafts',
    body: { draftId: randomUUID(), name: `new draft ${++n}`, body: md('draft') },
  }),
  'GET /api/skills/drafts/:draftId': async (c) => ({ url: `/api/skills/drafts/${await newDraft(c)}` }),
  'PATCH /api/skills/drafts/:draftId': async (c) => ({
    url: `/api/skills/drafts/${await newDraft(c)}`,
    body: { body: md('patched') },
  }),
  'PUT /api/skills/drafts/:draftId/files': async (c) => ({
    url: `/api/skills/drafts/${await newDraft(c)}/files`,
    body: { path: 'x/y.txt', content: b64('y') },
  }),
  'DELETE /api/skills/drafts/:draftId/files': async (c) => ({
    url: `/api/skills/drafts/${await newDraft(c, true)}/files?path=staged.txt`,
  }),
  'POST /api/skills/drafts/:draftId/publish': async (c) => ({ url: `/api/skills/drafts/${await newDraft(c)}/publish` }),
  'DELETE /api/skills/drafts/:draftId': async (c) => ({ url: `/api/skills/drafts/${await newDraft(c)}` }),
}
