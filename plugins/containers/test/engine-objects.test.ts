/**
 * Objects the engine holds, against a real dockerd and over real HTTP: named volumes whose driver or options reach
 * the host, and containers that use the host network, need admin when a spec uses them, on every creating path
 * (REST, install socket, the `hostd.containers` service), also when such an object appears between the check and
 * the create; image references follow the reference grammar (400, never an engine failure); other spec strings
 * with a NUL or a lone surrogate are 400; deleting one of several references of an image in use untags it,
 * deleting its last reference or its id is 409.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { definePlugin, type Role } from '@hostd/sdk'
import { eventually, openSocket, type TestKernel } from '@hostd/sdk/testing'
import { containersService } from '../src/index.ts'
import type { RunSpec } from '../src/runspec.ts'
import { importTestImage, startEngine, startEngineProxy, type EngineProxy, type TestEngine } from './support/engine.ts'
import { kernelFor } from './support/kernel.ts'

const IMAGE = 'hostd-test/busybox:1'

/** A stand-in for the catalog (not built yet): another plugin creating containers through `hostd.containers`. */
const consumer = definePlugin({
  id: 'volume-consumer',
  version: '1.0.0',
  kernel: '^1.0.0',
  dependsOn: { containers: '^1.0.0' },
  deps: { containers: containersService },
  routes: (r, deps) => {
    r.post('/api/volume-consumer/run', { role: 'operator' }, async (req, reply) => {
      const out = await deps.containers.run(req.body as RunSpec, req.user!.role as Role, req)
      return reply.code(201).send(out)
    })
  },
})

