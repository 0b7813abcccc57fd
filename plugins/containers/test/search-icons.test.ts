/**
 * Registry search against a STAND-IN index (a small HTTP server on loopback answering Docker Hub's
 * `GET /v1/search?q=&n=` shape: the public index cannot be reached from here), and container icons.
 * Neither needs an engine, so this file starts none (DOCKER_HOST points at a socket that does not exist).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import type { TestKernel } from '@hostd/sdk/testing'
import { kernelFor, auditActions } from './support/kernel.ts'
import { MAX_ICON_BYTES } from '../src/adapters/icons.ts'

/** The stand-in for Docker Hub's search index. */
function startStandInIndex(): Promise<{ server: Server; url: string; queries: URLSearchParams[] }> {
  const queries: URLSearchParams[] = []
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x')
    if (url.pathname !== '/v1/search') return res.writeHead(404).end()
    queries.push(url.searchParams)
    const q = url.searchParams.get('q') ?? ''
    if (q === 'slow') return // never answers: the plugin's timeout must end it
    if (q === 'broken') return res.writeHead(500).end('oops')
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        num_results: 2,
        query: q,
        results: [
          { name: q, description: `The official ${q}`, star_count: 1234, is_official: true, is_automated: false },
          {
            name: `someone/${q}-extra`,
            description: 'community',
            star_count: 7,
            is_official: false,
            is_automated: true,
          },
        ],
      }),
    )
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, queries })
    }),
  )
}

