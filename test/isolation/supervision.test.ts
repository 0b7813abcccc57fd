/**
 * Isolated plugins are supervised (kernel/src/isolation/load.ts): every call has a deadline, a heartbeat finds a hung
 * process, a crash ends the requests in flight with 503 and restarts the process after a backoff, and five crashes
 * within a minute leave the plugin failed with the reason. Against the real daemon (its build, spawned), with the
 * broken fixtures of issue 26 dropped into its plugins folder one by one while another isolated plugin (hello) serves.
 * The liveness checks are the issue's: /health and a signed-in route of another plugin answer within 100 ms.
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import {
  FIXTURES,
  HELLO,
  allGone,
  pluginProcesses,
  startIsolationDaemon,
  type Extension,
  type IsolationDaemon,
} from './support.ts'

let d: IsolationDaemon

beforeAll(async () => {
  d = await startIsolationDaemon(
    { hello: HELLO },
    {
      HOSTD_PLUGIN_REQUEST_TIMEOUT_MS: '1000',
      HOSTD_PLUGIN_RESTART_DELAY_MS: '100',
      HOSTD_PLUGIN_HEAP_MB: '64',
    },
  )
  await d.until('hello', (e) => e.state === 'active')
}, 60_000)
afterAll(() => d?.close())

/** /health and hello's signed-in route, each within 100 ms of the daemon under test. */
async function expectLive(): Promise<void> {
  const health = await d.api('/health')
  expect(health.status).toBe(200)
  expect(health.ms).toBeLessThan(100)
  const hello = await d.api('/api/hello')
  expect(hello.status).toBe(200)
  expect(hello.ms).toBeLessThan(100)
}

/** Polls the plugin's entry until `test` holds, keeping every state it went through. */
async function watch(id: string, test: (e: Extension) => boolean): Promise<{ last: Extension; seen: Set<string> }> {
  const seen = new Set<string>()
  const last = await eventually(async () => {
    const e = await d.extension(id)
    if (e) seen.add(e.state)
    return e && test(e) ? e : null
  }, 50)
  return { last, seen }
}

describe('busy-loop: 5 s busy loops at load and in a route', () => {
  it('the daemon answers meanwhile; the route gets 504; the hung process is killed and restarted', async () => {
    await d.drop(join(FIXTURES, 'busy-loop'), 'busy-loop')
    // Its load spins for 5 s (in its own process): the daemon answers all along.
    await eventually(async () => (await d.extension('busy-loop'))?.state === 'starting')
    await expectLive()
    await d.until('busy-loop', (e) => e.state === 'active')

    const spin = d.api('/api/busy-loop/spin')
    for (let i = 0; i < 5; i++) await expectLive()
    const answer = await spin
    expect(answer.status).toBe(504)
    expect(answer.body.error).toBe('HOSTD_PLUGIN_TIMEOUT')
    await expectLive()

    const { last } = await watch('busy-loop', (e) => e.state === 'restarting')
    expect(last.reason).toMatch(/stopped answering \(no heartbeat/)
    await expectLive()
    await d.until('busy-loop', (e) => e.state === 'active')
    expect((await d.api('/api/busy-loop/ping')).body).toEqual({ pong: true })
  }, 60_000)
})

describe('heap-hog: allocates past its heap cap', () => {
  it('the daemon stays up; the plugin restarts, then is failed: out of memory', async () => {
    await d.drop(join(FIXTURES, 'heap-hog'), 'heap-hog')
    const { last, seen } = await watch('heap-hog', (e) => e.state === 'failed')
    expect(seen).toContain('restarting')
    expect(last.error).toMatch(/out of memory: it went past its heap cap of 64 MiB/)
    expect(last.error).toMatch(/failed 5 times within a minute/)
    await expectLive()
    await eventually(async () => (await pluginProcesses(d.pid, join(d.pluginsDir, 'heap-hog'))).length === 0)
  }, 60_000)
})

describe('process-exit: process.exit(0) in a route, then in start', () => {
  it('the request in flight gets 503; the daemon stays up; the plugin restarts, then is failed with the caller', async () => {
    await d.drop(join(FIXTURES, 'process-exit'), 'process-exit')
    await d.until('process-exit', (e) => e.state === 'active')
    const res = await d.api('/api/process-exit/exit', { method: 'POST' })
    expect(res.status).toBe(503)
    expect(res.body.error).toBe('HOSTD_PLUGIN_UNAVAILABLE')
    expect(res.body.message).toMatch(/the plugin called process\.exit\(0\)/)
    await expectLive()
    const { last, seen } = await watch('process-exit', (e) => e.state === 'failed')
    expect(seen).toContain('restarting')
    expect(last.error).toMatch(/the plugin called process\.exit\(0\) at src\/index\.ts:\d+:\d+/)
    expect(last.errorOrigin).toMatch(/^src\/index\.ts:\d+$/)
    await expectLive()
  }, 60_000)
})

describe('crash-loop: crashes each time it is loaded', () => {
  it('is restarted with a backoff, then failed with the error and its file:line', async () => {
    await d.drop(join(FIXTURES, 'crash-loop'), 'crash-loop')
    const { last, seen } = await watch('crash-loop', (e) => e.state === 'failed')
    expect(seen).toContain('restarting')
    expect(last.error).toMatch(/crash-loop fixture: thrown from a timer at src\/index\.ts:\d+:\d+/)
    expect(last.error).toMatch(/failed 5 times within a minute, so it is not restarted again/)
    expect(last.errorOrigin).toMatch(/^src\/index\.ts:\d+$/)
    await expectLive()
  }, 60_000)
})

describe('never-answers: a route that never responds', () => {
  it('each of 20 requests gets 504; removed, nothing stays open and its process is gone', async () => {
    const dir = await d.drop(join(FIXTURES, 'never-answers'), 'never-answers')
    await d.until('never-answers', (e) => e.state === 'active')
    const answers = await Promise.all(Array.from({ length: 20 }, () => d.api('/api/never-answers/wait')))
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(504))
    expect(answers[0]!.body.error).toBe('HOSTD_PLUGIN_TIMEOUT')
    await expectLive()

    const procs = await pluginProcesses(d.pid, dir)
    expect(procs.length).toBe(3)
    const open = Array.from({ length: 20 }, () => d.api('/api/never-answers/wait'))
    await rm(dir, { recursive: true })
    const ended = await Promise.all(open)
    for (const a of ended) expect([503, 504]).toContain(a.status)
    await eventually(async () => (await d.extension('never-answers')) === undefined)
    expect(await allGone(procs)).toBe(true)
  }, 60_000)
})