describe('named volumes, joined containers, image references and image deletion against a real engine', () => {
  let engine: TestEngine
  let t: TestKernel
  let operator: string
  let admin: string
  let hostDir: string
  const secret = `host-secret-${process.pid}-${Date.now()}`

  beforeAll(async () => {
    engine = await startEngine()
    await importTestImage(engine, IMAGE)
    t = await kernelFor(engine.host, {}, { overNetwork: true, plugins: [consumer] })
    operator = (await t.login('operator')).token
    admin = (await t.login('admin')).token
    hostDir = await mkdtemp(join(tmpdir(), 'hostd-ctr-hostdir-'))
    await writeFile(join(hostDir, 'secret'), `${secret}\n`)
  })
  afterAll(async () => {
    await t?.close()
    await engine?.stop()
    await rm(hostDir, { recursive: true, force: true })
  })

  const names = async () =>
    ((await engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[])
      .map((c) => c.Names[0]!.slice(1))
      .sort()
  const post = (url: string, payload: unknown, token: string) =>
    t.inject({ method: 'POST', url, as: { token }, payload: payload as never })
  const createVolume = async (name: string, opts?: Record<string, string>) => {
    const res = await engine.api('POST', '/volumes/create', {
      Name: name,
      Driver: 'local',
      ...(opts ? { DriverOpts: opts } : {}),
    })
    expect(res.status, res.body).toBe(201)
  }
  const bindOptions = () => ({ type: 'none', o: 'bind', device: hostDir })

  /**
   * POSTs `spec` as an operator to a kernel whose engine connection passes through a proxy that runs `race`
   * right before it forwards the create of container `name` (and `raceBack` right after the engine created it):
   * another client's change lands in the window between hostd's first check and its create, every time.
   */
  async function createWhileRacing(
    name: string,
    race: () => Promise<void>,
    spec: Record<string, unknown>,
    raceBack?: () => Promise<void>,
  ) {
    let proxy: EngineProxy | null = null
    let raced: TestKernel | null = null
    const isCreate = (method: string, path: string) =>
      method === 'POST' && path.includes('/containers/create') && path.includes(`name=${name}`)
    try {
      proxy = await startEngineProxy(
        engine,
        async (method, path) => {
          if (isCreate(method, path)) await race()
        },
        async (method, path) => {
          if (isCreate(method, path)) await raceBack?.()
        },
      )
      raced = await kernelFor(proxy.host, {}, { overNetwork: true })
      const token = (await raced.login('operator')).token
      return await raced.inject({ method: 'POST', url: '/api/containers', as: { token }, payload: spec as never })
    } finally {
      await raced?.close()
      await proxy?.stop()
    }
  }

  describe('a named volume that reaches the host needs admin', () => {
    it('refuses a volume bound to a host folder in every form, on every creating path, for an operator', async () => {
      await createVolume('hostbind', bindOptions())
      const before = await names()
      const forms: unknown[] = [
        ['hostbind:/h'],
        ['hostbind:/h:ro'],
        [{ source: 'hostbind', target: '/h' }],
        [{ source: 'hostbind', target: '/h', readOnly: true }],
      ]
      for (const volumes of forms) {
        for (const url of ['/api/containers', '/api/volume-consumer/run']) {
          const res = await post(url, { image: IMAGE, command: ['sleep', '60'], volumes }, operator)
          expect(res.statusCode, `${url} ${JSON.stringify(volumes)}: ${res.body}`).toBe(403)
          expect(res.json().error).toBe('HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN')
          expect(res.json().message).toContain('volume hostbind reaches the host')
        }
        const socket = openSocket(t, '/api/containers/install', operator, {
          image: IMAGE,
          command: ['sleep', '60'],
          volumes,
        })
        expect((await socket.closed).code).toBe(4403)
        expect(socket.messages.at(-1)).toMatchObject({
          type: 'result',
          ok: false,
          error: 'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN',
        })
      }
      expect(await names()).toEqual(before)
      expect((await readdir(hostDir)).sort()).toEqual(['secret'])
    })

    it('lets an admin use it: the container reads and writes the host folder (what the rule guards)', async () => {
      const res = await post(
        '/api/containers',
        {
          image: IMAGE,
          name: 'hostbind-admin',
          command: ['sh', '-c', 'cat /h/secret; echo from-container > /h/written; sleep 60'],
          volumes: ['hostbind:/h'],
        },
        admin,
      )
      expect(res.statusCode, res.body).toBe(201)
      const written = await eventually(() => readFile(join(hostDir, 'written'), 'utf8').catch(() => null))
      expect(written.trim()).toBe('from-container')
      const logs = await t.inject({ url: '/api/containers/hostbind-admin/logs', as: 'viewer' })
      expect(logs.body).toContain(secret)
      await engine.api('DELETE', '/containers/hostbind-admin?force=1')
      await rm(join(hostDir, 'written'))
    })

    it('judges every local volume by its options: network shares need admin, plain, quota and tmpfs volumes stay operator', async () => {
      await createVolume('nfsshare', { type: 'nfs', o: 'addr=127.0.0.1,rw', device: ':/export' })
      await createVolume('devmount', { type: 'ext4', device: '/dev/loop0' })
      await createVolume('plain')
      await createVolume('inmemory', { type: 'tmpfs', device: 'tmpfs', o: 'size=1m,uid=1000' })
      for (const [volume, reason] of [
        ['nfsshare', 'addr=127.0.0.1'],
        ['devmount', 'device=/dev/loop0'],
      ]) {
        const res = await post(
          '/api/containers',
          { image: IMAGE, command: ['sleep', '60'], volumes: [`${volume}:/v`] },
          operator,
        )
        expect(res.statusCode, res.body).toBe(403)
        expect(res.json().message).toContain(reason)
      }
      const missing = `fresh${Date.now()}`
      for (const volume of ['plain', 'inmemory', missing]) {
        const res = await post(
          '/api/containers',
          { image: IMAGE, name: `vol-${volume}`, command: ['sleep', '60'], volumes: [`${volume}:/v`] },
          operator,
        )
        expect(res.statusCode, `${volume}: ${res.body}`).toBe(201)
        await engine.api('DELETE', `/containers/vol-${volume}?force=1`)
      }
      // A volume that did not exist is created by the engine as a plain local one.
      expect((await engine.api('GET', `/volumes/${missing}`)).json()).toMatchObject({ Driver: 'local', Options: null })
    })

    it('catches a host-reaching volume created between the check and the create, before the container starts', async () => {
      // Another local client of the engine creates the volume with bind options exactly when hostd creates the
      // container, after hostd's first look found no such volume.
      const racing = `window${Date.now()}`
      const before = await names()
      const res = await createWhileRacing(racing, () => createVolume(racing, bindOptions()), {
        image: IMAGE,
        name: racing,
        command: ['sh', '-c', 'echo raced > /h/raced; sleep 60'],
        volumes: [`${racing}:/h`],
      })
      expect(res.statusCode, res.body).toBe(403)
      expect(res.json()).toMatchObject({
        error: 'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN',
        message: expect.stringContaining(`volume ${racing} reaches the host`),
      })
      expect(await names()).toEqual(before)
      expect((await readdir(hostDir)).sort()).toEqual(['secret'])
    })

    it('relies on the engine keeping a volume while a created container holds it', async () => {
      await createVolume('held')
      expect(
        (
          await engine.api('POST', '/containers/create?name=holder', {
            Image: IMAGE,
            Cmd: ['true'],
            HostConfig: { Binds: ['held:/v'] },
          })
        ).status,
      ).toBe(201)
      const removal = await engine.api('DELETE', '/volumes/held?force=1')
      expect(removal.status, removal.body).toBe(409)
      await engine.api('DELETE', '/containers/holder?force=1')
    })
  })

  describe('joining a container that uses the host network needs admin', () => {
    const runPeer = async (name: string, networkMode?: string) => {
      const created = await engine.api('POST', `/containers/create?name=${name}`, {
        Image: IMAGE,
        Cmd: ['sleep', '300'],
        HostConfig: networkMode ? { NetworkMode: networkMode } : {},
      })
      expect(created.status, created.body).toBe(201)
      expect((await engine.api('POST', `/containers/${name}/start`)).status).toBe(204)
    }

    it('refuses network container:<a host-network container> to an operator, allows a plain one and allows an admin', async () => {
      await runPeer('hostnet', 'host')
      await runPeer('plainpeer')
      const before = await names()
      for (const url of ['/api/containers', '/api/volume-consumer/run']) {
        const res = await post(url, { image: IMAGE, command: ['sleep', '60'], network: 'container:hostnet' }, operator)
        expect(res.statusCode, res.body).toBe(403)
        expect(res.json()).toMatchObject({
          error: 'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN',
          message: expect.stringContaining('joins a container that uses the host network'),
        })
      }
      const socket = openSocket(t, '/api/containers/install', operator, {
        image: IMAGE,
        command: ['sleep', '60'],
        network: 'container:hostnet',
      })
      expect((await socket.closed).code).toBe(4403)
      expect(await names()).toEqual(before)
      const plain = await post(
        '/api/containers',
        { image: IMAGE, name: 'joins-plain', command: ['sleep', '60'], network: 'container:plainpeer' },
        operator,
      )
      expect(plain.statusCode, plain.body).toBe(201)
      const byAdmin = await post(
        '/api/containers',
        { image: IMAGE, name: 'joins-host', command: ['sleep', '60'], network: 'container:hostnet' },
        admin,
      )
      expect(byAdmin.statusCode, byAdmin.body).toBe(201)
      for (const name of ['joins-plain', 'joins-host', 'plainpeer'])
        await engine.api('DELETE', `/containers/${name}?force=1`)
    })

    it('catches the joined container replaced by a host-network one between the check and the create', async () => {
      await runPeer('peerswap')
      const racing = `joiner${Date.now()}`
      const res = await createWhileRacing(
        racing,
        async () => {
          await engine.api('DELETE', '/containers/peerswap?force=1')
          await runPeer('peerswap', 'host')
        },
        { image: IMAGE, name: racing, command: ['sleep', '60'], network: 'container:peerswap' },
      )
      expect(res.statusCode, res.body).toBe(403)
      expect(res.json().message).toContain('joins a container that uses the host network')
      expect(await names()).not.toContain(racing)
      await engine.api('DELETE', '/containers/peerswap?force=1')
    })

    it('judges the container the engine joined, not whatever holds the name after the create', async () => {
      // The name points at a host-network container while the engine resolves it, and back at a plain one after.
      await runPeer('peername')
      const racing = `joiner2${Date.now()}`
      const res = await createWhileRacing(
        racing,
        async () => {
          expect((await engine.api('POST', '/containers/peername/rename?name=peername-plain')).status).toBe(204)
          await runPeer('peername', 'host')
        },
        { image: IMAGE, name: racing, command: ['sleep', '60'], network: 'container:peername' },
        async () => {
          expect((await engine.api('POST', '/containers/peername/rename?name=peername-host')).status).toBe(204)
          expect((await engine.api('POST', '/containers/peername-plain/rename?name=peername')).status).toBe(204)
        },
      )
      expect(res.statusCode, res.body).toBe(403)
      expect(await names()).not.toContain(racing)
      for (const name of ['peername', 'peername-host', 'hostnet'])
        await engine.api('DELETE', `/containers/${name}?force=1`)
    })
  })

  describe('options are passed on exactly or refused, never dropped', () => {
    it('refuses --mount keys it cannot translate (volume-opt and the like) with a 400, creating nothing', async () => {
      const before = await names()
      const volumesBefore = (await engine.api('GET', '/volumes')).json().Volumes.length
      for (const mount of [
        `type=volume,source=optvol,target=/h,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=${hostDir}`,
        'type=volume,source=optvol,target=/h,volume-driver=local',
        'type=bind,source=/tmp,target=/h,bind-propagation=rshared',
        'type=tmpfs,target=/h,tmpfs-size=1m',
        'type=volume,source=optvol,target=/h,readonly=maybe',
        'type=volume,"source=optvol",target=/h',
      ]) {
        const res = await post(
          '/api/containers',
          { image: IMAGE, command: ['sleep', '60'], extraArgs: ['--mount', mount] },
          admin,
        )
        expect(res.statusCode, `${mount}: ${res.body}`).toBe(400)
        expect(res.json().error).toBe('HOSTD_CONTAINERS_SPEC_INVALID')
      }
      expect(await names()).toEqual(before)
      expect((await engine.api('GET', '/volumes')).json().Volumes.length).toBe(volumesBefore)
    })

    it('passes -v options on as given', async () => {
      const res = await post(
        '/api/containers',
        { image: IMAGE, name: 'volopts', command: ['sleep', '60'], volumes: ['keepopts:/d:ro,nocopy'] },
        operator,
      )
      expect(res.statusCode, res.body).toBe(201)
      expect((await engine.api('GET', '/containers/volopts/json')).json().HostConfig.Binds).toEqual([
        'keepopts:/d:ro,nocopy',
      ])
      await engine.api('DELETE', '/containers/volopts?force=1')
    })
  })

  describe('image references and other spec strings', () => {
    const BAD_REFERENCES: [string, string | Buffer, RegExp][] = [
      ['a NUL', 'hostd-test/busybox\u0000:1', /NUL/],
      ['a lone surrogate', 'hostd-test/busy\ud800box:1', /surrogate/],
      ['invalid UTF-8', Buffer.from([0x62, 0x75, 0x73, 0x79, 0xff, 0xfe]), /printable ASCII/],
      ['upper case', 'Hostd-Test/BusyBox:1', /lowercase/],
      ['a space', 'busybox latest', /printable ASCII/],
      ['an empty tag', 'busybox:', /grammar/],
      ['a short digest', 'busybox@sha256:1234', /grammar/],
      ['a sha256 digest of the wrong length', `busybox@sha256:${'a'.repeat(63)}0a`, /64 lowercase hex/],
      ['an unknown digest algorithm', `busybox@md5:${'a'.repeat(32)}`, /not supported/],
      ['a leading separator', '-busybox', /grammar/],
      ['a double dot', 'busy..box', /grammar/],
      ['a name over 255 characters', `${'a'.repeat(256)}:1`, /longer than 255/],
    ]
    /** A JSON body whose `field` holds `value`; a Buffer value is spliced in as raw bytes (invalid UTF-8). */
    const body = (fields: Record<string, unknown>, field: string, value: string | Buffer): Buffer => {
      const marker = '\u0001MARK\u0001'
      const text = JSON.stringify({ ...fields, [field]: typeof value === 'string' ? value : marker })
      if (typeof value === 'string') return Buffer.from(text)
      const [head, tail] = text.split(JSON.stringify(marker).slice(1, -1)) as [string, string]
      return Buffer.concat([Buffer.from(head), value, Buffer.from(tail)])
    }
    const raw = (url: string, payload: Buffer) =>
      t.inject({ method: 'POST', url, as: 'admin', headers: { 'content-type': 'application/json' }, payload })

    it('answers 400 with a clear message, never an engine error, for malformed image references on every route', async () => {
      const before = await names()
      const images = (await engine.api('GET', '/images/json')).body
      for (const [what, value, why] of BAD_REFERENCES) {
        for (const [url, fields, field] of [
          ['/api/containers', { command: ['true'] }, 'image'],
          ['/api/images/pull', {}, 'reference'],
          ['/api/images/delete', {}, 'reference'],
        ] as const) {
          const res = await raw(url, body(fields, field, value))
          expect(res.statusCode, `${what} on ${url}: ${res.body}`).toBe(400)
          // Invalid UTF-8 may be refused by the kernel's body parser before the plugin sees it: also a clear 400.
          if (typeof value !== 'string' && res.json().error === 'HOSTD_REQUEST_INVALID') continue
          expect(res.json().error, `${what} on ${url}`).toBe('HOSTD_CONTAINERS_IMAGE_REFERENCE_INVALID')
          expect(res.json().message).toMatch(why)
          expect(res.json().message).toContain(`${field} `)
        }
        if (typeof value === 'string') {
          const socket = openSocket(t, '/api/containers/install', admin, { image: value, command: ['true'] })
          expect((await socket.closed).code, what).toBe(4400)
          expect(socket.messages.at(-1)).toMatchObject({ ok: false, error: 'HOSTD_CONTAINERS_IMAGE_REFERENCE_INVALID' })
        }
      }
      expect(await names()).toEqual(before)
      expect((await engine.api('GET', '/images/json')).body).toEqual(images)
    })

    it('still takes every valid form: a tag, a registry with a port, a digest, an image id', async () => {
      const id = (await engine.api('GET', `/images/${IMAGE}/json`)).json().Id as string
      for (const image of [IMAGE, id, id.slice('sha256:'.length, 'sha256:'.length + 12)]) {
        const res = await post('/api/containers', { image, command: ['true'] }, operator)
        expect(res.statusCode, `${image}: ${res.body}`).toBe(201)
        await engine.api('DELETE', `/containers/${res.json().id}?force=1`)
      }
      // Well-formed references of images that do not exist reach the engine, which answers for them.
      for (const reference of ['127.0.0.1:1/nothing/here:1', `localhost/x@sha256:${'0'.repeat(64)}`]) {
        const res = await post('/api/images/delete', { reference }, operator)
        expect(res.statusCode, `${reference}: ${res.body}`).toBe(404)
      }
    })

    it('checks a spec from another plugin against the RunSpec schema too (400, never a 500)', async () => {
      for (const spec of [{ image: 42 }, { image: IMAGE, volumes: 'data:/d' }, { image: IMAGE, bogus: 1 }, null]) {
        const res = await post('/api/volume-consumer/run', spec, operator)
        expect(res.statusCode, `${JSON.stringify(spec)}: ${res.body}`).toBe(400)
      }
    })

    it('refuses a NUL or a lone surrogate in any other spec string with a 400 naming the field', async () => {
      const before = await names()
      const bad: [Record<string, unknown>, string][] = [
        [{ command: ['echo', 'a\u0000b'] }, 'command[1]'],
        [{ command: 'echo a\u0000b' }, 'command'],
        [{ env: { GREETING: 'hi\u0000there' } }, 'env.GREETING'],
        [{ env: ['A=\ud800'] }, 'env[0]'],
        [{ workdir: '/tmp\u0000x' }, 'workdir'],
        [{ user: 'nobody\udc00' }, 'user'],
        [{ name: 'ok', extraArgs: ['--label', 'k=\u0000'] }, 'extraArgs[1]'],
        [{ volumes: ['data:/d\u0000'] }, 'volumes[0]'],
      ]
      for (const [fields, path] of bad) {
        const res = await post('/api/containers', { image: IMAGE, ...fields }, admin)
        expect(res.statusCode, `${JSON.stringify(fields)}: ${res.body}`).toBe(400)
        expect(res.json().error).toBe('HOSTD_CONTAINERS_SPEC_INVALID')
        expect(res.json().message).toContain(path)
      }
      expect(await names()).toEqual(before)
    })
  })

  describe('deleting an image in use', () => {
    it('untags one of several tags, but refuses its last reference and its id', async () => {
      const id = (await engine.api('GET', `/images/${IMAGE}/json`)).json().Id as string
      expect((await engine.api('POST', `/images/${IMAGE}/tag?repo=hostd-test/alias&tag=2`)).status).toBe(201)
      const run = await post(
        '/api/containers',
        { image: IMAGE, name: 'image-user', command: ['sleep', '60'] },
        operator,
      )
      expect(run.statusCode, run.body).toBe(201)

      const untag = await post('/api/images/delete', { reference: 'hostd-test/alias:2' }, operator)
      expect(untag.statusCode, untag.body).toBe(200)
      expect(untag.json()).toEqual({ deleted: [], untagged: ['hostd-test/alias:2'] })
      expect((await engine.api('GET', '/images/hostd-test/alias:2/json')).status).toBe(404)
      expect((await engine.api('GET', `/images/${IMAGE}/json`)).json().Id).toBe(id)
      expect((await engine.api('GET', '/containers/image-user/json')).json().State.Running).toBe(true)

      for (const reference of [IMAGE, id, id.slice('sha256:'.length, 'sha256:'.length + 12)]) {
        const res = await post('/api/images/delete', { reference }, operator)
        expect(res.statusCode, `${reference}: ${res.body}`).toBe(409)
        expect(res.json()).toMatchObject({
          error: 'HOSTD_CONTAINERS_IN_USE',
          message: expect.stringContaining('image-user'),
        })
      }
      // Two tags again: deleting by id is still refused (it would remove the image, not a tag).
      expect((await engine.api('POST', `/images/${IMAGE}/tag?repo=hostd-test/alias&tag=3`)).status).toBe(201)
      expect((await post('/api/images/delete', { reference: id }, operator)).statusCode).toBe(409)
      expect((await engine.api('GET', `/images/${IMAGE}/json`)).json().RepoTags.sort()).toEqual(
        ['hostd-test/alias:3', IMAGE].sort(),
      )
      await engine.api('DELETE', '/containers/image-user?force=1')
      const unused = await post('/api/images/delete', { reference: 'hostd-test/alias:3' }, operator)
      expect(unused.json()).toEqual({ deleted: [], untagged: ['hostd-test/alias:3'] })
    })
  })
})