describe('registry search (stand-in index) and container icons', () => {
  let t: TestKernel
  let index: Awaited<ReturnType<typeof startStandInIndex>>

  beforeAll(async () => {
    index = await startStandInIndex()
    process.env.HOSTD_REGISTRY_INDEX_URL = index.url
    process.env.HOSTD_REGISTRY_SEARCH_TIMEOUT_MS = '500'
    t = await kernelFor(`unix://${join(tmpdir(), `hostd-no-engine-${process.pid}.sock`)}`)
  })
  afterAll(async () => {
    delete process.env.HOSTD_REGISTRY_INDEX_URL
    delete process.env.HOSTD_REGISTRY_SEARCH_TIMEOUT_MS
    await t?.close()
    index.server.closeAllConnections()
    await new Promise((resolve) => index.server.close(resolve))
  })

  it('searches the configured index and maps its answer', async () => {
    const res = await t.inject({ url: '/api/registry/search?q=nginx&limit=5', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      query: 'nginx',
      results: [
        { name: 'nginx', description: 'The official nginx', stars: 1234, official: true, automated: false },
        { name: 'someone/nginx-extra', description: 'community', stars: 7, official: false, automated: true },
      ],
    })
    expect(index.queries.at(-1)!.get('n')).toBe('5')
  })

  it('answers 503 with a clear message when the index fails or does not answer in time', async () => {
    for (const q of ['broken', 'slow']) {
      const res = await t.inject({ url: `/api/registry/search?q=${q}`, as: 'viewer' })
      expect(res.statusCode, q).toBe(503)
      expect(res.json().error).toBe('HOSTD_REGISTRY_SEARCH_UNAVAILABLE')
      expect(res.json().message).toContain(index.url)
    }
    expect((await t.inject({ url: '/api/registry/search?q=slow', as: 'viewer' })).json().message).toMatch(
      /within 500 ms/,
    )
    expect((await t.inject({ url: '/api/registry/search', as: 'viewer' })).statusCode).toBe(400)
  })

  const PNG = Buffer.from(
    '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a3f8a3a60000000049454e44ae426082',
    'hex',
  )
  const JPEG = Buffer.from('ffd8ffe000104a46494600010100000100010000ffd9', 'hex')
  const SVG = Buffer.from(
    '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><rect width="1" height="1" fill="#09f"/></svg>',
  )
  const put = (name: string, data: Buffer | string, as: 'viewer' | 'operator' = 'operator') =>
    t.inject({
      method: 'PUT',
      url: `/api/icons/container/${name}`,
      as,
      payload: { data: Buffer.isBuffer(data) ? data.toString('base64') : data },
    })

  it('stores PNG, JPEG and SVG icons by container name and serves them with their own type', async () => {
    for (const [name, data, type] of [
      ['png-app', PNG, 'image/png'],
      ['jpg-app', JPEG, 'image/jpeg'],
      ['svg-app', SVG, 'image/svg+xml'],
    ] as const) {
      expect((await put(name, data)).statusCode).toBe(204)
      const res = await t.inject({ url: `/api/icons/container/${name}`, as: 'viewer' })
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toBe(type)
      expect(res.headers['content-security-policy']).toContain("default-src 'none'")
      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(Buffer.from(res.rawPayload).equals(data)).toBe(true)
    }
    // Replacing a PNG with an SVG leaves only the SVG.
    expect((await put('png-app', SVG)).statusCode).toBe(204)
    expect((await t.inject({ url: '/api/icons/container/png-app', as: 'viewer' })).headers['content-type']).toBe(
      'image/svg+xml',
    )
  })

  it('refuses scripted SVG, other types, oversized icons and bad names, keeping the old icon', async () => {
    const hostile = [
      '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
      '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
      '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><iframe src="x"/></foreignObject></svg>',
      '<svg xmlns="http://www.w3.org/2000/svg"><a href="javascript:alert(1)"><rect/></a></svg>',
      '<svg xmlns="http://www.w3.org/2000/svg"><image href="https://tracker.example/x.png"/></svg>',
      '<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]><svg>&x;</svg>',
    ]
    for (const svg of hostile) {
      const res = await put('svg-app', Buffer.from(svg))
      expect(res.statusCode, svg).toBe(400)
      expect(res.json().error).toBe('HOSTD_CONTAINERS_ICON_INVALID')
    }
    expect((await put('svg-app', Buffer.from('GIF89a....'))).statusCode).toBe(400)
    expect((await put('svg-app', 'not base64 !!!')).statusCode).toBe(400)
    const big = Buffer.concat([PNG, Buffer.alloc(MAX_ICON_BYTES)])
    const tooBig = await put('svg-app', big)
    expect(tooBig.statusCode).toBe(413)
    // `..` never reaches the route as a name: the URL resolves to another path (404); either way nothing is stored.
    expect([400, 404]).toContain((await put('..', PNG)).statusCode)
    expect((await put('.hidden', PNG)).statusCode).toBe(400)
    expect((await put('a%2Fb', PNG)).statusCode).toBe(400)
    expect((await put('svg-app', PNG, 'viewer')).statusCode).toBe(403)
    const still = await t.inject({ url: '/api/icons/container/svg-app', as: 'viewer' })
    expect(Buffer.from(still.rawPayload).equals(SVG)).toBe(true)
  })

  it('deletes an icon (404 afterwards and for none), audited', async () => {
    expect((await t.inject({ method: 'DELETE', url: '/api/icons/container/jpg-app', as: 'operator' })).statusCode).toBe(
      204,
    )
    const gone = await t.inject({ url: '/api/icons/container/jpg-app', as: 'viewer' })
    expect(gone.statusCode).toBe(404)
    expect(gone.json().error).toBe('HOSTD_CONTAINERS_ICON_NOT_FOUND')
    expect((await t.inject({ method: 'DELETE', url: '/api/icons/container/jpg-app', as: 'operator' })).statusCode).toBe(
      404,
    )
    const audit = await auditActions(t)
    expect(audit.filter((e) => e.action === 'icon.set' && e.result === 'success').length).toBe(4)
    expect(audit.some((e) => e.action === 'icon.set' && e.result === 'failure')).toBe(true)
    expect(audit.some((e) => e.action === 'icon.remove' && e.target === 'jpg-app')).toBe(true)
  })
})
