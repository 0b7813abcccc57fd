import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSocket, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import starter from '../src/index.ts'

describe('starter plugin', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [starter], listen: true })
  })
  afterAll(() => t?.close())

  it('answers the count to a viewer', async () => {
    const res = await t.inject({ url: '/api/starter', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ count: 0, by: null })
  })

  it('answers 401 signed out and 403 to a viewer who bumps', async () => {
    expect((await t.inject({ url: '/api/starter' })).statusCode).toBe(401)
    const res = await t.inject({ method: 'POST', url: '/api/starter/bump', as: 'viewer' })
    expect(res.statusCode).toBe(403)
  })

  it('lets an operator bump, and audits it', async () => {
    const { token, username } = await t.login('operator')
    const res = await t.inject({ method: 'POST', url: '/api/starter/bump', as: { token } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ count: 1, by: username })
    const audit = await t.inject({ url: '/api/audit', as: 'admin' })
    expect(JSON.stringify(audit.json())).toContain('starter.bump')
  })

  it('sends the count live on its socket', async () => {
    const { token } = await t.login('viewer')
    const socket = openSocket(t, '/api/starter/live?every=50', token)
    await socket.waitFor((m) => typeof (m as { count?: unknown }).count === 'number')
    await t.inject({ method: 'POST', url: '/api/starter/bump', as: 'operator' })
    await socket.waitFor((m) => (m as { count: number }).count === 2)
    socket.ws.close()
  })

  it('is listed as active with its page and card', async () => {
    const res = await t.inject({ url: '/api/extensions', as: 'viewer' })
    const entry = res.json().find((e: { id: string }) => e.id === 'starter')
    expect(entry).toMatchObject({
      state: 'active',
      version: '0.1.0',
      ui: {
        pages: [{ path: '/starter', title: 'Starter', element: 'starter-page' }],
        cards: [{ title: 'Starter', element: 'starter-card' }],
      },
    })
  })
})
