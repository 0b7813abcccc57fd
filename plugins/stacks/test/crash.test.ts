/**
 * The daemon killed with SIGKILL in the middle of a deploy (its database container created and waiting to be
 * healthy, the web not created yet), started again on the same data folder: the next deploy converges, one
 * container per service, all running. A real daemon process (test/support/daemon.ts) with the containers and stacks
 * plugins, a private dockerd and a local registry.
 */
import { eventually } from '@hostd/sdk/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDaemon, type Daemon } from '../../../test/support/daemon.ts'
import {
  freePort,
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../../containers/test/support/engine.ts'
import { threeServices } from './support.ts'

const PASSWORD = 'correct horse battery'

describe('a deploy cut by kill -9', () => {
  let engine: TestEngine
  let registry: TestRegistry
  let daemon: Daemon
  let dataDir: string
  let image: string
  const env = () => ({
    DOCKER_HOST: engine.host,
    HOSTD_BUILTIN_PLUGINS: 'containers,stacks',
    HOSTD_STACKS_HEALTH_TIMEOUT_MS: '60000',
  })
  let token = ''
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await daemon.fetch(path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, text, json: () => JSON.parse(text) }
  }
  const services = async () => {
    const filter = encodeURIComponent(JSON.stringify({ label: ['com.docker.compose.project=shop'] }))
    return (await engine.api('GET', `/containers/json?all=1&filters=${filter}`)).json() as {
      Names: string[]
      State: string
      Labels: Record<string, string>
    }[]
  }

  beforeAll(async () => {
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/stacks:1', 'stack web page')
    image = `${registry.address}/hostd-test/stacks:1`
    await pushToRegistry(engine, 'hostd-test/stacks:1', image)
    daemon = await startDaemon({ entry: 'sources', env: env() })
    dataDir = daemon.dataDir
    expect(
      (
        await daemon.fetch('/api/setup', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: PASSWORD }),
        })
      ).status,
    ).toBe(201)
    const login = await daemon.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-client': 'test' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    })
    token = ((await login.json()) as { token: string }).token
  }, 120_000)

  afterAll(async () => {
    await daemon?.stop()
    await registry?.stop()
    await engine?.stop()
  })

  it('converges when deployed again after a restart', async () => {
    // The database takes a few seconds to be healthy, so the kill lands while the deploy waits on it.
    const slow = threeServices.replace('sleep 1; echo ready', 'sleep 4; echo ready')
    const port = await freePort()
    const created = await call('POST', '/api/stacks', {
      name: 'shop',
      compose: slow,
      env: `IMAGE=${image}\nWEB_PORT=${port}\n`,
    })
    expect(created.status, created.text).toBe(201)
    const cut = call('POST', '/api/stacks/shop/deploy', {}).catch(() => null)
    await eventually(async () => (await services()).some((c) => c.Labels['com.docker.compose.service'] === 'db'))
    expect((await services()).map((c) => c.Labels['com.docker.compose.service'])).not.toContain('web')
    process.kill(daemon.pid, 'SIGKILL')
    expect(await daemon.exited).toBe('SIGKILL')
    await cut

    daemon = await startDaemon({ entry: 'sources', dataDir, env: env() })
    // The session survived in the daemon's database; the first requests may meet plugins still loading.
    const deployed = await eventually(async () => {
      const res = await call('POST', '/api/stacks/shop/deploy', {})
      return res.status === 503 ? null : res
    })
    expect(deployed.status, deployed.text).toBe(200)
    const all = await services()
    expect(all.map((c) => c.Labels['com.docker.compose.service']).sort()).toEqual(['db', 'web', 'worker'])
    expect(all.every((c) => c.State === 'running')).toBe(true)
    const again = await call('POST', '/api/stacks/shop/deploy', {})
    expect(again.json().services.map((s: { action: string }) => s.action)).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
    ])
    expect((await call('POST', '/api/stacks/shop/down', {})).status).toBe(200)
  }, 120_000)
})
