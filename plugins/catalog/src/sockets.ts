/**
 * WebSocket /api/catalog/install: the first client message is an install request; the server streams the
 * containers plugin's pull and create progress, then a result. Shapes in the README.
 */
import { findDuplicateKey, HostdError, type SocketRegistrar } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import type { WebSocket } from 'ws'
import { CatalogErrors } from './errors.ts'
import { InstallRequestSchema, type InstallRequest } from './schemas.ts'
import type { CatalogService } from './service.ts'

const FIRST_MESSAGE_TIMEOUT_MS = 30_000
/** Pull progress is dropped, not queued, while this much waits on the socket. */
const HIGH_WATER = 1024 * 1024

function send(socket: WebSocket, message: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message))
}

function firstMessage(socket: WebSocket, signal: AbortSignal): Promise<InstallRequest> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(CatalogErrors.valuesInvalid('No install request within 30 s')), FIRST_MESSAGE_TIMEOUT_MS)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(CatalogErrors.valuesInvalid('The socket closed before the request'))
    }, { once: true })
    socket.once('message', (data: Buffer) => {
      clearTimeout(timer)
      const text = data.toString('utf8')
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        return reject(CatalogErrors.valuesInvalid('The first message must be a JSON object'))
      }
      const dup = findDuplicateKey(text)
      if (dup !== null) return reject(CatalogErrors.valuesInvalid(`Duplicate key "${dup}"`))
      if (!Value.Check(InstallRequestSchema, value)) {
        const first = [...Value.Errors(InstallRequestSchema, value)][0]
        return reject(CatalogErrors.valuesInvalid(`${first?.path || '/'} ${first?.message ?? 'is invalid'}`.trim()))
      }
      resolve(value as InstallRequest)
    })
  })
}

export function catalogSockets(s: SocketRegistrar, catalog: () => CatalogService): void {
  s.ws('/api/catalog/install', { role: 'operator' }, async (socket, ctx) => {
    const actor = { user: ctx.user, ip: ctx.request.ip, userId: ctx.user.id, username: ctx.user.username }
    try {
      const request = await firstMessage(socket, ctx.signal)
      send(socket, { type: 'accepted', appId: request.appId })
      const out = await catalog().install(request, ctx.user.role, actor, {
        onPullStart: (image) => send(socket, { type: 'pull-start', image }),
        onPull: (p) => {
          if (socket.bufferedAmount < HIGH_WATER) send(socket, { type: 'pull', ...p })
        },
        onCreated: (id) => send(socket, { type: 'created', containerId: id }),
      })
      send(socket, { type: 'result', ok: true, ...out })
      socket.close(1000, 'done')
    } catch (err) {
      const e = err instanceof HostdError ? err : null
      send(socket, { type: 'result', ok: false, error: e?.code ?? 'HOSTD_CATALOG_INTERNAL', message: e?.message ?? 'Internal error' })
      if (socket.readyState === socket.OPEN) socket.close(4000 + (e?.statusCode ?? 500), (e?.code ?? 'error').slice(0, 100))
    }
  })
}
