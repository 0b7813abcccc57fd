import Fastify, {
  LogController,
  errorCodes,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerFactory,
  type onRequestHookHandler,
} from 'fastify'
import { Readable } from 'node:stream'
import type { Logger as PinoLogger } from 'pino'
import {
  findUnsafeKey,
  roleSatisfies,
  errors,
  type HostdError,
  type HelperClient,
  type RouteDefinition,
  type RouteOptions,
  type RouteRequest,
  type RouteRole,
  type RouteSchema,
  ROLES,
} from '@hostd/sdk'
import { errorHandler, notFoundHandler, KernelErrors } from './errors.ts'
import { buildSerializer, buildValidator } from './validation.ts'
import { extractToken, type SessionStore } from '../auth/sessions.ts'
import type { AuthUser } from '../auth/auth-user.ts'
import { API_TOKEN_PREFIX, ApiTokenStore, pathAllowed, type ResolvedApiToken } from '../auth/api-tokens.ts'
import { trackRequest, type LiveRequest } from './live-request.ts'
import { remoteHasSession, remoteIdentityOf } from './remote-dispatch.ts'

declare module 'fastify' {
  interface FastifyRequest {
    user: AuthUser | null
    /** The session token this request carried, if any (logout ends it); null when it signed in with an API token. */
    sessionToken: string | null
    /** The API token this request signed in with (a script), or null (a session, or nobody). */
    apiToken: ResolvedApiToken | null
    /** Aborted when the instance's plugin version retires or the session ends (see RouteRequest.lifetime in the sdk). */
    lifetime: AbortSignal
    /** A signed-in plugin request, tied to its session until it closes (see live-request.ts). */
    liveRequest: LiveRequest | null
  }
  interface FastifyContextConfig {
    /** The handler reads the body stream itself (RouteOptions.rawBody). */
    rawBody?: boolean
    role?: RouteRole
    owner?: string
    /** API tokens are refused (RouteOptions.sessionOnly). */
    sessionOnly?: boolean
    /** A session the two-factor policy sends to enrollment may use it (kernel routes only: see KernelRouteOptions). */
    duringEnrollment?: boolean
    /** Only a session whose password was given recently (kernel routes only: see KernelRouteOptions). */
    recentSignIn?: boolean
    /** The route's own 413 message for a body over its limit. */
    bodyLimitMessage?: string
  }
}

