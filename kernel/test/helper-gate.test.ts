import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:net'
import { definePlugin, tokens } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

/**
 * The kernel side of Admin Privileges: a route that needs the root helper answers 423 while nothing
 * listens on HOSTD_HELPER_SOCKET, and works as soon as something does. The peer here is a minimal
 * stand-in speaking the helper's line protocol (one JSON request line, one JSON answer line); the real
 * helper is built in helper/ with its own issue.
 */
const privileged = definePlugin({
  id: 'privileged',
  version: '1.0.0',
  kernel: '^1.0.0',
  deps: { helper: tokens.helper },
  routes: (r, { helper }) => {
    r.post('/api/privileged-test', { role: 'admin', needs: ['helper'] }, () =>
      helper.call<{ echoed: string }>('echo', { value: 'x' }),
    )
  },
})

function fakeHelper(path: string): Promise<Server> {
  const server = createServer((socket) => {
    socket.setEncoding('utf8')
    socket.once('data', (line: string) => {
      const req = JSON.parse(line) as { action: string; args?: { value?: string } }
      socket.end(
        `${JSON.stringify(req.action === 'ping' ? { ok: true } : { ok: true, result: { echoed: req.args?.value } })}\n`,
      )
    })
  })
  return new Promise((resolve) => server.listen(path, () => resolve(server)))
}

describe('helper gate', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [privileged] })
  })
  afterAll(() => t.close())

  it('answers 423 without the helper, before the handler, and works once it is there', async () => {
    const res = await t.inject({ method: 'POST', url: '/api/privileged-test', as: 'admin' })
    expect(res.statusCode).toBe(423)
    expect(res.json()).toEqual({
      error: 'HOSTD_HELPER_UNAVAILABLE',
      message: 'Admin Privileges missing: the root helper is not reachable',
    })
    expect((await t.inject({ method: 'POST', url: '/api/privileged-test', as: 'operator' })).statusCode).toBe(403)

    // At once: a helper that was not there is looked for again on the next request (only an answer is kept a second).
    const server = await fakeHelper(t.kernel.config.helperSocket)
    try {
      const ok = await t.inject({ method: 'POST', url: '/api/privileged-test', as: 'admin' })
      expect(ok.statusCode).toBe(200)
      expect(ok.json()).toEqual({ echoed: 'x' })
    } finally {
      await new Promise((r) => server.close(r))
    }
    // Gone within the second its last ping is kept: the call finds nobody and answers 423 too, not a failed action.
    const gone = await t.inject({ method: 'POST', url: '/api/privileged-test', as: 'admin' })
    expect(gone.json()).toEqual({
      error: 'HOSTD_HELPER_UNAVAILABLE',
      message: 'Admin Privileges missing: the root helper is not reachable',
    })
    // And back at once.
    const again = await fakeHelper(t.kernel.config.helperSocket)
    try {
      expect((await t.inject({ method: 'POST', url: '/api/privileged-test', as: 'admin' })).statusCode).toBe(200)
    } finally {
      await new Promise((r) => again.close(r))
    }
  })
})
