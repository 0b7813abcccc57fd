/**
 * The desktop plugin against a real screen: Xvfb plus x11vnc on loopback, a listening test kernel, real WebSockets.
 * Where the VNC server's side of a connection must be watched (does the bridge close it, does it stop reading),
 * a plain TCP listener stands in for the VNC server: it is named as such in each test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { eventually, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { desktopPlugin } from '../src/index.ts'
import { RfbOverWebSocket } from './support/rfb-client.ts'
import { SCREEN, startVnc, type Vnc } from './support/vnc.ts'

/** A TCP listener on loopback that records its connections (to prove who the bridge connects to, and when it lets go). */
async function listener(
  onConnection: (socket: Socket) => void = () => undefined,
): Promise<{ server: Server; port: number; sockets: Socket[]; closed: number }> {
  const state = { server: createServer(), port: 0, sockets: [] as Socket[], closed: 0 }
  state.server.on('connection', (socket) => {
    state.sockets.push(socket)
    socket.on('error', () => undefined)
    socket.on('close', () => state.closed++)
    onConnection(socket)
  })
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve))
  state.port = (state.server.address() as { port: number }).port
  return state
}

describe('desktop against Xvfb and x11vnc', () => {
  let vnc: Vnc
  let t: TestKernel
  let admin: string
  let decoy: Awaited<ReturnType<typeof listener>>
  const socketUrl = (query = '') => `${t.url!.replace(/^http/, 'ws')}/api/desktop${query}`

  beforeAll(async () => {
    vnc = await startVnc()
    decoy = await listener()
    t = await startTestKernel({
      plugins: [desktopPlugin({ target: { host: '127.0.0.1', port: vnc.port } })],
      overNetwork: true,
    })
    admin = (await t.login('admin', 'desk-admin')).token
  })
  afterAll(async () => {
    await t?.close()
    decoy?.server.close()
    await vnc?.stop()
  })

  it('reports the VNC server: version, security types, the display size and how to connect', async () => {
    const res = await t.inject({ url: '/api/system/desktop', as: 'admin' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      available: true,
      target: `127.0.0.1:${vnc.port}`,
      protocolVersion: 'RFB 003.008',
      authTypes: [1],
      authRequired: false,
      display: SCREEN,
      name: expect.any(String),
      websocketPath: '/api/desktop',
      connectUrl: `ws://${new URL(t.url!).host}/api/desktop`,
      nativeUrl: null,
      reason: null,
    })
  })

  it("bridges the RFB handshake to ServerInit with the display's size, echoing the binary subprotocol", async () => {
    const rfb = new RfbOverWebSocket(socketUrl(), admin, { protocols: ['binary'] })
    const init = await rfb.handshake()
    expect(rfb.ws.protocol).toBe('binary')
    expect(init).toMatchObject({
      greeting: 'RFB 003.008\n',
      securityTypes: [1],
      width: SCREEN.width,
      height: SCREEN.height,
    })
    await rfb.roundTrip()
    await rfb.close()
  })

  it('works without a subprotocol too (noVNC offers none by default)', async () => {
    const rfb = new RfbOverWebSocket(socketUrl(), admin)
    expect((await rfb.handshake()).width).toBe(SCREEN.width)
    expect(rfb.ws.protocol).toBe('')
    await rfb.close()
  })

  it('reaches only the configured target, whatever the query or headers name', async () => {
    const other = `127.0.0.1:${decoy.port}`
    const query = `?host=127.0.0.1&port=${decoy.port}&target=${encodeURIComponent(other)}&path=${encodeURIComponent(other)}&token=${decoy.port}`
    const rfb = new RfbOverWebSocket(socketUrl(query), admin, {
      headers: { 'x-forwarded-host': other, forwarded: `host=${other}`, 'x-vnc-target': other, 'x-target': other },
    })
    const init = await rfb.handshake()
    expect(init.width).toBe(SCREEN.width)
    await rfb.close()
    const status = (await t.inject({ url: `/api/system/desktop${query}`, as: 'admin' })).json()
    expect(status.target).toBe(`127.0.0.1:${vnc.port}`)
    expect(decoy.sockets).toHaveLength(0)
  })

  it('answers 401 signed out and 403 to operators and viewers, for the status and the socket', async () => {
    expect((await t.inject({ url: '/api/system/desktop' })).statusCode).toBe(401)
    for (const role of ['operator', 'viewer'] as const) {
      const token = (await t.login(role)).token
      expect((await t.inject({ url: '/api/system/desktop', as: { token } })).statusCode).toBe(403)
      const rfb = new RfbOverWebSocket(socketUrl(), token)
      expect((await rfb.closed).code).toBe(403)
    }
    expect((await new RfbOverWebSocket(socketUrl(), 'not-a-token').closed).code).toBe(401)
  })

  it('refuses a socket opened from another origin', async () => {
    const rfb = new RfbOverWebSocket(socketUrl(), admin, { headers: { origin: 'https://evil.example' } })
    expect((await rfb.closed).code).toBe(403)
  })

  it('audits connect and disconnect with the duration and the bytes each way', async () => {
    const rfb = new RfbOverWebSocket(socketUrl(), admin)
    await rfb.handshake()
    await rfb.roundTrip()
    await rfb.close()
    let items: any[] = []
    await eventually(async () => {
      items = (await t.inject({ url: '/api/audit?range=all&limit=1000', as: 'admin' })).json().items
      return items.some((e) => e.action === 'desktop.disconnect' && e.username === 'desk-admin')
    })
    const target = `127.0.0.1:${vnc.port}`
    expect(items.find((e) => e.action === 'desktop.connect' && e.result === 'success')).toMatchObject({
      username: 'desk-admin',
      ip: '127.0.0.1',
      target,
    })
    const end = items.find((e) => e.action === 'desktop.disconnect')
    expect(end).toMatchObject({ target, detail: { target, ended: 'client' } })
    expect(end.detail.bytesToClient).toBeGreaterThan(12 + 24)
    expect(end.detail.bytesToServer).toBe(12 + 1 + 1 + 10)
    expect(typeof end.detail.seconds).toBe('number')
  })

  it('says clearly when no VNC server answers: status 200 with available false and a reason, the socket 503', async () => {
    await vnc.stopServer()
    try {
      const status = (await t.inject({ url: '/api/system/desktop', as: 'admin' })).json()
      expect(status).toMatchObject({
        available: false,
        protocolVersion: null,
        authTypes: [],
        display: null,
        target: `127.0.0.1:${vnc.port}`,
      })
      expect(status.reason).toMatch(
        /No VNC server answers on 127\.0\.0\.1:\d+ \(connection refused\)\. Turn on screen sharing/,
      )
      const rfb = new RfbOverWebSocket(socketUrl(), admin)
      await rfb.closed
      expect(rfb.refused).toMatchObject({ status: 503, body: { error: 'HOSTD_DESKTOP_UNAVAILABLE' } })
      expect(rfb.refused!.body.message).toMatch(/connection refused/)
      const items = (await t.inject({ url: '/api/audit?range=all&limit=50', as: 'admin' })).json().items
      expect(items.find((e: any) => e.action === 'desktop.connect' && e.result === 'failure')).toBeTruthy()
    } finally {
      await vnc.startServer()
    }
    expect((await t.inject({ url: '/api/system/desktop', as: 'admin' })).json().available).toBe(true)
  })
})

