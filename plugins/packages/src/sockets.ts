/**
 * /api/packages/exec: the first client message names one job; the socket then streams its progress and output,
 * then its result. Message shapes are in the README. The kernel's socket hub has already checked sign-in, the
 * admin role and same origin. Closing the socket does not stop the job.
 */
import { closeWithError, HostdError, receiveFirstMessage, sendJson as send, type SocketRegistrar } from '@hostd/sdk'
import { PackageErrors } from './errors.ts'
import { ExecRequestSchema } from './schemas.ts'
import type { Packages } from './service.ts'

/** Above this many unsent bytes, output lines are dropped (progress and the result are always sent). */
const HIGH_WATER = 1024 * 1024

export function packageSockets(s: SocketRegistrar, packages: Packages): void {
  s.ws('/api/packages/exec', { role: 'admin' }, async (socket, ctx) => {
    const actor = { userId: ctx.user.id, username: ctx.user.username, ip: ctx.request.ip }
    try {
      const request = await receiveFirstMessage(socket, ExecRequestSchema, ctx.signal, PackageErrors.invalidRequest)
      const outcome = await packages.run(
        request,
        actor,
        (job) => send(socket, { type: 'accepted', job }),
        (event) => {
          if (event.type === 'progress' || socket.bufferedAmount < HIGH_WATER) send(socket, event)
        },
      )
      send(socket, { type: 'result', ...outcome })
      if (socket.readyState === socket.OPEN) socket.close(1000, 'done')
    } catch (err) {
      closeWithError(
        socket,
        err,
        'HOSTD_PACKAGES_INTERNAL',
        err instanceof HostdError && err.code === PackageErrors.busy.code ? { job: packages.job } : {},
      )
    }
  })
}
