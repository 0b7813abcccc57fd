/**
 * The live sockets: install (first message a RunSpec), update (first message the containers to update) and
 * logs (followed live, bounded buffers, backpressure). Message shapes are in the README. The kernel's socket
 * hub has already checked sign-in, role and same origin before these run.
 */
import type { SocketRegistrar } from '@hostd/sdk'
import { findDuplicateKey, HostdError, Type, type TSchema } from '@hostd/sdk'
import type { WebSocket } from 'ws'
import type { Runtime } from './runtime.ts'
import { RunSpecSchema, type RunSpec } from './runspec.ts'
import { checkedBySchema, ContainerErrors, engineError } from './errors.ts'
import { HIGH_WATER, LogPump, openLogStream } from './logs.ts'
import { updateContainer, type UpdateOutcome } from './update.ts'

const FIRST_MESSAGE_TIMEOUT_MS = 30_000

export const UpdateRequestSchema = Type.Object({
  containers: Type.Array(Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }), { minItems: 1, maxItems: 100 }),
  /** Seconds the old container gets to stop before it is killed (default 10, like docker stop). */
  stopTimeout: Type.Optional(Type.Integer({ minimum: 0, maximum: 600 })),
}, { additionalProperties: false })

export const LogsSocketQuery = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, default: 100 })),
})

function send(socket: WebSocket, message: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message))
}

/** Close code for a failure: 4000 + its HTTP status (4400, 4403, 4404, 4409, 4502, 4503), 4500 otherwise. */
function closeWithError(socket: WebSocket, err: unknown): void {
  const e = err instanceof HostdError ? err : null
  const status = e?.statusCode ?? 500
  send(socket, { type: 'result', ok: false, error: e?.code ?? 'HOSTD_CONTAINERS_INTERNAL', message: e?.message ?? 'Internal error' })
  if (socket.readyState === socket.OPEN) socket.close(4000 + status, (e?.code ?? 'error').slice(0, 100))
}

/** The first client message, parsed strictly: valid JSON, no duplicate keys, matching `schema`. */
function firstMessage<T>(socket: WebSocket, schema: TSchema, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(ContainerErrors.invalidSpec('No request within 30 s')), FIRST_MESSAGE_TIMEOUT_MS)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(ContainerErrors.invalidSpec('The socket closed before the request'))
    }, { once: true })
    socket.once('message', (data: Buffer) => {
      clearTimeout(timer)
      const text = data.toString('utf8')
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        return reject(ContainerErrors.invalidSpec('The first message must be a JSON object'))
      }
      const dup = findDuplicateKey(text)
      if (dup !== null) return reject(ContainerErrors.invalidSpec(`Duplicate key "${dup}"`))
      try {
        resolve(checkedBySchema<T>(schema, value))
      } catch (err) {
        reject(err)
      }
    })
  })
}

export function containerSockets(s: SocketRegistrar, rt: Runtime): void {
  s.ws('/api/containers/install', { role: 'operator' }, async (socket, ctx) => {
    const actor = { user: ctx.user, ip: ctx.request.ip }
    try {
      const spec = await firstMessage<RunSpec>(socket, RunSpecSchema, ctx.signal)
      send(socket, { type: 'accepted', image: spec.image })
      const out = await rt.runSpec(spec, ctx.user.role, actor, {
        onPullStart: (image) => send(socket, { type: 'pull-start', image }),
        onPull: (p) => {
          if (socket.bufferedAmount < HIGH_WATER) send(socket, { type: 'pull', image: spec.image, ...p })
        },
        onCreated: (id) => send(socket, { type: 'created', id }),
      })
      send(socket, { type: 'started', id: out.id, name: out.name })
      send(socket, { type: 'result', ok: true, id: out.id, name: out.name })
      socket.close(1000, 'done')
    } catch (err) {
      closeWithError(socket, err)
    }
  })

  s.ws('/api/containers/update', { role: 'operator' }, async (socket, ctx) => {
    const actor = { user: ctx.user, ip: ctx.request.ip }
    try {
      const request = await firstMessage<{ containers: string[]; stopTimeout?: number }>(socket, UpdateRequestSchema, ctx.signal)
      const docker = await rt.engine.require()
      const results: UpdateOutcome[] = []
      for (const target of request.containers) {
        if (ctx.signal.aborted) break
        let outcome: UpdateOutcome
        try {
          outcome = await updateContainer(docker, target, {
            stopTimeout: request.stopTimeout,
            onStep: (step) => send(socket, { type: 'step', container: target, step }),
            onPull: (p) => {
              if (socket.bufferedAmount < HIGH_WATER) send(socket, { type: 'pull', container: target, ...p })
            },
          })
        } catch (err) {
          const e = engineError(err)
          outcome = { status: 'failed', name: target, id: '', image: '', message: e.message }
        }
        if (outcome.status === 'updated') {
          rt.containers.forget(outcome.previousId)
          await rt.containers.inspect(outcome.id).catch(() => undefined)
        }
        await rt.audit.record({
          action: 'container.update',
          target: outcome.name,
          result: outcome.status === 'updated' || outcome.status === 'up-to-date' ? 'success' : 'failure',
          detail: { ...outcome },
        }, actor)
        results.push(outcome)
        send(socket, { type: 'container', container: target, ...outcome })
      }
      await rt.containers.imagesChanged()
      send(socket, { type: 'done', results })
      socket.close(1000, 'done')
    } catch (err) {
      closeWithError(socket, err)
    }
  })

  s.ws('/api/containers/logs', { role: 'viewer', query: LogsSocketQuery }, async (socket, ctx) => {
    try {
      const docker = await rt.engine.require()
      const info = await rt.containers.inspect(ctx.query.id)
      const stream = await openLogStream(docker, info.Id, { tail: ctx.query.tail ?? 100, tty: Boolean(info.Config?.Tty), follow: true })
      new LogPump(stream, {
        get bufferedAmount() {
          return socket.bufferedAmount
        },
        send: (data, cb) => socket.send(data, cb),
        isOpen: () => socket.readyState === socket.OPEN,
      }, Boolean(info.Config?.Tty))
      const stop = () => stream.destroy()
      ctx.signal.addEventListener('abort', stop, { once: true })
      stream.on('end', () => {
        send(socket, { type: 'end', reason: 'the container stopped' })
        if (socket.readyState === socket.OPEN) socket.close(1000, 'container stopped')
      })
      stream.on('error', (err) => {
        if (!ctx.signal.aborted) closeWithError(socket, engineError(err))
      })
    } catch (err) {
      closeWithError(socket, err)
    }
  })
}
