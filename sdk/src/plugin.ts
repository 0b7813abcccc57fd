import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Static, TSchema } from '@sinclair/typebox'
import type { WebSocket } from 'ws'
import type { EntitySchema } from '@mikro-orm/core'
import type { RouteRole } from './roles.ts'
import type { ServiceToken, SessionUser } from './tokens.ts'

export const PLUGIN_BRAND: unique symbol = Symbol.for('hostd.plugin')

export type DepsMap = Record<string, ServiceToken<unknown>>
export type ResolvedDeps<D extends DepsMap> = { [K in keyof D]: D[K] extends ServiceToken<infer T> ? T : never }

export interface RouteSchema {
  params?: TSchema
  querystring?: TSchema
  body?: TSchema
  headers?: TSchema
  response?: Record<number, TSchema>
  summary?: string
  description?: string
  tags?: string[]
}

type StaticOr<S, Fallback> = S extends TSchema ? Static<S> : Fallback

/** The request a handler sees: typed from its schema, with the signed-in user (null on public routes). */
export type RouteRequest<S extends RouteSchema = RouteSchema> = Omit<FastifyRequest, 'params' | 'query' | 'body' | 'user'> & {
  params: StaticOr<S['params'], Record<string, string>>
  query: StaticOr<S['querystring'], Record<string, string>>
  body: StaticOr<S['body'], unknown>
  user: SessionUser | null
  /**
   * Aborted when this version of the plugin is unloaded, disabled or replaced, before the kernel waits for
   * in-flight requests, and when the request's session ends (sign-out, expiry, revocation, its user disabled or
   * removed, or demoted below the route's role; the reason is then a 401 or 403 HostdError): a long-lived response
   * (server-sent events, a long poll) ends on it. After a session's end the kernel cuts the response anyway.
   */
  lifetime: AbortSignal
}

export type RouteHandler<S extends RouteSchema> = (req: RouteRequest<S>, reply: FastifyReply) => unknown

/** What a route needs besides a role; without it the kernel answers before the handler runs. */
export type RouteNeed = 'helper'

