import { EventEmitter } from 'node:events'
import { describe, expect, it, vi } from 'vitest'
import type { WebSocket } from 'ws'
import { EARLY_MESSAGES_LIMIT, holdEarlyMessages } from './early-messages.ts'

/** What holdEarlyMessages uses of a ws socket: its events, and close. */
function fakeSocket() {
  const socket = new EventEmitter() as EventEmitter & { close: ReturnType<typeof vi.fn> }
  socket.close = vi.fn()
  holdEarlyMessages(socket as unknown as WebSocket)
  const receive = (text: string, binary = true) => socket.emit('message', Buffer.from(text), binary)
  return { socket, receive }
}
const flush = () => new Promise((resolve) => setImmediate(resolve))

describe('messages sent before the handler listens', () => {
  it('go to the first listener, in order, before the next message from the network', async () => {
    const { socket, receive } = fakeSocket()
    receive('one')
    receive('two', false)
    const got: string[] = []
    socket.on('message', (data: Buffer, binary: boolean) => got.push(`${data}${binary ? '' : ' (text)'}`))
    expect(got).toEqual([])
    // Messages arrive from I/O events, so the next one comes after the microtask that hands the held ones over.
    setImmediate(() => receive('three'))
    await flush()
    expect(got).toEqual(['one', 'two (text)', 'three'])
  })

  it('wait for the next listener when the first only took one', async () => {
    const { socket, receive } = fakeSocket()
    for (const m of ['first', 'second', 'third']) receive(m)
    const first = await new Promise<string>((resolve) => socket.once('message', (d: Buffer) => resolve(String(d))))
    expect(first).toBe('first')
    await flush()
    const rest: string[] = []
    socket.on('message', (d: Buffer) => rest.push(String(d)))
    await flush()
    expect(rest).toEqual(['second', 'third'])
  })

  it('close the socket with 1009 past the limit, instead of holding more', () => {
    const { socket, receive } = fakeSocket()
    receive('x'.repeat(EARLY_MESSAGES_LIMIT))
    expect(socket.close).not.toHaveBeenCalled()
    receive('y')
    expect(socket.close).toHaveBeenCalledWith(1009, expect.stringMatching(/before the socket was ready/))
  })
})
