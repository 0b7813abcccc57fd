import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { definePlugin, Type } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

/** Route schemas are compiled on first use (kernel/src/http/validation.ts); these pin what must not change with that. */
const Item = Type.Object(
  { name: Type.String({ minLength: 1 }), count: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
)
const items = definePlugin({
  id: 'items',
  version: '1.0.0',
  kernel: '^1.0.0',
  routes: (r) => {
    r.post(
      '/api/items',
      { role: 'viewer', schema: { body: Item, response: { 200: Type.Object({ name: Type.String() }) } } },
      (req) => ({ name: (req.body as { name: string }).name, secret: 'never serialized' }),
    )
    r.get('/api/items/:n', { role: 'viewer', schema: { params: Type.Object({ n: Type.Integer() }) } }, (req) => ({
      n: (req.params as { n: number }).n,
    }))
  },
})

describe('route schemas', () => {
  let t: TestKernel
  const state = async (id: string) =>
    ((await t.inject({ url: '/api/extensions', as: 'viewer' })).json() as { id: string }[]).find((e) => e.id === id)
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [items] })
  })
  afterAll(() => t.close())

  it('validate bodies and params, on the first request as on later ones', async () => {
    for (let i = 0; i < 2; i++) {
      const bad = await t.inject({ method: 'POST', url: '/api/items', as: 'viewer', payload: { name: '', count: -1 } })
      expect(bad.statusCode).toBe(400)
      expect(bad.json().error).toBe('HOSTD_REQUEST_INVALID')
      expect(
        (
          await t.inject({
            method: 'POST',
            url: '/api/items',
            as: 'viewer',
            payload: { name: 'a', count: 1, extra: 1 },
          })
        ).statusCode,
      ).toBe(400)
      expect((await t.inject({ url: '/api/items/x', as: 'viewer' })).statusCode).toBe(400)
    }
    expect((await t.inject({ url: '/api/items/7', as: 'viewer' })).json()).toEqual({ n: 7 })
  })

  it('refuse a JSON body that is not JSON, repeats a key or holds a prototype key, each with its own answer', async () => {
    const send = (payload: string) =>
      t.inject({
        method: 'POST',
        url: '/api/items',
        as: 'viewer',
        headers: { 'content-type': 'application/json' },
        payload,
      })
    const answers = {
      malformed: await send('{"name":"a",'),
      repeated: await send('{"name":"a","count":1,"name":"b"}'),
      proto: await send('{"name":"a","count":1,"__proto__":{"count":2}}'),
      constructor: await send('{"name":"a","count":1,"constructor":{"prototype":{"x":1}}}'),
      empty: await send(''),
    }
    expect(answers.malformed.json()).toMatchObject({ error: 'HOSTD_REQUEST_MALFORMED_JSON' })
    expect(answers.repeated.json()).toMatchObject({
      error: 'HOSTD_REQUEST_INVALID',
      message: expect.stringContaining('"name" twice'),
    })
    expect(answers.proto.json()).toMatchObject({
      error: 'HOSTD_REQUEST_INVALID',
      message: expect.stringContaining('"__proto__"'),
    })
    expect(answers.constructor.json()).toMatchObject({
      error: 'HOSTD_REQUEST_INVALID',
      message: expect.stringContaining('"prototype"'),
    })
    expect(answers.empty.json()).toMatchObject({ error: 'HOSTD_REQUEST_INVALID' }) // no body: the schema wants one
    for (const res of Object.values(answers)) expect(res.statusCode).toBe(400)
    expect((await send('{"name":"constructor","count":1}')).json()).toEqual({ name: 'constructor' })
  })

  it('serialize answers by the response schema: fields it does not name are left out', async () => {
    const res = await t.inject({ method: 'POST', url: '/api/items', as: 'viewer', payload: { name: 'a', count: 1 } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ name: 'a' })
  })

  it('a malformed body or response schema still fails its plugin at load, not at its first request', async () => {
    const badBody = definePlugin({
      id: 'badbody',
      version: '1.0.0',
      kernel: '^1.0.0',
      routes: (r) =>
        r.post('/api/badbody', { role: 'viewer', schema: { body: { type: 'nonsense' } as never } }, () => ({})),
    })
    const badResponse = definePlugin({
      id: 'badresponse',
      version: '1.0.0',
      kernel: '^1.0.0',
      routes: (r) =>
        r.get(
          '/api/badresponse',
          {
            role: 'viewer',
            schema: { response: { 200: { type: 'object', properties: { a: { type: 12 } } } as never } },
          },
          () => ({}),
        ),
    })
    await t.kernel.registry.add(badBody)
    await t.kernel.registry.add(badResponse)
    expect(await state('badbody')).toMatchObject({ state: 'failed', error: expect.stringContaining('invalid schema') })
    expect(await state('badresponse')).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('invalid schema'),
    })
    expect((await t.inject({ url: '/api/badresponse', as: 'viewer' })).statusCode).toBe(404)
  })
})
