/**
 * A third-party plugin that runs in the daemon's process (trusted, or isolation off) has the deadline its requests
 * would have isolated (issue 26, "Supervision, for both kinds"): a handler that never answers gets 504.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../../test/support/daemon.ts'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

let t: TestKernel
let work: string
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hostd-deadline-'))
  t = await startTestKernel({
    env: {
      HOSTD_PLUGINS_DIR: join(work, 'plugins'),
      HOSTD_PLUGINS_ISOLATION: 'off',
      HOSTD_PLUGIN_REQUEST_TIMEOUT_MS: '300',
    },
  })
  const dir = join(work, 'plugins', 'never-answers')
  await cp(join(REPO_ROOT, 'test', 'fixtures', 'hostile-plugins', 'never-answers'), dir, { recursive: true })
  expect((await t.kernel.registry.reconcile(dir, false))?.state).toBe('active')
})
afterAll(async () => {
  await t?.close()
  await rm(work, { recursive: true, force: true })
})

describe('never-answers in the daemon’s process', () => {
  it('gets 504 HOSTD_PLUGIN_TIMEOUT at its deadline; its other routes answer', async () => {
    const res = await t.inject({ url: '/api/never-answers/wait', as: 'viewer' })
    expect(res.statusCode).toBe(504)
    expect(res.json()).toEqual({
      error: 'HOSTD_PLUGIN_TIMEOUT',
      message: 'The plugin never-answers did not answer within 300 ms',
    })
    expect((await t.inject({ url: '/api/never-answers/ping', as: 'viewer' })).json()).toEqual({ pong: true })
  })
})
