/**
 * A third-party plugin that provides a service (issue 26): other plugins call the methods it exposes for the access
 * they declared, whether it runs in its sandbox (its methods are calls into its process) or in the daemon's process;
 * a restarted provider serves on.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { FIXTURES, pluginProcesses, startIsolationDaemon, type IsolationDaemon } from './support.ts'

const modes = [
  { mode: 'isolated', env: {} },
  { mode: 'in process', env: { HOSTD_PLUGINS_ISOLATION: 'off' } },
] as const

describe.each(modes)('counter-provider and counter-reader, $mode', ({ mode, env }) => {
  let d: IsolationDaemon
  beforeAll(async () => {
    d = await startIsolationDaemon(
      {
        'counter-provider': join(FIXTURES, 'counter-provider'),
        'counter-reader': join(FIXTURES, 'counter-reader'),
      },
      env,
    )
    for (const id of ['counter-provider', 'counter-reader']) {
      const entry = await d.until(id, (e) => e.state === 'active' || e.state === 'failed')
      expect(entry.state, entry.error ?? entry.reason).toBe('active')
    }
  }, 60_000)
  afterAll(() => d?.close())

  const read = async (method: string) => {
    const res = await d.api(`/api/counter-reader/${method}`)
    expect(res.status).toBe(200)
    return res.body
  }

  it('calls the read method of the provided service, across processes when isolated', async () => {
    expect(await read('get')).toEqual({ ok: true, value: 0 })
    const procs = await pluginProcesses(d.pid, join(d.pluginsDir, 'counter-provider'))
    expect(procs.length > 0).toBe(mode === 'isolated')
  })

  it('is refused the write method with read access, and a method exposed to nobody', async () => {
    expect(await read('increment')).toEqual({
      ok: false,
      status: 403,
      code: 'HOSTD_PLUGIN_PERMISSION_DENIED',
      message: expect.stringContaining('has read access to the service "counter-provider.store"'),
    })
    expect(await read('reset')).toMatchObject({
      ok: false,
      status: 403,
      message: expect.stringContaining('does not let third-party plugins call reset'),
    })
    expect(await read('get')).toEqual({ ok: true, value: 0 })
  })
})

describe('counter-provider isolated: its process crashes', () => {
  let d: IsolationDaemon
  beforeAll(async () => {
    d = await startIsolationDaemon({
      'counter-provider': join(FIXTURES, 'counter-provider'),
      'counter-reader': join(FIXTURES, 'counter-reader'),
    })
    for (const id of ['counter-provider', 'counter-reader']) await d.until(id, (e) => e.state === 'active')
  }, 60_000)
  afterAll(() => d?.close())
  const read = async (method: string) => (await d.api(`/api/counter-reader/${method}`)).body

  it('a provider whose process crashed is restarted and serves again', async () => {
    expect((await d.api('/api/counter-provider/crash', { method: 'POST' })).status).toBe(200)
    await d.until('counter-provider', (e) => e.state === 'restarting')
    await d.until('counter-provider', (e) => e.state === 'active')
    await eventually(async () => (await read('get')).ok === true)
    expect(await read('get')).toEqual({ ok: true, value: 0 })
  })
})