export interface InstanceDeps {
  logger: PinoLogger
  sessions: SessionStore
  helper: HelperClient
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
export const DEFAULT_BODY_LIMIT = 1024 * 1024

/**
 * The origin rule, one function for cookie-authenticated unsafe requests and every WebSocket upgrade. With the
 * session cookie (a browser), `Origin` must be present and exactly the daemon's own origin as this connection
 * reached it: this connection's scheme (https when serving TLS) and the Host header, host and port. Browsers send
 * Origin on every unsafe request and every upgrade, so only a forged or cross-site one lacks it. A bearer-token
 * client sends no cookie and is not a browser: it may omit Origin, but one it sends must match too.
 */
export function originAllowed(req: FastifyRequest, via: 'bearer' | 'cookie'): boolean {
  const origin = req.headers.origin
  if (origin === undefined) return via === 'bearer'
  const host = req.headers.host
  if (!host) return false
  try {
    // Parsed on both sides so a default port written out (`:443`) compares equal to one left out.
    return new URL(origin).origin === new URL(`${req.protocol}://${host}`).origin
  } catch {
    return false
  }
}

/** What a route allows besides its role (bound per route, like the role). */
export interface RouteAccess {
  /** Refuse API tokens. */
  sessionOnly?: boolean
  /** Open to a user the two-factor policy sends to enrollment. */
  duringEnrollment?: boolean
  /** Needs a session whose password was given within the re-authentication window (implies sessionOnly). */
  recentSignIn?: boolean
}

/** Options only the kernel's own routes may set. */
export interface KernelRouteOptions {
  /** Open to a session the two-factor policy sends to enrollment (enrollment itself, /api/auth/me, sign-out). */
  duringEnrollment?: boolean
  /**
   * A person's session whose password was given within the last few minutes (HOSTD_REAUTH_SECONDS: "sudo mode"),
   * else 403 HOSTD_AUTH_REAUTH_REQUIRED: changes to account security and to users. API tokens are refused.
   */
  recentSignIn?: boolean
}
export type KernelRouteDefinition = RouteDefinition & { options: RouteOptions<RouteSchema> & KernelRouteOptions }

/** Whether a route needs a recent sign-in: only the kernel's own routes can ask for it. */
export const needsRecentSignIn = (def: RouteDefinition, owner: string): boolean =>
  owner === 'kernel' && (def as KernelRouteDefinition).options.recentSignIn === true

const NO_ACCESS_FLAGS: RouteAccess = Object.freeze({})

/**
 * The one place requests are authenticated and authorized. Runs first on every route of every instance (the onRoute
 * hook in createInstance binds each route's role and access): the role and disabled flag come from the store each
 * time. A bearer token with the API-token prefix is looked up among API tokens; anything else among sessions, so a
 * session costs no extra lookup.
 */
export function authenticate(
  sessions: SessionStore,
  req: FastifyRequest,
  role: RouteRole | 'public',
  access: RouteAccess = NO_ACCESS_FLAGS,
): HostdError | null {
  // A fleet member's call, verified by the fleet plugin and injected by the kernel (remote-dispatch.ts): no token.
  const remote = remoteIdentityOf(req.raw)
  if (remote !== undefined) {
    req.user = remote
    if (role === 'public') return null
    // It has no session here: what needs a recent sign-in (account security, users) is refused; what only refuses API
    // tokens admits a person whose origin host signed that they have a session there.
    if (access.recentSignIn || (access.sessionOnly && !remoteHasSession(req.raw)))
      return KernelErrors.sessionRequired('A call from another fleet member cannot do this: sign in on this host')
    return authorize(req, role, access)
  }
  const found = extractToken(req.headers)
  if (found) {
    if (found.via === 'bearer' && ApiTokenStore.isApiToken(found.token)) {
      const resolved = sessions.apiTokens.resolve(found.token)
      if (resolved) {
        req.user = resolved.user
        req.apiToken = resolved.token
      }
    } else {
      req.user = sessions.resolve(found.token)
      if (req.user) req.sessionToken = found.token
    }
  }
  if (role !== 'public') {
    const err = authorize(req, role, access)
    if (err) return err
  }
  if (found?.via === 'cookie' && req.user && !SAFE_METHODS.has(req.method) && !originAllowed(req, 'cookie'))
    return KernelErrors.crossOrigin()
  // sessionOnly came with it, so a signed-in request here carries a session token.
  if (access.recentSignIn && req.sessionToken !== null && !sessions.recentlyAuthenticated(req.sessionToken))
    return KernelErrors.reauthRequired()
  return null
}

/**
 * Whether the signed-in user of `req` may use an endpoint that needs `role`: signed in (401), an API token only where
 * the endpoint allows tokens and on the token's paths, nothing but enrollment while the two-factor policy asks for it,
 * then the role (403). Shared by routes and WebSocket upgrades.
 */
export function authorize(
  req: FastifyRequest,
  role: Exclude<RouteRole, 'public'>,
  access: RouteAccess,
): HostdError | null {
  const user = req.user
  if (!user) {
    const auth = req.headers.authorization
    return auth?.slice(7).trimStart().startsWith(API_TOKEN_PREFIX)
      ? KernelErrors.unauthenticated('This API token is unknown, expired or revoked, or its owner is disabled')
      : KernelErrors.unauthenticated()
  }
  const token = req.apiToken
  if (token !== null) {
    if (access.sessionOnly) return KernelErrors.sessionRequired()
    if (!pathAllowed(token.prefixes, req.url))
      return KernelErrors.tokenScope(`The API token "${token.name}" may only call ${token.prefixes!.join(', ')}`)
  }
  if (user.mustEnroll && !access.duringEnrollment) return KernelErrors.enrollmentRequired()
  if (!roleSatisfies(user.role, role))
    return KernelErrors.forbidden(`This needs the ${role} role; you are ${user.role}`)
  return null
}

export interface InstanceOptions {
  /**
   * Tie every signed-in request to its session's live connections, so it is cut when the session ends: plugin
   * instances (their routes may stream). The kernel's own routes are short and skip it.
   */
  liveRequests?: boolean
}

/**
 * Every Fastify instance (the kernel's and one per plugin) is made here, so all share one error shape,
 * one validator, one auth hook and one logger.
 */
export function createInstance(
  deps: InstanceDeps,
  serverFactory?: FastifyServerFactory,
  { liveRequests = false }: InstanceOptions = {},
): FastifyInstance {
  const requestLogging = deps.logger.isLevelEnabled('debug')
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Request lines only at debug: at info they would cost a log write per request.
    logController: new LogController({ disableRequestLogging: !requestLogging }),
    // Without request logging, a child logger per request is pure cost: errors name the request id themselves.
    ...(requestLogging ? {} : { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    trustProxy: false,
    return503OnClosing: false,
    routerOptions: { maxParamLength: 256 },
    // Both compilers are ours: left without one, Fastify loads its default validator compiler (@fastify/ajv-compiler, with
    // Ajv's JTD build: about 25 ms of every start) only to have it replaced.
    schemaController: { compilersFactory: { buildValidator, buildSerializer } },
    ...(serverFactory ? { serverFactory } : {}),
  })
  // An empty body is no body: clients send `Content-Type: application/json` on bodiless POSTs (logout, enable); routes
  // that need a body still get a 400. A key given twice is refused (JSON.parse would silently keep the last one, and a
  // proxy or a client library may have read the first), and so are the keys Fastify's own parser refuses as
  // prototype poisoning, found in the same scan of the text.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    if (body === '') return done(null, undefined)
    let value: unknown
    try {
      value = JSON.parse(body as string)
    } catch {
      return done(KernelErrors.malformedJson(), undefined)
    }
    const unsafe = findUnsafeKey(body as string)
    if (unsafe?.problem === 'repeated')
      return done(KernelErrors.validation(`body holds the key "${unsafe.key}" twice`), undefined)
    if (unsafe)
      return done(
        KernelErrors.validation(`body holds the key "${unsafe.key}", which could reach an object's prototype`),
        undefined,
      )
    done(null, value)
  })
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  // Any other content type: a raw-body route (uploads) gets the request stream unread as its body; every other
  // route answers 415 as Fastify does for a type it has no parser for.
  app.addContentTypeParser('*', (req, payload, done) => {
    if (req.routeOptions.config.rawBody) done(null, payload)
    else done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(req.headers['content-type']), undefined)
  })
  app.decorateRequest('user', null)
  app.decorateRequest('sessionToken', null)
  app.decorateRequest('apiToken', null)
  if (liveRequests) app.decorateRequest('liveRequest', null)
  // Every route, however it is added, gets the auth hook first, bound to the role in its config; a route without one
  // is refused as it is added (deny by default). Binding the role here spares each request a routeOptions lookup.
  app.addHook('onRoute', (route) => {
    const role = route.config?.role
    if (!role || !KNOWN_ROLES.includes(role))
      throw new RouteDefinitionError(`route ${route.method} ${route.url} declares no valid role: refused`)
    const hooks =
      route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]
    // Fastify adds a HEAD route for each GET with the GET's hooks, which already start with this one.
    if (hooks.some((hook) => AUTH_HOOKS.has(hook))) return
    const config = route.config!
    const access =
      config.sessionOnly || config.duringEnrollment || config.recentSignIn
        ? {
            sessionOnly: config.sessionOnly,
            duringEnrollment: config.duringEnrollment,
            recentSignIn: config.recentSignIn,
          }
        : NO_ACCESS_FLAGS
    const auth: onRequestHookHandler =
      liveRequests && role !== 'public'
        ? (req, reply, done) => {
            const err = authenticate(deps.sessions, req, role, access)
            if (err === null) trackRequest(deps.sessions, req, reply, role)
            done(err ?? undefined)
          }
        : (req, _reply, done) => done(authenticate(deps.sessions, req, role, access) ?? undefined)
    AUTH_HOOKS.add(auth)
    route.onRequest = [auth, ...hooks]
  })
  return app
}

