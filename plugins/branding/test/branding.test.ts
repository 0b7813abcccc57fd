/**
 * Branding over a real HTTP connection to a test kernel: round trip, public without a session, HTML kept as text
 * and served as JSON, caps on length, characters, size and type, roles, the public background with its hash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hostname } from 'node:os'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import branding from '../src/index.ts'
import { GIF, JPEG_HEAD, png, SVG, WEBP_HEAD } from './images.ts'

describe('branding', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [branding], overNetwork: true })
  })
  afterAll(async () => {
    await t?.close()
  })

  const get = () => t.inject({ url: '/api/branding' })
  const audit = async () =>
    (await t.inject({ url: '/api/audit?range=all&limit=200', as: 'admin' })).json().items as {
      action: string
      result: string
      detail: any
    }[]

  it('answers the defaults to anyone, signed in or not: the host name and no background', async () => {
    const res = await get()
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ serverName: hostname(), headline: '', description: '', background: null })
  })

  it('round-trips the text an admin sets, verbatim, HTML included, as JSON', async () => {
    const html = '<img src=x onerror="alert(1)"><b>Welcome</b> &amp; "hi"'
    const body = {
      serverName: 'nas <b>one</b>',
      headline: html,
      description: 'Line one\nLine two\twith a tab <script>alert(2)</script>',
    }
    const put = await t.inject({ method: 'PUT', url: '/api/branding', as: 'admin', payload: body })
    expect(put.statusCode, put.body).toBe(200)
    expect(put.json()).toEqual({ ...body, background: null })
    const res = await get()
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.json()).toEqual({ ...body, background: null })
    // The raw body is JSON text: the markup is inside a JSON string, never a document of its own.
    expect(JSON.parse(res.body).headline).toBe(html)
    expect((await audit()).find((e) => e.action === 'branding.set')?.detail).toEqual({
      changed: ['serverName', 'headline', 'description'],
    })
  })

  it('changes only the fields given; an empty server name goes back to the host name', async () => {
    await t.inject({ method: 'PUT', url: '/api/branding', as: 'admin', payload: { headline: 'Only this' } })
    expect((await get()).json()).toMatchObject({ serverName: 'nas <b>one</b>', headline: 'Only this' })
    await t.inject({ method: 'PUT', url: '/api/branding', as: 'admin', payload: { serverName: '' } })
    expect((await get()).json().serverName).toBe(hostname())
  })

  it('refuses control characters, over-long text and unknown fields, changing nothing', async () => {
    const before = (await get()).json()
    const bad: [unknown, string][] = [
      [{ serverName: 'a\nb' }, 'HOSTD_BRANDING_TEXT_INVALID'],
      [{ headline: 'bell\u0007' }, 'HOSTD_BRANDING_TEXT_INVALID'],
      [{ headline: 'tab\there' }, 'HOSTD_BRANDING_TEXT_INVALID'],
      [{ description: 'escape \u001b[31m red' }, 'HOSTD_BRANDING_TEXT_INVALID'],
      [{ description: 'right-to-left \u202e override' }, 'HOSTD_BRANDING_TEXT_INVALID'],
      [{ serverName: 'x'.repeat(65) }, 'HOSTD_REQUEST_INVALID'],
      [{ headline: 'x'.repeat(121) }, 'HOSTD_REQUEST_INVALID'],
      [{ description: 'x'.repeat(1001) }, 'HOSTD_REQUEST_INVALID'],
      [{ background: '/evil.png' }, 'HOSTD_REQUEST_INVALID'],
      [{ serverName: 5 }, 'HOSTD_REQUEST_INVALID'],
    ]
    for (const [payload, code] of bad) {
      const res = await t.inject({ method: 'PUT', url: '/api/branding', as: 'admin', payload: payload as object })
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      expect(res.json().error).toBe(code)
    }
    expect((await get()).json()).toEqual(before)
    const limits = await t.inject({
      method: 'PUT',
      url: '/api/branding',
      as: 'admin',
      payload: { serverName: 'x'.repeat(64), headline: 'y'.repeat(120), description: 'z'.repeat(1000) },
    })
    expect(limits.statusCode).toBe(200)
  })

  it('lets only admins change anything: 401 signed out, 403 for viewer and operator', async () => {
    const before = (await get()).json()
    for (const as of [undefined, 'viewer', 'operator'] as const) {
      const text = await t.inject({ method: 'PUT', url: '/api/branding', as, payload: { headline: 'hijacked' } })
      const image = await t.inject({
        method: 'PUT',
        url: '/api/branding/background',
        as,
        headers: { 'content-type': 'image/png' },
        payload: png(),
      })
      const remove = await t.inject({ method: 'DELETE', url: '/api/branding/background', as })
      for (const res of [text, image, remove]) expect(res.statusCode, `${as}`).toBe(as ? 403 : 401)
    }
    expect((await get()).json()).toEqual(before)
  })

  it('stores a PNG background and serves it publicly with its sniffed type, nosniff and a content hash', async () => {
    const image = png()
    const put = await t.inject({
      method: 'PUT',
      url: '/api/branding/background',
      as: 'admin',
      headers: { 'content-type': 'application/octet-stream' },
      payload: image,
    })
    expect(put.statusCode, put.body).toBe(200)
    const url = put.json().background as string
    expect(url).toMatch(/^\/api\/branding\/background\?v=[0-9a-f]{16}$/)
    expect((await get()).json().background).toBe(url)

    const res = await t.inject({ url })
    expect(res.statusCode).toBe(200)
    expect(res.rawPayload.equals(image)).toBe(true)
    expect(res.headers['content-type']).toBe('image/png')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(res.headers['content-security-policy']).toContain("default-src 'none'")
    const etag = res.headers.etag as string
    expect((await t.inject({ url, headers: { 'if-none-match': etag } })).statusCode).toBe(304)
    // Without the current hash, clients revalidate.
    expect((await t.inject({ url: '/api/branding/background?v=old' })).headers['cache-control']).toBe('no-cache')

    // A new image gets a new URL.
    const next = await t.inject({
      method: 'PUT',
      url: '/api/branding/background',
      as: 'admin',
      headers: { 'content-type': 'image/png' },
      payload: png(1, 2, 3),
    })
    expect(next.json().background).not.toBe(url)
    const events = (await audit()).filter((e) => e.action === 'branding.background.set' && e.result === 'success')
    expect(events[0]?.detail).toMatchObject({ type: 'image/png', bytes: png(1, 2, 3).length })
  })

  it('reads the type from the bytes: JPEG and WebP pass; GIF, SVG and text are 415 whatever the Content-Type says', async () => {
    for (const [bytes, type] of [
      [JPEG_HEAD, 'image/jpeg'],
      [WEBP_HEAD, 'image/webp'],
    ] as const) {
      const put = await t.inject({
        method: 'PUT',
        url: '/api/branding/background',
        as: 'admin',
        headers: { 'content-type': 'image/png' },
        payload: bytes,
      })
      expect(put.statusCode).toBe(200)
      const res = await t.inject({ url: put.json().background })
      expect(res.headers['content-type']).toBe(type)
    }
    const current = (await get()).json().background
    for (const [bytes, claimed] of [
      [GIF, 'image/png'],
      [SVG, 'image/svg+xml'],
      [Buffer.from('<html>hi</html>'), 'image/jpeg'],
      [Buffer.alloc(0), 'image/png'],
    ] as const) {
      const res = await t.inject({
        method: 'PUT',
        url: '/api/branding/background',
        as: 'admin',
        headers: { 'content-type': claimed },
        payload: bytes,
      })
      expect(res.statusCode, claimed).toBe(415)
      expect(res.json().error).toBe('HOSTD_BRANDING_IMAGE_TYPE')
    }
    const json = await t.inject({ method: 'PUT', url: '/api/branding/background', as: 'admin', payload: { data: 'x' } })
    expect(json.statusCode).toBe(415)
    expect((await get()).json().background).toBe(current)
  })

  it('caps the background at 4 MiB, by the declared length and by the bytes actually sent', async () => {
    const current = (await get()).json().background
    const big = Buffer.concat([png(), Buffer.alloc(4 * 1024 * 1024)])
    const res = await t.inject({
      method: 'PUT',
      url: '/api/branding/background',
      as: 'admin',
      headers: { 'content-type': 'image/png' },
      payload: big,
    })
    expect(res.statusCode).toBe(413)
    expect(res.json().error).toBe('HOSTD_BRANDING_IMAGE_TOO_LARGE')
    expect((await get()).json().background).toBe(current)
  })

  it('removes the background: null in the branding, 404 at its URL', async () => {
    const url = (await get()).json().background
    expect((await t.inject({ method: 'DELETE', url: '/api/branding/background', as: 'admin' })).statusCode).toBe(204)
    expect((await get()).json().background).toBeNull()
    const gone = await t.inject({ url })
    expect(gone.statusCode).toBe(404)
    expect(gone.json().error).toBe('HOSTD_BRANDING_NO_BACKGROUND')
    expect((await audit()).some((e) => e.action === 'branding.background.remove')).toBe(true)
  })
})
