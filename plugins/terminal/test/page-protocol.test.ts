/**
 * The terminal page's protocol logic without a browser: what each way of ending says, and the client flow control
 * (pause when xterm falls behind, resume when it catches up) with input always sent as binary frames. The socket
 * is an EventTarget standing in for the browser's WebSocket; the page against the real daemon is in
 * page.browser.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { ACK_EVERY_BYTES, PENDING_HIGH, TerminalConnection } from '../ui/parts/connection.ts'
import { explainEnding, explainWithPlugin, type Ending } from '../ui/parts/protocol.ts'

const end = (code: number, extra: Partial<Ending> = {}): Ending => ({ code, reason: '', opened: true, ...extra })

describe('why a terminal ended', () => {
  it("names the shell's exit, and each close code of the README", () => {
    expect(explainEnding(end(1000, { exit: { code: 0, signal: null } }))).toMatchObject({
      title: 'The shell exited',
      tone: 'neutral',
      canReconnect: true,
    })
    expect(explainEnding(end(1000, { exit: { code: 2, signal: null } }))).toMatchObject({
      title: 'The shell exited with status 2',
    })
    expect(explainEnding(end(1000, { exit: { code: null, signal: 'SIGKILL' } }))).toMatchObject({
      title: 'The shell was ended by SIGKILL',
    })
    const idle = explainEnding(
      end(4408, {
        error: { error: 'HOSTD_TERMINAL_IDLE', message: 'No input and no output for 60 s: the terminal was closed' },
      }),
    )
    expect(idle).toMatchObject({ title: 'Closed after a while without activity', canReconnect: true })
    expect((idle as { detail: string }).detail).toMatch(
      /^No input and no output for 60 s: the terminal was closed\. Reconnect/,
    )
    expect(
      explainEnding(
        end(4429, {
          opened: true,
          error: { error: 'HOSTD_TERMINAL_TOO_MANY_SESSIONS', message: 'You already have 5 terminals open' },
        }),
      ),
    ).toMatchObject({ title: 'Too many terminals open', detail: 'You already have 5 terminals open. Then reconnect.' })
    expect(
      explainEnding(
        end(4503, { error: { error: 'HOSTD_TERMINAL_UNAVAILABLE', message: 'The account x has no login shell' } }),
      ),
    ).toMatchObject({ title: 'The terminal is unavailable', detail: 'The account x has no login shell.' })
    expect(explainEnding(end(4500))).toMatchObject({ title: 'The shell could not be started', tone: 'danger' })
    expect(explainEnding(end(4401, { reason: 'session ended: signed out' }))).toMatchObject({
      title: 'Your session ended',
      canReconnect: false,
    })
    expect((explainEnding(end(4401, { reason: 'session ended: signed out' })) as { detail: string }).detail).toMatch(
      /^Session ended: signed out\./,
    )
    expect(explainEnding(end(4403))).toMatchObject({ title: 'You may no longer use the terminal', canReconnect: false })
    expect(explainEnding(end(1009))).toMatchObject({ detail: expect.stringContaining('16 MiB') })
    expect(explainEnding(end(1001))).toMatchObject({ title: 'hostd is restarting or shutting down' })
    expect(explainEnding(end(4999, { reason: 'something new' }))).toMatchObject({
      title: 'The terminal closed',
      detail: expect.stringMatching(/^Something new\./),
    })
  })

  it("asks the plugin's state when the browser cannot say (1006: refused before the upgrade or dropped; 1012: reloaded)", () => {
    expect(explainEnding(end(1006, { opened: false }))).toBe('ask-plugin')
    expect(explainEnding(end(1012))).toBe('ask-plugin')
    expect(
      explainWithPlugin(end(1006, { opened: false }), {
        state: 'unavailable',
        reason: 'HOSTD_TERMINAL_USER is not set',
      }),
    ).toMatchObject({ title: 'The terminal is unavailable', detail: 'HOSTD_TERMINAL_USER is not set' })
    expect(explainWithPlugin(end(1012), { state: 'disabled' })).toMatchObject({
      title: 'The terminal was turned off',
      canReconnect: false,
    })
    expect(explainWithPlugin(end(1012), { state: 'failed', error: 'bad HOSTD_TERMINAL_MAX_SESSIONS' })).toMatchObject({
      detail: 'bad HOSTD_TERMINAL_MAX_SESSIONS',
    })
    expect(explainWithPlugin(end(1012), { state: 'active' })).toMatchObject({
      title: 'The terminal plugin was reloaded',
      canReconnect: true,
    })
    expect(explainWithPlugin(end(1006, { opened: true }), { state: 'active' })).toMatchObject({
      title: 'The connection to hostd was lost',
    })
    expect(explainWithPlugin(end(1006, { opened: false }), { state: 'active' })).toMatchObject({
      title: 'The terminal could not be opened',
    })
    expect(explainWithPlugin(end(1012), null)).toMatchObject({ title: 'The terminal was removed' })
  })
})

/** A stand-in for the browser's WebSocket: records what the page sends. */
class FakeSocket extends EventTarget {
  readyState: number = WebSocket.OPEN
  binaryType = 'blob'
  sent: (string | Uint8Array)[] = []
  send(data: string | Uint8Array) {
    this.sent.push(typeof data === 'string' ? data : new Uint8Array(data))
  }
  close() {
    this.readyState = WebSocket.CLOSED
  }
  receive(data: ArrayBuffer | string) {
    this.dispatchEvent(new MessageEvent('message', { data }))
  }
  get controls() {
    return this.sent.filter((d): d is string => typeof d === 'string').map((d) => JSON.parse(d) as { type: string })
  }
}

