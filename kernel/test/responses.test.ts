import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pino from 'pino'
import { definePlugin, type HelperClient } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '../src/testing.ts'
import { createInstance } from '../src/http/instance.ts'
import type { SessionStore } from '../src/auth/sessions.ts'

const SECURITY_HEADERS = {
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

/** Every way a route can answer: returned value, no value, reply.send, a hijacked head, Node's implicit head. */
const answers = definePlugin({
  id: 'answers',
  version: '1.0.0',
  kernel: '^1.0.0',
  routes: (r) => {
    r.get('/api/answers/sync', { role: 'viewer' }, () => ({ sync: true }))
    r.get('/api/answers/async', { role: 'viewer' }, async () => ({ async: true }))
    r.post('/api/answers/sync-empty', { role: 'viewer' }, () => undefined)
    r.post('/api/answers/async-empty', { role: 'viewer' }, async () => undefined)
    r.get('/api/answers/sent', { role: 'viewer' }, (_req, reply) => reply.code(201).send({ sent: true }))
    r.get('/api/answers/async-sent', { role: 'viewer' }, async (_req, reply) => reply.code(202).send({ sent: true }))
    r.get('/api/answers/hijacked', { role: 'viewer' }, (_req, reply) => {
      reply.hijack()
      reply.raw.writeHead(200, { 'content-type': 'text/plain' })
      reply.raw.end('raw')
    })
    r.get('/api/answers/implicit', { role: 'viewer' }, (_req, reply) => {
      reply.hijack()
      reply.raw.setHeader('content-type', 'text/plain')
      reply.raw.end('implicit')
    })
    r.get('/api/answers/own-frame-policy', { role: 'viewer' }, (_req, reply) =>
      reply.header('x-frame-options', 'SAMEORIGIN').send({ own: true }),
    )
    r.get('/api/answers/throws', { role: 'viewer' }, () => {
      throw new Error('boom')
    })
  },
})

describe('answers over a real TLS socket', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [answers], overNetwork: true })
  })
  afterAll(() => t.close())

  it("a handler's result is sent whether it is returned at once or awaited; no result is 204", async () => {
    const sync = await t.inject({ url: '/api/answers/sync', as: 'viewer' })
    expect([sync.statusCode, sync.json()]).toEqual([200, { sync: true }])
    const async = await t.inject({ url: '/api/answers/async', as: 'viewer' })
    expect([async.statusCode, async.json()]).toEqual([200, { async: true }])
    for (const url of ['/api/answers/sync-empty', '/api/answers/async-empty']) {
      const res = await t.inject({ method: 'POST', url, as: 'viewer' })
      expect([url, res.statusCode, res.body]).toEqual([url, 204, ''])
    }
    const sent = await t.inject({ url: '/api/answers/sent', as: 'viewer' })
    expect([sent.statusCode, sent.json()]).toEqual([201, { sent: true }])
    const asyncSent = await t.inject({ url: '/api/answers/async-sent', as: 'viewer' })
    expect([asyncSent.statusCode, asyncSent.json()]).toEqual([202, { sent: true }])
  })

  it("every answer carries the security headers: Fastify's, a hijacked head, Node's implicit head, errors, 401, 404", async () => {
    const cases = [
      ['/api/answers/sync', 'viewer', 200],
      ['/api/answers/hijacked', 'viewer', 200],
      ['/api/answers/implicit', 'viewer', 200],
      ['/api/answers/throws', 'viewer', 500],
      ['/api/answers/sync', undefined, 401],
      ['/api/answers/nowhere', 'viewer', 404],
      ['/health', undefined, 200],
    ] as const
    for (const [url, as, status] of cases) {
      const res = await t.inject({ url, ...(as ? { as } : {}) })
      expect([url, res.statusCode]).toEqual([url, status])
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(res.headers[name], `${name} on ${url}`).toBe(value)
    }
    expect((await t.inject({ url: '/api/answers/hijacked', as: 'viewer' })).body).toBe('raw')
    expect((await t.inject({ url: '/api/answers/implicit', as: 'viewer' })).body).toBe('implicit')
  })

  it('a route that sets one of those headers itself keeps its value, once', async () => {
    const res = await t.inject({ url: '/api/answers/own-frame-policy', as: 'viewer' })
    // Node joins a repeated header with ", ": one value here means one header.
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN')
  })
})

describe('route registration', () => {
  it('refuses a route added to an instance without a valid role, however it is added', () => {
    const app = createInstance({
      logger: pino({ level: 'silent' }),
      sessions: {} as SessionStore,
      helper: {} as HelperClient,
    })
    expect(() => app.get('/api/no-role', () => ({}))).toThrow(/declares no valid role/)
    expect(() =>
      app.route({ method: 'GET', url: '/api/bad-role', config: { role: 'root' as never }, handler: () => ({}) }),
    ).toThrow(/declares no valid role/)
    expect(() =>
      app.route({ method: 'GET', url: '/api/ok', config: { role: 'viewer' }, handler: () => ({}) }),
    ).not.toThrow()
  })
})
