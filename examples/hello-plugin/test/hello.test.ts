import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import hello from '../src/index.ts'

/**
 * The same tests in both of the modes a plugin can run in: in the kernel's process (a definition handed over, as a
 * built-in plugin runs), and as a third-party plugin (its folder, run in a sandboxed process of its own).
 */
const modes = {
  'in process': () => startTestKernel({ plugins: [hello], listen: true }),
  isolated: () => startTestKernel({ thirdParty: [fileURLToPath(new URL('..', import.meta.url))], listen: true }),
}

describe.each(Object.entries(modes))('hello plugin (%s)', (_mode, start) => {
  let t: TestKernel
  beforeAll(async () => {
    t = await start()
  })
  afterAll(() => t.close())

  it('greets a signed-in viewer by name', async () => {
    const { token, username } = await t.login('viewer')
    const res = await t.inject({ url: '/api/hello', as: { token } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ message: `Hello, ${username}!` })
  })

  it('answers 401 without sign-in', async () => {
    const res = await t.inject({ url: '/api/hello' })
    expect(res.statusCode).toBe(401)
    expect(res.json().error).toBe('HOSTD_AUTH_REQUIRED')
  })

  it('is listed as active with its page', async () => {
    const res = await t.inject({ url: '/api/extensions', as: 'viewer' })
    const entry = res.json().find((e: { id: string }) => e.id === 'hello')
    expect(entry).toMatchObject({
      state: 'active',
      version: '1.0.0',
      ui: {
        pages: [
          {
            path: '/hello',
            title: 'Hello',
            role: 'viewer',
            module: '/plugins/hello/1.0.0/page.js',
            element: 'hello-page',
          },
        ],
      },
    })
  })

  it('echoes on its socket with the prefix from the query', async () => {
    const { token } = await t.login('viewer')
    const ws = new WebSocket(`${t.url!.replace('http', 'ws')}/api/hello/echo?prefix=%3E`, {
      headers: { authorization: `Bearer ${token}` },
    } as never)
    const reply = await new Promise<string>((resolve, reject) => {
      ws.onopen = () => ws.send('ping')
      ws.onmessage = (e) => resolve(String(e.data))
      ws.onerror = () => reject(new Error('socket failed'))
    })
    ws.close()
    expect(reply).toBe('>ping')
  })
})
