/**
 * A desktop bridge ends with the session that opened it: the kernel closes the socket on sign-out (4401) or demotion
 * (4403) and aborts its context; the bridge then closes its TCP connection to the VNC server. A listener stands in
 * for the VNC server, to see its side of the connection close.
 *
 * These need the kernel's close-on-revoke (LiveConnections, branch hardening-kernel): without it they time out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { desktopPlugin } from '../src/index.ts'
import { RfbOverWebSocket } from './support/rfb-client.ts'

describe('desktop bridge ends with its session', () => {
  let t: TestKernel
  let standIn: Server
  let boss: string
  let closedConnections = 0
  beforeAll(async () => {
    standIn = createServer((s) => {
      s.on('error', () => undefined)
      s.on('close', () => closedConnections++)
      s.write('RFB 003.008\n')
    })
    await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve))
    const port = (standIn.address() as { port: number }).port
    t = await startTestKernel({ plugins: [desktopPlugin({ target: { host: '127.0.0.1', port } })], listen: true })
    boss = (await t.login('admin', 'desk-boss')).token
  })
  afterAll(async () => {
    await t.close()
    standIn.close()
  })

  async function openBridge(name: string) {
    const who = await t.login('admin', name)
    const rfb = new RfbOverWebSocket(`${t.url!.replace(/^http/, 'ws')}/api/desktop`, who.token)
    await rfb.read(12)
    return { ...who, rfb, closedBefore: closedConnections }
  }
  const tcpClosed = async (before: number) => {
    while (closedConnections <= before) await sleep(20)
  }

  it('sign-out closes the socket (4401) and the TCP connection', async () => {
    const { rfb, token, closedBefore } = await openBridge('desk-signout')
    expect((await t.inject({ method: 'POST', url: '/api/auth/logout', as: { token } })).statusCode).toBe(204)
    expect((await rfb.closed).code).toBe(4401)
    await tcpClosed(closedBefore)
  })

  it('demotion below admin closes the socket (4403) and the TCP connection', async () => {
    const { rfb, userId, closedBefore } = await openBridge('desk-demoted')
    const res = await t.inject({
      method: 'POST',
      url: `/api/users/${userId}/role`,
      as: { token: boss },
      payload: { role: 'viewer' },
    })
    expect(res.statusCode).toBe(204)
    expect((await rfb.closed).code).toBe(4403)
    await tcpClosed(closedBefore)
  })
})
