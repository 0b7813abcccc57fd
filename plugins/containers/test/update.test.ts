/**
 * Engine absence and recovery, pulls from a real local registry (docker-registry on loopback), updates with
 * rollback over the update socket, updateAvailable, auto-start across a plugin restart, images and networks.
 * Real dockerd of its own (its socket path is known before it starts, so the plugin first sees no engine).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { eventually, openSocket, type TestKernel } from '@hostd/sdk/testing'
import {
  BUSYBOX_LINKS,
  engineDir,
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from './support/engine.ts'
import { auditActions, kernelFor } from './support/kernel.ts'

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')

describe('engine recovery, registry pulls and updates', () => {
  let dir: string
  let engine: TestEngine
  let registry: TestRegistry
  let t: TestKernel
  let operator: string
  let ref: string
  const ids: Record<string, string> = {}

  beforeAll(async () => {
    // Every list call checks the registry again in the background, so an update shows without waiting an hour.
    process.env.HOSTD_CONTAINERS_UPDATE_CHECK_SECONDS = '0'
    dir = await engineDir()
    t = await kernelFor(`unix://${dir}/docker.sock`)
    operator = (await t.login('operator')).token
  })
  afterAll(async () => {
    delete process.env.HOSTD_CONTAINERS_UPDATE_CHECK_SECONDS
    await t?.close()
    await registry?.stop()
    await engine?.stop()
  })

  const api = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    payload?: unknown,
    as: 'viewer' | 'operator' | 'admin' = 'operator',
  ) => t.inject({ method, url, as: as === 'operator' ? { token: operator } : as, payload: payload as never })
  const imageId = async (r: string) => (await engine.api('GET', `/images/${r}/json`)).json().Id as string

  it('without an engine: lists answer 200 with available false, actions 503 saying what is missing', async () => {
    for (const url of ['/api/containers', '/api/images', '/api/networks']) {
      const res = await api('GET', url, undefined, 'viewer')
      expect(res.statusCode, url).toBe(200)
      expect(res.json()).toMatchObject({ engine: { available: false }, items: [] })
      expect(res.json().engine.message).toContain(`${dir}/docker.sock`)
    }
    // The role rules do not wait for an engine.
    const needsAdmin = await api('POST', '/api/containers', { image: 'x', network: 'host' })
    expect(needsAdmin.statusCode).toBe(403)
    expect(needsAdmin.json().error).toBe('HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN')
    expect((await api('POST', '/api/containers', { image: 'x', volumes: ['//:/h'] }, 'admin')).json().error).toBe(
      'HOSTD_CONTAINERS_HOST_ROOT_REFUSED',
    )
    const status = await api('GET', '/api/system/engine', undefined, 'viewer')
    expect(status.json()).toMatchObject({ available: false, installed: true, version: '' })
    for (const [url, body] of [
      ['/api/containers/x/start', undefined],
      ['/api/containers', { image: 'x' }],
      ['/api/images/pull', { reference: 'x' }],
      ['/api/networks', { name: 'n' }],
    ] as const) {
      const res = await api('POST', url, body)
      expect(res.statusCode, url).toBe(503)
      expect(res.json().error).toBe('HOSTD_CONTAINERS_ENGINE_UNAVAILABLE')
      expect(res.json().message).toContain('docker.sock')
    }
  })

  it('works again once the engine comes up, without a restart', async () => {
    engine = await startEngine(dir)
    const status = await eventually(async () => {
      const s = (await api('GET', '/api/system/engine', undefined, 'viewer')).json()
      return s.available ? s : null
    }, 250)
    expect(status.version).toBe((await engine.api('GET', '/version')).json().Version)
    expect((await api('GET', '/api/containers', undefined, 'viewer')).json().engine.available).toBe(true)
  })

  it('installs from the local registry over the socket, streaming pull progress', async () => {
    registry = await startRegistry(dir)
    ref = `${registry.address}/test/app-${randomBytes(3).toString('hex')}:1`
    await importTestImage(engine, 'hostd-test/app:v1', 'version one')
    await importTestImage(engine, 'hostd-test/app:v2', 'version two')
    await importTestImage(
      engine,
      'hostd-test/app:broken',
      'broken',
      '["/bin/sh"]',
      BUSYBOX_LINKS.filter((l) => l !== 'httpd'),
    )
    for (const v of ['v1', 'v2', 'broken']) ids[v] = await imageId(`hostd-test/app:${v}`)
    await pushToRegistry(engine, 'hostd-test/app:v1', ref)
    await engine.docker('rmi', ref)

    const s = openSocket(t, '/api/containers/install', operator, {
      image: ref,
      name: 'app',
      command: 'httpd -f -p 8080 -h /www',
      ports: ['127.0.0.1::8080'],
      env: ['MODE=prod'],
      memory: 32 * 1024 * 1024,
      restartPolicy: 'on-failure:3',
    })
    expect((await s.closed).code).toBe(1000)
    const types = s.messages.map((m) => m.type)
    expect(types[0]).toBe('accepted')
    expect(types).toContain('pull-start')
    expect(
      s.messages.some((m) => m.type === 'pull' && /Download complete|Pull complete|Digest|Status/.test(m.status)),
    ).toBe(true)
    expect(types.slice(-3)).toEqual(['created', 'started', 'result'])
    expect(await imageId(ref)).toBe(ids.v1)
    const audit = await auditActions(t)
    expect(audit.some((e) => e.action === 'image.pull' && e.target === ref)).toBe(true)
  })

  const appItem = async () =>
    (await api('GET', '/api/containers', undefined, 'viewer'))
      .json()
      .items.find((c: { name: string }) => c.name === 'app')
  const serve = async (port: number) =>
    eventually(() =>
      fetch(`http://127.0.0.1:${port}/`).then(
        (r) => r.text(),
        () => null,
      ),
    )

  it('shows updateAvailable once the registry has a newer image, without blocking the list', async () => {
    expect((await appItem()).updateAvailable).toBe(false)
    // Push v2 under the same reference, then point the local tag back at v1: the container still runs v1.
    await pushToRegistry(engine, 'hostd-test/app:v2', ref)
    await engine.docker('tag', ids.v1!, ref)
    const item = await eventually(async () => {
      const c = await appItem()
      return c?.updateAvailable ? c : null
    }, 200)
    expect(item.imageDigest).toMatch(/^sha256:/)
  })

  it('updates over the socket: newer image, same name and settings, auto-start and icon kept', async () => {
    expect((await api('POST', '/api/containers/app/autostart', { enabled: true })).statusCode).toBe(204)
    expect((await api('PUT', '/api/icons/container/app', { data: PNG.toString('base64') })).statusCode).toBe(204)
    const before = (await engine.api('GET', '/containers/app/json')).json()

    const s = openSocket(t, '/api/containers/update', operator, { containers: ['app'], stopTimeout: 1 })
    expect((await s.closed).code).toBe(1000)
    const result = s.messages.find((m) => m.type === 'container')
    expect(result, JSON.stringify(s.messages.slice(-3))).toMatchObject({
      status: 'updated',
      name: 'app',
      previousId: before.Id,
      previousImageId: ids.v1,
      imageId: ids.v2,
    })
    expect(s.messages.at(-1)).toMatchObject({ type: 'done', results: [{ status: 'updated' }] })

    const after = (await engine.api('GET', '/containers/app/json')).json()
    expect(after.Id).not.toBe(before.Id)
    expect(after.Image).toBe(ids.v2)
    expect(after.State.Running).toBe(true)
    expect(after.Config.Env).toContain('MODE=prod')
    expect(after.Config.Cmd).toEqual(before.Config.Cmd)
    expect(after.HostConfig.Memory).toBe(32 * 1024 * 1024)
    expect(after.HostConfig.RestartPolicy).toEqual({ Name: 'on-failure', MaximumRetryCount: 3 })
    expect(after.HostConfig.PortBindings).toEqual(before.HostConfig.PortBindings)
    const item = await appItem()
    expect(item).toMatchObject({
      id: after.Id,
      autoStart: true,
      restartPolicy: 'on-failure:3',
      memoryInBytes: 32 * 1024 * 1024,
    })
    expect((await serve(item.ports[0].hostPort)).trim()).toBe('version two')
    const icon = await api('GET', '/api/icons/container/app', undefined, 'viewer')
    expect(icon.statusCode).toBe(200)
    expect(icon.headers['content-type']).toBe('image/png')
    expect(Buffer.from(icon.rawPayload).equals(PNG)).toBe(true)
    // The old container is gone.
    const all = (await engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[]
    expect(all.map((c) => c.Names[0])).toEqual(['/app'])
    const audit = await auditActions(t)
    expect(audit.find((e) => e.action === 'container.update')).toMatchObject({
      result: 'success',
      target: 'app',
      detail: { status: 'updated', imageId: ids.v2 },
    })
  })

  it('reports up-to-date when the registry has nothing newer', async () => {
    const s = openSocket(t, '/api/containers/update', operator, { containers: ['app'], stopTimeout: 1 })
    await s.closed
    expect(s.messages.find((m) => m.type === 'container')).toMatchObject({ status: 'up-to-date', name: 'app' })
  })

  it('rolls back a container whose new image fails to start', async () => {
    const before = (await engine.api('GET', '/containers/app/json')).json()
    await pushToRegistry(engine, 'hostd-test/app:broken', ref)
    await engine.docker('tag', ids.v2!, ref)
    const s = openSocket(t, '/api/containers/update', operator, { containers: ['app'], stopTimeout: 1 })
    await s.closed
    const result = s.messages.find((m) => m.type === 'container')
    expect(result).toMatchObject({ status: 'rolled-back', name: 'app' })
    expect(result.message).toMatch(/failed to start/)
    expect(s.messages.some((m) => m.type === 'step' && m.step === 'rollback')).toBe(true)
    const after = (await engine.api('GET', '/containers/app/json')).json()
    expect(after.Id).toBe(before.Id)
    expect(after.Image).toBe(ids.v2)
    expect(after.State.Running).toBe(true)
    const all = (await engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[]
    expect(all.map((c) => c.Names[0])).toEqual(['/app'])
    expect((await serve((await appItem()).ports[0].hostPort)).trim()).toBe('version two')
    const audit = await auditActions(t)
    expect(audit.find((e) => e.action === 'container.update')).toMatchObject({
      result: 'failure',
      detail: { status: 'rolled-back' },
    })
  })

  it('refuses a malformed update request with a clear close code', async () => {
    const s = openSocket(t, '/api/containers/update', operator, { containers: [] })
    expect((await s.closed).code).toBe(4400)
    expect(s.messages.at(-1)).toMatchObject({ ok: false, error: 'HOSTD_CONTAINERS_SPEC_INVALID' })
  })

  it('starts containers marked for auto-start when the plugin starts', async () => {
    expect((await api('POST', '/api/containers/app/stop?timeout=0')).statusCode).toBe(204)
    expect((await engine.api('GET', '/containers/app/json')).json().State.Running).toBe(false)
    await t.kernel.registry.disable('containers')
    await t.kernel.registry.enable('containers')
    expect((await engine.api('GET', '/containers/app/json')).json().State.Running).toBe(true)
    const audit = await auditActions(t)
    expect(audit.find((e) => e.action === 'container.start')).toMatchObject({
      target: 'app',
      detail: { reason: 'autostart' },
    })
    expect(audit.some((e) => e.action === 'container.autostart' && e.detail?.after === true)).toBe(true)

    expect((await api('POST', '/api/containers/app/autostart', { enabled: false })).statusCode).toBe(204)
    expect((await appItem()).autoStart).toBe(false)
    expect((await api('POST', '/api/containers/nope/autostart', { enabled: true })).statusCode).toBe(404)
    expect((await api('POST', '/api/containers/app/autostart', { enabled: 'yes' })).statusCode).toBe(400)
  })

  it('lists, pulls and deletes images: the last reference or the id of an image in use is 409 unless forced', async () => {
    const list = (await api('GET', '/api/images', undefined, 'viewer')).json()
    const used = list.items.find((i: { id: string }) => i.id === ids.v2)
    expect(used).toMatchObject({ containers: 1, repoTags: expect.arrayContaining(['hostd-test/app:v2']) })

    const byId = await api('POST', '/api/images/delete', { reference: ids.v2 })
    expect(byId.statusCode).toBe(409)
    expect(byId.json()).toMatchObject({ error: 'HOSTD_CONTAINERS_IN_USE', message: expect.stringContaining('app') })
    // One of two tags: untagged, as docker rmi does; the image and its container stay.
    await engine.docker('tag', ids.v2!, 'hostd-test/app:v2-alias')
    const oneTag = await api('POST', '/api/images/delete', { reference: 'hostd-test/app:v2-alias' })
    expect(oneTag.statusCode, oneTag.body).toBe(200)
    expect(oneTag.json()).toEqual({ deleted: [], untagged: ['hostd-test/app:v2-alias'] })
    expect(await imageId('hostd-test/app:v2')).toBe(ids.v2)

    const unused = await api('POST', '/api/images/delete', { reference: 'hostd-test/app:broken' })
    expect(unused.statusCode, unused.body).toBe(200)
    expect(unused.json().untagged).toContain('hostd-test/app:broken')
    expect((await engine.api('GET', '/images/hostd-test/app:broken/json')).status).toBe(404)

    const pulled = await api('POST', '/api/images/pull', { reference: ref })
    expect(pulled.statusCode, pulled.body).toBe(200)
    expect(pulled.json()).toMatchObject({ reference: ref, id: ids.broken, digest: expect.stringMatching(/^sha256:/) })
    const missing = await api('POST', '/api/images/pull', { reference: `${registry.address}/test/none:1` })
    // The registry's "manifest unknown", translated (the engine's words kept under details).
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_IMAGE_NOT_FOUND',
      details: { raw: expect.stringMatching(/manifest unknown|not found/) },
    })
    expect((await api('POST', '/api/images/delete', { reference: 'no/such:image' })).statusCode).toBe(404)
    expect((await api('POST', '/api/images/delete', { reference: 'a b' })).statusCode).toBe(400)

    const audit = await auditActions(t)
    expect(
      audit.some((e) => e.action === 'image.remove' && e.target === 'hostd-test/app:broken' && e.result === 'success'),
    ).toBe(true)
    expect(audit.some((e) => e.action === 'image.remove' && e.result === 'failure')).toBe(true)
  })

  it('creates, lists and deletes networks: 409 while in use', async () => {
    const name = `hnet${randomBytes(3).toString('hex')}`
    const subnet = `10.214.${1 + (randomBytes(1)[0]! % 250)}.0/24`
    const created = await api('POST', '/api/networks', { name, subnet })
    expect(created.statusCode, created.body).toBe(201)
    const dupe = await api('POST', '/api/networks', { name })
    expect(dupe.statusCode).toBe(409)
    const item = (await api('GET', '/api/networks', undefined, 'viewer'))
      .json()
      .items.find((n: { name: string }) => n.name === name)
    expect(item).toMatchObject({ id: created.json().id, driver: 'bridge', subnet, containers: 0 })

    expect((await engine.api('POST', `/networks/${name}/connect`, { Container: 'app' })).status).toBe(200)
    const busy = await api('POST', `/api/networks/${name}/delete`)
    expect(busy.statusCode).toBe(409)
    expect(busy.json().message).toContain('app')
    expect((await engine.api('POST', `/networks/${name}/disconnect`, { Container: 'app', Force: true })).status).toBe(
      200,
    )
    expect((await api('POST', `/api/networks/${name}/delete`)).statusCode).toBe(204)
    expect((await engine.api('GET', `/networks/${name}`)).status).toBe(404)
    expect((await api('POST', `/api/networks/${name}/delete`)).statusCode).toBe(404)
    expect((await api('POST', '/api/networks', { name: 'bad name' })).statusCode).toBe(400)
    const audit = await auditActions(t)
    for (const action of ['network.create', 'network.remove', 'icon.set'])
      expect(
        audit.some((e) => e.action === action),
        action,
      ).toBe(true)
  })
})
