/**
 * What the list's live socket and the list itself give, against a real dockerd: `/api/containers/live` passes on a
 * container stopped outside hostd as it happens, answers CPU and memory of the running containers asked for (from
 * cgroup files or the engine) and refuses a malformed request; the list shows a created container's configured
 * ports and whether a container has an icon.
 */
import { eventually, openSocket, type TestKernel } from '@hostd/sdk/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importTestImage, startEngine, type TestEngine } from './support/engine.ts'
import { kernelFor } from './support/kernel.ts'

const IMAGE = 'hostd-test/live:1'
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64')

describe('the live socket and the list', () => {
  let engine: TestEngine
  let t: TestKernel
  let viewer: string
  const ids: Record<string, string> = {}

  beforeAll(async () => {
    engine = await startEngine()
    await importTestImage(engine, IMAGE)
    for (const [name, hostConfig, start] of [
      ['busy', {}, true],
      ['planned', { PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '18081' }] } }, false],
    ] as const) {
      const res = await engine.api('POST', `/containers/create?name=${name}`, {
        Image: IMAGE,
        // A little work, so its CPU time grows between two readings.
        Cmd: ['sh', '-c', 'while true; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; sleep 0.2; done'],
        StopSignal: 'SIGKILL',
        HostConfig: hostConfig,
      })
      expect(res.status).toBe(201)
      ids[name] = res.json().Id
      if (start) expect((await engine.api('POST', `/containers/${name}/start`)).status).toBe(204)
    }
    t = await kernelFor(engine.host)
    viewer = (await t.login('viewer')).token
  }, 90_000)
  afterAll(async () => {
    await t?.close()
    await engine?.stop()
  })

  it('passes on a stop made outside hostd, and CPU and memory of the containers asked for', async () => {
    const s = openSocket(t, '/api/containers/live', viewer)
    await s.waitFor((m) => m.type === 'ready')
    s.ws.send(JSON.stringify({ stats: [ids.busy] }))
    const first = await s.waitFor((m) => m.type === 'stats')
    expect(first.items).toEqual([expect.objectContaining({ id: ids.busy, memoryBytes: expect.any(Number) })])
    expect(first.items[0].memoryBytes).toBeGreaterThan(0)
    // The second reading has CPU (a difference of two).
    const withCpu = await s.waitFor((m) => m.type === 'stats' && m.items[0]?.cpuPercent !== null)
    expect(withCpu.items[0].cpuPercent).toBeGreaterThan(0)

    await engine.api('POST', '/containers/busy/kill')
    const died = await s.waitFor((m) => m.type === 'change' && m.action === 'die')
    expect(died).toEqual({ type: 'change', id: ids.busy, action: 'die', state: 'exited' })

    s.ws.send(JSON.stringify({ stats: ['not-an-id'] }))
    const refused = await s.waitFor((m) => m.type === 'error')
    expect(refused.error).toBe('HOSTD_CONTAINERS_LIVE_REQUEST_INVALID')
    s.ws.close()
  })

  it('lists a created container with its configured ports, and which containers have an icon', async () => {
    const admin = (await t.login('admin')).token
    const put = await t.inject({
      method: 'PUT',
      url: '/api/icons/container/planned',
      headers: { authorization: `Bearer ${admin}` },
      payload: { data: PNG },
    })
    expect(put.statusCode).toBe(204)
    // The configured ports come from a cache filled in the background after the first list.
    const planned = await eventually(async () => {
      const res = await t.inject({ url: '/api/containers', headers: { authorization: `Bearer ${viewer}` } })
      const item = res.json().items.find((c: { name: string }) => c.name === 'planned')
      return item?.ports.length ? item : null
    })
    expect(planned.state).toBe('created')
    expect(planned.ports).toEqual([{ hostAddress: '127.0.0.1', hostPort: 18081, containerPort: 80, proto: 'tcp' }])
    expect(planned.hasIcon).toBe(true)
    const list = await t.inject({ url: '/api/containers', headers: { authorization: `Bearer ${viewer}` } })
    expect(list.json().items.find((c: { name: string }) => c.name === 'busy').hasIcon).toBe(false)
  })
})
