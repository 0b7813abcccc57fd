/**
 * How the daemon serves the UI on its API port (no browser): the index with its CSP, hashed assets cached for
 * good in gzip and brotli, client routes falling back to the index, JSON 404s for unknown API paths and missing
 * files, and each plugin's files at a versioned path.
 */
import { createHash } from 'node:crypto'
import { cp, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { REPO_ROOT, startDaemon, waitFor, type Daemon } from '../support/daemon.ts'

describe('serving the web UI', () => {
  let d: Daemon
  let index: string
  beforeAll(async () => {
    d = await startDaemon()
    await cp(join(REPO_ROOT, 'examples', 'hello-plugin'), join(d.pluginsDir, 'hello'), {
      recursive: true,
      filter: (src) => !src.includes('node_modules'),
    })
    const ts = join(d.pluginsDir, 'tsui')
    await mkdir(join(ts, 'ui'), { recursive: true })
    await writeFile(
      join(ts, 'package.json'),
      '{ "name": "tsui", "version": "1.0.0", "type": "module", "main": "index.js" }',
    )
    await writeFile(
      join(ts, 'index.js'),
      "import { definePlugin } from '@hostd/sdk'\n" +
        "export default definePlugin({ id: 'tsui', version: '1.0.0', kernel: '^1.0.0', " +
        "ui: { pages: [{ path: '/tsui', title: 'T', module: 'ui/page.tsx', element: 'ts-page' }] } })\n",
    )
    await writeFile(join(ts, 'ui', 'page.tsx'), 'export {}\n')
    index = await (await d.fetch('/')).text()
  })
  afterAll(() => d?.stop())

  it('serves index.html for / and client routes, with a CSP that allows only its own scripts and its two inline ones', async () => {
    for (const path of ['/', '/users', '/containers/abc/logs']) {
      const res = await d.fetch(path)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(res.headers.get('cache-control')).toBe('no-cache')
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      const csp = res.headers.get('content-security-policy')!
      // The inline scripts: the import map and the boot retry (ui/build.mjs); nothing else may run inline.
      const inline = [...(await res.text()).matchAll(/<script(?: type="importmap")?>([\s\S]*?)<\/script>/g)].map(
        (m) => m[1]!,
      )
      expect(inline).toHaveLength(2)
      const hashes = inline.map((text) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`)
      expect(csp).toContain(`script-src 'self' ${hashes.join(' ')};`)
      expect(csp).toContain("default-src 'none'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp.match(/script-src[^;]*/)![0]).not.toMatch(/unsafe/)
    }
    expect(JSON.parse(/<script type="importmap">([\s\S]*?)<\/script>/.exec(index)![1]!).imports).toHaveProperty(
      '@hostd/ui',
    )
  })

  it('keeps JSON 404s for unknown API paths and missing files, and answers other methods as before', async () => {
    for (const path of ['/api/nope', '/api', '/ui/assets/missing.js', '/favicon.ico', '/index.html']) {
      const res = await d.fetch(path)
      expect(res.status, path).toBe(404)
      expect(((await res.json()) as { error: string }).error).toBe('HOSTD_ROUTE_NOT_FOUND')
    }
    expect((await d.fetch('/', { method: 'POST' })).status).toBe(404)
    expect((await d.fetch('/api/auth/me')).status).toBe(401)
  })

  it('serves hashed assets for good, precompressed in brotli and gzip, with ETags', async () => {
    const asset = /<script type="module" src="([^"]+)"/.exec(index)![1]!
    const plain = await d.fetch(asset, { headers: { 'accept-encoding': 'identity' } })
    const body = Buffer.from(await plain.arrayBuffer())
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    const br = await d.fetch(asset, { headers: { 'accept-encoding': 'gzip, br' } })
    expect(br.headers.get('content-encoding')).toBe('br')
    const gz = await d.fetch(asset, { headers: { 'accept-encoding': 'gzip' } })
    expect(gz.headers.get('content-encoding')).toBe('gzip')
    // undici decodes by itself; the raw bytes are checked against the files the build wrote.
    const { readFile } = await import('node:fs/promises')
    const file = join(REPO_ROOT, 'ui', 'dist', asset.slice('/ui/'.length))
    expect(brotliDecompressSync(await readFile(`${file}.br`)).equals(body)).toBe(true)
    expect(gunzipSync(await readFile(`${file}.gz`)).equals(body)).toBe(true)
    const again = await d.fetch(asset, { headers: { 'if-none-match': plain.headers.get('etag')! } })
    expect(again.status).toBe(304)
  })

  it("serves a plugin's UI files at its versioned path only, and refuses TypeScript from a third-party plugin", async () => {
    await waitFor(async () => (await d.fetch('/plugins/hello/1.0.0/page.js')).status === 200, 10_000, 100)
    const page = await d.fetch('/plugins/hello/1.0.0/page.js', { headers: { 'accept-encoding': 'gzip' } })
    expect(page.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(page.headers.get('content-encoding')).toBe('gzip')
    expect(page.headers.get('cache-control')).toBe('no-cache')
    expect(await page.text()).toContain("customElements.define('hello-page'")
    for (const path of [
      '/plugins/hello/0.9.0/page.js',
      '/plugins/hello/1.0.0/%2e%2e/src/index.ts',
      '/plugins/hello/1.0.0/',
      '/plugins/nobody/1.0.0/page.js',
    ]) {
      expect((await d.fetch(path)).status, path).toBe(404)
    }
    const token = await adminToken(d)
    // The daemon serves while its plugins still load: tsui is listed starting until its load has failed.
    const tsui = await eventually(async () => {
      const list = (await (
        await d.fetch('/api/extensions', { headers: { authorization: `Bearer ${token}` } })
      ).json()) as { id: string; state: string; error?: string }[]
      const entry = list.find((e) => e.id === 'tsui')
      return entry && entry.state !== 'starting' ? entry : null
    })
    expect(tsui).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('only built-in plugins are compiled'),
    })
  })
})

async function adminToken(d: Daemon): Promise<string> {
  const json = { 'content-type': 'application/json' }
  const account = JSON.stringify({ username: 'admin', password: 'correct horse battery' })
  await d.fetch('/api/setup', { method: 'POST', headers: json, body: account })
  const res = await d.fetch('/api/auth/login', {
    method: 'POST',
    headers: { ...json, 'x-svc-client': 't' },
    body: account,
  })
  return ((await res.json()) as { token: string }).token
}
