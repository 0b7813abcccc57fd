import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createSkillsPlugin } from '../src/index.ts'
import { auditActions, b64, blobRefs, skillMd, snapshot } from './helpers.ts'

const HOUR = 3600_000

/**
 * Drafts over real HTTP and SQLite. The plugin's clock is a test seam (a number this test moves), so the
 * 24-hour expiry is tested without waiting a day; everything else is the real plugin.
 */
describe('skills: drafts', () => {
  let t: TestKernel
  let now = Date.UTC(2030, 0, 1)
  let alice: { token: string }
  let bob: { token: string }
  beforeAll(async () => {
    t = await startTestKernel({ overNetwork: true, plugins: [createSkillsPlugin({ hooks: { now: () => now } })] })
    alice = await t.login('admin', 'alice')
    bob = await t.login('admin', 'bob')
  })
  afterAll(() => t.close())

  const as = (who: { token: string }) => ({ token: who.token })
  const createDraft = (who: { token: string }, payload: Record<string, unknown>) =>
    t.inject({ method: 'POST', url: '/api/skills/drafts', as: as(who), payload })
  const stage = (who: { token: string }, id: string, path: string, content: string) =>
    t.inject({ method: 'PUT', url: `/api/skills/drafts/${id}/files`, as: as(who), payload: { path, content } })
  const publish = (who: { token: string }, id: string) =>
    t.inject({ method: 'POST', url: `/api/skills/drafts/${id}/publish`, as: as(who) })

  it('creates a new-skill draft; an exact retry returns the same draft with its staged files', async () => {
    const draftId = randomUUID()
    const body = { draftId, name: 'Drafted', body: skillMd({ description: 'from a draft' }) }
    const first = await createDraft(alice, body)
    expect(first.statusCode).toBe(201)
    const draft = first.json()
    expect(draft).toMatchObject({
      id: draftId,
      files: [],
      name: 'Drafted',
      publishedRevision: null,
      publishSkillId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    })
    expect(draft).not.toHaveProperty('targetSkillId')
    expect(draft).not.toHaveProperty('baseRevision')
    expect(Date.parse(draft.expiresAt) - Date.parse(draft.createdAt)).toBe(24 * HOUR)

    expect((await stage(alice, draftId, 'docs/readme.txt', b64('staged'))).json().files).toEqual(['docs/readme.txt'])
    const retry = await createDraft(alice, body)
    expect(retry.statusCode).toBe(200)
    expect(retry.json()).toEqual({ ...draft, files: ['docs/readme.txt'] })

    const published = await publish(alice, draftId)
    expect(published.statusCode).toBe(201)
    expect(published.json().skill).toMatchObject({
      id: draft.publishSkillId,
      name: 'Drafted',
      revision: 1,
      source: 'local',
    })
    expect(published.json().files).toEqual(['docs/readme.txt'])
    expect(
      (await t.inject({ url: `/api/skills/${draft.publishSkillId}/file?path=docs/readme.txt`, as: 'admin' })).body,
    ).toBe('staged')
    // A retried publish answers the same skill and publishes nothing more.
    const again = await publish(alice, draftId)
    expect(again.statusCode).toBe(200)
    expect(again.json().skill).toMatchObject({ id: draft.publishSkillId, revision: 1 })
    expect((await t.inject({ url: `/api/skills/drafts/${draftId}`, as: as(alice) })).json().publishedRevision).toBe(1)
    expect((await stage(alice, draftId, 'late.txt', b64('late'))).statusCode).toBe(409)
  })

  it('answers 409 when a draftId is reused with a changed body, and changes nothing', async () => {
    const draftId = randomUUID()
    expect(
      (await createDraft(alice, { draftId, name: 'Same', body: skillMd({ description: 'one' }) })).statusCode,
    ).toBe(201)
    const before = await snapshot(t)
    for (const changed of [
      { name: 'Same', body: skillMd({ description: 'two' }) },
      { name: 'Other', body: skillMd({ description: 'one' }) },
      { body: skillMd({ description: 'one', name: 'Same' }) },
    ]) {
      const res = await createDraft(alice, { draftId, ...changed })
      expect(res.statusCode).toBe(409)
      expect(res.json()).toMatchObject({
        error: 'HOSTD_SKILLS_DRAFT_CONFLICT',
        message: expect.stringContaining('different body'),
      })
    }
    expect(await snapshot(t)).toEqual(before)
  })

  it('answers 404 for a draftId that belongs to another user, on every draft route', async () => {
    const draftId = randomUUID()
    const body = { draftId, name: 'Alices', body: skillMd({ description: 'mine' }) }
    expect((await createDraft(alice, body)).statusCode).toBe(201)
    const before = await snapshot(t)
    const bobs = [
      await createDraft(bob, body),
      await t.inject({ url: `/api/skills/drafts/${draftId}`, as: as(bob) }),
      await stage(bob, draftId, 'x.txt', b64('x')),
      await t.inject({ method: 'DELETE', url: `/api/skills/drafts/${draftId}/files?path=x.txt`, as: as(bob) }),
      await t.inject({
        method: 'PATCH',
        url: `/api/skills/drafts/${draftId}`,
        as: as(bob),
        payload: { name: 'stolen' },
      }),
      await publish(bob, draftId),
      await t.inject({ method: 'DELETE', url: `/api/skills/drafts/${draftId}`, as: as(bob) }),
    ]
    for (const res of bobs) {
      expect(res.statusCode).toBe(404)
      expect(res.json().error).toBe('HOSTD_SKILLS_DRAFT_NOT_FOUND')
    }
    expect(await snapshot(t)).toEqual(before)
    expect(
      (await t.inject({ url: '/api/skills/drafts', as: as(bob) })).json().map((d: { id: string }) => d.id),
    ).not.toContain(draftId)
    expect(
      (await t.inject({ url: '/api/skills/drafts', as: as(alice) })).json().map((d: { id: string }) => d.id),
    ).toContain(draftId)
  })

  it('requires a lowercase UUID draftId (400)', async () => {
    for (const draftId of [randomUUID().toUpperCase(), 'draft-1', `${randomUUID()}x`]) {
      const res = await createDraft(alice, { draftId, name: 'x', body: skillMd({ description: 'x' }) })
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toBe('HOSTD_SKILLS_DRAFT_ID_INVALID')
    }
  })

  it('an edit draft inherits the files of its base revision; target and base never change; a stale publish is 409', async () => {
    const skill = (
      await t.inject({
        method: 'POST',
        url: '/api/skills',
        as: 'admin',
        payload: {
          name: 'Edited by draft',
          body: skillMd({ description: 'r1' }),
          files: [{ path: 'r1.txt', content: b64('one') }],
        },
      })
    ).json().skill
    await t.inject({
      method: 'PUT',
      url: `/api/skills/${skill.id}`,
      as: 'admin',
      payload: {
        name: 'Edited by draft',
        body: skillMd({ description: 'r2' }),
        baseRevision: 1,
        files: [{ path: 'r2.txt', content: b64('two') }],
      },
    })

    // A draft based on revision 1 inherits revision 1's files, and cannot publish over revision 2.
    const oldId = randomUUID()
    const old = await createDraft(alice, {
      draftId: oldId,
      name: 'Edited by draft',
      body: skillMd({ description: 'from r1' }),
      targetSkillId: skill.id,
      baseRevision: 1,
    })
    expect(old.statusCode).toBe(201)
    expect(old.json()).toMatchObject({
      targetSkillId: skill.id,
      baseRevision: 1,
      publishSkillId: skill.id,
      files: ['r1.txt'],
    })
    const before = await snapshot(t)
    const stale = await publish(alice, oldId)
    expect(stale.statusCode).toBe(409)
    expect(stale.json()).toMatchObject({
      error: 'HOSTD_SKILLS_STALE_REVISION',
      message: expect.stringMatching(/revision 1.*revision 2/),
    })
    expect(await snapshot(t)).toEqual(before)

    const draftId = randomUUID()
    const draft = (
      await createDraft(alice, {
        draftId,
        name: 'Edited by draft',
        body: skillMd({ description: 'r3 via draft' }),
        targetSkillId: skill.id,
        baseRevision: 2,
      })
    ).json()
    expect(draft.files).toEqual(['r2.txt'])
    for (const change of [{ targetSkillId: randomUUID() }, { baseRevision: 1 }, { targetSkillId: '' }]) {
      const res = await t.inject({
        method: 'PATCH',
        url: `/api/skills/drafts/${draftId}`,
        as: as(alice),
        payload: change,
      })
      expect(res.statusCode).toBe(409)
      expect(res.json().error).toBe('HOSTD_SKILLS_DRAFT_TARGET_FIXED')
    }
    const patched = await t.inject({
      method: 'PATCH',
      url: `/api/skills/drafts/${draftId}`,
      as: as(alice),
      payload: { body: skillMd({ description: 'r3 patched' }) },
    })
    expect(patched.json()).toMatchObject({
      targetSkillId: skill.id,
      baseRevision: 2,
      markdown: expect.stringContaining('r3 patched'),
    })
    await stage(alice, draftId, 'new.txt', b64('new'))
    const removed = await t.inject({
      method: 'DELETE',
      url: `/api/skills/drafts/${draftId}/files?path=r2.txt`,
      as: as(alice),
    })
    expect(removed.json().files).toEqual(['new.txt'])
    expect(
      (await t.inject({ method: 'DELETE', url: `/api/skills/drafts/${draftId}/files?path=r2.txt`, as: as(alice) }))
        .statusCode,
    ).toBe(404)

    const done = await publish(alice, draftId)
    expect(done.statusCode).toBe(200)
    expect(done.json().skill).toMatchObject({ id: skill.id, revision: 3, description: 'r3 patched' })
    expect(done.json().files).toEqual(['new.txt'])
    const revs = (await t.inject({ url: `/api/skills/${skill.id}/revisions`, as: 'admin' })).json()
    expect(revs[0]).toMatchObject({ revision: 3, origin: 'draft', createdBy: 'alice' })
  })

  it('refuses an edit draft of a missing skill or revision (404)', async () => {
    const res = await createDraft(alice, {
      draftId: randomUUID(),
      name: 'x',
      body: skillMd({ description: 'x' }),
      targetSkillId: randomUUID(),
      baseRevision: 1,
    })
    expect(res.statusCode).toBe(404)
    const skill = (
      await t.inject({
        method: 'POST',
        url: '/api/skills',
        as: 'admin',
        payload: { name: 'One revision', body: skillMd({ description: 'r1' }) },
      })
    ).json().skill
    const rev = await createDraft(alice, {
      draftId: randomUUID(),
      name: 'x',
      body: skillMd({ description: 'x' }),
      targetSkillId: skill.id,
      baseRevision: 5,
    })
    expect(rev.statusCode).toBe(404)
    const half = await createDraft(alice, {
      draftId: randomUUID(),
      name: 'x',
      body: skillMd({ description: 'x' }),
      targetSkillId: skill.id,
    })
    expect(half.statusCode).toBe(400)
    expect(half.json().error).toBe('HOSTD_SKILLS_DRAFT_TARGET_INCOMPLETE')
  })

  it('applies the bundle rules to staged files (400/413) and changes nothing', async () => {
    const draftId = randomUUID()
    await createDraft(alice, { draftId, name: 'Staging rules', body: skillMd({ description: 'x' }) })
    await stage(alice, draftId, 'Readme.txt', b64('r'))
    const before = await snapshot(t)
    const cases: [string, string, number, string][] = [
      ['../x', b64('x'), 400, 'HOSTD_SKILLS_PATH_INVALID'],
      ['SKILL.md', b64('x'), 400, 'HOSTD_SKILLS_PATH_INVALID'],
      ['readme.txt/inner', b64('x'), 400, 'HOSTD_SKILLS_PATH_INVALID'],
      ['a\\b', b64('x'), 400, 'HOSTD_SKILLS_PATH_INVALID'],
      ['ok.txt', 'not base64!', 400, 'HOSTD_SKILLS_BASE64_INVALID'],
      [`${'d/'.repeat(17)}f`, b64('x'), 400, 'HOSTD_SKILLS_TOO_DEEP'],
      ['big.bin', b64(Buffer.alloc(16 * 1024 * 1024 + 1)), 413, 'HOSTD_SKILLS_FILE_TOO_LARGE'],
    ]
    for (const [path, content, status, code] of cases) {
      const res = await stage(alice, draftId, path, content)
      expect(res.statusCode, path).toBe(status)
      expect(res.json().error).toBe(code)
    }
    expect(await snapshot(t)).toEqual(before)
    // Same path ignoring case replaces the staged file.
    expect((await stage(alice, draftId, 'README.TXT', b64('R'))).json().files).toEqual(['README.TXT'])
  })

  it('discards a draft and the blobs only it held', async () => {
    const draftId = randomUUID()
    await createDraft(alice, { draftId, name: 'Discard me', body: skillMd({ description: 'x' }) })
    await stage(alice, draftId, 'only-in-draft.bin', b64('content held by nothing else'))
    expect((await t.inject({ method: 'DELETE', url: `/api/skills/drafts/${draftId}`, as: as(alice) })).statusCode).toBe(
      204,
    )
    expect((await t.inject({ url: `/api/skills/drafts/${draftId}`, as: as(alice) })).statusCode).toBe(404)
    const { onDisk, referenced } = await blobRefs(t)
    expect(onDisk).toEqual(referenced)
  })

  it('expires a draft 24 hours after creation: gone for every route, its id reusable', async () => {
    const draftId = randomUUID()
    const body = { draftId, name: 'Short lived', body: skillMd({ description: 'x' }) }
    const draft = (await createDraft(alice, body)).json()
    await stage(alice, draftId, 'f.txt', b64('f'))
    now += 24 * HOUR - 1000
    expect((await t.inject({ url: `/api/skills/drafts/${draftId}`, as: as(alice) })).statusCode).toBe(200)
    now += 1000
    expect(Date.parse(draft.expiresAt)).toBe(now)
    expect((await t.inject({ url: `/api/skills/drafts/${draftId}`, as: as(alice) })).statusCode).toBe(404)
    expect((await publish(alice, draftId)).statusCode).toBe(404)
    expect((await stage(alice, draftId, 'g.txt', b64('g'))).statusCode).toBe(404)
    expect(
      (await t.inject({ url: '/api/skills/drafts', as: as(alice) })).json().map((d: { id: string }) => d.id),
    ).not.toContain(draftId)
    // The same id starts a fresh draft, without the old staged files.
    const fresh = await createDraft(alice, body)
    expect(fresh.statusCode).toBe(201)
    expect(fresh.json().files).toEqual([])
    expect(fresh.json().createdAt).not.toBe(draft.createdAt)
  })

  it('audits every draft change', async () => {
    const draftId = randomUUID()
    await createDraft(alice, { draftId, name: 'Audited draft', body: skillMd({ description: 'x' }) })
    await stage(alice, draftId, 'a.txt', b64('a'))
    await t.inject({ method: 'DELETE', url: `/api/skills/drafts/${draftId}/files?path=a.txt`, as: as(alice) })
    await t.inject({
      method: 'PATCH',
      url: `/api/skills/drafts/${draftId}`,
      as: as(alice),
      payload: { name: 'Audited draft 2' },
    })
    const published = (await publish(alice, draftId)).json()
    const actions = (await auditActions(t))
      .filter((e) => e.target === draftId || e.target === published.skill.id)
      .map((e) => e.action)
    expect(actions).toEqual([
      'skill.draft.create',
      'skill.draft.stage',
      'skill.draft.unstage',
      'skill.draft.update',
      'skill.draft.publish',
    ])
  })
})
