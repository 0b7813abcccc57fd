import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import websocket from '@fastify/websocket'
import fp from 'fastify-plugin'
import type { WebSocket } from 'ws'
import type { PluginRegistry, SocketTarget } from './registry.ts'
import { KernelErrors, notFoundHandler } from '../http/errors.ts'
import { compileQueryValidator } from '../http/validation.ts'
import { authorize, originAllowed } from '../http/instance.ts'
import { setSecurityHeaders } from '../http/security-headers.ts'
import { credentialOf, liveEndError } from '../http/live-request.ts'
import { holdEarlyMessages } from './early-messages.ts'
import type { LiveConnection } from '../auth/live-connections.ts'
import { extractToken, type SessionStore } from '../auth/sessions.ts'
import { remoteHasSession, remoteIdentityOf } from '../http/remote-dispatch.ts'

/** How long a socket asked to close may take to answer the close frame before it is cut. */
const CLOSE_GRACE_MS = 1000

declare module 'fastify' {
  interface FastifyRequest {
    socketTarget?: SocketTarget
    socketQuery?: unknown
  }
}

/**
 * WebSockets live in the kernel's instance (one @fastify/websocket on the one server), not in the plugins'
 * instances, so reloading a plugin never drops another plugin's open sockets. Every upgrade is checked
 * before it completes: route, sign-in, role, origin, query, plugin state, then the socket's own `admit` check; the
 * subprotocol echoed is one the socket declares in `protocols`.
 */
export const socketHub = fp<{ registry: PluginRegistry; sessions: SessionStore }>(
  async (app: FastifyInstance, { registry, sessions }) => {
    // The subprotocols each accepted upgrade's socket speaks (its `protocols` option), for ws's handleProtocols.
    const spoken = new WeakMap<IncomingMessage, readonly string[]>()
    const handleProtocols = (offered: Set<string>, raw: IncomingMessage): string | false => {
      const accepted = spoken.get(raw)
      if (!accepted) return offered.values().next().value ?? false
      for (const protocol of offered) if (accepted.includes(protocol)) return protocol
      return false
    }
    await app.register(websocket, { options: { maxPayload: 16 * 1024 * 1024, handleProtocols } })
    // Upgrades reach this instance from the server's 'upgrade' event, not through the request handler
    // that sets these for plain requests; a refused upgrade must carry them too.
    app.addHook('onRequest', (req, reply, done) => {
      if (req.ws) setSecurityHeaders(reply.raw)
      done()
    })
    app.route({
      method: 'GET',
      url: '/api/*',
      config: { role: 'public', owner: 'kernel' },
      preValidation: async (req) => {
        if (!req.ws) return
        const target = registry.findSocket(req.url)
        if (!target) throw KernelErrors.routeNotFound(`No socket ${req.url.split('?')[0]}`)
        const { role, sessionOnly } = target.def.options
        // A fleet member's socket (remote-dispatch.ts, injected: no browser, no token): sessionOnly admits it only when
        // its origin host signed that the caller has a session there; that host checked the browser's Origin.
        const remote = remoteIdentityOf(req.raw) !== undefined
        if (remote && sessionOnly && !remoteHasSession(req.raw))
          throw KernelErrors.sessionRequired('A socket from another fleet member needs a signed-in person there')
        const refused = authorize(req, role, { sessionOnly })
        if (refused) throw refused
        if (!remote && !originAllowed(req, extractToken(req.headers)!.via)) {
          throw KernelErrors.crossOrigin(
            "WebSocket refused: Origin must be this daemon's own origin (and is required with the session cookie)",
          )
        }
        const gateError = await registry.gate(target.record)
        if (gateError) throw gateError
        const query = { ...(req.query as Record<string, unknown>) }
        if (target.def.options.query) {
          const validate = compileQueryValidator(target.def.options.query)
          if (!validate(query))
            throw KernelErrors.validation(
              `querystring ${validate.errors?.[0]?.instancePath ?? ''} ${validate.errors?.[0]?.message ?? 'is invalid'}`.trim(),
            )
        }
        await target.def.options.admit?.({ user: req.user!, query, request: req })
        if (target.def.options.protocols) spoken.set(req.raw, target.def.options.protocols)
        req.socketTarget = target
        req.socketQuery = query
      },
      handler: (req, reply) => notFoundHandler(req, reply),
      wsHandler: (socket: WebSocket, req: FastifyRequest) => {
        const target = req.socketTarget!
        const runtime = target.record.runtime
        if (!runtime) return socket.close(1012, 'plugin reloaded')
        runtime.openSockets.add(socket)
        const closed = new AbortController()
        const onLifetimeEnd = () => closed.abort()
        runtime.lifetime.signal.addEventListener('abort', onLifetimeEnd, { once: true })
        // Tied to its session or API token: ended (4401/4403) when that ends or the role no longer suffices. A fleet
        // member's socket has neither here: the member that relays it closes it when the session there ends.
        const credential = credentialOf(sessions, req)
        const live: LiveConnection | null = credential && {
          sessionHash: credential.hash,
          kind: credential.kind,
          userId: req.user!.id,
          role: target.def.options.role,
          end(why) {
            closed.abort(liveEndError(why))
            socket.close(why.code, why.reason)
            setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref()
          },
        }
        if (live) sessions.connections.add(live)
        holdEarlyMessages(socket)
        socket.once('close', () => {
          runtime.openSockets.delete(socket)
          if (live) sessions.connections.delete(live)
          runtime.lifetime.signal.removeEventListener('abort', onLifetimeEnd)
          closed.abort()
        })
        Promise.resolve()
          .then(() =>
            target.def.handler(socket, {
              user: req.user!,
              query: req.socketQuery,
              request: req,
              signal: closed.signal,
            }),
          )
          .catch((err: unknown) => {
            req.log.error({ err, plugin: target.record.id }, 'socket handler failed')
            socket.close(1011, 'internal error')
          })
      },
    })
  },
  // Not encapsulated: the upgrade hook and the socket route belong to the kernel's root instance.
  { name: 'hostd-socket-hub', fastify: '5.x' },
)