const AUTH_HOOKS = new WeakSet<object>()

const KNOWN_ROLES: readonly string[] = [...ROLES, 'public']

/** A route definition that cannot be served safely; its plugin fails to load. */
export class RouteDefinitionError extends Error {
  override name = 'RouteDefinitionError'
}

export function checkRouteDefinition(def: RouteDefinition): void {
  const role = def.options?.role
  if (!role || !KNOWN_ROLES.includes(role)) {
    throw new RouteDefinitionError(
      `route ${def.method} ${def.path} declares no valid role (one of ${KNOWN_ROLES.join(', ')}): refused`,
    )
  }
  if (!def.path.startsWith('/')) throw new RouteDefinitionError(`route path "${def.path}" must start with /`)
  if (typeof def.handler !== 'function')
    throw new RouteDefinitionError(`route ${def.method} ${def.path} has no handler`)
}

/** Routes that declare `needs: ['helper']` answer 423 before their handler while the root helper is absent. */
function needGates(def: RouteDefinition, helper: HelperClient): onRequestHookHandler[] {
  if (!def.options.needs?.includes('helper')) return []
  return [
    (_req, _reply, done) => {
      void helper.available().then((ok) => done(ok ? undefined : errors.privilegesMissing()))
    },
  ]
}

/** Mounts one checked route. A handler that returns nothing answers 204 (the "empty response" routes). */
export function mountRoute(
  app: FastifyInstance,
  deps: InstanceDeps,
  def: RouteDefinition,
  owner: string,
  gates: onRequestHookHandler[] = [],
): void {
  checkRouteDefinition(def)
  const recentSignIn = needsRecentSignIn(def, owner)
  app.route({
    method: def.method,
    url: def.path,
    schema: def.options.schema as Record<string, unknown> | undefined,
    bodyLimit: def.options.bodyLimit,
    config: {
      role: def.options.role,
      owner,
      bodyLimitMessage: def.options.bodyLimitMessage,
      rawBody: def.options.rawBody === true,
      sessionOnly: def.options.sessionOnly === true || recentSignIn,
      // Only the kernel's own routes may open themselves to a session that must enroll in two-factor first.
      duringEnrollment: owner === 'kernel' && (def as KernelRouteDefinition).options.duringEnrollment === true,
      recentSignIn,
    },
    onRequest: [...gates, ...needGates(def, deps.helper)],
    // Not an async function: a handler that answers synchronously is spared a promise round trip per request.
    handler: (req: FastifyRequest, reply: FastifyReply) => {
      // The auth hook and the route schema made the request what the sdk says a RouteRequest is.
      const out: unknown = def.handler(req as unknown as RouteRequest, reply)
      return isThenable(out) ? out.then((value) => finishReply(reply, value)) : finishReply(reply, out)
    },
  })
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | null)?.then === 'function'

/**
 * What Fastify should send for a handler's result: nothing if the handler answered itself, 204 for no result, and an
 * async iterable that is not already a stream (an async generator: server-sent events) as a stream, which Fastify
 * sends as it comes (an isolated plugin's answer streams the same way).
 */
function finishReply(reply: FastifyReply, out: unknown): unknown {
  if (reply.sent) return undefined
  if (out === undefined) reply.code(204).send()
  if (isAsyncIterable(out) && typeof (out as { pipe?: unknown }).pipe !== 'function')
    return Readable.from(out, { objectMode: false })
  return out
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof (value as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function'
