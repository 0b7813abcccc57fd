/**
 * The detail page's API against a real engine: removal with its volume choices, the engine's known errors translated
 * (each produced for real: a port clash, another program on a port, a name in use, a missing command, a missing host
 * folder, an unreachable registry, an image the registry does not have), the exec console socket, and
 * edit-and-recreate keeping the name (restored when the new one fails).
 */
import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, freePort, type TestKernel } from '@hostd/sdk/testing'
import {
  BUSYBOX_LINKS,
  importTestImage,
  startEngine,
  pushToRegistry,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from './support/engine.ts'
import { auditActions, kernelFor } from './support/kernel.ts'

const IMAGE = 'hostd-test/busybox:1'
/** A web server that stops at once on SIGTERM (httpd as PID 1 ignores it, and a stop would wait 10 s). */
const QUICK_STOP = `sh -c "trap 'exit 0' TERM; httpd -p 80; while :; do sleep 0.2; done"`

/** A console client: binary in and out, text frames as JSON. */
function consoleClient(t: TestKernel, path: string, token: string) {
  const ws = new WebSocket(`${t.url!.replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${token}` } })
  const state = { output: '', frames: [] as any[], refusedWith: 0 }
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) state.output += data.toString('utf8')
    else state.frames.push(JSON.parse(data.toString('utf8')))
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))
    ws.on('error', () => undefined)
    ws.on('unexpected-response', (_req, res) => {
      state.refusedWith = res.statusCode ?? 0
      resolve({ code: res.statusCode ?? 0, reason: 'refused' })
    })
  })
  return {
    ws,
    state,
    closed,
    type: (text: string) => ws.send(Buffer.from(text), { binary: true }),
    control: (frame: unknown) => ws.send(JSON.stringify(frame)),
  }
}

