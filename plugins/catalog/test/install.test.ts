/**
 * Installing from the catalog on a real engine: a private dockerd and a local docker-registry
 * (plugins/containers/test/support/engine.ts) holding a busybox image; a catalog source folder with an app that
 * runs busybox httpd on a published port. Install over the socket as an operator (pulled from the local
 * registry), see it installed in GET /api/catalog, fetch its page, see updates, uninstall with its volume. An app
 * that mounts a host path is 403 for an operator and works for an admin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort, openSocket, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import containers from '../../containers/src/index.ts'
import {
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../../containers/test/support/engine.ts'
import { createCatalogPlugin } from '../src/index.ts'
import { catalogFile } from './support.ts'

const MARKER = `catalog-app-${process.pid}-${Date.now()}`

describe('catalog install on a real engine', () => {
  let engine: TestEngine
  let registry: TestRegistry
  let t: TestKernel
  let dir: string
  let site: string
  let image: string
  let operator: string

  const web = (version: string) => ({
    id: 'web',
    version,
    title: 'Test web server',
    categories: ['Web'],
    port: 8080,
    fields: [
      { key: 'webPort', label: 'Web port', type: 'port', required: true },
      { key: 'greeting', label: 'Greeting', type: 'text', default: 'hello' },
      { key: 'secret', label: 'Secret', type: 'password' },
    ],
    runSpec: {
      image,
      command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
      ports: ['127.0.0.1:{{fields.webPort}}:8080'],
      volumes: ['web-data:/data'],
      env: { GREETING: '{{fields.greeting}}', SECRET: '{{fields.secret}}' },
    },
  })
  const hostSite = () => ({
    id: 'host-site',
    version: '1.0.0',
    title: 'Serve a host folder',
    categories: ['Web'],
    fields: [
      { key: 'webPort', label: 'Web port', type: 'port', required: true },
      { key: 'site', label: 'Site folder', type: 'path', required: true },
    ],
    runSpec: {
      image,
      command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
      ports: ['127.0.0.1:{{fields.webPort}}:8080'],
      volumes: ['{{fields.site}}:/www:ro'],
    },
  })
  const writeSource = (version: string) =>
    writeFile(join(dir, 'apps.json'), catalogFile([web(version), hostSite(), { id: 'bad', title: 'no version' }]))

  beforeAll(async () => {
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/catalog:1', MARKER)
    image = `${registry.address}/hostd-test/catalog:1`
    await pushToRegistry(engine, 'hostd-test/catalog:1', image)
    // Only the registry has it now: installing must pull.
    await engine.docker('rmi', image, 'hostd-test/catalog:1')
    dir = await mkdtemp(join(tmpdir(), 'hostd-catalog-apps-'))
    site = await mkdtemp(join(tmpdir(), 'hostd-catalog-site-'))
    await writeFile(join(site, 'index.html'), `from the host folder ${MARKER}\n`)
    await writeSource('1.0.0')
    t = await startTestKernel({
      plugins: [containers, createCatalogPlugin()],
      listen: true,
      env: { DOCKER_HOST: engine.host },
    })
    operator = (await t.login('operator')).token
    const added = await t.inject({
      method: 'POST',
      url: '/api/catalog/sources',
      as: 'admin',
      payload: { kind: 'directory', location: dir, id: 'test' },
    })
    expect(added.json()).toMatchObject({
      ok: true,
      apps: 2,
      skipped: [expect.objectContaining({ index: 2, id: 'bad' })],
    })
  })
  afterAll(async () => {
    await t?.close()
    await registry?.stop()
    await engine?.stop()
    for (const d of [dir, site]) if (d) await rm(d, { recursive: true, force: true })
  })

  const listed = async (id: string) =>
    (await t.inject({ url: '/api/catalog', as: 'viewer' }))
      .json()
      .apps.find((a: { id: string; source: string }) => a.id === id && a.source === 'test')

  it('installs an app over the socket as an operator, pulling from the registry, and lists it as installed', async () => {
    const port = await freePort()
    const s = openSocket(t, '/api/catalog/install', operator, {
      appId: 'web',
      source: 'test',
      values: { webPort: port, secret: 'do-not-log-me' },
    })
    const closed = await s.closed
    expect(closed.code, JSON.stringify(s.messages.at(-1))).toBe(1000)
    const types = s.messages.map((m) => m.type)
    expect(types[0]).toBe('accepted')
    expect(types).toContain('pull-start')
    expect(types).toContain('pull')
    expect(types.slice(-2)).toEqual(['created', 'result'])
    const result = s.messages.at(-1)
    expect(result).toMatchObject({
      ok: true,
      appId: 'web',
      source: 'test',
      version: '1.0.0',
      name: 'web',
      containerId: expect.stringMatching(/^[0-9a-f]{64}$/),
    })

    // Provenance is on the container as labels, set through the containers service.
    const inspect = (await engine.api('GET', `/containers/${result.containerId}/json`)).json()
    expect(inspect.Config.Labels).toMatchObject({
      'dev.hostd.catalog.app': 'web',
      'dev.hostd.catalog.source': 'test',
      'dev.hostd.catalog.version': '1.0.0',
    })
    expect(inspect.Config.Env).toEqual(expect.arrayContaining(['GREETING=hello', 'SECRET=do-not-log-me']))

    const app = await listed('web')
    expect(app).toMatchObject({ installed: true, updateAvailable: false })
    expect(app.installs).toEqual([
      {
        containerId: result.containerId,
        name: 'web',
        state: 'running',
        version: '1.0.0',
        versionUpdate: false,
        imageUpdate: false,
        updateAvailable: false,
        // The entry's web port (8080) as the engine publishes it: the page's Open link.
        web: { port, scheme: 'http', path: '/' },
      },
    ])
    const page = await eventually(() =>
      fetch(`http://127.0.0.1:${port}/`).then(
        (r) => r.text(),
        () => null,
      ),
    )
    expect(page.trim()).toBe(MARKER)
    // Stopped, it publishes nothing: no address to open until it runs again.
    expect((await engine.api('POST', `/containers/${result.containerId}/stop?t=1`)).status).toBe(204)
    expect((await listed('web')).installs[0]).toMatchObject({ state: 'exited', web: null })
    expect((await engine.api('POST', `/containers/${result.containerId}/start`)).status).toBe(204)
    expect((await listed('web')).installs[0]).toMatchObject({ state: 'running', web: { port } })

    const audit = await t.inject({ url: '/api/audit?range=all&limit=200', as: 'admin' })
    expect(audit.body).not.toContain('do-not-log-me')
    const entry = audit.json().items.find((e: { action: string }) => e.action === 'catalog.install')
    expect(entry).toMatchObject({
      target: 'test/web',
      result: 'success',
      detail: { containerId: result.containerId, fields: ['webPort', 'secret'] },
    })
  })

  it('shows an update when the catalog has a newer version of an installed app', async () => {
    await writeSource('1.1.0')
    await t.inject({ method: 'POST', url: '/api/catalog/sources/test/refresh', as: 'admin' })
    const app = await listed('web')
    expect(app.version).toBe('1.1.0')
    expect(app.updateAvailable).toBe(true)
    expect(app.installs[0]).toMatchObject({ version: '1.0.0', versionUpdate: true, updateAvailable: true })
  })

  it('refuses an app that mounts a host path to an operator (403, nothing created) and installs it for an admin', async () => {
    const before = (await engine.api('GET', '/containers/json?all=1')).json().length
    const port = await freePort()
    const denied = await t.inject({
      method: 'POST',
      url: '/api/catalog/install',
      as: { token: operator },
      payload: { appId: 'host-site', values: { webPort: port, site } },
    })
    expect(denied.statusCode).toBe(403)
    expect(denied.json().error).toBe('HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN')
    expect((await engine.api('GET', '/containers/json?all=1')).json().length).toBe(before)
    const audit = (await t.inject({ url: '/api/audit?range=all&limit=200', as: 'admin' })).json().items
    expect(audit.find((e: { action: string }) => e.action === 'catalog.install')).toMatchObject({
      target: 'test/host-site',
      result: 'failure',
      detail: { error: 'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN' },
    })

    const ok = await t.inject({
      method: 'POST',
      url: '/api/catalog/install',
      as: 'admin',
      payload: { appId: 'host-site', values: { webPort: port, site }, name: 'my-site' },
    })
    expect(ok.statusCode, ok.body).toBe(201)
    expect(ok.json()).toMatchObject({ name: 'my-site', appId: 'host-site' })
    const page = await eventually(() =>
      fetch(`http://127.0.0.1:${port}/`).then(
        (r) => r.text(),
        () => null,
      ),
    )
    expect(page.trim()).toBe(`from the host folder ${MARKER}`)
    // Its entry names no web port: nothing to open, though it publishes one.
    expect((await listed('host-site')).installs[0]).toMatchObject({ name: 'my-site', state: 'running', web: null })
  })

  it('answers bad install requests with 400/404 and creates nothing', async () => {
    const before = (await engine.api('GET', '/containers/json?all=1')).json().length
    const cases: [Record<string, unknown>, number, string][] = [
      [{ appId: 'web', values: {} }, 400, 'HOSTD_CATALOG_VALUES_INVALID'],
      [{ appId: 'web', values: { webPort: 'eighty' } }, 400, 'HOSTD_CATALOG_VALUES_INVALID'],
      [{ appId: 'nope' }, 404, 'HOSTD_CATALOG_APP_NOT_FOUND'],
      [{ appId: 'web', source: 'nope', values: { webPort: 1 } }, 404, 'HOSTD_CATALOG_SOURCE_NOT_FOUND'],
      [{ appId: 'web', values: { webPort: 1 }, name: 'web' }, 409, 'HOSTD_CONTAINERS_NAME_IN_USE'],
      [{ appId: 'web', extra: true }, 400, 'HOSTD_REQUEST_INVALID'],
    ]
    for (const [payload, status, code] of cases) {
      const res = await t.inject({ method: 'POST', url: '/api/catalog/install', as: { token: operator }, payload })
      expect(res.statusCode, JSON.stringify(payload)).toBe(status)
      expect(res.json().error).toBe(code)
    }
    expect((await engine.api('GET', '/containers/json?all=1')).json().length).toBe(before)
    const viewer = await t.inject({
      method: 'POST',
      url: '/api/catalog/install',
      as: 'viewer',
      payload: { appId: 'web', values: { webPort: 1 } },
    })
    expect(viewer.statusCode).toBe(403)
    const s = openSocket(t, '/api/catalog/install', operator, '{"appId": "web", "appId": "web"}')
    expect((await s.closed).code).toBe(4400)
    expect(s.messages.at(-1)).toMatchObject({ type: 'result', ok: false, error: 'HOSTD_CATALOG_VALUES_INVALID' })
  })

  it('uninstalls only catalog containers: the container and, when asked, its named volume', async () => {
    const plain = await t.inject({
      method: 'POST',
      url: '/api/containers',
      as: { token: operator },
      payload: { image, name: 'not-from-catalog', command: 'sleep 1000' },
    })
    expect(plain.statusCode).toBe(201)
    const refused = await t.inject({
      method: 'POST',
      url: '/api/catalog/uninstall',
      as: { token: operator },
      payload: { container: 'not-from-catalog' },
    })
    expect(refused.statusCode).toBe(404)
    expect(refused.json().error).toBe('HOSTD_CATALOG_NOT_INSTALLED')

    const res = await t.inject({
      method: 'POST',
      url: '/api/catalog/uninstall',
      as: { token: operator },
      payload: { container: 'web', removeVolumes: true },
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ name: 'web', appId: 'web', removedVolumes: ['web-data'], keptVolumes: [] })
    expect((await engine.api('GET', '/containers/web/json')).status).toBe(404)
    expect((await engine.api('GET', '/volumes/web-data')).status).toBe(404)
    expect((await listed('web')).installed).toBe(false)

    // Without removeVolumes the app's volumes stay (host-site has none: its bind is a host folder, never removed).
    const kept = await t.inject({
      method: 'POST',
      url: '/api/catalog/uninstall',
      as: { token: operator },
      payload: { container: 'my-site' },
    })
    expect(kept.json()).toMatchObject({ removedVolumes: [], keptVolumes: [] })
    expect((await listed('host-site')).installed).toBe(false)
    const audit = (await t.inject({ url: '/api/audit?range=all&limit=200', as: 'admin' })).json().items
    expect(audit.filter((e: { action: string }) => e.action === 'catalog.uninstall').length).toBe(2)
    expect(
      audit.some((e: { action: string; target: string }) => e.action === 'container.remove' && e.target === 'web'),
    ).toBe(true)
  })
})
