/**
 * Supervision of plugin code in the daemon's process (issue 26, item 5): every call into it has a deadline, and no lock
 * of the registry is held on it past that. The broken plugins are the fixtures of test/fixtures/hostile-plugins, each
 * a real package loaded from a folder of its own (as built-in, so in process whatever the mode of third-party plugins).
 * Deadlines are short here (HOSTD_PLUGIN_CALL_TIMEOUT_MS); a kernel with a deadline of a minute proves that disable
 * and close abandon a hanging call instead of waiting for it (the test's own timeout would end first).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { definePlugin } from '@hostd/sdk'
import { eventually } from '@hostd/sdk/testing'
import { startTestKernel, type TestKernel } from '../src/testing.ts'
import { REPO_ROOT } from '../../test/support/daemon.ts'

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'hostile-plugins')
const DEADLINE_MS = 1000

interface Listed {
  id: string
  state: string
  error?: string
  errorOrigin?: string
}

const plain = (id: string) =>
  definePlugin({
    id,
    version: '1.0.0',
    kernel: '^1.1.0',
    routes: (r) => r.get(`/api/${id}`, { role: 'viewer' }, () => ({ id })),
  })

let scratch: string
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hostd-supervision-'))
})
afterAll(() => rm(scratch, { recursive: true, force: true }))

/** A fresh copy of a fixture (its own folder, so a test may delete it); answers the folder. */
async function fixture(name: string, into = scratch): Promise<string> {
  const dir = join(await mkdtemp(join(into, 'case-')), name)
  await cp(join(FIXTURES, name), dir, { recursive: true })
  return dir
}

/** The 1-based line of `text` in a fixture's entry. */
async function lineOf(dir: string, text: string): Promise<number> {
  const lines = (await readFile(join(dir, 'src', 'index.ts'), 'utf8')).split('\n')
  const index = lines.findIndex((line) => line.includes(text))
  expect(index, text).toBeGreaterThanOrEqual(0)
  return index + 1
}

function kernelWith(deadlineMs: number): Promise<TestKernel> {
  return startTestKernel({ env: { HOSTD_PLUGIN_CALL_TIMEOUT_MS: String(deadlineMs) } })
}

async function listed(t: TestKernel, id: string): Promise<Listed | undefined> {
  return ((await t.inject({ url: '/api/extensions', as: 'admin' })).json() as Listed[]).find((e) => e.id === id)
}

/** The failures audited for `target` under `action`, newest first. */
async function failuresOf(t: TestKernel, action: string, target: string) {
  return (await t.kernel.services.audit.list('all', 200, 0)).items.filter(
    (e) => e.action === action && e.target === target && e.result === 'failure',
  )
}

describe('a start() that never resolves', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await kernelWith(DEADLINE_MS)
  })
  afterAll(() => t.close())

  it('is listed starting, its route answers 503 HOSTD_PLUGIN_STARTING, then it is failed with the reason and its entry', async () => {
    const dir = await fixture('start-never-resolves')
    const loading = t.kernel.registry.reconcile(dir, true)
    await eventually(async () => (await listed(t, 'start-never-resolves'))?.state === 'starting')
    // `starting` begins with the import, before its routes are known (they answer 404 then); once start() runs,
    // its routes are in the table and answer 503. A loaded machine makes the import the longer part.
    const ping = await eventually(async () => {
      const res = await t.inject({ url: '/api/start-never-resolves/ping', as: 'viewer' })
      return res.statusCode === 503 ? res : undefined
    })
    expect({ status: ping.statusCode, body: ping.json(), retry: ping.headers['retry-after'] }).toEqual({
      status: 503,
      body: { error: 'HOSTD_PLUGIN_STARTING', message: 'start-never-resolves is starting: try again in a moment' },
      retry: '1',
    })
    // Another plugin asks for the registry meanwhile: it loads once the deadline has passed, not never.
    const bystander = t.kernel.registry.add(plain('bystander'))
    await loading
    expect(await listed(t, 'start-never-resolves')).toMatchObject({
      state: 'failed',
      error: 'start() did not finish within 1 s',
      errorOrigin: 'src/index.ts',
    })
    await bystander
    expect((await t.inject({ url: '/api/bystander', as: 'viewer' })).statusCode).toBe(200)
    expect((await t.inject({ url: '/api/start-never-resolves/ping', as: 'viewer' })).statusCode).toBe(404)
    const [failure] = await failuresOf(t, 'plugin.load', 'start-never-resolves')
    expect(failure).toMatchObject({
      result: 'failure',
      detail: { error: 'start() did not finish within 1 s', origin: join(dir, 'src', 'index.ts') },
    })

    // Disable, enable (it hangs again and fails again) and removal of the folder all complete.
    expect((await t.kernel.registry.disable('start-never-resolves')).state).toBe('disabled')
    expect((await t.kernel.registry.enable('start-never-resolves')).state).toBe('failed')
    await rm(dir, { recursive: true })
    expect(await t.kernel.registry.reconcile(dir, true)).toBeNull()
    expect(await listed(t, 'start-never-resolves')).toBeUndefined()
  })
})

