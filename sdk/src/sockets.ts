/**
 * For plugin sockets that take one JSON request and answer with JSON messages (live output of a job): the
 * request read strictly, messages sent only while open, and failures ended the same way everywhere.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { WebSocket } from 'ws'
import { HostdError, type HostdErrorFactory } from './errors.ts'
import { findDuplicateKey } from './json.ts'

/**
 * Sends `message` as JSON if the socket is still open (a closed one just misses it).
 * @since 1.1.0
 */
export function sendJson(socket: WebSocket, message: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message))
}

/**
 * Ends the socket on a failure: `{ type: "result", ok: false, error, message, ...extra }`, then close code 4000 +
 * the error's HTTP status (4400, 4403, 4409, 4423, 4503, ...), or 4500 with `internalCode` for anything else.
 * @since 1.1.0
 */
export function closeWithError(
  socket: WebSocket,
  err: unknown,
  internalCode: string,
  extra: Record<string, unknown> = {},
): void {
  const e = err instanceof HostdError ? err : null
  sendJson(socket, {
    type: 'result',
    ok: false,
    error: e?.code ?? internalCode,
    message: e?.message ?? 'Internal error',
    ...extra,
  })
  if (socket.readyState === socket.OPEN) socket.close(4000 + (e?.statusCode ?? 500), (e?.code ?? 'error').slice(0, 100))
}

/**
 * The client's first message, read strictly: within `timeoutMs`, valid JSON, no duplicate keys, matching `schema`.
 * Anything else rejects with `invalid(reason)` (the plugin's own 400 error).
 * @since 1.1.0
 */
export function receiveFirstMessage<S extends TSchema>(
  socket: WebSocket,
  schema: S,
  signal: AbortSignal,
  invalid: HostdErrorFactory,
  timeoutMs = 30_000,
): Promise<Static<S>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(invalid(`No request within ${timeoutMs / 1000} s`)), timeoutMs)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(invalid('The socket closed before the request'))
      },
      { once: true },
    )
    socket.once('message', (data: Buffer) => {
      clearTimeout(timer)
      const text = data.toString('utf8')
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        return reject(invalid('The first message must be a JSON object'))
      }
      const dup = findDuplicateKey(text)
      if (dup !== null) return reject(invalid(`Duplicate key "${dup}"`))
      if (!Value.Check(schema, value)) {
        const first = [...Value.Errors(schema, value)][0]
        return reject(invalid(`${first?.path || '/'} ${first?.message ?? 'is invalid'}`.trim()))
      }
      resolve(value as Static<S>)
    })
  })
}