describe("the bridge's own side of the TCP connection", () => {
  const kernels: TestKernel[] = []
  afterAll(async () => {
    for (const t of kernels) await t.close()
  })
  /** A kernel whose desktop target is `port` (a listener standing in for the VNC server). */
  const start = async (port: number, idleSeconds?: number) => {
    const t = await startTestKernel({
      plugins: [
        desktopPlugin({ target: { host: '127.0.0.1', port }, ...(idleSeconds === undefined ? {} : { idleSeconds }) }),
      ],
      listen: true,
    })
    kernels.push(t)
    const token = (await t.login('admin')).token
    return { t, open: () => new RfbOverWebSocket(`${t.url!.replace(/^http/, 'ws')}/api/desktop`, token) }
  }

  it("closes the TCP connection when the WebSocket closes, and when the socket's context aborts", async () => {
    const standIn = await listener((s) => s.write('RFB 003.008\n'))
    const { t, open } = await start(standIn.port)
    const first = open()
    await first.read(12)
    await first.close()
    await eventually(() => standIn.closed === 1)
    const second = open()
    await second.read(12)
    await t.kernel.registry.disable('desktop')
    expect((await second.closed).code).toBe(1012)
    await eventually(() => standIn.closed === 2)
    standIn.server.close()
  })

  it('stops reading the VNC server while the client does not read', async () => {
    let sent = 0
    const standIn = await listener((s) => {
      const chunk = Buffer.alloc(64 * 1024, 7)
      const pump = () => {
        while (!s.destroyed && s.write(chunk)) sent += chunk.length
        if (!s.destroyed) sent += chunk.length
      }
      s.on('drain', pump)
      pump()
    })
    const { open } = await start(standIn.port)
    const rfb = open()
    await rfb.read(1)
    rfb.ws.pause()
    await sleep(1500)
    const before = sent
    await sleep(1000)
    // Only the kernel's socket buffers and the bridge's 2 MiB watermark hold data; without flow control the bridge
    // would read the stand-in as fast as it writes (hundreds of MB a second).
    expect(sent - before).toBeLessThan(1024 * 1024)
    expect(sent).toBeLessThan(64 * 1024 * 1024)
    rfb.ws.resume()
    await rfb.close()
    standIn.server.close()
  })

  it('stops reading the client while the VNC server does not read', async () => {
    const standIn = await listener((s) => s.pause())
    const { open } = await start(standIn.port)
    const rfb = open()
    await rfb.opened
    const frame = Buffer.alloc(1024 * 1024, 1)
    for (let i = 0; i < 48; i++) rfb.write(frame)
    await sleep(1000)
    // The bridge paused the WebSocket: the rest waits in the client's own buffer, and the socket stays open.
    expect(rfb.ws.bufferedAmount).toBeGreaterThan(8 * 1024 * 1024)
    expect(rfb.ws.readyState).toBe(rfb.ws.OPEN)
    rfb.ws.terminate() // a polite close would wait behind the client's own 40 MB
    await rfb.closed
    standIn.sockets[0]!.resume() // reading again, the stand-in sees the bridge's end of the connection
    await eventually(() => standIn.closed === 1)
    standIn.server.close()
  })

  it('closes an idle bridge with close code 4408', async () => {
    const standIn = await listener()
    const { open } = await start(standIn.port, 1)
    const rfb = open()
    expect(await rfb.closed).toEqual({ code: 4408, reason: 'HOSTD_DESKTOP_IDLE' })
    await eventually(() => standIn.closed === 1)
    standIn.server.close()
  })
})

