/**
 * The socket bridge's own rules, with stand-in sockets (the real path, over NATS and real sockets, is in
 * fleet.e2e.test.ts): credit pauses a sender, written frames give credit back, big frames cross in pieces, a lost
 * piece breaks the socket, and a close crosses with its code.
 */
import { EventEmitter } from 'node:events'
import { describe, expect, it } from 'vitest'
import type { WebSocket } from 'ws'
import { type BridgeHeaders, SocketBridge } from '../src/socket-bridge.ts'

class FakeSocket extends EventEmitter {
  readonly OPEN = 1
  readonly CONNECTING = 0
  readyState = 1
  isPaused = false
  readonly sent: { data: Buffer; binary: boolean }[] = []
  closedWith: { code: number; reason: string } | null = null
  pause() {
    this.isPaused = true
  }
  resume() {
    this.isPaused = false
  }
  send(data: Buffer, options: { binary: boolean }, cb: () => void) {
    this.sent.push({ data, binary: options.binary })
    cb()
  }
  close(code: number, reason: string) {
    this.readyState = 3
    this.closedWith = { code, reason }
    this.emit('close', code, Buffer.from(reason))
  }
  terminate() {}
}

const bridge = (socket: FakeSocket, out: [BridgeHeaders, Uint8Array][]) =>
  new SocketBridge(
    socket as unknown as WebSocket,
    (h, d) => out.push([h, d]),
    () => {},
  )

describe('socket bridge', () => {
  it('pauses its socket when the credit runs out and resumes on credit; gives credit back as it writes', () => {
    const out: [BridgeHeaders, Uint8Array][] = []
    const socket = new FakeSocket()
    const b = bridge(socket, out)
    for (let i = 0; i < 31; i++) socket.emit('message', Buffer.from(`k${i}`), true)
    expect(socket.isPaused).toBe(false)
    socket.emit('message', Buffer.from('k31'), true)
    expect(socket.isPaused).toBe(true)
    expect(out.map(([h]) => h.seq)).toEqual([...Array(32).keys()])
    b.receive({ kind: 'credit', credit: 8 }, new Uint8Array())
    expect(socket.isPaused).toBe(false)

    // The receiving side: 8 frames written, 8 credits back.
    const back: [BridgeHeaders, Uint8Array][] = []
    const target = new FakeSocket()
    const r = bridge(target, back)
    for (let seq = 0; seq < 8; seq++) r.receive({ kind: 'frame', seq, binary: true }, Buffer.from('x'))
    expect(target.sent).toHaveLength(8)
    expect(back).toEqual([[{ kind: 'credit', credit: 8 }, new Uint8Array()]])
    b.close(1000, 'done')
    r.close(1000, 'done')
  })

  it('carries a big frame in pieces, breaks on a lost piece and passes a close with its code', () => {
    const aSocket = new FakeSocket()
    const bSocket = new FakeSocket()
    let toB: SocketBridge | null = null
    const pieces: BridgeHeaders[] = []
    const a = new SocketBridge(
      aSocket as unknown as WebSocket,
      (h, d) => {
        pieces.push(h)
        toB!.receive(h, d)
      },
      () => {},
    )
    toB = new SocketBridge(
      bSocket as unknown as WebSocket,
      (h, d) => a.receive(h, d),
      () => {},
    )
    const big = Buffer.alloc(200 * 1024, 7)
    aSocket.emit('message', big, false)
    expect(pieces.filter((h) => h.kind === 'frame').map((h) => h.more)).toEqual([true, true, true, false])
    expect(bSocket.sent).toHaveLength(1)
    expect(bSocket.sent[0]!.data.equals(big)).toBe(true)
    expect(bSocket.sent[0]!.binary).toBe(false)
    // The browser's socket closes (its session ended: 4401): the other end closes with the same code.
    aSocket.close(4401, 'signed out')
    expect(bSocket.closedWith).toEqual({ code: 4401, reason: 'signed out' })

    const lossy = new FakeSocket()
    const l = bridge(lossy, [])
    l.receive({ kind: 'frame', seq: 0 }, Buffer.from('a'))
    l.receive({ kind: 'frame', seq: 2 }, Buffer.from('c'))
    expect(lossy.closedWith?.code).toBe(1011)
  })
})
