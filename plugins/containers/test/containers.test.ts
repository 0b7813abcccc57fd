/**
 * The operator's whole round through the API alone, against a real dockerd (own socket, data root, bridge) and
 * an image imported from busybox: run a container whose published port answers HTTP, see it in the list with
 * every field, read stats and logs, follow the logs over the socket, stop/start/restart/kill/remove it.
 * Also the role rules in every form, each refused spec leaving the engine unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, openSocket, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import containers from '../src/index.ts'
import storage from '../../storage/src/index.ts'
import { importTestImage, startEngine, type TestEngine } from './support/engine.ts'
import { auditActions, kernelFor } from './support/kernel.ts'

const IMAGE = 'hostd-test/busybox:1'
const MARKER = `marker-${process.pid}-${Date.now()}`

describe('containers against a real engine', () => {
  let engine: TestEngine
  let t: TestKernel
  let operator: string
  let viewer: string
  let linkDir: string

  beforeAll(async () => {
    engine = await startEngine()
    await importTestImage(engine, IMAGE, MARKER)
    t = await kernelFor(engine.host)
    operator = (await t.login('operator')).token
    viewer = (await t.login('viewer')).token
    linkDir = await mkdtemp(join(tmpdir(), 'hostd-ctr-links-'))
  })
  afterAll(async () => {
    await t?.close()
    await engine?.stop()
    await rm(linkDir, { recursive: true, force: true })
  })

  const names = async () =>
    ((await engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[])
      .map((c) => c.Names[0]!.slice(1))
      .sort()

  it('reports the engine it found, with its negotiated version', async () => {
    const res = await t.inject({ url: '/api/system/engine', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    const version = (await engine.api('GET', '/version')).json().Version
    expect(res.json()).toMatchObject({ available: true, installed: true, version })
    expect(res.json().message).toContain(engine.socket)
    expect(res.json().message).toMatch(/API 1\.\d+/)
  })

  it('runs a web server as operator, lists it with every field, serves HTTP on the published port', async () => {
    const spec = {
      image: IMAGE,
      name: 'web',
      command: 'httpd -f -vv -p 8080 -h /www',
      ports: ['127.0.0.1::8080'],
      env: { GREETING: 'hi there' },
      volumes: ['webdata:/data'],
      cpus: 0.5,
      memory: '64m',
      workdir: '/www',
      restartPolicy: 'unless-stopped',
    }
    const res = await t.inject({ method: 'POST', url: '/api/containers', as: { token: operator }, payload: spec })
    expect(res.statusCode, res.body).toBe(201)
    const { id } = res.json()
    expect(id).toMatch(/^[0-9a-f]{64}$/)

    const list = await t.inject({ url: '/api/containers', as: { token: viewer } })
    expect(list.statusCode).toBe(200)
    expect(list.json().engine.available).toBe(true)
    const web = list.json().items.find((c: { id: string }) => c.id === id)
    const raw = (await engine.api('GET', `/containers/${id}/json`)).json()
    expect(web).toEqual({
      id,
      name: 'web',
      image: IMAGE,
      state: 'running',
      cpus: 0.5,
      memoryInBytes: 64 * 1024 * 1024,
      command: 'httpd -f -vv -p 8080 -h /www',
      ipv4: raw.NetworkSettings.IPAddress,
      os: 'linux',
      architecture: 'amd64',
      createdAt: new Date(raw.Created).toISOString().replace(/\.\d+Z$/, '.000Z'),
      ports: [
        {
          hostAddress: '127.0.0.1',
          hostPort: Number(raw.NetworkSettings.Ports['8080/tcp'][0].HostPort),
          containerPort: 8080,
          proto: 'tcp',
        },
      ],
      mountedVolumes: ['webdata'],
      imageDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      updateAvailable: false,
      autoStart: false,
      networkMode: 'default',
      restartPolicy: 'unless-stopped',
      health: '',
      stackProject: '',
      stackService: '',
      stackWorkingDir: '',
      hasIcon: false,
    })
    expect(web.ipv4).toMatch(/^10\.213\./)
    expect(raw.Config.Env).toContain('GREETING=hi there')
    expect(raw.Config.WorkingDir).toBe('/www')

    const port = web.ports[0].hostPort
    const body = await eventually(() =>
      fetch(`http://127.0.0.1:${port}/`).then(
        (r) => r.text(),
        () => null,
      ),
    )
    expect(body.trim()).toBe(MARKER)
  })

  it("offers its volumes to other plugins: the storage overview lists the web container's named volume", async () => {
    // The real storage plugin next to this one, on the same engine: it reads the `containers.volumes` service.
    const both = await startTestKernel({ plugins: [containers, storage], env: { DOCKER_HOST: engine.host } })
    try {
      const res = await both.inject({ url: '/api/storage', as: 'viewer' })
      expect(res.statusCode).toBe(200)
      const volumes = res.json().containerVolumes as {
        name: string
        driver: string
        mountpoint: string
        usedBy: string[]
      }[]
      const engineVolume = (await engine.api('GET', '/volumes/webdata')).json()
      expect(volumes).toContainEqual({
        name: 'webdata',
        driver: 'local',
        mountpoint: engineVolume.Mountpoint,
        usedBy: ['web'],
      })
    } finally {
      await both.close()
    }
  })

  it('maps compose labels to the stack fields and health from the status', async () => {
    const created = await engine.api('POST', '/containers/create?name=stacked', {
      Image: IMAGE,
      Cmd: ['sleep', '300'],
      Labels: {
        'com.docker.compose.project': 'shop',
        'com.docker.compose.service': 'db',
        'com.docker.compose.project.working_dir': '/srv/shop',
      },
      Healthcheck: { Test: ['CMD', 'true'], Interval: 200_000_000, StartPeriod: 0 },
    })
    expect(created.status).toBe(201)
    await engine.api('POST', '/containers/stacked/start')
    const item = await eventually(async () => {
      const list = (await t.inject({ url: '/api/containers', as: 'viewer' })).json()
      const c = list.items.find((x: { name: string }) => x.name === 'stacked')
      return c?.health === 'healthy' && c.restartPolicy ? c : null
    })
    expect(item).toMatchObject({
      stackProject: 'shop',
      stackService: 'db',
      stackWorkingDir: '/srv/shop',
      health: 'healthy',
      restartPolicy: 'no',
      state: 'running',
    })
    await engine.api('DELETE', '/containers/stacked?force=1')
  })

  it('inspects by name, returns one-shot stats and recent logs with a tail bound', async () => {
    const inspect = await t.inject({ url: '/api/containers/web', as: 'viewer' })
    expect(inspect.statusCode).toBe(200)
    expect(inspect.json().Name).toBe('/web')

    const stats = await t.inject({ url: '/api/containers/web/stats', as: 'viewer' })
    expect(stats.statusCode).toBe(200)
    const [entry] = stats.json()
    expect(entry.id).toBe(inspect.json().Id)
    expect(entry.cpuUsageUsec).toBeGreaterThan(0)
    expect(entry.memoryUsageBytes).toBeGreaterThan(0)
    expect(entry.memoryLimitBytes).toBe(64 * 1024 * 1024)
    expect(entry.numProcesses).toBeGreaterThanOrEqual(1)
    expect(Object.keys(entry).sort()).toEqual([
      'blockReadBytes',
      'blockWriteBytes',
      'cpuUsageUsec',
      'id',
      'memoryLimitBytes',
      'memoryUsageBytes',
      'networkRxBytes',
      'networkTxBytes',
      'numProcesses',
    ])

    // A container that prints 50 numbered lines; tail=5 gives exactly the last five.
    await engine.api('POST', '/containers/create?name=counter', { Image: IMAGE, Cmd: ['seq', '1', '50'] })
    await engine.api('POST', '/containers/counter/start')
    await eventually(async () => (await engine.api('GET', '/containers/counter/json')).json().State.Status === 'exited')
    const logs = await t.inject({ url: '/api/containers/counter/logs?tail=5', as: 'viewer' })
    expect(logs.statusCode).toBe(200)
    expect(logs.headers['content-type']).toMatch(/^text\/plain/)
    expect(logs.body).toBe('46\n47\n48\n49\n50\n')
    const bad = await t.inject({ url: '/api/containers/counter/logs?tail=100000', as: 'viewer' })
    expect(bad.statusCode).toBe(400)
    const missing = await t.inject({ url: '/api/containers/nope/logs', as: 'viewer' })
    expect(missing.statusCode).toBe(404)
    expect(missing.json().error).toBe('HOSTD_CONTAINERS_NOT_FOUND')
    await engine.api('DELETE', '/containers/counter?force=1')
  })

  it('follows the logs live over the socket as a viewer', async () => {
    const port = (await t.inject({ url: '/api/containers', as: 'viewer' }))
      .json()
      .items.find((c: { name: string }) => c.name === 'web').ports[0].hostPort
    const s = openSocket(t, '/api/containers/logs?id=web&tail=0', viewer)
    await new Promise((resolve) => s.ws.once('open', resolve))
    const path = `/live-${Date.now()}`
    // httpd -vv writes one line per request to stderr: the request made after the socket opened shows up live.
    await eventually(async () => {
      await fetch(`http://127.0.0.1:${port}${path}`).catch(() => null)
      return s.messages.some((m) => m.type === 'log' && m.data.includes(path))
    }, 300)
    const line = s.messages.find((m) => m.data?.includes(path))
    expect(line).toMatchObject({ type: 'log', stream: 'stderr' })
    s.ws.close()
  })

  it('stops, starts, restarts, kills and removes as operator, each audited', async () => {
    const state = async () => (await engine.api('GET', '/containers/web/json')).json().State
    const post = (path: string, payload?: unknown) =>
      t.inject({ method: 'POST', url: path, as: { token: operator }, payload: payload as never })

    expect((await post('/api/containers/web/stop?timeout=1')).statusCode).toBe(204)
    expect((await state()).Status).toBe('exited')
    expect((await post('/api/containers/web/start')).statusCode).toBe(204)
    expect((await state()).Running).toBe(true)
    const started = (await state()).StartedAt
    expect((await post('/api/containers/web/restart?timeout=1')).statusCode).toBe(204)
    expect((await state()).Running).toBe(true)
    expect((await state()).StartedAt).not.toBe(started)
    expect((await post('/api/containers/web/kill')).statusCode).toBe(204)
    expect((await state()).Running).toBe(false)
    const killAgain = await post('/api/containers/web/kill')
    expect(killAgain.statusCode).toBe(409)

    expect((await post('/api/containers/web/start')).statusCode).toBe(204)
    const refused = await post('/api/containers/web/remove', {})
    expect(refused.statusCode).toBe(409)
    expect((await state()).Running).toBe(true)
    const badBody = await post('/api/containers/web/remove', { force: 'yes' })
    expect(badBody.statusCode).toBe(400)
    const removed = await post('/api/containers/web/remove', { force: true })
    expect(removed.statusCode).toBe(200)
    expect(removed.json()).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{64}$/),
      state: 'removed',
      converged: true,
      removedVolumes: [],
      keptVolumes: [],
    })
    expect(await names()).not.toContain('web')
    expect((await post('/api/containers/web/start')).statusCode).toBe(404)

    // A container that never ran: removed with no body at all.
    expect((await engine.api('POST', '/containers/create?name=idle', { Image: IMAGE, Cmd: ['true'] })).status).toBe(201)
    const plain = await post('/api/containers/idle/remove')
    expect(plain.statusCode, plain.body).toBe(200)
    expect(plain.json()).toMatchObject({ state: 'removed', converged: true })
    expect(await names()).not.toContain('idle')

    const viewerTry = await t.inject({ method: 'POST', url: '/api/containers/x/stop', as: { token: viewer } })
    expect(viewerTry.statusCode).toBe(403)

    const audit = await auditActions(t)
    for (const action of [
      'container.create',
      'container.stop',
      'container.start',
      'container.restart',
      'container.kill',
      'container.remove',
    ]) {
      expect(
        audit.some((e) => e.action === action && e.result === 'success' && e.username?.startsWith('operator')),
        action,
      ).toBe(true)
    }
    const stop = audit.find((e) => e.action === 'container.stop' && e.result === 'success')!
    expect(stop.detail).toMatchObject({ before: 'running', after: 'exited' })
  })

  describe('role rules on one validated spec', () => {
    const ADMIN_ONLY: [string, Record<string, unknown>][] = [
      ['host path volume', { volumes: ['/tmp:/host-tmp'] }],
      ['host path volume (object)', { volumes: [{ source: '/var/tmp', target: '/x', readOnly: true }] }],
      ['any mount', { mounts: [{ type: 'volume', target: '/data' }] }],
      ['device', { devices: ['/dev/null:/dev/xnull'] }],
      ['extraArgs', { extraArgs: '--label purpose=test' }],
      ['escalating capability', { capAdd: ['NET_ADMIN'] }],
      ['escalating capability spelled CAP_', { capAdd: ['cap_sys_ptrace'] }],
      ['host network', { network: 'host' }],
      ['privileged through extraArgs', { extraArgs: ['--privileged'] }],
      ['host pid through extraArgs', { extraArgs: ['--pid', 'host'] }],
      ['security option through extraArgs', { extraArgs: ['--security-opt', 'no-new-privileges'] }],
    ]
    let n = 0

    for (const [what, extra] of ADMIN_ONLY) {
      it(`${what}: 403 for an operator, created for an admin`, async () => {
        const name = `adm${++n}`
        const spec = { image: IMAGE, name, command: ['sleep', '60'], ...extra }
        const before = await names()
        const op = await t.inject({ method: 'POST', url: '/api/containers', as: { token: operator }, payload: spec })
        expect(op.statusCode, op.body).toBe(403)
        expect(op.json().error).toBe('HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN')
        expect(await names()).toEqual(before)
        const admin = await t.inject({ method: 'POST', url: '/api/containers', as: 'admin', payload: spec })
        if (what.startsWith('privileged') && admin.statusCode === 502) {
          // This machine's kernel refuses a privileged container's full capability set at start (runc: "unable to
          // apply caps"): the spec passed the role rules and reached the engine, which is what is tested here.
          expect(admin.json()).toMatchObject({
            error: 'HOSTD_CONTAINERS_ENGINE_ERROR',
            message: expect.stringContaining('caps'),
          })
          return
        }
        expect(admin.statusCode, admin.body).toBe(201)
        expect(await names()).toContain(name)
        await engine.api('DELETE', `/containers/${name}?force=1`)
      })
    }

    it('a default capability and a named volume stay operator', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/api/containers',
        as: { token: operator },
        payload: { image: IMAGE, name: 'opok', command: 'sleep 60', capAdd: ['CHOWN'], volumes: ['named:/v'] },
      })
      expect(res.statusCode, res.body).toBe(201)
      await engine.api('DELETE', '/containers/opok?force=1')
    })

    it('refuses the host root in every form, for every role', async () => {
      const link = join(linkDir, 'root-link')
      await symlink('/', link)
      const forms = ['/', '//', '/.', '/etc/..', link, `${link}/.`, '/tmp/../../']
      const before = await names()
      for (const source of forms) {
        for (const as of ['operator', 'admin'] as const) {
          for (const field of [
            { volumes: [`${source}:/host`] },
            { mounts: [{ type: 'bind', source, target: '/host' }] },
            { extraArgs: ['-v', `${source}:/host`] },
          ]) {
            const res = await t.inject({
              method: 'POST',
              url: '/api/containers',
              as,
              payload: { image: IMAGE, command: 'sleep 60', ...field },
            })
            expect(res.statusCode, `${source} as ${as}: ${res.body}`).toBe(403)
            expect(res.json().error).toBe('HOSTD_CONTAINERS_HOST_ROOT_REFUSED')
          }
        }
      }
      expect(await names()).toEqual(before)
    })

    it('answers 400 to unknown, case-variant and malformed fields, and changes nothing', async () => {
      const before = await names()
      const bad: unknown[] = [
        { image: IMAGE, bogus: 1 },
        { Image: IMAGE },
        { image: IMAGE, Name: 'x' },
        { image: IMAGE, ports: ['99999:80'] },
        { image: IMAGE, command: 'echo "unterminated' },
        { image: IMAGE, extraArgs: '--rm' },
        { image: IMAGE, extraArgs: '--env' },
        { image: IMAGE, volumes: ['relative/path:/x'] },
        { image: IMAGE, workdir: 'relative' },
        {},
      ]
      for (const payload of bad) {
        const res = await t.inject({ method: 'POST', url: '/api/containers', as: 'admin', payload: payload as never })
        expect(res.statusCode, JSON.stringify(payload)).toBe(400)
        expect(res.json().message).toBeTruthy()
      }
      const dup = await t.inject({
        method: 'POST',
        url: '/api/containers',
        as: 'admin',
        headers: { 'content-type': 'application/json' },
        payload: `{"image":"${IMAGE}","name":"dup1","name":"dup2","command":"sleep 60"}`,
      })
      expect(dup.statusCode, dup.body).toBe(400)
      expect(await names()).toEqual(before)
    })

    it('applies the same rules on the install socket', async () => {
      const refused = openSocket(t, '/api/containers/install', operator, {
        image: IMAGE,
        name: 'sock-priv',
        extraArgs: ['--privileged'],
      })
      const closed = await refused.closed
      expect(closed.code).toBe(4403)
      expect(refused.messages.at(-1)).toMatchObject({
        type: 'result',
        ok: false,
        error: 'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN',
      })
      const root = openSocket(t, '/api/containers/install', (await t.login('admin')).token, {
        image: IMAGE,
        volumes: ['/etc/..:/h'],
      })
      expect((await root.closed).code).toBe(4403)
      expect(root.messages.at(-1)).toMatchObject({ error: 'HOSTD_CONTAINERS_HOST_ROOT_REFUSED' })
      expect(await names()).not.toContain('sock-priv')
    })
  })

  it('installs over the socket: accepted, created, started, then a final result', async () => {
    const s = openSocket(t, '/api/containers/install', operator, {
      image: IMAGE,
      name: 'sock-web',
      command: ['sleep', '300'],
    })
    const closed = await s.closed
    expect(closed.code).toBe(1000)
    expect(s.messages.map((m) => m.type)).toEqual(['accepted', 'created', 'started', 'result'])
    const result = s.messages.at(-1)
    expect(result).toMatchObject({ ok: true, name: 'sock-web' })
    expect((await engine.api('GET', `/containers/${result.id}/json`)).json().State.Running).toBe(true)
    const audit = await auditActions(t)
    expect(
      audit.some((e) => e.action === 'container.create' && e.target === 'sock-web' && e.result === 'success'),
    ).toBe(true)
  })

  it('answers sockets for a missing container and a too-low role clearly', async () => {
    const missing = openSocket(t, '/api/containers/logs?id=nope', viewer)
    expect((await missing.closed).code).toBe(4404)
    expect(missing.messages.at(-1)).toMatchObject({ type: 'result', ok: false, error: 'HOSTD_CONTAINERS_NOT_FOUND' })
    const viewerInstall = openSocket(t, '/api/containers/install', viewer, { image: IMAGE })
    expect((await viewerInstall.closed).code).toBe(403)
    const badTail = openSocket(t, '/api/containers/logs?id=sock-web&tail=-1', viewer)
    expect((await badTail.closed).code).toBe(400)
  })

  it('refuses a socket opened by a browser from another origin', async () => {
    const s = openSocket(t, '/api/containers/logs?id=sock-web', viewer, undefined, { origin: 'https://evil.example' })
    const closed = await s.closed
    expect(closed.code).toBe(403)
  })
})
