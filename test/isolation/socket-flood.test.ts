/**
 * A plugin that floods a socket whose client reads slowly (issue 26): what the client has not read would stay in the
 * daemon's memory, so the daemon closes the socket past its cap (1013) and drops the rest.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { FIXTURES, startIsolationDaemon, type IsolationDaemon } from './support.ts'

let d: IsolationDaemon
beforeAll(async () => {
  d = await startIsolationDaemon({ 'socket-flood': join(FIXTURES, 'socket-flood') })
  await d.until('socket-flood', (e) => e.state === 'active')
}, 60_000)
afterAll(() => d?.close())

describe('socket-flood: 64 MiB sent to a client that does not read', () => {
  it('is cut off at the cap with 1013, and the daemon keeps answering', async () => {
    const ws = new WebSocket(`${d.url.replace(/^https/, 'wss')}/api/socket-flood/stream`, {
      headers: { authorization: `Bearer ${d.adminToken}` },
      rejectUnauthorized: false,
    })
    let received = 0
    ws.on('message', (data: Buffer) => {
      received += data.length
    })
    const closed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)))
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
    // The client stops reading: what the plugin sends piles up on the daemon's side of the connection.
    const tcp = (ws as unknown as { _socket: { pause(): void; resume(): void } })._socket
    tcp.pause()
    await sleep(2000)
    expect((await d.api('/health')).status).toBe(200)
    tcp.resume()
    expect(await closed).toBe(1013)
    // The cap (8 MiB) plus what the kernel's and the client's TCP buffers held: far from the 64 MiB sent.
    expect(received).toBeGreaterThan(0)
    expect(received).toBeLessThan(40 * 1024 * 1024)
  }, 30_000)
})
