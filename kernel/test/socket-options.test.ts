import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { definePlugin, defineError, Type } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

const Closed = defineError('HOSTD_SOCKETTEST_CLOSED', 503, 'The service behind this socket is down')
let serviceUp = true
const admitted: string[] = []

/** Sockets using the two per-socket options: `protocols` (subprotocol choice) and `admit` (a check before the upgrade). */
const sockets = definePlugin({
  id: 'sockettest',
  version: '1.0.0',
  kernel: '^1.0.0',
  sockets: (s) => {
    s.ws('/api/sockettest/binary', { role: 'viewer', protocols: ['binary'] }, (socket) => socket.close(1000, 'bye'))
    s.ws('/api/sockettest/any', { role: 'viewer' }, (socket) => socket.close(1000, 'bye'))
    s.ws(
      '/api/sockettest/gated',
      {
        role: 'viewer',
        query: Type.Object({ n: Type.Integer() }),
        admit: ({ user, query }) => {
          if (!serviceUp) throw Closed()
          admitted.push(`${user.username}:${query.n}`)
        },
      },
      (socket) => socket.close(1000, 'bye'),
    )
  },
})

interface Outcome {
  status?: number
  body?: string
  protocol?: string
}

function open(t: TestKernel, path: string, token: string, protocols?: string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url!.replace(/^http/, 'ws')}${path}`, protocols ?? [], {
      headers: { authorization: `Bearer ${token}` },
    })
    ws.once('open', () => {
      resolve({ protocol: ws.protocol })
      ws.close()
    })
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    ws.once('error', reject)
  })
}

describe('socket options', () => {
  let t: TestKernel
  let token: string
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [sockets], listen: true })
    token = (await t.login('viewer', 'socket-viewer')).token
  })
  afterAll(() => t.close())

  it('echoes a declared subprotocol when offered, none otherwise, and the first offered on sockets that declare none', async () => {
    expect((await open(t, '/api/sockettest/binary', token, ['base64', 'binary'])).protocol).toBe('binary')
    expect((await open(t, '/api/sockettest/binary', token)).protocol).toBe('')
    // None of the offered ones: the server selects none, and a client that asked for one gives up (ws and browsers do).
    await expect(open(t, '/api/sockettest/binary', token, ['base64'])).rejects.toThrow(/no subprotocol/)
    expect((await open(t, '/api/sockettest/any', token, ['chat', 'binary'])).protocol).toBe('chat')
  })

  it('runs admit after sign-in and query validation, and answers its error before the upgrade', async () => {
    serviceUp = true
    expect((await open(t, '/api/sockettest/gated?n=7', token)).protocol).toBe('')
    expect(admitted).toEqual(['socket-viewer:7'])
    expect((await open(t, '/api/sockettest/gated?n=x', token)).status).toBe(400)
    expect((await open(t, '/api/sockettest/gated?n=8', 'not-a-token')).status).toBe(401)
    expect(admitted).toEqual(['socket-viewer:7'])
    serviceUp = false
    const refused = await open(t, '/api/sockettest/gated?n=9', token)
    expect(refused.status).toBe(503)
    expect(JSON.parse(refused.body!)).toEqual({
      error: 'HOSTD_SOCKETTEST_CLOSED',
      message: 'The service behind this socket is down',
    })
  })
})