export interface RouteOptions<S extends RouteSchema> {
  /** Required. A route without a role fails its plugin's load (deny by default). */
  role: RouteRole
  schema?: S
  needs?: RouteNeed[]
  /**
   * The handler reads the request body itself as a stream (`req.body` is the raw request stream, any content
   * type): for uploads that must not be buffered. `bodyLimit` and `schema.body` do not apply; the handler
   * enforces its own size limit.
   */
  rawBody?: boolean
  /** Largest accepted body in bytes (default 1 MiB). */
  bodyLimit?: number
  /** The 413 message for a body over `bodyLimit` (default: one naming the limit in MiB). */
  bodyLimitMessage?: string
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export interface RouteDefinition {
  method: HttpMethod
  path: string
  options: RouteOptions<RouteSchema>
  handler: RouteHandler<RouteSchema>
}

export interface RouteRegistrar {
  get<S extends RouteSchema>(path: string, options: RouteOptions<S>, handler: RouteHandler<S>): void
  post<S extends RouteSchema>(path: string, options: RouteOptions<S>, handler: RouteHandler<S>): void
  put<S extends RouteSchema>(path: string, options: RouteOptions<S>, handler: RouteHandler<S>): void
  patch<S extends RouteSchema>(path: string, options: RouteOptions<S>, handler: RouteHandler<S>): void
  delete<S extends RouteSchema>(path: string, options: RouteOptions<S>, handler: RouteHandler<S>): void
}

export interface SocketContext<Q> {
  user: SessionUser
  query: Q
  request: FastifyRequest
  /**
   * Aborted when the socket closes, the plugin is unloaded, or the session that opened it ends (sign-out, expiry,
   * revocation, its user disabled, removed or demoted below the socket's role; the kernel then closes the socket
   * with 4401 or 4403). Stop the socket's work on it (kill a shell, stop a follow).
   */
  signal: AbortSignal
}

/** What a socket's `admit` check sees: the upgrade request, already signed in, authorized and validated. */
export interface SocketAdmission<Q> {
  user: SessionUser
  query: Q
  request: FastifyRequest
}

export interface SocketOptions<Q extends TSchema | undefined> {
  role: Exclude<RouteRole, 'public'>
  query?: Q
  /**
   * Subprotocols the socket speaks (`Sec-WebSocket-Protocol`): the first one the client offers that is listed here is
   * echoed, and none when the client offers none of them (the upgrade still succeeds). Without this option the first
   * one offered is echoed.
   */
  protocols?: readonly string[]
  /**
   * A last check before the upgrade completes, after sign-in, role, origin, plugin state and query: throw a
   * HostdError to refuse the upgrade with its status and JSON body (503 while the service behind the socket is down).
   * The handler later gets the same `request` object in its context.
   */
  admit?: (admission: SocketAdmission<Q extends TSchema ? Static<Q> : Record<string, string>>) => void | Promise<void>
}

export type SocketHandler<Q> = (socket: WebSocket, ctx: SocketContext<Q>) => void | Promise<void>

export interface SocketDefinition {
  path: string
  options: SocketOptions<TSchema | undefined>
  handler: SocketHandler<unknown>
}

export interface SocketRegistrar {
  ws<Q extends TSchema | undefined = undefined>(
    path: string,
    options: SocketOptions<Q>,
    handler: SocketHandler<Q extends TSchema ? Static<Q> : Record<string, string>>,
  ): void
}

/** Cockpit-style condition: when it is not met the plugin is `unavailable` and its routes answer 503. */
export interface Condition {
  name: string
  /** Resolve `true` when met, or a reason string a person can act on. */
  check(): Promise<true | string> | true | string
}

/** A page or widget the plugin adds to the web UI. */
export interface UiEntry {
  id: string
  title: string
  /** Path within the UI, e.g. `/containers`. */
  path: string
  icon?: string
  role?: Exclude<RouteRole, 'public'>
}

export interface ServiceBinding {
  token: ServiceToken<unknown>
  value: unknown
}

export interface PluginDefinition<D extends DepsMap = DepsMap> {
  /** Lowercase id, unique among plugins: `containers`, `hello`. */
  id: string
  /** The plugin's own semver version. */
  version: string
  /** The kernel API range the plugin was built for, e.g. `^1.0.0`. */
  kernel: string
  description?: string
  /** Other plugins this one needs, by id, with a semver range each. */
  dependsOn?: Record<string, string>
  /** Services to inject: `{ audit: tokens.audit }`. */
  deps?: D
  conditions?: Condition[]
  /** MikroORM entities (defineEntity); their tables are created when the plugin activates. */
  entities?: EntitySchema<any, any>[]
  ui?: UiEntry[]
  /** Services this plugin offers to plugins that depend on it. */
  provides?: (deps: ResolvedDeps<D>) => ServiceBinding[] | Promise<ServiceBinding[]>
  routes?: (r: RouteRegistrar, deps: ResolvedDeps<D>) => void
  sockets?: (s: SocketRegistrar, deps: ResolvedDeps<D>) => void
  /** Runs after routes are registered; throwing marks the plugin failed. */
  start?: (deps: ResolvedDeps<D>) => void | Promise<void>
  /** Runs on unload, disable or upgrade: close timers, watchers, child processes. */
  stop?: () => void | Promise<void>
}

// `any` by default: a list of plugins mixes plugins with different deps.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type HostdPlugin<D extends DepsMap = any> = PluginDefinition<D> & { readonly [PLUGIN_BRAND]: true }

const ID = /^[a-z][a-z0-9-]{0,39}$/
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/

/** Define a plugin. Shape errors throw here, so a broken plugin fails its own load. */
export function definePlugin<D extends DepsMap = {}>(definition: PluginDefinition<D>): HostdPlugin<D> {
  if (!ID.test(definition.id ?? '')) throw new TypeError(`plugin id "${definition.id}" must match ${ID}`)
  if (!SEMVER.test(definition.version ?? '')) throw new TypeError(`plugin ${definition.id}: version "${definition.version}" is not semver`)
  if (typeof definition.kernel !== 'string' || definition.kernel.trim() === '') {
    throw new TypeError(`plugin ${definition.id}: "kernel" must name the kernel API range it needs, e.g. "^1.0.0"`)
  }
  return Object.freeze({ ...definition, [PLUGIN_BRAND]: true as const })
}

export function isHostdPlugin(value: unknown): value is HostdPlugin {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PLUGIN_BRAND] === true
}

export function bind<T>(token: ServiceToken<T>, value: T): ServiceBinding {
  return { token, value }
}
