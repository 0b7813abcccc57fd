import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { storagePlugin } from '../src/index.ts'

/**
 * Managing files against a real tree: new folder, rename, move, copy, delete, paging and thumbnails; every way a
 * request could reach outside its root (`..`, absolute, a symlink out, renaming onto a path outside), each refused
 * with nothing changed outside; roles; the audit.
 */
const q = (params: Record<string, string | number>) =>
  new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()
// A 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)

describe('storage: managing files', () => {
  let t: TestKernel
  let base: string
  let data: string
  let other: string
  let outside: string

  const outsideState = async () => JSON.stringify(await readdir(outside, { recursive: true }))
  const post = (path: string, body: unknown, as: 'admin' | 'operator' = 'admin') =>
    t.inject({ method: 'POST', url: `/api/storage/fs/${path}`, payload: body as object, as })

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'hostd-storage-manage-'))
    data = join(base, 'data')
    other = join(base, 'other')
    outside = join(base, 'outside')
    await mkdir(join(data, 'docs', 'deep'), { recursive: true })
    await mkdir(other)
    await mkdir(outside)
    await writeFile(join(outside, 'secret.txt'), 'OUTSIDE')
    await writeFile(join(data, 'docs', 'a.txt'), 'A')
    await writeFile(join(data, 'docs', 'deep', 'b.txt'), 'B')
    await symlink('../../outside', join(data, 'docs', 'out-link'))
    await symlink(outside, join(data, 'link-out'))
    await writeFile(join(data, 'photo.png'), PNG)
    await writeFile(join(data, 'fake.png'), 'not a png at all')
    await writeFile(join(data, 'huge.png'), Buffer.concat([PNG, Buffer.alloc(2048)]))
    t = await startTestKernel({
      plugins: [
        storagePlugin({
          roots: [
            { name: 'data', path: data },
            { name: 'other', path: other },
          ],
          thumbnailMaxBytes: 1024,
        }),
      ],
    })
  })
  afterAll(async () => {
    await t?.close()
    await rm(base, { recursive: true, force: true })
  })

  it('makes a folder, renames, copies (a folder with a symlink in it), moves across roots and deletes, all audited', async () => {
    const made = await post('mkdir', { root: 'data', path: '', name: 'new folder' })
    expect(made.statusCode).toBe(201)
    expect((await lstat(join(data, 'new folder'))).isDirectory()).toBe(true)
    expect((await post('mkdir', { root: 'data', path: '', name: 'new folder' })).json().error).toBe(
      'HOSTD_STORAGE_FILE_EXISTS',
    )

    const renamed = await post('rename', { root: 'data', path: 'docs', name: 'a.txt', to: 'renamed.txt' })
    expect(renamed.statusCode).toBe(200)
    expect(await readFile(join(data, 'docs', 'renamed.txt'), 'utf8')).toBe('A')
    // Renaming onto a name that exists replaces nothing.
    await writeFile(join(data, 'docs', 'keep.txt'), 'KEEP')
    const onto = await post('rename', { root: 'data', path: 'docs', name: 'renamed.txt', to: 'keep.txt' })
    expect(onto.statusCode).toBe(409)
    expect(await readFile(join(data, 'docs', 'keep.txt'), 'utf8')).toBe('KEEP')

    // Copying a folder: files with their bytes, a symlink as a symlink (its text), never what it points to.
    const copied = await post('copy', { root: 'data', path: '', names: ['docs'], toPath: 'new folder' })
    expect(copied.statusCode).toBe(200)
    expect(copied.json().done).toEqual([{ name: 'docs', as: 'docs' }])
    const copy = join(data, 'new folder', 'docs')
    expect(await readFile(join(copy, 'deep', 'b.txt'), 'utf8')).toBe('B')
    expect(await readlink(join(copy, 'out-link'))).toBe('../../outside')
    // A copy into the folder it comes from gets a free name.
    const dup = await post('copy', { root: 'data', path: 'docs', names: ['keep.txt', 'keep.txt'], toPath: 'docs' })
    expect(dup.json().done.map((d: { as: string }) => d.as)).toEqual(['keep (copy).txt', 'keep (copy 2).txt'])

    // Moving to another root, then back.
    const moved = await post('move', { root: 'data', path: 'docs', names: ['keep.txt'], toRoot: 'other', toPath: '' })
    expect(moved.statusCode).toBe(200)
    expect(await readFile(join(other, 'keep.txt'), 'utf8')).toBe('KEEP')
    expect(existsSync(join(data, 'docs', 'keep.txt'))).toBe(false)
    const same = await post('move', { root: 'other', path: '', names: ['keep.txt'], toPath: '' })
    expect(same.statusCode).toBe(409)

    const removed = await post('delete', { root: 'data', path: '', names: ['new folder', 'docs/renamed.txt'] })
    expect(removed.json().error).toBe('HOSTD_STORAGE_PATH_INVALID') // names are one segment; nothing removed
    expect(existsSync(join(data, 'new folder'))).toBe(true)
    expect((await post('delete', { root: 'data', path: '', names: ['new folder'] })).statusCode).toBe(200)
    expect(existsSync(join(data, 'new folder'))).toBe(false)
    expect(existsSync(join(data, 'docs', 'out-link'))).toBe(true)
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE') // the copied symlink was not followed
    expect((await post('delete', { root: 'data', path: 'docs', names: ['gone'] })).statusCode).toBe(404)

    const audit = (await t.inject({ url: '/api/audit?range=24h&limit=100', as: 'admin' })).json()
    const actions = audit.items.map((e: { action: string }) => e.action)
    for (const a of ['storage.mkdir', 'storage.rename', 'storage.copy', 'storage.move', 'storage.delete'])
      expect(actions).toContain(a)
    type Item = { action: string; target: string; result: string; detail: { done: unknown; error?: string } }
    const dels = audit.items.filter((e: Item) => e.action === 'storage.delete') as Item[]
    expect(dels.find((e) => e.result === 'failure' && e.target === 'data:docs')?.detail.error).toMatch(/gone/)
    expect(dels.find((e) => e.result !== 'failure')?.detail.done).toEqual([{ name: 'new folder', as: 'new folder' }])
  })

  it('refuses every way out of the root, with nothing changed outside', async () => {
    const before = await outsideState()
    const refused = [
      // `..` and absolute paths, in the folder and in the destination
      await post('mkdir', { root: 'data', path: '..', name: 'x' }),
      await post('mkdir', { root: 'data', path: '/tmp', name: 'x' }),
      await post('mkdir', { root: 'data', path: 'link-out', name: 'x' }),
      await post('rename', { root: 'data', path: 'docs/..', name: 'photo.png', to: 'x.png' }),
      await post('move', { root: 'data', path: '', names: ['photo.png'], toPath: '../outside' }),
      await post('move', { root: 'data', path: '', names: ['photo.png'], toPath: '/' }),
      await post('move', { root: 'data', path: '', names: ['photo.png'], toPath: 'link-out' }),
      await post('copy', { root: 'data', path: '', names: ['photo.png'], toPath: 'docs/out-link' }),
      await post('copy', { root: 'data', path: 'link-out', names: ['secret.txt'], toPath: '' }),
      await post('delete', { root: 'data', path: 'link-out', names: ['secret.txt'] }),
      await post('delete', { root: 'data', path: '%2e%2e', names: ['outside'] }),
    ]
    for (const res of refused) {
      expect(res.statusCode, res.body).toBe(403)
      expect(res.json().error).toBe('HOSTD_STORAGE_PATH_FORBIDDEN')
    }
    // Names are one segment: renaming onto a path outside, moving "..", deleting "../outside".
    const badNames = [
      await post('rename', { root: 'data', path: '', name: 'photo.png', to: '../outside/x.png' }),
      await post('rename', { root: 'data', path: '', name: 'photo.png', to: '..' }),
      await post('rename', { root: 'data', path: '', name: '../outside/secret.txt', to: 'stolen.txt' }),
      await post('move', { root: 'data', path: '', names: ['..'], toPath: 'docs' }),
      await post('delete', { root: 'data', path: '', names: ['../outside'] }),
      await post('mkdir', { root: 'data', path: '', name: '/abs' }),
    ]
    for (const res of badNames) {
      expect(res.statusCode, res.body).toBe(400)
      expect(res.json().error).toBe('HOSTD_STORAGE_PATH_INVALID')
    }
    // A symlink out is an entry like any other: deleting, renaming or moving it acts on the link, not on its target.
    expect((await post('rename', { root: 'data', path: '', name: 'link-out', to: 'link-renamed' })).statusCode).toBe(
      200,
    )
    expect((await post('delete', { root: 'data', path: '', names: ['link-renamed'] })).statusCode).toBe(200)
    expect(await outsideState()).toBe(before)
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE')
    // A folder into itself.
    const into = await post('move', { root: 'data', path: '', names: ['docs'], toPath: 'docs/deep' })
    expect(into.json().error).toBe('HOSTD_STORAGE_INTO_ITSELF')
    const intoCopy = await post('copy', { root: 'data', path: '', names: ['docs'], toPath: 'docs' })
    expect(intoCopy.json().error).toBe('HOSTD_STORAGE_INTO_ITSELF')
    // The root itself has no name to act on.
    expect((await post('delete', { root: 'data', path: '', names: ['.'] })).statusCode).toBe(400)
    await symlink(outside, join(data, 'link-out'))
  })

  it('lets only admins change files; operators get thumbnails, which are real images under the cap', async () => {
    for (const [path, body] of [
      ['mkdir', { root: 'data', path: '', name: 'x' }],
      ['rename', { root: 'data', path: '', name: 'photo.png', to: 'x.png' }],
      ['move', { root: 'data', path: '', names: ['photo.png'], toPath: 'docs' }],
      ['copy', { root: 'data', path: '', names: ['photo.png'], toPath: 'docs' }],
      ['delete', { root: 'data', path: '', names: ['photo.png'] }],
    ] as const)
      expect((await post(path, body, 'operator')).statusCode).toBe(403)
    const thumb = (path: string, as: 'operator' | 'viewer' = 'operator') =>
      t.inject({ url: `/api/storage/fs/thumbnail?${q({ root: 'data', path })}`, as })
    const ok = await thumb('photo.png')
    expect(ok.statusCode).toBe(200)
    expect(ok.headers['content-type']).toBe('image/png')
    expect(ok.headers['x-content-type-options']).toBe('nosniff')
    expect(ok.headers['content-security-policy']).toContain('sandbox')
    expect(ok.rawPayload.equals(PNG)).toBe(true)
    expect((await thumb('photo.png', 'viewer')).statusCode).toBe(403)
    expect((await thumb('fake.png')).json().error).toBe('HOSTD_STORAGE_NOT_AN_IMAGE')
    expect((await thumb('huge.png')).json().error).toBe('HOSTD_STORAGE_IMAGE_TOO_LARGE')
    expect((await thumb('link-out/secret.txt')).json().error).toBe('HOSTD_STORAGE_PATH_FORBIDDEN')
    expect((await thumb('../outside/secret.txt')).json().error).toBe('HOSTD_STORAGE_PATH_FORBIDDEN')
  })

  it('pages a listing: directories first, then names, the total, and whether more follow', async () => {
    const dir = join(data, 'many')
    await mkdir(join(dir, 'zz-folder'), { recursive: true })
    await Promise.all(Array.from({ length: 250 }, (_, i) => writeFile(join(dir, `f${String(i).padStart(3, '0')}`), '')))
    const page = async (offset: number, limit: number) =>
      (
        await t.inject({
          url: `/api/storage/fs/list?${q({ root: 'data', path: 'many', offset, limit })}`,
          as: 'operator',
        })
      ).json()
    const first = await page(0, 100)
    expect(first).toMatchObject({ total: 251, offset: 0, truncated: true })
    expect(first.entries[0].name).toBe('zz-folder')
    expect(first.entries[1].name).toBe('f000')
    const last = await page(200, 100)
    expect(last.entries.map((e: { name: string }) => e.name)).toEqual(
      Array.from({ length: 51 }, (_, i) => `f${String(199 + i).padStart(3, '0')}`),
    )
    expect(last.truncated).toBe(false)
    const all = await page(0, 10_000)
    expect(all.entries).toHaveLength(251)
  })
})
