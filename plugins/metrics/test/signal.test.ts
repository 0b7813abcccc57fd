import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { eventually, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createMetricsPlugin } from '../src/index.ts'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'

/**
 * Ending a process through the real root helper (it runs `kill -s <signal> -- <pid>` as root): names from argv[0]
 * (not the main thread's renamed comm), TERM then KILL, the refusals, the audit.
 */
const children: ChildProcess[] = []
afterAll(() => children.forEach((c) => c.kill('SIGKILL')))

/** A python3 that renames its main thread "MainThread" (as many programs do) and, with `stubborn`, ignores TERM. */
function pythonChild(stubborn: boolean): Promise<ChildProcess> {
  const code = `import ctypes, signal, sys, time
ctypes.CDLL(None).prctl(15, b'MainThread', 0, 0, 0)
${stubborn ? 'signal.signal(signal.SIGTERM, signal.SIG_IGN)' : ''}
print('ready', flush=True)
time.sleep(600)`
  const child = spawn('/usr/bin/python3', ['-c', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return new Promise((resolve) => child.stdout!.once('data', () => resolve(child)))
}
const exited = (c: ChildProcess) =>
  new Promise<NodeJS.Signals | null>((r) =>
    c.exitCode !== null || c.signalCode ? r(c.signalCode) : c.once('exit', (_, s) => r(s)),
  )

describe('POST /api/activity/processes/:pid/signal through the real root helper', () => {
  let t: TestKernel
  let helper: RunningHelper
  beforeAll(async () => {
    helper = await startHelper()
    t = await startTestKernel({ plugins: [createMetricsPlugin()], env: { HOSTD_HELPER_SOCKET: helper.socket } })
  })
  afterAll(async () => {
    await t.close()
    await helper.stop()
  })
  const signal = (pid: number, body: unknown, as: 'admin' | 'operator' = 'admin') =>
    t.inject({ method: 'POST', url: `/api/activity/processes/${pid}/signal`, payload: body as object, as })

  it('lists a renamed-thread program by its own name, ends it with TERM (admin only), and audits it', async () => {
    const child = await pythonChild(false)
    const list = (await t.inject({ url: '/api/activity/processes', as: 'operator' })).json().processes as {
      pid: number
      name: string
      command: string
    }[]
    const entry = list.find((p) => p.pid === child.pid)!
    expect(entry.name).toBe('python3')
    expect(entry.command).toMatch(/^\/usr\/bin\/python3 -c import ctypes/)

    expect((await signal(child.pid!, { signal: 'TERM' }, 'operator')).statusCode).toBe(403)
    const res = await signal(child.pid!, { signal: 'TERM' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ pid: child.pid, name: 'python3', signal: 'TERM', dryRun: false })
    expect(await exited(child)).toBe('SIGTERM')
    const audit = (await t.inject({ url: '/api/audit?range=24h&limit=50', as: 'admin' })).json().items as {
      action: string
      target: string
      result: string
      detail: Record<string, unknown>
    }[]
    expect(audit.find((e) => e.action === 'process.signal')).toMatchObject({
      target: `${child.pid} python3`,
      result: 'success',
      detail: { pid: child.pid, name: 'python3', signal: 'TERM' },
    })
  })

  it('a process that ignores TERM keeps running; KILL ends it', async () => {
    const child = await pythonChild(true)
    expect((await signal(child.pid!, { signal: 'TERM' })).statusCode).toBe(200)
    // Still there after the TERM was delivered and ignored (a later call would find it ended otherwise).
    expect((await signal(child.pid!, { signal: 'TERM' })).statusCode).toBe(200)
    expect(child.exitCode).toBeNull()
    expect((await signal(child.pid!, { signal: 'KILL' })).statusCode).toBe(200)
    expect(await exited(child)).toBe('SIGKILL')
    // Gone: a clear 404, in the tool's words under details when the helper saw it first.
    await eventually(async () => expect((await signal(child.pid!, { signal: 'KILL' })).statusCode).toBe(404))
  })

  it('refuses init, the daemon itself, the root helper, other signals and a pid nobody has, with clear errors', async () => {
    const init = await signal(1, { signal: 'KILL' })
    expect(init.statusCode).toBe(409)
    expect(init.json()).toMatchObject({ error: 'HOSTD_ACTIVITY_PROCESS_PROTECTED', message: /init system/ })
    const self = await signal(process.pid, { signal: 'TERM' })
    expect(self.json()).toMatchObject({ error: 'HOSTD_ACTIVITY_PROCESS_PROTECTED', message: /hostd itself/ })
    const own = await signal(helper.process.pid!, { signal: 'TERM' })
    expect(own.statusCode).toBe(409)
    expect(own.json()).toMatchObject({
      error: 'HOSTD_ACTIVITY_PROCESS_PROTECTED',
      details: { raw: /root helper itself/ },
    })
    expect(helper.process.exitCode).toBeNull()
    expect((await signal(2, { signal: 'HUP' })).statusCode).toBe(400)
    const none = await signal(4194304, { signal: 'TERM' })
    expect(none.statusCode).toBe(404)
    expect(none.json().error).toBe('HOSTD_ACTIVITY_PROCESS_NOT_FOUND')
  })
})
