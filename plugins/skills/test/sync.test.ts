import { randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import skills from '../src/index.ts'
import { auditActions, skillMd, snapshot } from './helpers.ts'

type Summary = { id: string; name: string; source: string; enabled: boolean; revision: number; description: string }

/** Synced skills from a real folder on disk, watched with chokidar (the default sync dir under the data dir). */
describe('skills: the sync directory', () => {
  let t: TestKernel
  let dir: string
  let outside: string
  beforeAll(async () => {
    t = await startTestKernel({ overNetwork: true, plugins: [skills] })
    dir = join(t.kernel.config.dataDir, 'skills', 'sync')
    outside = await mkdtemp(join(tmpdir(), 'skills-outside-'))
  })
  afterAll(async () => {
    await t.close()
    await rm(outside, { recursive: true, force: true })
  })

  const rescan = async () => (await t.inject({ method: 'POST', url: '/api/skills/sync', as: 'admin' })).json()
  const synced = async (): Promise<Summary[]> =>
    (await t.inject({ url: '/api/skills?source=synced', as: 'admin' })).json()
  async function writeSkill(folder: string, description: string, files: Record<string, string> = {}, name?: string) {
    await mkdir(join(dir, folder), { recursive: true })
    await writeFile(
      join(dir, folder, 'SKILL.md'),
      skillMd(name ? { name, description } : { description }, `Instructions for ${folder}\n`),
    )
    for (const [path, content] of Object.entries(files)) {
      await mkdir(join(dir, folder, path, '..'), { recursive: true })
      await writeFile(join(dir, folder, path), content)
    }
  }
  /** Polls until the condition holds (the watcher acts ~300 ms after the last change); fails after ~20 s. */
  async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
    for (let i = 0; i < 200; i++) {
      const v = await read()
      if (ok(v)) return v
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error('condition never held')
  }

  it('reports its directory: the documented default under the data dir', async () => {
    const status = (await t.inject({ url: '/api/skills/sync', as: 'admin' })).json()
    expect(status).toMatchObject({ dir, watching: true, errors: [] })
  })

  it('publishes a folder as a synced skill, read-only through the API', async () => {
    await writeSkill('report', 'Weekly report', { 'templates/report.md': '# Report' }, 'Weekly Report')
    const status = await rescan()
    expect(status.skills).toBeGreaterThanOrEqual(1)
    const s = (await synced()).find((x) => x.name === 'Weekly Report')!
    expect(s).toMatchObject({ source: 'synced', enabled: true, revision: 1, description: 'Weekly report' })
    const detail = (await t.inject({ url: `/api/skills/${s.id}`, as: 'admin' })).json()
    expect(detail.files).toEqual(['templates/report.md'])
    expect(detail.body).toBe('Instructions for report\n')

    const before = await snapshot(t)
    const put = await t.inject({
      method: 'PUT',
      url: `/api/skills/${s.id}`,
      as: 'admin',
      payload: { name: 'x', body: skillMd({ description: 'x' }), baseRevision: 1 },
    })
    expect(put.statusCode).toBe(409)
    expect(put.json()).toMatchObject({
      error: 'HOSTD_SKILLS_READ_ONLY',
      message: expect.stringContaining('duplicate it'),
    })
    expect((await t.inject({ method: 'DELETE', url: `/api/skills/${s.id}`, as: 'admin' })).statusCode).toBe(409)
    expect(
      (
        await t.inject({
          method: 'POST',
          url: `/api/skills/${s.id}/revisions/1/restore`,
          as: 'admin',
          payload: { baseRevision: 1 },
        })
      ).statusCode,
    ).toBe(409)
    const draft = await t.inject({
      method: 'POST',
      url: '/api/skills/drafts',
      as: 'admin',
      payload: {
        draftId: randomUUID(),
        name: 'x',
        body: skillMd({ description: 'x' }),
        targetSkillId: s.id,
        baseRevision: 1,
      },
    })
    expect(draft.statusCode).toBe(409)
    expect(await snapshot(t)).toEqual(before)

    // Duplicating makes an editable local copy with the same files.
    const dup = await t.inject({ method: 'POST', url: `/api/skills/${s.id}/duplicate`, as: 'admin' })
    expect(dup.json().skill).toMatchObject({ source: 'local', name: 'Weekly Report (copy)' })
    expect(
      (await t.inject({ url: `/api/skills/${dup.json().skill.id}/file?path=templates/report.md`, as: 'admin' })).body,
    ).toBe('# Report')
  })

  it('names a skill after its folder when the frontmatter has no name', async () => {
    await writeSkill('folder-named', 'no name in frontmatter')
    await rescan()
    expect((await synced()).map((s) => s.name)).toContain('folder-named')
  })

  it('follows file changes as new revisions (watched), keeping the enabled flag', async () => {
    await writeSkill('watched', 'version one', { 'a.txt': 'A' })
    const first = await until(synced, (l) => l.some((s) => s.name === 'watched'))
    const s = first.find((x) => x.name === 'watched')!
    expect(
      (
        await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: false } })
      ).json().enabled,
    ).toBe(false)

    await writeFile(join(dir, 'watched', 'a.txt'), 'A changed')
    const changed = await until(synced, (l) => l.find((x) => x.id === s.id)?.revision === 2)
    expect(changed.find((x) => x.id === s.id)).toMatchObject({ enabled: false, revision: 2 })
    expect((await t.inject({ url: `/api/skills/${s.id}/file?path=a.txt`, as: 'admin' })).body).toBe('A changed')
    // A rescan without changes publishes nothing.
    await rescan()
    expect((await synced()).find((x) => x.id === s.id)!.revision).toBe(2)

    await writeSkill('watched', 'version three', { 'a.txt': 'A changed' })
    const third = await until(synced, (l) => l.find((x) => x.id === s.id)?.revision === 3)
    expect(third.find((x) => x.id === s.id)).toMatchObject({ enabled: false, description: 'version three' })
  })

  it('keeps the last good revision of a folder that breaks a rule, and says why', async () => {
    await writeSkill('breaks', 'good')
    await rescan()
    const s = (await synced()).find((x) => x.name === 'breaks')!
    await writeFile(join(dir, 'breaks', 'SKILL.md'), '---\nname: [broken\n---\n')
    const status = await rescan()
    expect(status.errors).toEqual([{ folder: 'breaks', message: expect.stringContaining('not valid YAML') }])
    expect((await synced()).find((x) => x.id === s.id)).toMatchObject({ revision: 1, description: 'good' })
    await writeSkill('breaks', 'fixed')
    const fixed = await rescan()
    expect(fixed.errors).toEqual([])
    expect((await synced()).find((x) => x.id === s.id)).toMatchObject({ revision: 2, description: 'fixed' })
  })

  it('never reads through symbolic links out of the sync directory', async () => {
    await writeFile(join(outside, 'secret.txt'), 'secret')
    await writeSkill('linky', 'has a link')
    await symlink(join(outside, 'secret.txt'), join(dir, 'linky', 'secret.txt'))
    await symlink(outside, join(dir, 'linky', 'outside-dir'))
    await rescan()
    const s = (await synced()).find((x) => x.name === 'linky')!
    expect((await t.inject({ url: `/api/skills/${s.id}`, as: 'admin' })).json().files).toEqual([])
  })

  it('removes a synced skill when its folder goes, and audits sync changes', async () => {
    await writeSkill('temporary', 'short')
    await rescan()
    const s = (await synced()).find((x) => x.name === 'temporary')!
    await rm(join(dir, 'temporary'), { recursive: true })
    await until(synced, (l) => !l.some((x) => x.id === s.id))
    expect((await t.inject({ url: `/api/skills/${s.id}`, as: 'admin' })).statusCode).toBe(404)
    const actions = await until(
      async () => (await auditActions(t)).filter((e) => e.target === s.id).map((e) => e.action),
      (a) => a.length >= 2,
    )
    expect(actions).toEqual(['skill.sync.create', 'skill.sync.remove'])
  })

  it('applies the bundle limits to synced folders', async () => {
    await writeSkill('too-deep', 'deep', { [`${'d/'.repeat(17)}f.txt`]: 'x' })
    const status = await rescan()
    expect(status.errors).toContainEqual({ folder: 'too-deep', message: expect.stringContaining('16 levels') })
    expect((await synced()).some((x) => x.name === 'too-deep')).toBe(false)
  })
})