describe('what the status tells about other servers', () => {
  it('a VNC server that asks for a password: its security types, authRequired, no display size, and why', async () => {
    const vnc = await startVnc({ password: 'vnc secret' })
    const t = await startTestKernel({ plugins: [desktopPlugin({ target: { host: '127.0.0.1', port: vnc.port } })] })
    try {
      const status = (await t.inject({ url: '/api/system/desktop', as: 'admin' })).json()
      expect(status).toMatchObject({
        available: true,
        protocolVersion: 'RFB 003.008',
        authTypes: [2],
        authRequired: true,
        display: null,
        name: null,
      })
      expect(status.reason).toMatch(/asks for credentials/)
    } finally {
      await t.close()
      await vnc.stop()
    }
  })

  it('a service that is not VNC: unavailable, saying what answered', async () => {
    const web = await listener((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'))
    const t = await startTestKernel({ plugins: [desktopPlugin({ target: { host: '127.0.0.1', port: web.port } })] })
    try {
      const status = (await t.inject({ url: '/api/system/desktop', as: 'admin' })).json()
      expect(status).toMatchObject({ available: false, protocolVersion: null })
      expect(status.reason).toMatch(/is not a VNC server \(it sent "HTTP\/1\.1 400"\)/)
    } finally {
      await t.close()
      web.server.close()
    }
  })

  it('a target beyond loopback gets a vnc:// URL for native viewers', async () => {
    // Nothing is listening there (TEST-NET-1, never routed): only the URL is checked, the probe's reason says why.
    const t = await startTestKernel({ plugins: [desktopPlugin({ target: { host: '192.0.2.10', port: 5901 } })] })
    try {
      const status = (await t.inject({ url: '/api/system/desktop', as: 'admin' })).json()
      expect(status).toMatchObject({ available: false, target: '192.0.2.10:5901', nativeUrl: 'vnc://192.0.2.10:5901' })
      expect(status.reason).toBeTruthy()
    } finally {
      await t.close()
    }
  })
})
