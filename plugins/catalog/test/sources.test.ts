/**
 * The catalog format and its sources, with the real containers plugin beside it (no engine needed: nothing is
 * installed here): the built-in file, a directory with good, bad and broken files, HTTPS sources served by a
 * local server with its own certificate (trusted through the plugin's `fetch.ca` option; the default trust
 * store otherwise, so an unknown certificate is refused), and the rendering rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import containers from '../../containers/src/index.ts'
import { createCatalogPlugin } from '../src/index.ts'
import { renderRunSpec } from '../src/render.ts'
import { parseCatalog } from '../src/sources.ts'
import type { CatalogEntry } from '../src/schemas.ts'
import { catalogJsonSchema } from './schema-file.ts'
import { app, catalogFile, sourceDir, startHttps, type LocalHttps } from './support.ts'

const NO_ENGINE = { DOCKER_HOST: 'unix:///nonexistent/hostd-catalog-no-engine.sock' }

describe('the catalog format', () => {
  it('ships a built-in catalog whose every entry is valid, pinned, and names the public registry it needs', () => {
    const loaded = parseCatalog(readFileSync(join(import.meta.dirname, '..', 'catalog', 'builtin.json'), 'utf8'))
    expect(loaded.skipped).toEqual([])
    expect(loaded.apps.length).toBeGreaterThanOrEqual(8)
    for (const a of loaded.apps) expect(a.runSpec?.image, a.id).toMatch(/:[^:/]+$/)
  })

  it('keeps catalog.schema.json the same schema that validates entries', () => {
    expect(readFileSync(join(import.meta.dirname, '..', 'catalog.schema.json'), 'utf8')).toBe(catalogJsonSchema())
  })

  it('skips each bad entry with its reason and keeps the good ones', () => {
    const loaded = parseCatalog(
      catalogFile([
        app('good'),
        app('Bad-Id'),
        app('unpinned', { runSpec: { image: 'example/app:latest' } }),
        app('untagged', { runSpec: { image: 'example/app' } }),
        app('badversion', { version: 'one' }),
        app('extra', { shell: '/bin/sh' }),
        app('undeclared', { runSpec: { image: 'x/y:1', env: { A: '{{fields.nope}}' } } }),
        app('pathinenv', {
          fields: [{ key: 'p', label: 'P', type: 'path' }],
          runSpec: { image: 'x/y:1', env: { A: '{{fields.p}}' } },
        }),
        app('templatename', {
          fields: [{ key: 'n', label: 'N', type: 'text' }],
          runSpec: { image: 'x/y:1', user: '{{fields.n}}' },
        }),
        app('stringcommand', {
          fields: [{ key: 'n', label: 'N', type: 'text' }],
          runSpec: { image: 'x/y:1', command: 'echo {{fields.n}}' },
        }),
        app('nooptions', { fields: [{ key: 's', label: 'S', type: 'select' }] }),
        app('baddefault', { fields: [{ key: 'p', label: 'P', type: 'port', default: 70000 }] }),
        app('httpicon', { icon: 'http://example.com/i.png' }),
        app('good'),
        'not an object',
      ]),
    )
    expect(loaded.apps.map((a) => a.id)).toEqual(['good'])
    const reasons = Object.fromEntries(loaded.skipped.map((s) => [`${s.index}:${s.id ?? ''}`, s.reason]))
    expect(reasons).toMatchObject({
      '1:Bad-Id': expect.stringContaining('/id'),
      '2:unpinned': expect.stringContaining('not pinned'),
      '3:untagged': expect.stringContaining('not pinned'),
      '4:badversion': expect.stringContaining('semver'),
      '5:extra': expect.stringMatching(/shell|additional|Unexpected/i),
      '6:undeclared': expect.stringContaining('not a declared field'),
      '7:pathinenv': expect.stringContaining('volume source'),
      '8:templatename': expect.stringContaining('templates are allowed only'),
      '9:stringcommand': expect.stringContaining('templates are allowed only'),
      '10:nooptions': expect.stringContaining('no options'),
      '11:baddefault': expect.stringContaining('default'),
      '12:httpicon': expect.stringContaining('https'),
      '13:good': expect.stringContaining('twice'),
      '14:': expect.any(String),
    })
  })

  it("renders values into the RunSpec after checking each against its field, and never lets one change the spec's shape", () => {
    const entry = parseCatalog(
      catalogFile([
        app('r', {
          fields: [
            { key: 'port', label: 'Port', type: 'port', required: true },
            { key: 'name', label: 'Name', type: 'text', pattern: '[a-z ]+' },
            { key: 'secret', label: 'Secret', type: 'password' },
            { key: 'media', label: 'Media', type: 'path' },
            { key: 'mode', label: 'Mode', type: 'select', default: 'a', options: [{ value: 'a' }, { value: 'b' }] },
            { key: 'on', label: 'On', type: 'boolean', default: true },
            { key: 'n', label: 'N', type: 'number', min: 1, max: 5 },
          ],
          runSpec: {
            image: 'x/y:1',
            command: ['serve', '--name', '{{fields.name}}', '--mode={{fields.mode}}'],
            ports: ['{{fields.port}}:80'],
            volumes: ['data:/data', '{{fields.media}}:/media:ro'],
            env: { SECRET: '{{fields.secret}}', ON: '{{fields.on}}', N: 'n={{fields.n}}' },
          },
        }),
      ]),
    ).apps[0] as CatalogEntry
    expect(renderRunSpec(entry, { port: 8080, name: 'two words', secret: 'p:a,s s', n: 3 })).toEqual({
      image: 'x/y:1',
      name: 'r',
      command: ['serve', '--name', 'two words', '--mode=a'],
      ports: ['8080:80'],
      volumes: ['data:/data'],
      env: { SECRET: 'p:a,s s', ON: 'true', N: 'n=3' },
    })
    expect(renderRunSpec(entry, { port: 1, media: '/srv//films/', mode: 'b' }, 'custom').volumes).toEqual([
      'data:/data',
      '/srv/films:/media:ro',
    ])
    const bad: [Record<string, unknown>, RegExp][] = [
      [{}, /Port \(port\) is required/],
      [{ port: 0 }, /port number/],
      [{ port: '80' }, /port number/],
      [{ port: 80, name: 'UPPER' }, /does not match/],
      [{ port: 80, name: 'a\u0007' }, /control/],
      [{ port: 80, media: 'relative' }, /absolute/],
      [{ port: 80, media: '/a/../etc' }, /\.\./],
      [{ port: 80, media: '/srv:/etc' }, /: or ,/],
      [{ port: 80, mode: 'c' }, /one of a, b/],
      [{ port: 80, on: 'yes' }, /true or false/],
      [{ port: 80, n: 9 }, /at most 5/],
      [{ port: 80, other: 1 }, /Unknown field: other/],
    ]
    for (const [values, message] of bad) {
      expect(() => renderRunSpec(entry, values), JSON.stringify(values)).toThrow(message)
    }
    try {
      renderRunSpec(entry, { port: 80, name: 'NOT-ALLOWED-SECRET' })
    } catch (err) {
      expect((err as Error).message).not.toContain('NOT-ALLOWED-SECRET')
    }
  })
})

describe('catalog sources', () => {
  let t: TestKernel
  let https: LocalHttps
  let dir: string

  beforeAll(async () => {
    https = await startHttps()
    dir = await sourceDir({
      'apps.json': catalogFile(
        [app('alpha', { categories: ['Zeta', 'Alpha'] }), app('broken', { runSpec: { image: 'x/y' } })],
        'Local apps',
      ),
      'more.json': catalogFile([app('beta')]),
      'junk.json': '{ not json',
      'other.json': JSON.stringify({ format: 'something-else', apps: [] }),
      'notes.txt': 'ignored',
    })
    t = await startTestKernel({
      plugins: [containers, createCatalogPlugin({ fetch: { ca: https.ca, timeoutMs: 1500, maxBytes: 64 * 1024 } })],
      env: NO_ENGINE,
    })
  })
  afterAll(async () => {
    await t?.close()
    await https?.close()
    await rm(dir, { recursive: true, force: true })
  })

  const catalog = async () => (await t.inject({ url: '/api/catalog', as: 'viewer' })).json()
  const add = (body: Record<string, unknown>, as: 'admin' | 'operator' | 'viewer' = 'admin') =>
    t.inject({ method: 'POST', url: '/api/catalog/sources', as, payload: body })

  it('lists the built-in catalog to a viewer, with fields and categories, and the engine state (no engine here)', async () => {
    const list = await catalog()
    expect(list.engine.available).toBe(false)
    expect(list.sources).toEqual([
      expect.objectContaining({ id: 'builtin', kind: 'builtin', ok: true, error: null, skipped: [] }),
    ])
    const jellyfin = list.apps.find((a: { id: string }) => a.id === 'jellyfin')
    expect(jellyfin).toMatchObject({
      source: 'builtin',
      installed: false,
      updateAvailable: false,
      installs: [],
      needsAdmin: true,
      image: 'jellyfin/jellyfin:10.10.3',
    })
    expect(jellyfin.fields.map((f: { key: string; type: string }) => `${f.key}:${f.type}`)).toEqual([
      'webPort:port',
      'media:path',
    ])
    expect(list.apps.find((a: { id: string }) => a.id === 'uptime-kuma').needsAdmin).toBe(false)
    expect(list.categories).toContain('Media')
  })

  it('adds a directory source: good entries load, a bad entry, a broken file and a foreign file are each skipped with a reason', async () => {
    expect((await add({ kind: 'directory', location: dir }, 'operator')).statusCode).toBe(403)
    const res = await add({ kind: 'directory', location: dir, id: 'local' })
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json()).toMatchObject({ id: 'local', kind: 'directory', name: 'Local apps', ok: true, apps: 2 })
    const skipped = res.json().skipped as { file?: string; id?: string; reason: string }[]
    expect(skipped).toEqual(
      expect.arrayContaining([
        { file: 'apps.json', index: 1, id: 'broken', reason: expect.stringContaining('not pinned') },
        { file: 'junk.json', reason: expect.stringContaining('not valid JSON') },
        { file: 'other.json', reason: expect.stringContaining('format') },
      ]),
    )
    expect(skipped).toHaveLength(3)
    const list = await catalog()
    expect(list.apps.filter((a: { source: string }) => a.source === 'local').map((a: { id: string }) => a.id)).toEqual([
      'alpha',
      'beta',
    ])
    expect(list.categories).toEqual(expect.arrayContaining(['Alpha', 'Zeta', 'Media']))
    expect(
      (await t.inject({ url: '/api/catalog/sources', as: 'viewer' })).json().map((s: { id: string }) => s.id),
    ).toEqual(['builtin', 'local'])
  })

  it('reads a folder again on refresh; a folder that went away is reported, not fatal', async () => {
    await writeFile(join(dir, 'more.json'), catalogFile([app('beta', { version: '1.1.0' }), app('gamma')]))
    const refreshed = await t.inject({ method: 'POST', url: '/api/catalog/sources/local/refresh', as: 'admin' })
    expect(refreshed.json()).toMatchObject({ ok: true, apps: 3 })
    const missing = await add({ kind: 'directory', location: join(dir, 'nope'), id: 'gone' })
    expect(missing.statusCode).toBe(201)
    expect(missing.json()).toMatchObject({ ok: false, apps: 0, error: expect.stringContaining('ENOENT') })
    expect((await catalog()).apps.some((a: { id: string }) => a.id === 'gamma')).toBe(true)
    expect((await t.inject({ method: 'POST', url: '/api/catalog/sources/gone/remove', as: 'admin' })).statusCode).toBe(
      204,
    )
  })

  it('fetches an HTTPS source; a timeout, an answer too big, invalid JSON, an error status are each reported, never fatal', async () => {
    https.answer = (res, path) => {
      if (path === '/good.json') return res.end(catalogFile([app('remote')], 'Remote'))
      if (path === '/slow.json') return // never answers
      if (path === '/big.json')
        return res.end(catalogFile([app('big', { description: 'x'.repeat(3000) })]).padEnd(200 * 1024))
      if (path === '/bad.json') return res.end('{"format": "hostd-catalog/1", "apps": [')
      res.statusCode = 404
      res.end('no')
    }
    const good = await add({ kind: 'url', location: `${https.url}/good.json`, id: 'remote' })
    expect(good.json()).toMatchObject({ ok: true, apps: 1, name: 'Remote', error: null })
    const cases: [string, RegExp][] = [
      ['slow', /within 1500 ms/],
      ['big', /larger than 65536 bytes/],
      ['bad', /not valid JSON/],
      ['missing', /HTTP 404/],
    ]
    for (const [name, reason] of cases) {
      const res = await add({ kind: 'url', location: `${https.url}/${name}.json`, id: name })
      expect(res.statusCode, name).toBe(201)
      expect(res.json(), name).toMatchObject({ ok: false, apps: 0, error: expect.stringMatching(reason) })
    }
    const list = await catalog()
    expect(list.apps.some((a: { id: string; source: string }) => a.id === 'remote' && a.source === 'remote')).toBe(true)
    expect(
      list.sources
        .filter((s: { ok: boolean }) => !s.ok)
        .map((s: { id: string }) => s.id)
        .sort(),
    ).toEqual(['bad', 'big', 'missing', 'slow'])
  })

  it('refuses what is not a source, and duplicates, changing nothing', async () => {
    const before = (await t.inject({ url: '/api/catalog/sources', as: 'viewer' })).json()
    const cases: [Record<string, unknown>, number, string][] = [
      [{ kind: 'url', location: `http://127.0.0.1/x.json` }, 400, 'HOSTD_CATALOG_SOURCE_INVALID'],
      [{ kind: 'url', location: 'https://user:pw@example.com/x.json' }, 400, 'HOSTD_CATALOG_SOURCE_INVALID'],
      [{ kind: 'url', location: 'not a url' }, 400, 'HOSTD_CATALOG_SOURCE_INVALID'],
      [{ kind: 'directory', location: 'relative/dir' }, 400, 'HOSTD_CATALOG_SOURCE_INVALID'],
      [{ kind: 'git', location: '/x' }, 400, 'HOSTD_REQUEST_INVALID'],
      [{ kind: 'directory', location: dir }, 409, 'HOSTD_CATALOG_SOURCE_EXISTS'],
      [{ kind: 'directory', location: '/srv/other', id: 'local' }, 409, 'HOSTD_CATALOG_SOURCE_EXISTS'],
    ]
    for (const [body, status, code] of cases) {
      const res = await add(body)
      expect(res.statusCode, JSON.stringify(body)).toBe(status)
      expect(res.json().error).toBe(code)
    }
    const builtin = await t.inject({ method: 'POST', url: '/api/catalog/sources/builtin/remove', as: 'admin' })
    expect(builtin.statusCode).toBe(409)
    expect((await t.inject({ url: '/api/catalog/sources', as: 'viewer' })).json()).toEqual(before)
  })

  it('keeps its sources across a reload of the plugin, and audits source changes', async () => {
    await t.kernel.registry.disable('catalog')
    await t.kernel.registry.enable('catalog')
    const ids = (await t.inject({ url: '/api/catalog/sources', as: 'viewer' })).json().map((s: { id: string }) => s.id)
    expect(ids).toEqual(['builtin', 'local', 'remote', 'slow', 'big', 'bad', 'missing'])
    const audit = (await t.inject({ url: '/api/audit?range=all&limit=200', as: 'admin' })).json().items as {
      action: string
      target: string
    }[]
    expect(audit.filter((e) => e.action === 'catalog.source.add').length).toBeGreaterThanOrEqual(6)
    expect(audit.some((e) => e.action === 'catalog.source.remove' && e.target === 'gone')).toBe(true)
  })
})

describe('HTTPS sources without the test CA', () => {
  it('refuses a certificate the system does not trust (TLS checks stay on)', async () => {
    const https = await startHttps()
    https.answer = (res) => res.end(catalogFile([app('x')]))
    const t = await startTestKernel({ plugins: [containers, createCatalogPlugin()], env: NO_ENGINE })
    try {
      const res = await t.inject({
        method: 'POST',
        url: '/api/catalog/sources',
        as: 'admin',
        payload: { kind: 'url', location: `${https.url}/c.json` },
      })
      expect(res.json()).toMatchObject({ ok: false, error: expect.stringMatching(/certificate/i) })
    } finally {
      await t.close()
      await https.close()
    }
  })
})
