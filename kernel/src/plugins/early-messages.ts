import type { RawData, WebSocket } from 'ws'

/** Most bytes held for a handler that has not listened yet; more closes the socket with 1009 (message too big). */
export const EARLY_MESSAGES_LIMIT = 1024 * 1024

const sizeOf = (data: RawData) => (Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data.byteLength)

/**
 * Holds what the client sends before the socket's handler listens: ws drops a message nobody listens to, and a
 * handler may have work to do first (the terminal looks up its account and starts the shell), while a client sends
 * as soon as the socket opens (a script piping commands, a person typing at once). The held messages go, in order,
 * to the first 'message' listener the handler adds; if that was a `once` listener, the rest wait for the next one.
 * Once nothing is held any more the socket is the handler's alone, as ws has it.
 */
export function holdEarlyMessages(socket: WebSocket): void {
  const held: [RawData, boolean][] = []
  let bytes = 0
  const hold = (data: RawData, isBinary: boolean) => {
    bytes += sizeOf(data)
    if (bytes > EARLY_MESSAGES_LIMIT) socket.close(1009, 'too much sent before the socket was ready')
    else held.push([data, isBinary])
  }
  const arm = () => {
    socket.on('message', hold)
    socket.on('newListener', handOver)
  }
  // 'newListener' comes before the listener is added: the held messages go out once it is there, and before anything
  // the network brings next (a microtask runs before the next I/O event).
  const handOver = (event: string | symbol) => {
    if (event !== 'message') return
    socket.off('newListener', handOver)
    socket.off('message', hold)
    queueMicrotask(replay)
  }
  const replay = () => {
    while (held.length > 0) {
      if (socket.listenerCount('message') === 0) return arm()
      const [data, isBinary] = held.shift()!
      bytes -= sizeOf(data)
      socket.emit('message', data, isBinary)
    }
  }
  arm()
}
