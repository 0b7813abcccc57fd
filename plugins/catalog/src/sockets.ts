/**
 * WebSocket /api/catalog/install: the first client message is an install request; the server streams the
 * containers plugin's pull and create progress, then a result. Shapes in the README.
 */
import { closeWithError, receiveFirstMessage, sendJson as send, type SocketRegistrar } from '@hostd/sdk'
import { CatalogErrors } from './errors.ts'
import { InstallRequestSchema } from './schemas.ts'
import type { CatalogService } from './service.ts'

/** Pull progress is dropped, not queued, while this much waits on the socket. */
const HIGH_WATER = 1024 * 1024

export function catalogSockets(s: SocketRegistrar, catalog: () => CatalogService): void {
  s.ws('/api/catalog/install', { role: 'operator' }, async (socket, ctx) => {
    const actor = { user: ctx.user, ip: ctx.request.ip, userId: ctx.user.id, username: ctx.user.username }
    try {
      const request = await receiveFirstMessage(socket, InstallRequestSchema, ctx.signal, CatalogErrors.valuesInvalid)
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
      closeWithError(socket, err, 'HOSTD_CATALOG_INTERNAL')
    }
  })
}
