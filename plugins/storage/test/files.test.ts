import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { storagePlugin } from '../src/index.ts'

/**
 * The file browser against a real directory tree (real files, symlinks, permissions): list, preview, ranged
 * download, streamed upload, and every way a path could leave its root.
 */
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const q = (params: Record<string, string>) => new URLSearchParams(params).toString()

describe('storage: file browser', () => {
  let t: TestKernel
  let base: string
  let data: string
  const big = randomBytes(3 * 1024 * 1024 + 17)
  const UPLOAD_MAX = 1024 * 1024

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'hostd-storage-files-'))
    data = join(base, 'data')
    await mkdir(join(data, 'docs', 'deep'), { recursive: true })
    await mkdir(join(base, 'data2'))
    await mkdir(join(base, 'outside'))
    await writeFile(join(base, 'outside', 'secret.txt'), 'OUTSIDE SECRET')
    await writeFile(join(base, 'data2', 'secret.txt'), 'SIBLING SECRET')
    await writeFile(join(data, 'docs', 'readme.txt'), 'hello from the root\nsecond line\n')
    await writeFile(join(data, 'big.bin'), big)
    await writeFile(join(data, 'binary.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2]))
    await writeFile(join(data, 'long.txt'), 'é'.repeat(40_000)) // 80 000 bytes of two-byte characters
    await writeFile(join(data, 'Grüße "quoted";.txt'), 'unicode name')
    await symlink('../outside', join(data, 'link-out'))
    await symlink('../data2', join(data, 'link-sibling'))
    await symlink('/etc/passwd', join(data, 'link-abs'))
    await symlink('docs', join(data, 'link-in'))
    await mkdir(join(data, 'uploads'))
    t = await startTestKernel({
      plugins: [storagePlugin({ roots: [{ name: 'data', path: data }], uploadMaxBytes: UPLOAD_MAX })],
      listen: true,
    })
  })
  afterAll(async () => {
    await t?.close()
    await rm(base, { recursive: true, force: true })
  })

  it('lists a directory: directories first, sizes, modes, symlinks with their targets', async () => {
    const res = await t.inject({ url: `/api/storage/fs/list?${q({ root: 'data', path: '' })}`, as: 'operator' })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.root).toBe('data')
    const byName = Object.fromEntries(body.entries.map((e: { name: string }) => [e.name, e]))
    expect(body.entries[0].type).toBe('directory')
    expect(byName['big.bin']).toMatchObject({ type: 'file', size: big.length, linkTarget: null })
    expect(byName['big.bin'].mode).toMatch(/^0[0-7]{3}$/)
    expect(byName['link-out']).toMatchObject({ type: 'symlink', linkTarget: '../outside' })
    expect(byName.docs).toMatchObject({ type: 'directory' })
    const docs = await t.inject({ url: `/api/storage/fs/list?${q({ root: 'data', path: 'docs' })}`, as: 'operator' })
    expect(docs.json().entries.map((e: { name: string }) => e.name)).toEqual(['deep', 'readme.txt'])
    // A symlink that stays inside the root is followed.
    const viaLink = await t.inject({
      url: `/api/storage/fs/list?${q({ root: 'data', path: 'link-in' })}`,
      as: 'operator',
    })
    expect(viaLink.statusCode).toBe(200)
    expect(viaLink.json().entries.map((e: { name: string }) => e.name)).toContain('readme.txt')
  })

  it('answers 404 for an unknown root or a missing path, 400 for a file given to list', async () => {
    expect(
      (await t.inject({ url: `/api/storage/fs/list?${q({ root: 'nope', path: '' })}`, as: 'operator' })).json().error,
    ).toBe('HOSTD_STORAGE_ROOT_NOT_FOUND')
    expect(
      (await t.inject({ url: `/api/storage/fs/list?${q({ root: 'data', path: 'missing' })}`, as: 'operator' }))
        .statusCode,
    ).toBe(404)
    expect(
      (await t.inject({ url: `/api/storage/fs/list?${q({ root: 'data', path: 'big.bin' })}`, as: 'operator' }))
        .statusCode,
    ).toBe(400)
  })

  // Raw query strings: exactly what a client could send on the wire.
  const ESCAPES: [string, string][] = [
    ['a ".." segment', 'path=..%2Foutside'],
    ['".." after a real directory', 'path=docs%2F..%2F..%2Foutside%2Fsecret.txt'],
    ['".." alone', 'path=..'],
    ['an absolute path', 'path=%2Fetc%2Fpasswd'],
    ['encoded traversal (decoded once, then still "%2e%2e%2f")', 'path=%252e%252e%252Foutside%252Fsecret.txt'],
    ['encoded dot-dot segment', 'path=docs%2F%252e%252e'],
    ['encoded backslash', 'path=..%255coutside'],
    ['a symlink out of the root', 'path=link-out%2Fsecret.txt'],
    ['a symlink to a sibling with the root as prefix (data2 vs data)', 'path=link-sibling%2Fsecret.txt'],
    ['an absolute symlink', 'path=link-abs'],
  ]
  it.each(ESCAPES)('refuses %s with 403 on list, read and download', async (_what, query) => {
    for (const route of ['read', 'download', 'list']) {
      const res = await t.inject({ url: `/api/storage/fs/${route}?root=data&${query}`, as: 'operator' })
      expect(res.statusCode, `${route} ${query}`).toBe(403)
      expect(res.json()).toMatchObject({ error: 'HOSTD_STORAGE_PATH_FORBIDDEN' })
      expect(res.body).not.toMatch(/SECRET|root:x:0/)
    }
  })

  it('refuses a NUL in a path with 400', async () => {
    const res = await t.inject({ url: '/api/storage/fs/read?root=data&path=docs%2Freadme.txt%00', as: 'operator' })
    expect(res.statusCode).toBe(400)
  })

  it('previews a text file, caps a long one at 64 KiB with truncated set, and refuses binary with 415', async () => {
    const small = await t.inject({
      url: `/api/storage/fs/read?${q({ root: 'data', path: 'docs/readme.txt' })}`,
      as: 'operator',
    })
    expect(small.statusCode).toBe(200)
    expect(small.json()).toMatchObject({
      content: 'hello from the root\nsecond line\n',
      truncated: false,
      size: 32,
      cap: 65536,
      path: 'docs/readme.txt',
    })
    const long = (
      await t.inject({ url: `/api/storage/fs/read?${q({ root: 'data', path: 'long.txt' })}`, as: 'operator' })
    ).json()
    expect(long.truncated).toBe(true)
    expect(long.size).toBe(80_000)
    expect(Buffer.byteLength(long.content)).toBe(65536) // 32 768 whole characters: none cut in half
    expect(long.content).toBe('é'.repeat(32768))
    const bin = await t.inject({
      url: `/api/storage/fs/read?${q({ root: 'data', path: 'binary.bin' })}`,
      as: 'operator',
    })
    expect(bin.statusCode).toBe(415)
    expect(bin.json().error).toBe('HOSTD_STORAGE_BINARY_FILE')
  })

  it('downloads a whole file with ETag, Accept-Ranges and a safe Content-Disposition', async () => {
    const res = await t.inject({
      url: `/api/storage/fs/download?${q({ root: 'data', path: 'big.bin' })}`,
      as: 'operator',
    })
    expect(res.statusCode).toBe(200)
    expect(sha(res.rawPayload)).toBe(sha(big))
    expect(res.headers['content-length']).toBe(String(big.length))
    expect(res.headers['accept-ranges']).toBe('bytes')
    expect(res.headers.etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/)
    const head = await t.inject({
      method: 'HEAD',
      url: `/api/storage/fs/download?${q({ root: 'data', path: 'big.bin' })}`,
      as: 'operator',
    })
    expect(head.statusCode).toBe(200)
    expect(head.headers['content-length']).toBe(String(big.length))
    expect(head.rawPayload.length).toBe(0)
    const cached = await t.inject({
      url: `/api/storage/fs/download?${q({ root: 'data', path: 'big.bin' })}`,
      as: 'operator',
      headers: { 'if-none-match': String(res.headers.etag) },
    })
    expect(cached.statusCode).toBe(304)
    const named = await t.inject({
      url: `/api/storage/fs/download?${q({ root: 'data', path: 'Grüße "quoted";.txt' })}`,
      as: 'operator',
    })
    expect(named.headers['content-disposition']).toBe(
      `attachment; filename="Gr__e _quoted__.txt"; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20%22quoted%22%3B.txt`,
    )
  })

  it('resumes a download with Range (206) and If-Range, and answers 416 past the end', async () => {
    const url = `/api/storage/fs/download?${q({ root: 'data', path: 'big.bin' })}`
    const first = await t.inject({ url, as: 'operator', headers: { range: 'bytes=0-1048575' } })
    expect(first.statusCode).toBe(206)
    expect(first.headers['content-range']).toBe(`bytes 0-1048575/${big.length}`)
    const etag = String(first.headers.etag)
    const rest = await t.inject({ url, as: 'operator', headers: { range: 'bytes=1048576-', 'if-range': etag } })
    expect(rest.statusCode).toBe(206)
    expect(rest.headers['content-range']).toBe(`bytes 1048576-${big.length - 1}/${big.length}`)
    expect(sha(Buffer.concat([first.rawPayload, rest.rawPayload]))).toBe(sha(big))
    const suffix = await t.inject({ url, as: 'operator', headers: { range: 'bytes=-10' } })
    expect(suffix.rawPayload.equals(big.subarray(big.length - 10))).toBe(true)
    // A stale validator: the whole (changed) file, not a piece of it.
    const stale = await t.inject({ url, as: 'operator', headers: { range: 'bytes=10-19', 'if-range': '"0-0-0"' } })
    expect(stale.statusCode).toBe(200)
    expect(stale.rawPayload.length).toBe(big.length)
    const past = await t.inject({ url, as: 'operator', headers: { range: `bytes=${big.length}-` } })
    expect(past.statusCode).toBe(416)
    expect(past.headers['content-range']).toBe(`bytes */${big.length}`)
    expect(past.json().error).toBe('HOSTD_STORAGE_RANGE_NOT_SATISFIABLE')
  })

  it('closes the file when a client abandons a download midway, and keeps serving', async () => {
    const { token } = await t.login('operator')
    const openOnBig = async () => {
      const { readdir: rd, readlink: rl } = await import('node:fs/promises')
      let n = 0
      for (const fd of await rd('/proc/self/fd'))
        if ((await rl(`/proc/self/fd/${fd}`).catch(() => '')) === join(data, 'big.bin')) n++
      return n
    }
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `${t.url}/api/storage/fs/download?${q({ root: 'data', path: 'big.bin' })}`,
        { headers: { authorization: `Bearer ${token}` } },
        (res) => {
          res.once('data', () => {
            req.destroy()
            resolve()
          })
        },
      )
      req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)))
      req.end()
    })
    for (let i = 0; i < 100 && (await openOnBig()) > 0; i++) await new Promise((r) => setTimeout(r, 20))
    expect(await openOnBig()).toBe(0)
    const again = await t.inject({
      url: `/api/storage/fs/download?${q({ root: 'data', path: 'big.bin' })}`,
      as: 'operator',
      headers: { range: 'bytes=0-9' },
    })
    expect(again.rawPayload.equals(big.subarray(0, 10))).toBe(true)
  })

  it('uploads a raw body into a directory: 201, mode 0644, 409 when it exists, replaced with overwrite=1', async () => {
    const body = randomBytes(200_000)
    const url = `/api/storage/fs/upload?${q({ root: 'data', path: 'uploads', name: 'photo.jpg' })}`
    const res = await t.inject({
      method: 'POST',
      url,
      as: 'admin',
      payload: body,
      headers: { 'content-type': 'application/octet-stream' },
    })
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json()).toEqual({ root: 'data', path: 'uploads', name: 'photo.jpg', size: body.length, replaced: false })
    const file = join(data, 'uploads', 'photo.jpg')
    expect(sha(await readFile(file))).toBe(sha(body))
    expect((await stat(file)).mode & 0o777).toBe(0o644)

    const again = await t.inject({
      method: 'POST',
      url,
      as: 'admin',
      payload: Buffer.from('other'),
      headers: { 'content-type': 'application/octet-stream' },
    })
    expect(again.statusCode).toBe(409)
    expect(again.json().error).toBe('HOSTD_STORAGE_FILE_EXISTS')
    expect(sha(await readFile(file))).toBe(sha(body))

    const over = await t.inject({
      method: 'POST',
      url: `${url}&overwrite=1`,
      as: 'admin',
      payload: Buffer.from('other'),
      headers: { 'content-type': 'image/jpeg' },
    })
    expect(over.statusCode).toBe(201)
    expect(over.json().replaced).toBe(true)
    expect(await readFile(file, 'utf8')).toBe('other')
    expect((await readdir(join(data, 'uploads'))).filter((n) => n.includes('.upload-'))).toEqual([])

    const audit = (await t.inject({ url: '/api/audit?range=24h&limit=50', as: 'admin' })).json()
    const entries = audit.items.filter((e: { action: string }) => e.action === 'storage.upload')
    expect(entries.length).toBeGreaterThanOrEqual(2)
    expect(entries[0].target).toBe('data:uploads/photo.jpg')
  })

  it('streams a chunked upload over a real socket and refuses one past the size limit with 413, leaving nothing behind', async () => {
    const { token } = await t.login('admin')
    const send = (name: string, chunks: Buffer[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          `${t.url}/api/storage/fs/upload?${q({ root: 'data', path: 'uploads', name })}`,
          {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' }, // no length: chunked
          },
          (res) => {
            let text = ''
            res.on('data', (d) => (text += d))
            res.on('end', () => resolve({ status: res.statusCode!, body: text }))
          },
        )
        req.on('error', (err) =>
          (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET'
            ? undefined
            : reject(err),
        )
        for (const c of chunks) req.write(c)
        req.end()
      })
    const parts = [randomBytes(300_000), randomBytes(300_000)]
    const ok = await send('chunked.bin', parts)
    expect(ok.status, ok.body).toBe(201)
    expect(sha(await readFile(join(data, 'uploads', 'chunked.bin')))).toBe(sha(Buffer.concat(parts)))

    const tooBig = await send('too-big.bin', [randomBytes(UPLOAD_MAX), randomBytes(1000)])
    expect(tooBig.status).toBe(413)
    expect(JSON.parse(tooBig.body).error).toBe('HOSTD_STORAGE_UPLOAD_TOO_LARGE')
    const left = await readdir(join(data, 'uploads'))
    expect(left).not.toContain('too-big.bin')
    expect(left.filter((n) => n.includes('.upload-'))).toEqual([])
  })

  it('refuses bad upload names (400), a directory outside the root (403) and a declared size over the limit (413)', async () => {
    const post = (params: Record<string, string>, payload = Buffer.from('x'), headers: Record<string, string> = {}) =>
      t.inject({
        method: 'POST',
        url: `/api/storage/fs/upload?${q(params)}`,
        as: 'admin',
        payload,
        headers: { 'content-type': 'application/octet-stream', ...headers },
      })
    const empty = await t.inject({
      method: 'POST',
      url: `/api/storage/fs/upload?${q({ root: 'data', path: 'uploads', name: 'empty.txt' })}`,
      as: 'admin',
    })
    expect(empty.statusCode, empty.body).toBe(201)
    expect((await stat(join(data, 'uploads', 'empty.txt'))).size).toBe(0)
    for (const name of ['..', '.', 'a/b'])
      expect((await post({ root: 'data', path: 'uploads', name })).statusCode, name).toBe(400)
    expect((await post({ root: 'data', path: 'link-out', name: 'planted.txt' })).statusCode).toBe(403)
    expect((await post({ root: 'data', path: '../outside', name: 'planted.txt' })).statusCode).toBe(403)
    expect(await readdir(join(base, 'outside'))).toEqual(['secret.txt'])
    const big = await post({ root: 'data', path: 'uploads', name: 'declared.bin' }, randomBytes(UPLOAD_MAX + 1))
    expect(big.statusCode).toBe(413)
    expect(await readdir(join(data, 'uploads'))).not.toContain('declared.bin')
  })

  it('keeps JSON bodies off the upload route and raw types off the other routes', async () => {
    const json = await t.inject({
      method: 'POST',
      url: `/api/storage/fs/upload?${q({ root: 'data', path: 'uploads', name: 'j.json' })}`,
      as: 'admin',
      payload: '{"a":1}',
      headers: { 'content-type': 'application/json' },
    })
    expect(json.statusCode).toBe(415)
    // Any other route (here the kernel's own) keeps Fastify's 415 for a type it has no parser for.
    const other = await t.inject({
      method: 'POST',
      url: '/api/users',
      as: 'admin',
      payload: Buffer.from('x'),
      headers: { 'content-type': 'image/png' },
    })
    expect(other.statusCode).toBe(415)
  })
})
