/**
 * /api/packages/exec: the first client message names one job; the socket then streams its progress and output,
 * then its result. Message shapes are in the README. The kernel's socket hub has already checked sign-in, the
 * admin role and same origin. Closing the socket does not stop the job.
 */
import { findDuplicateKey, HostdError, type SocketRegistrar } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import type { WebSocket } from 'ws'
import { PackageErrors } from './errors.ts'
import { ExecRequestSchema, type ExecRequest } from './schemas.ts'
import type { Packages } from './service.ts'

const FIRST_MESSAGE_TIMEOUT_MS = 30_000
/** Above this many unsent bytes, output lines are dropped (progress and the result are always sent). */
const HIGH_WATER = 1024 * 1024

function send(socket: WebSocket, message: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message))
}

/** Close code 4000 + the error's HTTP status (4400, 4409, 4423, ...), 4500 for anything unexpected. */
function closeWithError(socket: WebSocket, err: unknown, extra: Record<string, unknown> = {}): void {
  const e = err instanceof HostdError ? err : null
  send(socket, { type: 'result', ok: false, error: e?.code ?? 'HOSTD_PACKAGES_INTERNAL', message: e?.message ?? 'Internal error', ...extra })
  if (socket.readyState === socket.OPEN) socket.close(4000 + (e?.statusCode ?? 500), (e?.code ?? 'error').slice(0, 100))
}

function firstMessage(socket: WebSocket, signal: AbortSignal): Promise<ExecRequest> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(PackageErrors.invalidRequest('No request within 30 s')), FIRST_MESSAGE_TIMEOUT_MS)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(PackageErrors.invalidRequest('The socket closed before the request'))
    }, { once: true })
    socket.once('message', (data: Buffer) => {
      clearTimeout(timer)
      const text = data.toString('utf8')
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        return reject(PackageErrors.invalidRequest('The first message must be a JSON object'))
      }
      const dup = findDuplicateKey(text)
      if (dup !== null) return reject(PackageErrors.invalidRequest(`Duplicate key "${dup}"`))
      if (!Value.Check(ExecRequestSchema, value)) {
        const first = [...Value.Errors(ExecRequestSchema, value)][0]
        return reject(PackageErrors.invalidRequest(`${first?.path || '/'} ${first?.message ?? 'is invalid'}`.trim()))
      }
      resolve(value)
    })
  })
}

export function packageSockets(s: SocketRegistrar, packages: Packages): void {
  s.ws('/api/packages/exec', { role: 'admin' }, async (socket, ctx) => {
    const actor = { userId: ctx.user.id, username: ctx.user.username, ip: ctx.request.ip }
    try {
      const request = await firstMessage(socket, ctx.signal)
      const outcome = await packages.run(request, actor,
        (job) => send(socket, { type: 'accepted', job }),
        (event) => {
          if (event.type === 'progress' || socket.bufferedAmount < HIGH_WATER) send(socket, event)
        })
      send(socket, { type: 'result', ...outcome })
      if (socket.readyState === socket.OPEN) socket.close(1000, 'done')
    } catch (err) {
      closeWithError(socket, err, err instanceof HostdError && err.code === PackageErrors.busy.code ? { job: packages.job } : {})
    }
  })
}
