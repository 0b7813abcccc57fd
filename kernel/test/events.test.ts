/**
 * The kernel's events for built-in plugins (`tokens.events`, kernel/src/events.ts): each plugin state change the
 * registry makes, and each audit record written (repeated failures with their count), reach a built-in plugin's
 * listener; a third-party plugin asking for the service fails its load.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { definePlugin, tokens, type KernelEvent, type KernelEvents } from '@hostd/sdk'
import { eventually, writePluginFolder } from '@hostd/sdk/testing'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

/** Polls until `check` stops throwing (the test's timeout bounds the wait). */
const until = (check: () => unknown) =>
  eventually(async () => {
    try {
      await check()
      return true
    } catch {
      return false
    }
  })

const SCRATCH = join(import.meta.dirname, '..', '..', '.hostd-test')
const seen: KernelEvent[] = []
let unsubscribed = 0

/** A built-in plugin that keeps every event it hears until it stops. */
const listener = definePlugin({
  id: 'listener',
  version: '1.0.0',
  kernel: '^1.3.0',
  deps: { events: tokens.events },
  setup: ({ events }) => ({ events, controller: new AbortController() }),
  start: ({ events }, { controller }) => {
    events.on((e) => seen.push(e), controller.signal)
    controller.signal.addEventListener('abort', () => unsubscribed++)
  },
  stop: (_deps, { controller }) => controller.abort(),
})

let work: string
let t: TestKernel

beforeAll(async () => {
  await mkdir(SCRATCH, { recursive: true })
  work = await mkdtemp(join(SCRATCH, 'events-'))
  await mkdir(join(work, 'plugins'))
  t = await startTestKernel({
    plugins: [listener],
    env: { HOSTD_PLUGINS_DIR: join(work, 'plugins'), HOSTD_PLUGINS_ISOLATION: 'off' },
  })
})
afterAll(async () => {
  await t?.close()
  await rm(work, { recursive: true, force: true })
})

function folder(id: string, deps: string) {
  return writePluginFolder(join(work, 'src', id), {
    name: id,
    entry: 'src/index.js',
    files: {
      'src/index.js': `import { definePlugin, tokens } from '@hostd/sdk'
export default definePlugin({ id: '${id}', version: '1.0.0', kernel: '^1.3.0', deps: { ${deps} } })
`,
    },
  })
}

const states = (id: string) =>
  seen.flatMap((e) =>
    e.type === 'plugin.state' && e.id === id ? [`${e.state}${e.reason ? `: ${e.reason}` : ''}`] : [],
  )

describe('plugin states', () => {
  it('are announced as each change happens: starting, active, disabled, active again, removed', async () => {
    await t.plugins.install(await folder('quiet', 'log: tokens.logger'))
    await until(() => expect(states('quiet')).toEqual(['starting', 'active']))
    const events = t.kernel.registry
    await events.disable('quiet')
    await events.enable('quiet')
    await t.plugins.remove('quiet')
    await until(() =>
      expect(states('quiet')).toEqual(['starting', 'active', 'disabled', 'starting', 'active', 'removed']),
    )
    const active = seen.find((e) => e.type === 'plugin.state' && e.id === 'quiet' && e.state === 'active')
    expect(active).toMatchObject({ version: '1.0.0', builtin: false, reason: null })
    expect(Date.parse((active as { time: string }).time)).toBeGreaterThan(0)
  })

  it('are never given to a third-party plugin: asking for them fails its load, which is announced with the reason', async () => {
    const entry = await t.plugins.install(await folder('snoop', 'events: tokens.events'))
    expect(entry.state).toBe('failed')
    const reason = `asks the kernel's service "hostd.events" (deps.events), which is never granted to a third-party plugin`
    expect(entry.error).toBe(reason)
    await until(() => expect(states('snoop').at(-1)).toBe(`failed: ${reason}`))
    await t.plugins.remove('snoop')
  })

  it('answers the known plugins as they are now, removed ones left out', () => {
    const { events } = t.kernel.registry.stateOf(listener) as { events: KernelEvents }
    expect(events.plugins().map((p) => [p.id, p.state])).toEqual([['listener', 'active']])
  })
})

describe('audit records', () => {
  it('are announced with who acted, never a password; repeated failures with their count', async () => {
    const admin = await t.login('admin', 'root-of-all')
    const res = await t.inject({
      method: 'POST',
      url: '/api/users',
      as: { token: admin.token },
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'newboss', password: 'correct horse battery', role: 'admin' }),
    })
    expect(res.statusCode).toBe(201)
    for (let i = 0; i < 3; i++)
      await t.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ username: 'newboss', password: 'not the password' }),
      })
    await until(() =>
      expect(
        seen.filter((e) => e.type === 'audit' && e.action === 'auth.login').map((e) => e.type === 'audit' && e.count),
      ).toEqual([1, 2, 3]),
    )
    const created = seen.find((e) => e.type === 'audit' && e.action === 'user.create')
    expect(created).toMatchObject({
      target: 'newboss',
      result: 'success',
      username: 'root-of-all',
      detail: { role: 'admin' },
    })
    const failed = seen.find((e) => e.type === 'audit' && e.action === 'auth.login')
    expect(failed).toMatchObject({ target: 'newboss', result: 'failure', username: null, count: 1 })
    expect(JSON.stringify(seen)).not.toMatch(/correct horse|not the password/)
  })

  it('stop reaching a listener whose signal aborted', async () => {
    await t.kernel.registry.disable('listener')
    expect(unsubscribed).toBe(1)
    const before = seen.length
    await t.inject({ method: 'POST', url: '/api/auth/logout', as: 'viewer' })
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen.slice(before).filter((e) => e.type === 'audit')).toEqual([])
  })
})