describe('container detail against a real engine', () => {
  let engine: TestEngine
  let registry: TestRegistry
  let t: TestKernel
  let admin: string
  let operator: string

  beforeAll(async () => {
    engine = await startEngine()
    ;[registry] = await Promise.all([
      startRegistry(engine.dir),
      importTestImage(engine, IMAGE, 'detail', '["/bin/sh"]', [...BUSYBOX_LINKS, 'stty']),
    ])
    t = await kernelFor(engine.host)
    admin = (await t.login('admin')).token
    operator = (await t.login('operator')).token
  })
  afterAll(async () => {
    await t?.close()
    await registry?.stop()
    await engine?.stop()
  })

  const post = (url: string, payload: unknown, token = operator) =>
    t.inject({ method: 'POST', url, as: { token }, payload: payload as never })
  const run = (spec: Record<string, unknown>, token = operator) =>
    post('/api/containers', { image: IMAGE, ...spec }, token)
  const volumeNames = async () =>
    ((await engine.api('GET', '/volumes')).json().Volumes ?? []).map((v: { Name: string }) => v.Name).sort()

  it('removes a container with the volumes asked for, keeps the rest, and says why', async () => {
    expect((await engine.api('POST', '/volumes/create', { Name: 'shared' })).status).toBe(201)
    const other = await run({ name: 'other', command: 'sleep 600', volumes: ['shared:/s'] })
    expect(other.statusCode, other.body).toBe(201)
    const created = await engine.api('POST', '/containers/create?name=full', {
      Image: IMAGE,
      Cmd: ['sleep', '600'],
      Volumes: { '/anon': {} },
      HostConfig: { Binds: ['keepme:/k', 'dropme:/d', 'shared:/s'] },
    })
    expect(created.status, created.body).toBe(201)
    expect((await engine.api('POST', '/containers/full/start')).status).toBe(204)
    const anon = (
      (await engine.api('GET', '/containers/full/json')).json().Mounts as { Name: string; Destination: string }[]
    ).find((m) => m.Destination === '/anon')!.Name
    expect(anon).toMatch(/^[0-9a-f]{64}$/)

    // A volume it does not mount is refused before anything is removed.
    const foreign = await post('/api/containers/full/remove', { force: true, volumes: ['other-volume'] })
    expect(foreign.statusCode).toBe(400)
    expect(foreign.json().message).toMatch(/full does not mount other-volume/)
    expect((await engine.api('GET', '/containers/full/json')).status).toBe(200)

    const res = await post('/api/containers/full/remove', {
      force: true,
      anonymousVolumes: true,
      volumes: ['dropme', 'shared'],
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ state: 'removed', converged: true })
    expect(res.json().removedVolumes.sort()).toEqual([anon, 'dropme'].sort())
    expect(res.json().keptVolumes).toEqual([{ name: 'shared', reason: 'still used by other' }])
    const left = await volumeNames()
    expect(left).toContain('keepme')
    expect(left).toContain('shared')
    expect(left).not.toContain('dropme')
    expect(left).not.toContain(anon)

    const entry = (await auditActions(t)).find((e) => e.action === 'container.remove' && e.target === 'full')!
    expect(entry.detail).toMatchObject({ anonymousVolumes: true, removedVolumes: expect.arrayContaining(['dropme']) })
  })

  it('translates the engine’s known errors into causes and next steps, keeping the raw text', async () => {
    const port = await freePort()
    expect((await run({ name: `web-${port}`, command: 'httpd -f -p 80', ports: [`${port}:80`] })).statusCode).toBe(201)
    const clash = await run({ name: 'clash', command: 'httpd -f -p 80', ports: [`${port}:80`] })
    expect(clash.statusCode).toBe(409)
    expect(clash.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_PORT_IN_USE',
      message: `Port ${port} is used by web-${port}: choose another host port, or stop web-${port}`,
      details: { raw: expect.stringMatching(/port is already allocated/) },
    })

    const busy = createServer()
    const otherPort = await freePort()
    await new Promise<void>((resolve) => busy.listen(otherPort, '0.0.0.0', resolve))
    try {
      const program = await run({ name: 'clash2', command: 'httpd -f -p 80', ports: [`${otherPort}:80`] })
      expect(program.json()).toMatchObject({
        error: 'HOSTD_CONTAINERS_PORT_IN_USE',
        message: `Port ${otherPort} is used by another program on this host: choose another host port, or stop that program`,
        details: { raw: expect.stringMatching(/address already in use/) },
      })
    } finally {
      busy.close()
    }

    const taken = await run({ name: `web-${port}`, command: 'sleep 1' })
    expect(taken.statusCode).toBe(409)
    expect(taken.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_NAME_IN_USE',
      message: `The name web-${port} is already used by another container: choose another name, or remove that one first`,
      details: { raw: expect.stringMatching(/is already in use by container/) },
    })

    const nocmd = await run({ name: 'nocmd', command: 'nosuchprog' })
    expect(nocmd.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_COMMAND_NOT_FOUND',
      message: 'The command nosuchprog is not in the image: correct the command (or the entrypoint)',
      details: { raw: expect.stringMatching(/executable file not found/) },
    })

    const nodir = await run(
      { name: 'nodir', mounts: [{ type: 'bind', source: '/nonexistent/srv', target: '/x' }] },
      admin,
    )
    expect(nodir.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_MOUNT_SOURCE_MISSING',
      message: 'The host folder /nonexistent/srv does not exist: create it first, or correct the path',
    })

    const offline = await post('/api/images/pull', { reference: 'registry.invalid/nothing:1' })
    expect(offline.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_REGISTRY_UNREACHABLE',
      message: expect.stringMatching(/^No internet connection \(or the registry registry\.invalid is unreachable\)/),
      details: { raw: expect.stringMatching(/no such host/) },
    })
    const refused = await post('/api/images/pull', { reference: `127.0.0.1:${await freePort()}/nothing:1` })
    expect(refused.json().error).toBe('HOSTD_CONTAINERS_REGISTRY_UNREACHABLE')

    const missing = await post('/api/images/pull', { reference: `${registry.address}/nothing:1` })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_IMAGE_NOT_FOUND',
      message: expect.stringMatching(/^The image .*nothing:1 was not found in its registry: check the name and tag/),
    })
    // Every refused create left nothing behind.
    const names = ((await engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[]).map(
      (c) => c.Names[0],
    )
    expect(names.filter((n) => /clash|nocmd|nodir/.test(n ?? ''))).toEqual([])
  })

  it('opens a console into a running container for admins only, with resize, audited', async () => {
    expect((await run({ name: 'shell', command: 'sleep 600' })).statusCode).toBe(201)
    for (const [who, token] of [['operator', operator]] as const) {
      const c = consoleClient(t, '/api/containers/exec?id=shell', token)
      expect((await c.closed).code, who).toBe(403)
    }
    const c = consoleClient(t, '/api/containers/exec?id=shell&cols=100&rows=30', admin)
    expect(await eventually(() => c.state.frames[0])).toMatchObject({
      type: 'ready',
      shell: '/bin/sh',
      cols: 100,
      rows: 30,
    })
    c.type('echo answer=$((6*7))\r')
    await eventually(() => c.state.output.includes('answer=42'))
    c.type('stty size\r')
    await eventually(() => c.state.output.includes('30 100'))
    c.control({ type: 'resize', cols: 120, rows: 40 })
    // The engine applies a resize on its own call: asked again until the shell sees it.
    await eventually(() => {
      c.type('stty size\r')
      return c.state.output.includes('40 120')
    }, 200)
    c.control({ type: 'bogus' })
    await eventually(() => c.state.frames.some((f) => f.error === 'HOSTD_CONTAINERS_EXEC_FRAME_INVALID'))
    c.type('exit 3\r')
    expect(await c.closed).toMatchObject({ code: 1000 })
    expect(c.state.frames.at(-1)).toEqual({ type: 'exit', code: 3, signal: null })

    // The page goes (or the session ends): the shell in the container goes too.
    const second = consoleClient(t, '/api/containers/exec?id=shell', admin)
    await eventually(() => second.state.frames[0]?.type === 'ready')
    const processes = async () =>
      ((await engine.api('GET', '/containers/shell/top')).json().Processes as string[][]).map((p) => p.at(-1))
    await eventually(async () => (await processes()).includes('/bin/sh'))
    second.ws.close()
    await eventually(async () => !(await processes()).includes('/bin/sh'))

    // Not running: refused with the reason.
    expect((await post('/api/containers/shell/stop?timeout=0', undefined)).statusCode).toBe(204)
    const stopped = consoleClient(t, '/api/containers/exec?id=shell', admin)
    expect((await stopped.closed).code).toBe(4409)
    expect(stopped.state.frames.at(-1)).toMatchObject({ error: 'HOSTD_CONTAINERS_NOT_RUNNING' })

    const audit = await eventually(async () => {
      const entries = await auditActions(t)
      return entries.filter((e) => e.action === 'container.exec.close').length === 2 && entries
    })
    const open = audit.find((e) => e.action === 'container.exec' && e.result === 'success' && e.detail.cols === 100)!
    expect(open).toMatchObject({ target: 'shell', username: expect.stringMatching(/^admin/) })
    expect(open.detail).toMatchObject({ shell: '/bin/sh', cols: 100, rows: 30 })
    const closes = audit.filter((e) => e.action === 'container.exec.close').map((e) => e.detail)
    expect(closes).toContainEqual(expect.objectContaining({ ended: 'exit', exitCode: 3 }))
    expect(audit.some((e) => e.action === 'container.exec' && e.result === 'failure')).toBe(true)
  })

  it('edits and recreates a container keeping its name, pulling the image; restores it when that fails', async () => {
    const [first, second] = [await freePort(), await freePort()]
    const made = await run({
      name: 'edit-me',
      command: QUICK_STOP,
      ports: [`${first}:80`],
      env: { A: '1' },
      volumes: ['one:/d'],
    })
    expect(made.statusCode, made.body).toBe(201)
    const before = (await engine.api('GET', '/containers/edit-me/json')).json()
    const remote = `${registry.address}/hostd/busybox:2`
    await pushToRegistry(engine, IMAGE, remote)
    await engine.docker('rmi', remote)

    const res = await post('/api/containers/edit-me/recreate', {
      image: remote,
      ports: [`${second}:80`],
      env: { A: '2', B: 'x' },
      volumes: ['two:/d'],
      restartPolicy: 'unless-stopped',
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toMatchObject({ name: 'edit-me', previousId: before.Id, image: remote, pulled: true })
    const after = (await engine.api('GET', '/containers/edit-me/json')).json()
    expect(after.Id).toBe(res.json().id)
    expect(after.Id).not.toBe(before.Id)
    expect(after.State.Running).toBe(true)
    expect(after.Config.Image).toBe(remote)
    expect(after.Config.Env).toEqual(expect.arrayContaining(['A=2', 'B=x']))
    expect(after.Config.Env).not.toContain('A=1')
    expect(after.HostConfig.PortBindings['80/tcp']).toEqual([{ HostIp: '', HostPort: String(second) }])
    expect(after.HostConfig.Binds).toEqual(['two:/d'])
    expect(after.HostConfig.RestartPolicy.Name).toBe('unless-stopped')
    // What the edit did not name is kept: the command.
    expect(after.Config.Cmd).toEqual(['sh', '-c', QUICK_STOP.slice(7, -1)])
    expect((await engine.api('GET', `/containers/${before.Id}/json`)).status).toBe(404)

    // A port another container holds: the new one cannot start, the previous one is back, running, same id.
    const holder = await freePort()
    expect(
      (await run({ name: `holder-${holder}`, command: 'httpd -f -p 80', ports: [`${holder}:80`] })).statusCode,
    ).toBe(201)
    const clash = await post('/api/containers/edit-me/recreate', { ports: [`${holder}:80`] })
    expect(clash.statusCode).toBe(409)
    expect(clash.json()).toMatchObject({
      error: 'HOSTD_CONTAINERS_PORT_IN_USE',
      message:
        'edit-me was not changed (the previous container is back): ' +
        `Port ${holder} is used by holder-${holder}: choose another host port, or stop holder-${holder}`,
    })
    const restored = (await engine.api('GET', '/containers/edit-me/json')).json()
    expect(restored).toMatchObject({ Id: after.Id, State: { Running: true } })

    // The role rules judge the edit: a host folder needs an admin, and nothing was touched.
    const refused = await post('/api/containers/edit-me/recreate', { volumes: ['/srv:/d'] })
    expect(refused.statusCode).toBe(403)
    expect(refused.json().error).toBe('HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN')
    expect((await engine.api('GET', '/containers/edit-me/json')).json().Id).toBe(after.Id)
    expect((await post('/api/containers/edit-me/recreate', {})).statusCode).toBe(400)

    const audit = (await auditActions(t)).filter((e) => e.action === 'container.recreate')
    expect(audit.map((e) => e.result).sort()).toEqual(['failure', 'success'])
    expect(audit.find((e) => e.result === 'success')!.detail).toMatchObject({ previousId: before.Id, pulled: true })
  })
})
