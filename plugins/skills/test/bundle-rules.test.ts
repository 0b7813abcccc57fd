import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import skills from '../src/index.ts'
import { decodeBase64 } from '../src/bundle.ts'
import { b64, skillMd, snapshot } from './helpers.ts'

const MiB = 1024 * 1024
const BODY = skillMd({ description: 'limits' })

/**
 * The bundle rules of the interface document (64 MiB bundle, 512 files including SKILL.md, 16 levels, 16 MiB
 * per file) and the path rules: each refusal is the right status with a message naming the rule, and leaves
 * the database and the blob store exactly as they were.
 */
describe('skills: bundle limits and path rules', () => {
  let t: TestKernel
  let existingId: string
  beforeAll(async () => {
    t = await startTestKernel({ overNetwork: true, plugins: [skills] })
    existingId = (
      await t.inject({
        method: 'POST',
        url: '/api/skills',
        as: 'admin',
        payload: { name: 'Existing', body: BODY, files: [{ path: 'keep.txt', content: b64('keep') }] },
      })
    ).json().skill.id
  })
  afterAll(() => t.close())

  const create = (name: string, files: unknown[], headers?: Record<string, string>) =>
    t.inject({
      method: 'POST',
      url: '/api/skills',
      as: 'admin',
      payload: { name, body: BODY, files } as object,
      headers,
    })
  const replace = (files: unknown[]) =>
    t.inject({
      method: 'PUT',
      url: `/api/skills/${existingId}`,
      as: 'admin',
      payload: { name: 'Existing', body: BODY, baseRevision: 1, files },
    })

  /** Runs `request`, expects the status, code and message, and that nothing changed. */
  async function refused(
    request: () => Promise<{ statusCode: number; json(): { error: string; message: string } }>,
    status: number,
    code: string,
    message?: RegExp,
  ) {
    const before = await snapshot(t)
    const res = await request()
    expect(res.statusCode, JSON.stringify(res.json())).toBe(status)
    expect(res.json().error).toBe(code)
    if (message) expect(res.json().message).toMatch(message)
    expect(await snapshot(t)).toEqual(before)
  }

  const badPaths: [string, RegExp][] = [
    ['/etc/passwd', /absolute/],
    ['../escape.txt', /climbs out/],
    ['a/../../escape.txt', /climbs out/],
    ['a/..', /climbs out/],
    ['a\\b.txt', /backslash/],
    ['..\\..\\x', /backslash/],
    ['a\u0000b', /NUL/],
    ['line\nbreak', /control/],
    ['C:/windows.txt', /drive letter/],
    ['', /empty/],
    ['.', /names no file/],
    ['folder/', /folder, not a file/],
    ['SKILL.md', /collides with SKILL.md/],
    ['./skill.MD', /collides with SKILL.md/],
    [`${'n'.repeat(256)}.txt`, /longer than 255 bytes/],
  ]
  for (const [path, message] of badPaths) {
    it(`refuses the path ${JSON.stringify(path)} for the whole bundle (400)`, async () => {
      const files = [
        { path: 'good.txt', content: b64('fine') },
        { path, content: b64('x') },
      ]
      await refused(
        () => create(`bad path ${JSON.stringify(path)}`.slice(0, 60), files),
        400,
        'HOSTD_SKILLS_PATH_INVALID',
        message,
      )
      await refused(() => replace(files), 400, 'HOSTD_SKILLS_PATH_INVALID', message)
    })
  }

  it('refuses duplicates after normalization: case, ./ and //, and a path that is both file and folder', async () => {
    const pairs = [
      ['Docs/A.txt', 'docs/a.TXT'],
      ['x/y.txt', './x//y.txt'],
      ['café.txt', 'cafe\u0301.txt'],
      ['dir', 'dir/inner.txt'],
    ]
    for (const [a, b] of pairs) {
      await refused(
        () =>
          create('dupes', [
            { path: a, content: b64('1') },
            { path: b, content: b64('2') },
          ]),
        400,
        'HOSTD_SKILLS_PATH_INVALID',
        /same path|both a file and a folder/,
      )
    }
  })

  it('stores normalized paths', async () => {
    const res = await create('normalized', [{ path: './a//b/./c.txt', content: b64('c') }])
    expect(res.statusCode).toBe(201)
    expect(res.json().files).toEqual(['a/b/c.txt'])
  })

  it('refuses invalid base64 (400) and writes nothing', async () => {
    for (const content of ['abc', 'ab$=', 'YWJj\nZGVm', 'Y===']) {
      await refused(
        () =>
          create('bad base64', [
            { path: 'ok.txt', content: b64('fine') },
            { path: 'bad.txt', content },
          ]),
        400,
        'HOSTD_SKILLS_BASE64_INVALID',
        /bad\.txt.*not valid base64/,
      )
    }
  })

  it('takes exactly the base64 that decodes and encodes back to itself (one decode, checked against re-encoding)', () => {
    // Seeded, so every run checks the same inputs: valid encodings, then with characters replaced, inserted or
    // dropped (outside the alphabet, URL-safe, padding, whitespace, non-ASCII).
    let seed = 42
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n
    const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n*é€'
    const reencodes = (c: string) => Buffer.from(c, 'base64').toString('base64') === c
    const decodes = (c: string) => {
      try {
        return decodeBase64('f', c)
      } catch {
        return null
      }
    }
    let checked = 0
    let valid = 0
    for (let n = 0; n < 40_000; n++) {
      let c = Buffer.from(Array.from({ length: random(10) }, () => random(256))).toString('base64')
      for (let edits = random(3); edits > 0; edits--) {
        const at = random(c.length + 1)
        const ch = chars[random(chars.length)]!
        c = [
          c.slice(0, at) + ch + c.slice(at + 1),
          c.slice(0, at) + ch + c.slice(at),
          c.slice(0, at) + c.slice(at + 1),
        ][random(3)]!
      }
      if (c.length % 4 !== 0) continue // refused before decoding, by length
      checked++
      const expected = reencodes(c)
      if (expected) valid++
      expect(decodes(c) !== null, JSON.stringify(c)).toBe(expected)
      if (expected) expect(decodes(c)!.toString('base64')).toBe(c)
    }
    expect(checked).toBeGreaterThan(10_000)
    expect(valid).toBeGreaterThan(1000)
    expect(checked - valid).toBeGreaterThan(1000)
  })

  it('allows 512 files including SKILL.md and refuses 513 (400 naming the limit)', async () => {
    const files = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `f/${i}.txt`, content: b64(String(i)) }))
    await refused(
      () => create('too many', files(512)),
      400,
      'HOSTD_SKILLS_TOO_MANY_FILES',
      /513 files including SKILL\.md: the limit is 512/,
    )
    const ok = await create('just enough', files(511))
    expect(ok.statusCode).toBe(201)
    expect(ok.json().files).toHaveLength(511)
  })

  it('allows 16 folder levels and refuses 17 (400 naming the limit)', async () => {
    const path = (levels: number) => `${Array.from({ length: levels }, (_, i) => `d${i}`).join('/')}/file.txt`
    await refused(
      () => create('too deep', [{ path: path(17), content: b64('x') }]),
      400,
      'HOSTD_SKILLS_TOO_DEEP',
      /17 folders deep: the limit is 16 levels/,
    )
    const ok = await create('deep enough', [{ path: path(16), content: b64('x') }])
    expect(ok.statusCode).toBe(201)
  })

  it('allows a 16 MiB file and refuses one byte more (413 naming the limit)', async () => {
    const big = Buffer.alloc(16 * MiB, 1)
    const over = Buffer.alloc(16 * MiB + 1, 2)
    await refused(
      () => create('file too big', [{ path: 'over.bin', content: b64(over) }]),
      413,
      'HOSTD_SKILLS_FILE_TOO_LARGE',
      /over\.bin is 16777217 bytes: the limit is 16 MiB per file/,
    )
    await refused(() => replace([{ path: 'over.bin', content: b64(over) }]), 413, 'HOSTD_SKILLS_FILE_TOO_LARGE')
    const ok = await create('file just fits', [{ path: 'max.bin', content: b64(big) }])
    expect(ok.statusCode).toBe(201)
    const back = await t.inject({ url: `/api/skills/${ok.json().skill.id}/file?path=max.bin`, as: 'admin' })
    expect(back.rawPayload.equals(big)).toBe(true)
  })

  it('counts SKILL.md as a file: over 16 MiB it is refused (413)', async () => {
    const body = skillMd({ description: 'huge' }, 'x'.repeat(16 * MiB))
    await refused(
      () => t.inject({ method: 'POST', url: '/api/skills', as: 'admin', payload: { name: 'huge md', body } }),
      413,
      'HOSTD_SKILLS_FILE_TOO_LARGE',
      /SKILL\.md is \d+ bytes: the limit is 16 MiB per file/,
    )
  })

  it('refuses a bundle over 64 MiB (413 naming the limit) and writes none of its files', async () => {
    const part = Buffer.alloc(13 * MiB, 3)
    const files = Array.from({ length: 5 }, (_, i) => ({
      path: `part${i}.bin`,
      content: b64(Buffer.concat([part, Buffer.from([i])])),
    }))
    await refused(() => create('bundle too big', files), 413, 'HOSTD_SKILLS_BUNDLE_TOO_LARGE', /the limit is 64 MiB/)
  })

  it('refuses a body that cannot fit a 64 MiB bundle from its Content-Length alone, before reading it (413)', async () => {
    await refused(
      () =>
        t.inject({
          method: 'POST',
          url: '/api/skills',
          as: 'admin',
          headers: { 'content-type': 'application/json', 'content-length': String(200 * MiB) },
          payload: '{}',
        }),
      413,
      'HOSTD_REQUEST_TOO_LARGE',
      /bundle limit is 64 MiB/,
    )
  })

  it('keeps the skill at its revision when a replace is refused', async () => {
    const detail = (await t.inject({ url: `/api/skills/${existingId}`, as: 'admin' })).json()
    expect(detail.skill.revision).toBe(1)
    expect(detail.files).toEqual(['keep.txt'])
  })
})