describe('a call that hangs is abandoned, not waited for, by disable, removal and close', () => {
  const kernels: TestKernel[] = []
  afterEach(async () => {
    for (const t of kernels.splice(0)) await t.close()
  })

  it('disable while its start hangs: the start is abandoned at once and the plugin is disabled', async () => {
    const t = await kernelWith(60_000)
    kernels.push(t)
    const dir = await fixture('start-never-resolves')
    const loading = t.kernel.registry.reconcile(dir, true)
    await eventually(async () => (await listed(t, 'start-never-resolves'))?.state === 'starting')
    await eventually(() => t.kernel.registry.find('start-never-resolves'))
    expect((await t.kernel.registry.disable('start-never-resolves')).state).toBe('disabled')
    await loading
    expect(await listed(t, 'start-never-resolves')).toMatchObject({ state: 'disabled' })
    const [abandoned] = await failuresOf(t, 'plugin.load', 'start-never-resolves')
    // Abandoned in start() (or, on a slow machine, before its next call: "routes() was not called: ...").
    expect(abandoned?.detail?.error).toMatch(/^\w+\(\) was (abandoned|not called): the plugin was disabled$/)
    // The registry is free: another plugin loads.
    await t.kernel.registry.add(plain('after-disable'))
    expect((await t.inject({ url: '/api/after-disable', as: 'viewer' })).statusCode).toBe(200)
  })

  it('its folder removed while it starts: the load is abandoned and the plugin is gone', async () => {
    const t = await kernelWith(60_000)
    kernels.push(t)
    const dir = await fixture('start-never-resolves')
    const loading = t.kernel.registry.reconcile(dir, true)
    await eventually(() => t.kernel.registry.find('start-never-resolves'))
    await rm(dir, { recursive: true })
    expect(await t.kernel.registry.reconcile(dir, true)).toBeNull()
    await loading
    expect(await listed(t, 'start-never-resolves')).toBeUndefined()
  })

  it('close while a start hangs: the start is abandoned and close completes', async () => {
    const t = await kernelWith(60_000)
    const starting = t.kernel.registry.reconcile(await fixture('start-never-resolves'), true)
    await eventually(async () => (await listed(t, 'start-never-resolves'))?.state === 'starting')
    await t.close()
    await starting
  })
})

describe('a stop() that never resolves', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await kernelWith(DEADLINE_MS)
  })
  afterAll(() => t.close())

  it('is abandoned at its deadline: disable completes, the reason is logged and audited, the registry is free', async () => {
    const dir = await fixture('stop-never-resolves')
    expect((await t.kernel.registry.reconcile(dir, true))?.state).toBe('active')
    expect((await t.inject({ url: '/api/stop-never-resolves/ping', as: 'viewer' })).json()).toEqual({ pong: true })
    expect((await t.kernel.registry.disable('stop-never-resolves')).state).toBe('disabled')
    expect((await t.inject({ url: '/api/stop-never-resolves/ping', as: 'viewer' })).statusCode).toBe(404)
    const [stop] = await failuresOf(t, 'plugin.stop', 'stop-never-resolves')
    expect(stop).toMatchObject({
      result: 'failure',
      detail: { error: 'stop() did not finish within 1 s', origin: join(dir, 'src', 'index.ts') },
    })
    await t.kernel.registry.add(plain('after-stop'))
    expect((await t.inject({ url: '/api/after-stop', as: 'viewer' })).statusCode).toBe(200)
    // Running again, then the kernel closes: its stop is abandoned again and close completes.
    expect((await t.kernel.registry.enable('stop-never-resolves')).state).toBe('active')
  })
})

