/**
 * Stacks on a real engine: a private dockerd and a local docker-registry (plugins/containers/test/support/engine.ts)
 * holding a busybox image. A three-service stack (web, a database-like service with a health check, a worker; a
 * named volume, a network, interpolated variables, depends_on service_healthy) deploys in order as an operator,
 * an update recreates only the changed service, down keeps the volume; an operator's stack reaching the host is
 * refused naming the service and the key, an admin's deploys; a project made by Debian's docker-compose 1.29 is
 * listed, adopted by an admin, and managed.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { eventually, freePort, openSocket, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import containers from '../../containers/src/index.ts'
import {
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../../containers/test/support/engine.ts'
import { createStacksPlugin } from '../src/index.ts'
import { threeServices } from './support.ts'

const run = promisify(execFile)

describe('stacks on a real engine', () => {
  let engine: TestEngine
  let registry: TestRegistry
  let t: TestKernel
  let dir: string
  let image: string
  let port: number

  const api = async (method: 'GET' | 'POST', url: string, as: 'viewer' | 'operator' | 'admin', payload?: object) =>
    t.inject({ method, url, as, ...(payload === undefined ? {} : { payload }) })
  const containerIds = async (project: string) => {
    const list = (
      await engine.api(
        'GET',
        `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`com.docker.compose.project=${project}`] }))}`,
      )
    ).json() as {
      Id: string
      Labels: Record<string, string>
      State: string
    }[]
    return Object.fromEntries(list.map((c) => [c.Labels['com.docker.compose.service'], { id: c.Id, state: c.State }]))
  }

  beforeAll(async () => {
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/stacks:1', 'stack web page')
    image = `${registry.address}/hostd-test/stacks:1`
    await pushToRegistry(engine, 'hostd-test/stacks:1', image)
    // Only the registry has it now: the deploy pulls it.
    await engine.docker('rmi', image, 'hostd-test/stacks:1')
    dir = await mkdtemp(join(tmpdir(), 'hostd-stacks-'))
    t = await startTestKernel({
      plugins: [containers, createStacksPlugin({ dir })],
      listen: true,
      env: { DOCKER_HOST: engine.host, HOSTD_STACKS_HEALTH_TIMEOUT_MS: '60000' },
    })
    port = await freePort()
  }, 120_000)

  afterAll(async () => {
    await t?.close()
    await registry?.stop()
    await engine?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('deploys three services in depends_on order, updates only what changed, and goes down keeping the volume', async () => {
    const viewer = await t.login('viewer')
    const events = openSocket(t, '/api/stacks/events', viewer.token)
    await events.waitFor((m) => m.type === 'ready')

    const created = await api('POST', '/api/stacks', 'operator', {
      name: 'shop',
      compose: threeServices,
      env: `IMAGE=${image}\nWEB_PORT=${port}\nGREETING=hello\n`,
    })
    expect(created.statusCode, created.body).toBe(201)
    expect(await readFile(join(dir, 'shop', 'compose.yaml'), 'utf8')).toBe(threeServices)

    const deployed = await api('POST', '/api/stacks/shop/deploy', 'operator', {})
    expect(deployed.statusCode, deployed.body).toBe(200)
    expect(
      Object.fromEntries(
        deployed.json().services.map((s: { service: string; action: string }) => [s.service, s.action]),
      ),
    ).toEqual({ db: 'created', worker: 'created', web: 'created' })

    // Order: the db came up healthy before the web was created; the worker only waited for the db's start.
    await events.waitFor((m) => m.type === 'operation' && m.state === 'done')
    const steps = events.messages
      .filter((m) => m.type === 'progress' && m.event.type === 'service')
      .map((m) => `${m.event.service}:${m.event.step}`)
    expect(steps.indexOf('db:healthy')).toBeGreaterThan(steps.indexOf('db:started'))
    expect(steps.indexOf('web:creating')).toBeGreaterThan(steps.indexOf('db:healthy'))
    expect(steps.indexOf('worker:creating')).toBeGreaterThan(steps.indexOf('db:started'))
    // The pull was streamed layer by layer.
    expect(events.messages.some((m) => m.type === 'progress' && m.event.type === 'pull' && m.event.layer)).toBe(true)

    // The web answers on the interpolated port; the compose labels are there for the CLI.
    await eventually(async () =>
      (await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())).includes('stack web page'),
    )
    const web = (await engine.api('GET', '/containers/shop-web-1/json')).json()
    expect(web.Config.Labels).toMatchObject({
      'com.docker.compose.project': 'shop',
      'com.docker.compose.service': 'web',
      'com.docker.compose.container-number': '1',
      'com.docker.compose.oneoff': 'False',
      'com.docker.compose.project.working_dir': join(dir, 'shop'),
      'com.docker.compose.project.config_files': join(dir, 'shop', 'compose.yaml'),
      'dev.hostd.stacks.stack': 'shop',
    })
    expect(web.Config.Env).toContain('GREETING=hello')
    expect(Object.keys(web.NetworkSettings.Networks)).toEqual(['shop_back'])
    const db = (await engine.api('GET', '/containers/shop-db-1/json')).json()
    expect(db.HostConfig.Memory).toBe(64 * 1024 * 1024)
    expect(db.Mounts[0]).toMatchObject({ Type: 'volume', Name: 'shop_dbdata' })

    // The list: every service running, healthy where it has a check.
    const list = (await api('GET', '/api/stacks', 'viewer')).json()
    expect(list.stacks[0]).toMatchObject({ name: 'shop', state: 'running', adopted: false, issues: 0 })
    expect(list.stacks[0].services.find((s: { name: string }) => s.name === 'db').health).toBe('healthy')
    // A viewer sees the .env's names, not its values.
    const detail = (await api('GET', '/api/stacks/shop', 'viewer')).json()
    expect(detail.env).toBeNull()
    expect(detail.envKeys).toEqual(['IMAGE', 'WEB_PORT', 'GREETING'])

    // Deploying again changes nothing.
    const before = await containerIds('shop')
    const again = await api('POST', '/api/stacks/shop/deploy', 'operator', {})
    expect(again.json().services.map((s: { action: string }) => s.action)).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
    ])

    // An edit made outside hostd is noticed, and the update recreates only the web.
    await writeFile(join(dir, 'shop', '.env'), `IMAGE=${image}\nWEB_PORT=${port}\nGREETING=changed\n`)
    await events.waitFor((m) => m.type === 'changed' && m.stack === 'shop')
    const updated = await api('POST', '/api/stacks/shop/update', 'operator', {})
    expect(updated.statusCode, updated.body).toBe(200)
    expect(
      Object.fromEntries(
        updated.json().services.map((s: { service: string; action: string }) => [s.service, s.action]),
      ),
    ).toEqual({ db: 'unchanged', worker: 'unchanged', web: 'recreated' })
    const after = await containerIds('shop')
    expect(after.db!.id).toBe(before.db!.id)
    expect(after.worker!.id).toBe(before.worker!.id)
    expect(after.web!.id).not.toBe(before.web!.id)

    // Per-service and whole-stack actions.
    const stopped = await api('POST', '/api/stacks/shop/services/worker/stop', 'operator')
    expect(stopped.json().containers[0].after).toBe('exited')
    expect((await api('GET', '/api/stacks', 'viewer')).json().stacks[0].state).toBe('partial')
    expect((await api('POST', '/api/stacks/shop/start', 'viewer')).statusCode).toBe(403)

    // Down: containers and network gone, the volume kept.
    const down = await api('POST', '/api/stacks/shop/down', 'operator', {})
    expect(down.statusCode, down.body).toBe(200)
    expect(down.json()).toMatchObject({ networks: ['shop_back'], volumes: [], keptVolumes: ['shop_dbdata'] })
    expect(await containerIds('shop')).toEqual({})
    expect((await engine.api('GET', '/volumes/shop_dbdata')).status).toBe(200)
    expect((await engine.api('GET', '/networks/shop_back')).status).toBe(404)

    // Every change is in the audit log: the stack's operations and each container the containers plugin made.
    const audit = (await api('GET', '/api/audit?range=all&limit=500', 'admin')).json().items as {
      action: string
      target: string
      result: string
    }[]
    const actions = new Set(audit.map((a) => `${a.action} ${a.target} ${a.result}`))
    for (const line of [
      'stack.create shop success',
      'stack.deploy shop success',
      'stack.update shop success',
      'stack.down shop success',
      'container.create shop-web-1 success',
      'network.create shop_back success',
      'volume.create shop_dbdata success',
      `image.pull ${image} success`,
    ])
      expect(actions).toContain(line)
    events.ws.close()
  }, 120_000)

  it("refuses an operator's stack that reaches the host, naming the service and the key; an admin's deploys", async () => {
    const cases: [string, string][] = [
      ['privileged: true', 'services.app.privileged'],
      ['volumes: ["/etc:/host-etc:ro"]', 'services.app.volumes[0]'],
      ['devices: ["/dev/null:/dev/x"]', 'services.app.devices'],
      ['cap_add: [SYS_ADMIN]', 'services.app.cap_add'],
      ['network_mode: host', 'services.app.network_mode'],
    ]
    for (const [i, [line, key]] of cases.entries()) {
      const name = `host${i}`
      const compose = `services:\n  app:\n    image: ${image}\n    command: sleep 3600\n    ${line}\n`
      expect((await api('POST', '/api/stacks', 'operator', { name, compose })).statusCode).toBe(201)
      const res = await api('POST', `/api/stacks/${name}/deploy`, 'operator', {})
      expect(res.statusCode, res.body).toBe(403)
      expect(res.json().error).toBe('HOSTD_STACKS_NEEDS_ADMIN')
      expect(res.json().message).toContain('Service "app"')
      expect(res.json().message).toContain(key)
      expect(await containerIds(name)).toEqual({})
    }
    // The containers plugin's own rules hold for every role: the host root is refused even to an admin.
    const root = `services:\n  app:\n    image: ${image}\n    volumes: ["/:/host"]\n`
    expect((await api('POST', '/api/stacks', 'admin', { name: 'root', compose: root })).statusCode).toBe(201)
    const refused = await api('POST', '/api/stacks/root/deploy', 'admin', {})
    expect(refused.json().error).toBe('HOSTD_CONTAINERS_HOST_ROOT_REFUSED')

    const all = [
      'services:',
      '  app:',
      `    image: ${image}`,
      '    command: sleep 3600',
      `    volumes: ["${dir}:/host-stacks:ro"]`,
      '    devices: ["/dev/null:/dev/x"]',
      '    cap_add: [NET_ADMIN]',
      '    network_mode: host',
      '    stop_grace_period: 1s',
    ].join('\n')
    expect((await api('POST', '/api/stacks', 'admin', { name: 'hosty', compose: all })).statusCode).toBe(201)
    const ok = await api('POST', '/api/stacks/hosty/deploy', 'admin', {})
    expect(ok.statusCode, ok.body).toBe(200)
    const info = (await engine.api('GET', '/containers/hosty-app-1/json')).json()
    expect(info.HostConfig).toMatchObject({ NetworkMode: 'host', CapAdd: ['NET_ADMIN'] })
    expect(info.HostConfig.Devices[0]).toMatchObject({ PathOnHost: '/dev/null', PathInContainer: '/dev/x' })
    expect(info.Mounts[0]).toMatchObject({ Type: 'bind', Source: dir })
    expect((await api('POST', '/api/stacks/hosty/down', 'admin', {})).statusCode).toBe(200)
    // privileged passes the role rules for an admin: the container is created privileged. (The sandbox these tests
    // run in lets no container have every capability, so the engine's runtime then refuses to start it: a 502 with
    // its message, the container removed.)
    const priv = `services:\n  app:\n    image: ${image}\n    command: sleep 3600\n    privileged: true\n`
    expect((await api('POST', '/api/stacks', 'admin', { name: 'priv', compose: priv })).statusCode).toBe(201)
    const privileged = await api('POST', '/api/stacks/priv/deploy', 'admin', {})
    if (privileged.statusCode !== 200) {
      expect(privileged.json().error).toBe('HOSTD_CONTAINERS_ENGINE_ERROR')
      expect(privileged.json().message).toContain('failed to start')
    }
    await api('POST', '/api/stacks/priv/down', 'admin', {})
  }, 60_000)

  it('refuses unsupported keys and invalid files with their lines, and saves nothing', async () => {
    const bad = await api('POST', '/api/stacks', 'operator', {
      name: 'bad',
      compose: `services:\n  web:\n    image: ${image}\n    build: .\n`,
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json()).toEqual({
      error: 'HOSTD_STACKS_KEY_UNSUPPORTED',
      message: expect.stringContaining('line 4: services.web.build is not supported'),
    })
    const invalid = await api('POST', '/api/stacks/validate', 'operator', {
      name: 'bad',
      compose: 'services:\n  web:\n    image: x\n    ports: 80\n',
    })
    expect(invalid.json()).toMatchObject({
      ok: false,
      issues: [{ kind: 'schema', path: 'services.web.ports', line: 4 }],
    })
    expect((await api('GET', '/api/stacks/bad', 'viewer')).statusCode).toBe(404)
  })

  it("lists a project made by Debian's docker-compose 1.29, and an admin adopts it", async () => {
    const work = await mkdtemp(join(tmpdir(), 'hostd-legacy-'))
    await mkdir(work, { recursive: true })
    await writeFile(
      join(work, 'docker-compose.yml'),
      `version: "3.7"\nservices:\n  app:\n    image: ${image}\n    command: sleep 3600\n    stop_grace_period: 1s\n`,
    )
    await run('docker-compose', ['-p', 'legacy', 'up', '-d'], {
      cwd: work,
      env: { ...process.env, DOCKER_HOST: engine.host },
    })
    const list = (await api('GET', '/api/stacks', 'viewer')).json()
    expect(list.adoptable).toContainEqual(
      expect.objectContaining({ project: 'legacy', workingDir: work, configFiles: ['docker-compose.yml'] }),
    )
    expect((await api('POST', '/api/stacks/adopt', 'operator', { project: 'legacy' })).statusCode).toBe(403)
    const adopted = await api('POST', '/api/stacks/adopt', 'admin', { project: 'legacy' })
    expect(adopted.statusCode, adopted.body).toBe(200)
    const after = (await api('GET', '/api/stacks', 'viewer')).json()
    expect(after.adoptable.map((a: { project: string }) => a.project)).not.toContain('legacy')
    expect(after.stacks.find((s: { name: string }) => s.name === 'legacy')).toMatchObject({
      adopted: true,
      state: 'running',
    })
    // Managed: a deploy converges it (hostd's config hash differs from compose 1.29's: recreated once).
    const deployed = await api('POST', '/api/stacks/legacy/deploy', 'operator', {})
    expect(deployed.statusCode, deployed.body).toBe(200)
    expect(deployed.json().services).toEqual([{ service: 'app', action: 'recreated', container: 'legacy-app-1' }])
    // And the compose CLI sees hostd's container as the project's.
    const { stdout } = await run('docker-compose', ['-p', 'legacy', 'ps', '-q'], {
      cwd: work,
      env: { ...process.env, DOCKER_HOST: engine.host },
    })
    expect(stdout.trim()).toBe((await containerIds('legacy')).app!.id)
    expect((await api('POST', '/api/stacks/legacy/down', 'operator', {})).statusCode).toBe(200)
    await rm(work, { recursive: true, force: true })
  }, 60_000)
})