function connection() {
  const socket = new FakeSocket()
  const callbacks: (() => void)[] = []
  const written: number[] = []
  const screen = {
    write(data: Uint8Array, callback?: () => void) {
      written.push(data.length)
      if (callback) callbacks.push(callback)
    },
  }
  const ends: Ending[] = []
  const c = new TerminalConnection(socket as unknown as WebSocket, screen, {
    onReady: () => undefined,
    onEnd: (e) => ends.push(e),
  })
  return { socket, c, callbacks, written, ends }
}

describe('the terminal connection', () => {
  it('pauses the server while xterm falls behind, and resumes once it catches up', () => {
    const { socket, callbacks, written } = connection()
    expect(socket.binaryType).toBe('arraybuffer')
    const chunk = new ArrayBuffer(ACK_EVERY_BYTES)
    for (let i = 0; i <= PENDING_HIGH; i++) socket.receive(chunk)
    expect(socket.controls).toEqual([{ type: 'pause' }])
    socket.receive(chunk) // more output in flight is still written, never dropped
    expect(written.reduce((a, b) => a + b, 0)).toBe((PENDING_HIGH + 2) * ACK_EVERY_BYTES)
    expect(socket.controls).toEqual([{ type: 'pause' }])
    while (callbacks.length > 2) callbacks.shift()!()
    expect(socket.controls).toEqual([{ type: 'pause' }])
    callbacks.shift()!()
    expect(socket.controls).toEqual([{ type: 'pause' }, { type: 'resume' }])
  })

  it('sends input as binary frames of at most 1 MiB (a paste of any size), and resizes as text', () => {
    const { socket, c } = connection()
    c.input('é\x03')
    expect(socket.sent[0]).toEqual(new Uint8Array([0xc3, 0xa9, 0x03]))
    c.input('x'.repeat(2.5 * 1024 * 1024))
    const frames = socket.sent.slice(1) as Uint8Array[]
    expect(frames.map((f) => f.length)).toEqual([1024 * 1024, 1024 * 1024, 512 * 1024])
    c.resize(120, 40)
    expect(socket.controls).toEqual([{ type: 'resize', cols: 120, rows: 40 }])
    socket.readyState = WebSocket.CLOSED
    c.input('lost')
    expect(socket.sent).toHaveLength(5)
  })

  it('reports the exit frame and the close together', () => {
    const { socket, ends } = connection()
    socket.receive(JSON.stringify({ type: 'exit', code: 0, signal: null }))
    socket.dispatchEvent(Object.assign(new Event('close'), { code: 1000, reason: 'shell exited' }))
    expect(ends).toEqual([
      { code: 1000, reason: 'shell exited', opened: false, error: undefined, exit: { code: 0, signal: null } },
    ])
  })
})
