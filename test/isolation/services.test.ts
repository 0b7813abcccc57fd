/**
 * Other plugins' services and the root helper across the trust boundary (issue 26): a third-party plugin reaches only
 * the methods a provider exposes for the access it declared, and only the helper actions it declared, whether it runs
 * in its sandbox or in the daemon's process (isolation off, as in the test harness).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FIXTURES, pluginProcesses, startIsolationDaemon, type IsolationDaemon } from './support.ts'
import { join } from 'node:path'

const modes = [
  { mode: 'isolated', env: {} },
  { mode: 'in process', env: { HOSTD_PLUGINS_ISOLATION: 'off' } },
] as const

describe.each(modes)('service-prober, $mode', ({ mode, env }) => {
  let daemon: IsolationDaemon
  beforeAll(async () => {
    daemon = await startIsolationDaemon(
      { 'service-prober': join(FIXTURES, 'service-prober') },
      { HOSTD_BUILTIN_PLUGINS: 'containers', ...env },
    )
    const entry = await daemon.until('service-prober', (e) => e.state === 'active' || e.state === 'failed')
    expect(entry.state, entry.reason ?? entry.error).toBe('active')
  }, 60_000)
  afterAll(() => daemon?.close())

  const probe = async (what: string) => {
    const res = await daemon.api(`/api/service-prober/${what}`)
    expect(res.status).toBe(200)
    return res.body as { ok: boolean; value?: unknown; status?: number; code?: string; message?: string }
  }

  it('calls the read methods the containers plugin exposes, and gets their answers', async () => {
    const engine = await probe('engine')
    expect(engine.ok, engine.message).toBe(true)
    expect(engine.value).toHaveProperty('available')
    const labelled = await probe('labelled')
    expect(labelled).toEqual({ ok: true, value: expect.any(Array) })
    // Isolated, the calls crossed from its sandbox; in process, there is no sandbox.
    const procs = await pluginProcesses(daemon.pid, join(daemon.pluginsDir, 'service-prober'))
    expect(procs.length > 0).toBe(mode === 'isolated')
  })

  it('is refused a method the provider does not expose to third-party plugins (it would name its own role)', async () => {
    expect(await probe('run')).toEqual({
      ok: false,
      status: 403,
      code: 'HOSTD_PLUGIN_PERMISSION_DENIED',
      message: expect.stringContaining('does not let third-party plugins call run'),
    })
  })

  it('is refused a service it did not declare, through tokens.optional', async () => {
    expect(await probe('undeclared')).toEqual({
      ok: false,
      status: 403,
      code: 'HOSTD_PLUGIN_PERMISSION_DENIED',
      message: expect.stringContaining('did not declare the service "containers.volumes"'),
    })
  })

  it('seals secrets with a key of its own that the kernel holds', async () => {
    const { ok, value, message } = (await probe('seal')) as {
      ok: boolean
      value: { sealed: string; opened: string }
      message?: string
    }
    expect(ok, message).toBe(true)
    expect(value.opened).toBe('the prober secret')
    expect(value.sealed).not.toContain('prober')
  })

  it('reaches the root helper only for the action it declared', async () => {
    // No helper runs beside a test daemon: the declared action reaches the kernel's client, which says so (423).
    expect(await probe('helper-declared')).toMatchObject({ ok: false, status: 423, code: 'HOSTD_HELPER_UNAVAILABLE' })
    expect(await probe('helper-undeclared')).toEqual({
      ok: false,
      status: 403,
      code: 'HOSTD_PLUGIN_PERMISSION_DENIED',
      message: expect.stringContaining('did not declare the helper action "power.reboot"'),
    })
  })
})
