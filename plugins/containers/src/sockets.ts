/**
 * The live sockets: install (first message a RunSpec), update (first message the containers to update) and
 * logs (followed live, bounded buffers, backpressure). Message shapes are in the README. The kernel's socket
 * hub has already checked sign-in, role and same origin before these run.
 */
import type { SocketRegistrar, TSchema } from '@hostd/sdk'
import { closeWithError as closeSocketWithError, receiveFirstMessage, sendJson, Type } from '@hostd/sdk'
import type { WebSocket } from 'ws'
import { ContainerErrors, engineError } from './errors.ts'
import { RunSpecSchema } from './runspec.ts'
import type { Runtime } from './service.ts'
import { HIGH_WATER, LogPump } from './adapters/logs.ts'
import type { UpdateOutcome } from './adapters/update.ts'
import { ExecQuery, startExec } from './adapters/exec.ts'

const FIRST_MESSAGE_TIMEOUT_MS = 30_000

export const UpdateRequestSchema = Type.Object(
  {
    containers: Type.Array(Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }), {
      minItems: 1,
      maxItems: 100,
    }),
    /** Seconds the old container gets to stop before it is killed (default 10, like docker stop). */
    stopTimeout: Type.Optional(Type.Integer({ minimum: 0, maximum: 600 })),
  },
  { additionalProperties: false },
)

export const LogsSocketQuery = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, default: 100 })),
  /** Each line starts with the engine's RFC 3339 time (as `docker logs -t`). */
  timestamps: Type.Optional(Type.Boolean()),
})

const send = sendJson
const closeWithError = (socket: WebSocket, err: unknown) =>
  closeSocketWithError(socket, err, 'HOSTD_CONTAINERS_INTERNAL')
const firstMessage = <S extends TSchema>(socket: WebSocket, schema: S, signal: AbortSignal) =>
  receiveFirstMessage(socket, schema, signal, ContainerErrors.invalidSpec, FIRST_MESSAGE_TIMEOUT_MS)

export function containerSockets(s: SocketRegistrar, rt: Runtime): void {
  s.ws('/api/containers/install', { role: 'operator' }, async (socket, ctx) => {
    const actor = { user: ctx.user, ip: ctx.request.ip }
    try {
      const spec = await firstMessage(socket, RunSpecSchema, ctx.signal)
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
      const request = await firstMessage(socket, UpdateRequestSchema, ctx.signal)
      const results: UpdateOutcome[] = []
      for (const target of request.containers) {
        if (ctx.signal.aborted) break
        const outcome = await rt.updateContainer(target, actor, {
          stopTimeout: request.stopTimeout,
          onStep: (step) => send(socket, { type: 'step', container: target, step }),
          onPull: (p) => {
            if (socket.bufferedAmount < HIGH_WATER) send(socket, { type: 'pull', container: target, ...p })
          },
        })
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
      const { stream, tty } = await rt.followLogs(ctx.query.id, ctx.query.tail ?? 100, ctx.query.timestamps ?? false)
      new LogPump(
        stream,
        {
          get bufferedAmount() {
            return socket.bufferedAmount
          },
          send: (data, cb) => socket.send(data, cb),
          isOpen: () => socket.readyState === socket.OPEN,
        },
        tty,
      )
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

  // A console into a running container (admin: the interface document says nothing of exec, and a shell in a
  // container reaches whatever it mounts). Same-origin, sign-in and role are the kernel's checks; sessions only.
  s.ws('/api/containers/exec', { role: 'admin', sessionOnly: true, query: ExecQuery }, async (socket, ctx) => {
    const actor = { user: ctx.user, ip: ctx.request.ip }
    const shell = ctx.query.shell ?? '/bin/sh'
    const cols = ctx.query.cols ?? 80
    const rows = ctx.query.rows ?? 24
    let name = ctx.query.id
    try {
      const docker = await rt.engine.require()
      const info = await rt.containers.inspect(ctx.query.id)
      name = String(info.Name).replace(/^\//, '')
      if (!info.State?.Running || info.State.Paused)
        throw ContainerErrors.notRunning(`${name} is not running: start it first to open a console`)
      const record = (action: string, detail: Record<string, unknown>) =>
        rt.audit.record({ action, target: name, result: 'success', detail }, actor)
      let opened: Promise<unknown> = Promise.resolve()
      const { execId } = await startExec({
        docker,
        containerId: info.Id,
        shell,
        cols,
        rows,
        socket,
        signal: ctx.signal,
        onEnd: (end) => void opened.then(() => record('container.exec.close', { shell, ...end })),
      }).catch((err) => {
        throw engineError(err)
      })
      opened = record('container.exec', { id: info.Id, shell, execId, cols, rows })
    } catch (err) {
      await rt.audit
        .record(
          {
            action: 'container.exec',
            target: name,
            result: 'failure',
            detail: { shell, message: (err as Error).message },
          },
          actor,
        )
        .catch(() => undefined)
      closeWithError(socket, err)
    }
  })
}
