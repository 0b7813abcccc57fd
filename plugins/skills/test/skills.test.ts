import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { crc32 } from 'node:zlib'
import { unzipSync } from 'fflate'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import skills from '../src/index.ts'
import { auditActions, b64, blobRefs, skillMd, snapshot } from './helpers.ts'

/** Reads a zip's central directory (no zip64: bundles are far below 4 GiB). */
function centralDirectory(zip: Buffer): { name: string; crc: number; size: number; method: number }[] {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]))
  const count = zip.readUInt16LE(eocd + 10)
  let at = zip.readUInt32LE(eocd + 16)
  const out = []
  for (let i = 0; i < count; i++) {
    expect(zip.readUInt32LE(at)).toBe(0x02014b50)
    const nameLen = zip.readUInt16LE(at + 28)
    out.push({
      method: zip.readUInt16LE(at + 10),
      crc: zip.readUInt32LE(at + 16),
      size: zip.readUInt32LE(at + 24),
      name: zip.subarray(at + 46, at + 46 + nameLen).toString(),
    })
    at += 46 + nameLen + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32)
  }
  return out
}

/** Local skills over real HTTP routes, a real SQLite database and real files on disk. */
describe('skills: local skills, revisions, export', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ overNetwork: true, plugins: [skills] })
  })
  afterAll(() => t.close())

  const create = (payload: unknown) =>
    t.inject({ method: 'POST', url: '/api/skills', as: 'admin', payload: payload as object })
  const get = (id: string) => t.inject({ url: `/api/skills/${id}`, as: 'admin' })

  it('creates a local skill and answers Skill detail with every summary field', async () => {
    const body = skillMd(
      { name: 'ignored', description: 'Ship a release', icon: 'rocket', category: 'Ops', tags: ['release', 'ci'] },
      '# Release\n\nRun it.\n',
    )
    const res = await create({
      name: 'Release',
      body,
      files: [
        { path: 'scripts/release.sh', content: b64('#!/bin/sh\necho release\n') },
        { path: 'notes.txt', content: b64('n') },
      ],
    })
    expect(res.statusCode).toBe(201)
    const detail = res.json()
    expect(detail.skill).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Release',
      description: 'Ship a release',
      icon: 'rocket',
      category: 'Ops',
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      tags: ['release', 'ci'],
      version: 1,
      source: 'local',
      enabled: true,
      revision: 1,
    })
    expect(detail.body).toBe('# Release\n\nRun it.\n')
    expect(detail.files).toEqual(['notes.txt', 'scripts/release.sh'])
    expect(detail.frontmatter).toEqual({
      name: 'Release',
      description: 'Ship a release',
      icon: 'rocket',
      category: 'Ops',
      tags: ['release', 'ci'],
    })
    // The request's name wins over the frontmatter's, and the stored SKILL.md says so.
    expect(detail.markdown).toMatch(/^---\nname: "?Release"?\n/)
    expect(detail.markdown).not.toContain('ignored')
    expect(detail.markdown.endsWith('# Release\n\nRun it.\n')).toBe(true)
    expect((await get(detail.skill.id)).json()).toEqual(detail)
  })

  it('takes the name from the frontmatter when the request sends none', async () => {
    const res = await create({ body: skillMd({ name: 'From Frontmatter', description: 'd' }) })
    expect(res.statusCode).toBe(201)
    expect(res.json().skill.name).toBe('From Frontmatter')
    expect(res.json().frontmatter.name).toBe('From Frontmatter')
  })

  it('refuses SKILL.md without a description, with broken YAML, or with mistyped fields, and changes nothing', async () => {
    const cases: [unknown, string][] = [
      [{ name: 'a', body: '# no frontmatter\n' }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: skillMd({ name: 'a' }) }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: '---\ndescription: [unclosed\n---\nx' }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: '---\ndescription: x\ndescription: y\n---\nx' }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: '---\n- a list\n---\nx' }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: '---\ndescription: x\n' }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: skillMd({ description: 'x', tags: 5 }) }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [{ name: 'a', body: skillMd({ description: 'x', icon: ['no'] }) }, 'HOSTD_SKILLS_FRONTMATTER_INVALID'],
      [
        { name: 'a', body: `---\ndescription: x\nbig: ${'y'.repeat(70_000)}\n---\n` },
        'HOSTD_SKILLS_FRONTMATTER_INVALID',
      ],
      [{ name: '   ', body: skillMd({ description: 'x' }) }, 'HOSTD_SKILLS_NAME_INVALID'],
      [{ name: 'x'.repeat(65), body: skillMd({ description: 'x' }) }, 'HOSTD_SKILLS_NAME_INVALID'],
      [{ name: 'a\u0007b', body: skillMd({ description: 'x' }) }, 'HOSTD_SKILLS_NAME_INVALID'],
      [{ body: skillMd({ description: 'no name anywhere' }) }, 'HOSTD_SKILLS_NAME_INVALID'],
      [{ name: 'a', body: skillMd({ description: 'x' }), extra: 1 }, 'HOSTD_REQUEST_INVALID'],
    ]
    const before = await snapshot(t)
    for (const [payload, code] of cases) {
      const res = await create(payload)
      expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400)
      expect(res.json().error).toBe(code)
      expect(res.json().message.length).toBeGreaterThan(5)
    }
    expect(await snapshot(t)).toEqual(before)
  })

  it('parses YAML safely: aliases are capped, anchors do not explode', async () => {
    const bomb = [
      '---',
      'description: bomb',
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      ...'bcdefghij'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefghij'[i]}`).join(',')}]`),
      '---',
      'x',
    ].join('\n')
    const res = await create({ name: 'bomb', body: bomb })
    expect(res.statusCode).toBe(400)
    expect(res.json().error).toBe('HOSTD_SKILLS_FRONTMATTER_INVALID')
  })

  it('keeps local names unique ignoring case (409)', async () => {
    expect((await create({ name: 'Unique One', body: skillMd({ description: 'd' }) })).statusCode).toBe(201)
    const res = await create({ name: 'unique one', body: skillMd({ description: 'd' }) })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toMatchObject({
      error: 'HOSTD_SKILLS_NAME_TAKEN',
      message: expect.stringContaining('Unique One'),
    })
  })

  it('replaces at baseRevision, keeps files when none are sent, refuses a stale baseRevision (409) and keeps enabled', async () => {
    const made = (
      await create({
        name: 'Edit me',
        body: skillMd({ description: 'v1' }),
        files: [{ path: 'a.txt', content: b64('A1') }],
      })
    ).json()
    const id = made.skill.id
    expect(
      (
        await t.inject({ method: 'POST', url: `/api/skills/${id}/enabled`, as: 'admin', payload: { enabled: false } })
      ).json().enabled,
    ).toBe(false)

    const v2 = await t.inject({
      method: 'PUT',
      url: `/api/skills/${id}`,
      as: 'admin',
      payload: { name: 'Edit me', body: skillMd({ description: 'v2' }, 'two'), baseRevision: 1 },
    })
    expect(v2.statusCode).toBe(200)
    expect(v2.json().skill).toMatchObject({ id, revision: 2, description: 'v2', enabled: false, source: 'local' })
    expect(v2.json().files).toEqual(['a.txt'])
    expect(v2.json().body).toBe('two')

    const before = await snapshot(t)
    const stale = await t.inject({
      method: 'PUT',
      url: `/api/skills/${id}`,
      as: 'admin',
      payload: { name: 'Edit me', body: skillMd({ description: 'lost' }), baseRevision: 1 },
    })
    expect(stale.statusCode).toBe(409)
    expect(stale.json()).toMatchObject({
      error: 'HOSTD_SKILLS_STALE_REVISION',
      message: expect.stringMatching(/baseRevision 1 is stale.*revision 2/),
    })
    expect(await snapshot(t)).toEqual(before)

    const v3 = await t.inject({
      method: 'PUT',
      url: `/api/skills/${id}`,
      as: 'admin',
      payload: {
        name: 'Edited',
        body: skillMd({ description: 'v3' }),
        baseRevision: 2,
        files: [{ path: 'b/c.txt', content: b64('C3') }],
      },
    })
    expect(v3.statusCode).toBe(200)
    expect(v3.json().skill).toMatchObject({ name: 'Edited', revision: 3, enabled: false })
    expect(v3.json().files).toEqual(['b/c.txt'])
    expect(v3.json().skill.version).toBeGreaterThan(made.skill.version)

    const missing = await t.inject({
      method: 'PUT',
      url: '/api/skills/00000000-0000-4000-8000-000000000000',
      as: 'admin',
      payload: { name: 'x', body: skillMd({ description: 'x' }), baseRevision: 1 },
    })
    expect(missing.statusCode).toBe(404)
    expect(missing.json().error).toBe('HOSTD_SKILLS_NOT_FOUND')
  })

  it('lets exactly one of two concurrent replaces from the same baseRevision win', async () => {
    const id = (await create({ name: 'Raced', body: skillMd({ description: 'r1' }) })).json().skill.id
    const put = (d: string) =>
      t.inject({
        method: 'PUT',
        url: `/api/skills/${id}`,
        as: 'admin',
        payload: {
          name: 'Raced',
          body: skillMd({ description: d }),
          baseRevision: 1,
          files: [{ path: `${d}.txt`, content: b64(d) }],
        },
      })
    const results = await Promise.all([put('left'), put('right')])
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409])
    const winner = results.find((r) => r.statusCode === 200)!.json()
    expect((await get(id)).json()).toEqual(winner)
    expect((await t.inject({ url: `/api/skills/${id}/revisions`, as: 'admin' })).json()).toHaveLength(2)
  })

  it('lists revisions, reads an old one, restores it as a new revision, and serves files of any revision', async () => {
    const id = (
      await create({
        name: 'History',
        body: skillMd({ description: 'first', category: 'one' }),
        files: [{ path: 'f.txt', content: b64('first file') }],
      })
    ).json().skill.id
    await t.inject({
      method: 'PUT',
      url: `/api/skills/${id}`,
      as: 'admin',
      payload: {
        name: 'History',
        body: skillMd({ description: 'second' }),
        baseRevision: 1,
        files: [{ path: 'f.txt', content: b64('second file') }],
      },
    })
    const revs = (await t.inject({ url: `/api/skills/${id}/revisions`, as: 'admin' })).json()
    expect(revs.map((r: { revision: number; origin: string }) => [r.revision, r.origin])).toEqual([
      [2, 'update'],
      [1, 'create'],
    ])
    expect(revs[1]).toMatchObject({ description: 'first', files: 1, createdBy: expect.stringMatching(/^admin/) })

    const old = await t.inject({ url: `/api/skills/${id}/revisions/1`, as: 'admin' })
    expect(old.statusCode).toBe(200)
    expect(old.json().skill).toMatchObject({ id, revision: 1, description: 'first', category: 'one' })
    expect(old.json().frontmatter.description).toBe('first')
    const oldFile = await t.inject({ url: `/api/skills/${id}/file?path=f.txt&revision=1`, as: 'admin' })
    expect(oldFile.body).toBe('first file')
    expect((await t.inject({ url: `/api/skills/${id}/file?path=f.txt`, as: 'admin' })).body).toBe('second file')
    expect((await t.inject({ url: `/api/skills/${id}/file?path=SKILL.md`, as: 'admin' })).body).toContain(
      'description: "second"',
    )
    expect((await t.inject({ url: `/api/skills/${id}/file?path=nope.txt`, as: 'admin' })).statusCode).toBe(404)
    expect((await t.inject({ url: `/api/skills/${id}/revisions/9`, as: 'admin' })).json().error).toBe(
      'HOSTD_SKILLS_REVISION_NOT_FOUND',
    )

    const staleRestore = await t.inject({
      method: 'POST',
      url: `/api/skills/${id}/revisions/1/restore`,
      as: 'admin',
      payload: { baseRevision: 1 },
    })
    expect(staleRestore.statusCode).toBe(409)
    const restored = await t.inject({
      method: 'POST',
      url: `/api/skills/${id}/revisions/1/restore`,
      as: 'admin',
      payload: { baseRevision: 2 },
    })
    expect(restored.statusCode).toBe(200)
    expect(restored.json().skill).toMatchObject({ revision: 3, description: 'first', category: 'one' })
    expect((await t.inject({ url: `/api/skills/${id}/file?path=f.txt`, as: 'admin' })).body).toBe('first file')
  })

  it('filters the list by category, tag, source, enabled and text', async () => {
    await create({
      name: 'Filter Alpha',
      body: skillMd({ description: 'backs up the NAS', category: 'Storage', tags: ['Backup', 'nas'] }),
    })
    const beta = (
      await create({
        name: 'Filter Beta',
        body: skillMd({ description: 'restarts things', category: 'ops', tags: ['restart'] }),
      })
    ).json().skill.id
    await t.inject({ method: 'POST', url: `/api/skills/${beta}/enabled`, as: 'admin', payload: { enabled: false } })
    const names = async (query: string) =>
      ((await t.inject({ url: `/api/skills?${query}`, as: 'admin' })).json() as { name: string }[])
        .map((s) => s.name)
        .filter((n) => n.startsWith('Filter'))
    expect(await names('category=storage')).toEqual(['Filter Alpha'])
    expect(await names('tag=backup')).toEqual(['Filter Alpha'])
    expect(await names('q=RESTARTS')).toEqual(['Filter Beta'])
    expect(await names('q=nas')).toEqual(['Filter Alpha'])
    expect(await names('source=local')).toEqual(['Filter Alpha', 'Filter Beta'])
    expect(await names('source=synced')).toEqual([])
    expect(await names('enabled=false')).toEqual(['Filter Beta'])
    expect((await t.inject({ url: '/api/skills?source=elsewhere', as: 'admin' })).statusCode).toBe(400)
  })

  it('enables and disables, bumping version only on a change', async () => {
    const s = (await create({ name: 'Toggle', body: skillMd({ description: 'd' }) })).json().skill
    const off = (
      await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: false } })
    ).json()
    expect(off).toMatchObject({ enabled: false, version: s.version + 1, revision: 1 })
    const again = (
      await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: false } })
    ).json()
    expect(again.version).toBe(off.version)
    expect(
      (
        await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: true } })
      ).json().enabled,
    ).toBe(true)
    expect(
      (await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: 'yes' } }))
        .statusCode,
    ).toBe(400)
  })

  it('duplicates a skill with its supporting files into a new local skill', async () => {
    const src = (
      await create({
        name: 'Original',
        body: skillMd({ description: 'orig', tags: ['x'] }),
        files: [{ path: 'deep/er/data.bin', content: b64(Buffer.from([0, 1, 2, 255])) }],
      })
    ).json()
    const dup = await t.inject({ method: 'POST', url: `/api/skills/${src.skill.id}/duplicate`, as: 'admin' })
    expect(dup.statusCode).toBe(201)
    expect(dup.json().skill).toMatchObject({
      name: 'Original (copy)',
      source: 'local',
      revision: 1,
      description: 'orig',
      tags: ['x'],
      enabled: true,
    })
    expect(dup.json().skill.id).not.toBe(src.skill.id)
    expect(dup.json().files).toEqual(['deep/er/data.bin'])
    expect(dup.json().frontmatter.name).toBe('Original (copy)')
    const bytes = await t.inject({ url: `/api/skills/${dup.json().skill.id}/file?path=deep/er/data.bin`, as: 'admin' })
    expect([...bytes.rawPayload]).toEqual([0, 1, 2, 255])
    const second = await t.inject({ method: 'POST', url: `/api/skills/${src.skill.id}/duplicate`, as: 'admin' })
    expect(second.json().skill.name).toBe('Original (copy 2)')
    expect(
      (
        await t.inject({
          method: 'POST',
          url: '/api/skills/00000000-0000-4000-8000-000000000000/duplicate',
          as: 'admin',
        })
      ).statusCode,
    ).toBe(404)
    expect((await t.inject({ method: 'POST', url: '/api/skills/nope/duplicate', as: 'admin' })).statusCode).toBe(400)
  })

  it('downloads a skill as a zip holding SKILL.md and every file', async () => {
    const png = Buffer.alloc(300_000, 7)
    const s = (
      await create({
        name: 'Zip Me',
        body: skillMd({ description: 'zipped' }),
        files: [
          { path: 'img/big.bin', content: b64(png) },
          { path: 'a.md', content: b64('hello') },
        ],
      })
    ).json()
    const res = await t.inject({ url: `/api/skills/${s.skill.id}/export`, as: 'admin' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/zip')
    expect(res.headers['content-disposition']).toBe('attachment; filename="Zip-Me.zip"')
    const entries = unzipSync(new Uint8Array(res.rawPayload))
    expect(Object.keys(entries).sort()).toEqual(['Zip-Me/SKILL.md', 'Zip-Me/a.md', 'Zip-Me/img/big.bin'])
    expect(Buffer.from(entries['Zip-Me/SKILL.md']!).toString()).toBe(s.markdown)
    expect(Buffer.from(entries['Zip-Me/img/big.bin']!).equals(png)).toBe(true)
    expect(Buffer.from(entries['Zip-Me/a.md']!).toString()).toBe('hello')
    // The central directory's checksums and sizes match the contents (what unzip tools verify).
    const central = centralDirectory(res.rawPayload)
    expect(central.map((e) => e.name).sort()).toEqual(Object.keys(entries).sort())
    for (const e of central) {
      expect(e.crc, e.name).toBe(crc32(entries[e.name]!))
      expect(e.size, e.name).toBe(entries[e.name]!.length)
      expect(e.method, e.name).toBe(8)
    }
  })

  it('deletes a local skill, its revisions and the blobs only it used', async () => {
    const s = (
      await create({
        name: 'Doomed',
        body: skillMd({ description: 'bye' }),
        files: [{ path: 'only-here.txt', content: b64('unique content of the doomed skill') }],
      })
    ).json()
    const del = await t.inject({ method: 'DELETE', url: `/api/skills/${s.skill.id}`, as: 'admin' })
    expect(del.statusCode).toBe(204)
    expect((await get(s.skill.id)).statusCode).toBe(404)
    expect((await t.inject({ url: `/api/skills/${s.skill.id}/revisions`, as: 'admin' })).statusCode).toBe(404)
    const { onDisk, referenced } = await blobRefs(t)
    expect(onDisk).toEqual(referenced)
    expect((await t.inject({ method: 'DELETE', url: `/api/skills/${s.skill.id}`, as: 'admin' })).statusCode).toBe(404)
  })

  it('needs the admin role for every skills route', async () => {
    expect((await t.inject({ url: '/api/skills', as: 'operator' })).statusCode).toBe(403)
    expect((await t.inject({ url: '/api/skills' })).statusCode).toBe(401)
  })

  it('writes every change to the audit log with before and after', async () => {
    const s = (await create({ name: 'Audited', body: skillMd({ description: 'a' }) })).json().skill
    await t.inject({
      method: 'PUT',
      url: `/api/skills/${s.id}`,
      as: 'admin',
      payload: { name: 'Audited 2', body: skillMd({ description: 'b' }), baseRevision: 1 },
    })
    await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: false } })
    await t.inject({ method: 'POST', url: `/api/skills/${s.id}/enabled`, as: 'admin', payload: { enabled: true } })
    await t.inject({
      method: 'POST',
      url: `/api/skills/${s.id}/revisions/1/restore`,
      as: 'admin',
      payload: { baseRevision: 2 },
    })
    const dup = (await t.inject({ method: 'POST', url: `/api/skills/${s.id}/duplicate`, as: 'admin' })).json().skill
    await t.inject({ method: 'DELETE', url: `/api/skills/${dup.id}`, as: 'admin' })
    const mine = (await auditActions(t)).filter((e) => e.target === s.id || e.target === dup.id)
    expect(mine.map((e) => e.action)).toEqual([
      'skill.create',
      'skill.update',
      'skill.disable',
      'skill.enable',
      'skill.restore',
      'skill.duplicate',
      'skill.delete',
    ])
    expect(JSON.parse(mine[1]!.detail!)).toMatchObject({
      before: { name: 'Audited', revision: 1 },
      after: { name: 'Audited 2', revision: 2 },
    })
    expect(JSON.parse(mine[2]!.detail!)).toMatchObject({ before: { enabled: true }, after: { enabled: false } })
    const viaApi = (await t.inject({ url: '/api/audit?range=24h&limit=200', as: 'admin' })).json()
    expect(
      viaApi.items.some(
        (e: { action: string; target: string; username: string }) =>
          e.action === 'skill.create' && e.target === s.id && /^admin/.test(e.username),
      ),
    ).toBe(true)
  })
})