describe('a setup() that throws after its first await', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await kernelWith(DEADLINE_MS)
  })
  afterAll(() => t.close())

  it('is failed with its message and the line that threw', async () => {
    const dir = await fixture('setup-throws-late')
    await t.kernel.registry.reconcile(dir, true)
    const line = await lineOf(dir, "throw new Error('setup gave up")
    expect(await listed(t, 'setup-throws-late')).toMatchObject({
      state: 'failed',
      error: 'setup gave up after its first await',
      errorOrigin: `src/index.ts:${line}`,
    })
    expect((await t.inject({ url: '/api/setup-throws-late/ping', as: 'viewer' })).statusCode).toBe(404)
  })
})

describe('a synchronous loop past the deadline', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await kernelWith(DEADLINE_MS)
  })
  afterAll(() => t.close())

  it('cannot be abandoned, but fails its plugin once it returns, saying how long it blocked the daemon', async () => {
    const busy = definePlugin({
      id: 'busy-routes',
      version: '1.0.0',
      kernel: '^1.1.0',
      routes: (r) => {
        const until = performance.now() + DEADLINE_MS * 1.5
        while (performance.now() < until);
        r.get('/api/busy-routes', { role: 'viewer' }, () => ({ busy: true }))
      },
    })
    await t.kernel.registry.add(busy)
    expect(await listed(t, 'busy-routes')).toMatchObject({
      state: 'failed',
      error: expect.stringMatching(/^routes\(\) blocked the daemon for \d+(\.\d)? s, past its deadline of 1 s$/),
    })
    expect((await t.inject({ url: '/api/busy-routes', as: 'viewer' })).statusCode).toBe(404)
  })
})

describe('an import slower than its deadline', () => {
  let t: TestKernel
  const delay = process.env.HOSTD_FIXTURE_IMPORT_DELAY_MS
  const done = globalThis as { hostdSlowImportsDone?: number }
  beforeAll(async () => {
    process.env.HOSTD_FIXTURE_IMPORT_DELAY_MS = String(DEADLINE_MS * 3)
    t = await kernelWith(DEADLINE_MS)
  })
  afterAll(async () => {
    if (delay === undefined) delete process.env.HOSTD_FIXTURE_IMPORT_DELAY_MS
    else process.env.HOSTD_FIXTURE_IMPORT_DELAY_MS = delay
    await t.close()
  })

  it('is listed starting while it imports, then failed; the import that ends later changes nothing', async () => {
    const before = done.hostdSlowImportsDone ?? 0
    const dir = await fixture('slow-import')
    const loading = t.kernel.registry.reconcile(dir, true)
    await eventually(async () => (await listed(t, 'slow-import'))?.state === 'starting')
    expect((await t.inject({ url: '/api/slow-import/ping', as: 'viewer' })).statusCode).toBe(404)
    expect((await loading)?.state).toBe('failed')
    expect(await listed(t, 'slow-import')).toMatchObject({
      state: 'failed',
      error: 'could not load: import did not finish within 1 s',
      errorOrigin: 'src/index.ts',
    })
    await eventually(() => (done.hostdSlowImportsDone ?? 0) > before)
    expect(await listed(t, 'slow-import')).toMatchObject({ state: 'failed' })
    expect((await t.inject({ url: '/api/slow-import/ping', as: 'viewer' })).statusCode).toBe(404)
  })
})

describe('a deadline that starts once the sandbox is up (startAfter)', () => {
  it('does not count the wait for startAfter, is abandoned while waiting, and still fails a call past it', async () => {
    const { withDeadline } = await import('../src/plugins/supervision.ts')
    const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    // The sandbox takes 300 ms to start, the call 50 ms, the deadline is 100 ms: within it, since the clock waits.
    await expect(withDeadline('import', () => later(50).then(() => 'ok'), 100, undefined, later(300))).resolves.toBe(
      'ok',
    )
    // Past its deadline once started: failed as before.
    await expect(withDeadline('import', () => later(300), 100, undefined, later(10))).rejects.toThrow(
      'import did not finish within 100 ms',
    )
    // Disabled while the sandbox starts: abandoned at once, the call never made.
    const abort = new AbortController()
    let called = false
    const waiting = withDeadline('setup()', () => (called = true), 100, abort.signal, new Promise(() => undefined))
    abort.abort(new Error('disabled'))
    await expect(waiting).rejects.toThrow('setup() was abandoned: disabled')
    expect(called).toBe(false)
  })
})
