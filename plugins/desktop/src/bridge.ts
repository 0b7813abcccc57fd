/**
 * One WebSocket bridged to one TCP connection to the configured VNC server (websockify's binary mode: raw RFB bytes in
 * binary frames both ways). Buffers are bounded both ways: the TCP socket is paused while the WebSocket holds more
 * than HIGH_WATER unsent bytes, and the WebSocket stops being read while TCP refuses more (`write` returned false)
 * until it drains. Either side closing, the socket's context aborting, or idleness ends both.
 */
import type { Socket } from 'node:net'
import type { WebSocket } from 'ws'
import type { HostdError } from '@hostd/sdk'
import { DesktopErrors } from './errors.ts'

export const BRIDGE = {
  /** Pause reading the VNC server when the WebSocket holds more unsent bytes than this... */
  highWater: 2 * 1024 * 1024,
  /** ...and resume below this. */
  lowWater: 512 * 1024,
  pollMs: 10,
  /** A client that keeps sending while the VNC server does not read is cut off past this much queued for TCP. */
  maxQueuedToServer: 32 * 1024 * 1024,
} as const

export interface BridgeEnd {
  ended: 'client' | 'server' | 'idle' | 'aborted' | 'abuse' | 'error'
  seconds: number
  /** Bytes from the VNC server to the client, and from the client to the server. */
  bytesToClient: number
  bytesToServer: number
  closeCode?: number
  closeReason?: string
  reason?: string
}

export interface BridgeOptions {
  socket: WebSocket
  tcp: Socket
  /** 0: never. */
  idleMs: number
  signal: AbortSignal
  onEnd(end: BridgeEnd): void
}

export function bridge({ socket, tcp, idleMs, signal, onEnd }: BridgeOptions): void {
  const startedAt = Date.now()
  let toClient = 0
  let toServer = 0
  let lastActivity = Date.now()
  let finished = false
  let flowTimer: NodeJS.Timeout | null = null
  let idleTimer: NodeJS.Timeout | null = null

  const finish = (end: Omit<BridgeEnd, 'seconds' | 'bytesToClient' | 'bytesToServer'>) => {
    if (finished) return
    finished = true
    if (flowTimer) clearInterval(flowTimer)
    if (idleTimer) clearInterval(idleTimer)
    tcp.destroy()
    onEnd({
      ...end,
      seconds: Math.round((Date.now() - startedAt) / 100) / 10,
      bytesToClient: toClient,
      bytesToServer: toServer,
    })
  }
  const closeSocket = (code: number, reason: string) => {
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING) socket.close(code, reason)
  }
  // No text frames on this socket, ever: a VNC client reads every frame as RFB bytes. Errors are close codes.
  const closeWithError = (err: HostdError) => closeSocket(4000 + err.statusCode, err.code)

  // VNC server -> client
  tcp.on('data', (chunk: Buffer) => {
    lastActivity = Date.now()
    toClient += chunk.length
    if (socket.readyState !== socket.OPEN) return
    socket.send(chunk, { binary: true })
    if (socket.bufferedAmount > BRIDGE.highWater && !flowTimer) {
      tcp.pause()
      flowTimer = setInterval(() => {
        if (socket.bufferedAmount >= BRIDGE.lowWater) return
        clearInterval(flowTimer!)
        flowTimer = null
        tcp.resume()
      }, BRIDGE.pollMs)
    }
  })
  tcp.on('end', () => {
    closeSocket(1000, 'the VNC server closed the connection')
    finish({ ended: 'server', closeCode: 1000 })
  })
  tcp.on('error', (err) => {
    closeSocket(1011, 'the VNC connection failed')
    finish({ ended: 'error', closeCode: 1011, reason: err.message })
  })
  tcp.on('close', () => {
    closeSocket(1000, 'the VNC server closed the connection')
    finish({ ended: 'server', closeCode: 1000 })
  })
  tcp.on('drain', () => socket.resume())

  // client -> VNC server
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (finished) return
    if (!isBinary) {
      closeSocket(1003, 'binary frames only: raw RFB')
      return finish({ ended: 'abuse', closeCode: 1003, reason: 'a text frame' })
    }
    lastActivity = Date.now()
    toServer += data.length
    if (tcp.writableLength + data.length > BRIDGE.maxQueuedToServer) {
      closeSocket(1008, 'too much input queued for the VNC server')
      return finish({
        ended: 'abuse',
        closeCode: 1008,
        reason: `over ${BRIDGE.maxQueuedToServer} bytes queued for the VNC server`,
      })
    }
    if (!tcp.write(data)) socket.pause()
  })
  socket.once('close', (code: number, reason: Buffer) =>
    finish({ ended: 'client', closeCode: code, closeReason: reason.toString('utf8') }),
  )
  // The kernel aborts the context from its own 'close' listener too; the close listener then says how it closed.
  signal.addEventListener(
    'abort',
    () => {
      if (socket.readyState !== socket.CLOSED)
        finish({ ended: 'aborted', reason: (signal.reason as Error | undefined)?.message })
    },
    { once: true },
  )

  if (idleMs > 0) {
    idleTimer = setInterval(
      () => {
        if (Date.now() - lastActivity < idleMs) return
        const err = DesktopErrors.idle(
          `No traffic either way for ${Math.round(idleMs / 1000)} s: the remote desktop was closed`,
        )
        closeWithError(err)
        finish({ ended: 'idle', closeCode: 4000 + err.statusCode, reason: err.message })
      },
      Math.min(30_000, Math.max(250, Math.floor(idleMs / 4))),
    )
  }
  if (socket.readyState !== socket.OPEN || signal.aborted) finish({ ended: 'client', closeCode: 1006 })
  // Data the server sent before the upgrade completed (its greeting) is already buffered in `tcp`: flowing starts now.
  tcp.resume()
}
