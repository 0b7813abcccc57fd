import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IconName } from './icons.ts'
import type { Static, TSchema } from '@sinclair/typebox'
import type { WebSocket } from 'ws'
import type { EntitySchema } from '@mikro-orm/core'
import type { RouteRole } from './roles.ts'
import type { ApiTokenRef, ServiceToken, SessionUser } from './tokens.ts'

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
export type RouteRequest<S extends RouteSchema = RouteSchema> = Omit<
  FastifyRequest,
  'params' | 'query' | 'body' | 'user'
> & {
  params: StaticOr<S['params'], Record<string, string>>
  query: StaticOr<S['querystring'], Record<string, string>>
  body: StaticOr<S['body'], unknown>
  user: SessionUser | null
  /**
   * Set when the request signed in with an API token (a script) rather than a session (a person): its id and name.
   * The kernel's audit log records it on every entry written with this request as the actor.
   * @since 1.1.0
   */
  apiToken: ApiTokenRef | null
  /**
   * Aborted when this version of the plugin is unloaded, disabled or replaced, before the kernel waits for
   * in-flight requests, and when the request's session ends (sign-out, expiry, revocation, its user disabled or
   * removed, or demoted below the route's role; the reason is then a 401 or 403 HostdError): a long-lived response
   * (server-sent events, a long poll) ends on it. After a session's end the kernel cuts the response anyway.
   * @since 1.1.0
   */
  lifetime: AbortSignal
}

export type RouteHandler<S extends RouteSchema> = (req: RouteRequest<S>, reply: FastifyReply) => unknown

/** What a route needs besides a role; without it the kernel answers before the handler runs. */
export type RouteNeed = 'helper'

export interface RouteOptions<S extends RouteSchema> {
  /** Required. A route without a role fails its plugin's load (deny by default). */
  role: RouteRole
  /**
   * Only a signed-in session (a person) may use it, never an API token (403 `HOSTD_AUTH_SESSION_REQUIRED`): for what a
   * script must not do even with the role, e.g. changing credentials. The kernel's account routes set it.
   * @since 1.1.0
   */
  sessionOnly?: boolean
  schema?: S
  needs?: RouteNeed[]
  /**
   * The handler reads the request body itself as a stream (`req.body` is the raw request stream, any content
   * type): for uploads that must not be buffered. `bodyLimit` and `schema.body` do not apply; the handler
   * enforces its own size limit.
   * @since 1.1.0
   */
  rawBody?: boolean
  /** Largest accepted body in bytes (default 1 MiB). */
  bodyLimit?: number
  /**
   * The 413 message for a body over `bodyLimit` (default: one naming the limit in MiB).
   * @since 1.1.0
   */
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

/**
 * What a socket's `admit` check sees: the upgrade request, already signed in, authorized and validated.
 * @since 1.1.0
 */
export interface SocketAdmission<Q> {
  user: SessionUser
  query: Q
  request: FastifyRequest
}

export interface SocketOptions<Q extends TSchema | undefined> {
  role: Exclude<RouteRole, 'public'>
  /**
   * Only a signed-in session may open it, never an API token (the upgrade answers 403 `HOSTD_AUTH_SESSION_REQUIRED`):
   * set it on interactive sockets (a shell, a remote desktop) that a leaked script token must not reach.
   * @since 1.1.0
   */
  sessionOnly?: boolean
  query?: Q
  /**
   * Subprotocols the socket speaks (`Sec-WebSocket-Protocol`): the first one the client offers that is listed here is
   * echoed, and none when the client offers none of them (the upgrade still succeeds). Without this option the first
   * one offered is echoed.
   * @since 1.1.0
   */
  protocols?: readonly string[]
  /**
   * A last check before the upgrade completes, after sign-in, role, origin, plugin state and query: throw a
   * HostdError to refuse the upgrade with its status and JSON body (503 while the service behind the socket is down).
   * The handler later gets the same `request` object in its context.
   * @since 1.1.0
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

/**
 * A page the plugin adds to the web UI: a nav entry, and the custom element the shell mounts for it.
 * The page owns its path and every path below it (`/containers/abc` goes to the `/containers` page).
 * @since 1.1.0
 */
export interface UiPage {
  /** Path in the dashboard, e.g. `/containers` (lowercase; not `/`, `/api`, `/ui`, `/plugins` or a shell page). */
  path: string
  /** The nav label and the page's name. */
  title: string
  /**
   * An icon name from the kit's set, {@link ICON_NAMES} (`box`, `server`, `hard-drive`...): editors complete them. An
   * unknown name shows a puzzle piece and its load warns, naming the nearest ones; write `'server' satisfies IconName`
   * to have the type check refuse one (any string is still accepted here until 2.0.0).
   * @since 1.3.0 typed as an {@link IconName} or any string (1.1.0: a string)
   */
  icon?: IconName | (string & {})
  /** The least role that sees the entry (default viewer). The server still checks every API call. */
  role?: Exclude<RouteRole, 'public'>
  /** The ES module that defines the element: a file in the plugin's `ui/` folder (`ui/page.js`; built-in plugins may name `.tsx`). */
  module: string
  /** The custom element's tag name, e.g. `hello-page`. */
  element: string
  /**
   * A GET route of this plugin (at `/api/<id>` or below) answering `{ count: number, label: string }`: while `count`
   * is above 0 the shell shows it in its header on every page, named by `label` and linking to this page (read when a
   * page opens and every 30 s). For a figure that needs people (the alerts plugin's firing alerts).
   * @since 1.3.0
   */
  badge?: string
}

/**
 * A card the plugin adds to the overview page (a custom element inside a titled card frame).
 * @since 1.1.0
 */
export interface UiCard {
  title: string
  module: string
  element: string
  role?: Exclude<RouteRole, 'public'>
  /** `small` is a third of the row, `medium` half, `large` the whole row (default medium). */
  size?: 'small' | 'medium' | 'large'
  /** Cards are shown by ascending order, then plugin id (default 100). */
  order?: number
}

/**
 * What a plugin adds to the web UI.
 * @since 1.1.0 (1.0.0 took a list of entries: see {@link UiEntry})
 */
export interface UiManifest {
  pages?: UiPage[]
  cards?: UiCard[]
  /**
   * Run this plugin's pages and cards in a sandboxed iframe (opaque origin, no cookies): they reach the API only through
   * the shell's message bridge, limited to the plugin's own `/api/<id>` routes and sockets. A third-party plugin's
   * pages always run so, whatever it says here (since 1.2.0); a built-in plugin may ask for it.
   */
  isolate?: boolean
}

/**
 * A nav entry of the 1.0.0 `ui` list. It names no module, so the shell has nothing to mount for it: an entry of
 * this shape is left out of the UI, with a warning.
 * @deprecated since 1.1.0: list {@link UiPage}s in `ui: { pages: [...] }`. Accepted until kernel API 2.0.0.
 */
export interface UiEntry {
  id: string
  title: string
  path: string
  icon?: string
  role?: Exclude<RouteRole, 'public'>
}

/**
 * The 1.0.0 shape of `ui`: a list. Its {@link UiPage}s are served as `{ pages }` (an entry's 1.0.0 `id` is ignored).
 * @deprecated since 1.1.0: write `ui: { pages: [...] }`. Accepted, with a warning, until kernel API 2.0.0.
 */
export type UiList = ((UiPage & { id?: string }) | UiEntry)[]

export interface ServiceBinding {
  token: ServiceToken<unknown>
  value: unknown
  /** The methods a third-party plugin may call. @since 1.3.0 */
  expose?: ServiceExposure
}

/** The names of the methods of a service type. */
export type ServiceMethod<T> = {
  [K in keyof T]-?: T[K] extends (...args: never[]) => unknown ? K : never
}[keyof T] &
  string

/**
 * The methods of a service that a third-party plugin may call, by the access it must have declared for the service in
 * `permissions.services`: one granted `read` may call the `read` methods, one granted `write` both lists. A method in
 * neither list is refused to every third-party plugin (built-in plugins get the whole service). A third-party plugin
 * running isolated calls them across its process boundary: their arguments and results must be plain JSON (no
 * callbacks, streams or signals), and a method that takes a role or an actor from its caller must not be listed.
 * @since 1.3.0
 */
export interface ServiceExposure<T = unknown> {
  read?: readonly (unknown extends T ? string : ServiceMethod<T>)[]
  write?: readonly (unknown extends T ? string : ServiceMethod<T>)[]
}

/**
 * How much of another plugin's service a plugin uses: `read` (it only asks) or `write` (it changes things through
 * it). Shown to the admin; an upgrade from `read` to `write` needs the admin's approval again.
 * @since 1.2.0
 */
export type ServiceAccess = 'read' | 'write'

/**
 * What a third-party plugin (any plugin not shipped in hostd's `plugins/` folder) asks of the host, beyond its own
 * routes, settings, log and audit records. The kernel grants exactly this and nothing more: a service, helper action
 * or network it did not declare is refused, and an upgrade that asks for more is not activated until an admin
 * approves it. `GET /api/extensions` lists it. Built-in plugins may declare it too; it is shown, not enforced.
 * The kernel services it uses are read from `deps` (`tokens.database` is never granted to a third-party plugin, and
 * `tokens.helper` only as a client limited to the actions listed here).
 * @since 1.2.0
 */
export interface PluginPermissions {
  /**
   * Services of other plugins it consumes (in `deps` or through `tokens.optional`), by token id, with the access it
   * needs: `{ 'hostd.containers': 'read' }`.
   */
  services?: Record<string, ServiceAccess>
  /** Root helper actions it calls through `tokens.helper`, e.g. `['packages.list']`. */
  helper?: readonly string[]
  /**
   * Outbound network from its own process (an isolated plugin's sandbox has no network without it). Default false.
   */
  network?: boolean
}

/**
 * What a plugin declares. `D` is its deps, `S` what its `setup` returns (`undefined` without one): both are inferred
 * from the definition.
 */
export interface PluginDefinition<D extends DepsMap = DepsMap, S = undefined> {
  /** Lowercase id, unique among plugins: `containers`, `hello`. */
  id: string
  /** The plugin's own semver version. */
  version: string
  /**
   * The kernel API range the plugin was built for, e.g. `^1.1.0`: the lowest version that has everything it uses
   * (sdk/CHANGELOG.md says what came when). A kernel outside the range refuses to load it.
   */
  kernel: string
  description?: string
  /** Other plugins this one needs, by id, with a semver range each. */
  dependsOn?: Record<string, string>
  /** Services to inject: `{ audit: tokens.audit }`. */
  deps?: D
  conditions?: Condition[]
  /** MikroORM entities (defineEntity); their tables are created when the plugin activates. */
  entities?: EntitySchema[]
  /** Pages and overview cards it adds to the web UI (listed by `GET /api/extensions` while active). */
  ui?: UiManifest | UiList
  /**
   * What a third-party plugin asks of the host: other plugins' services, helper actions, network (see
   * {@link PluginPermissions}). Its routes and sockets must lie under `/api/<id>`, its pages under `/<id>`.
   * @since 1.2.0
   */
  permissions?: PluginPermissions
  /**
   * Builds what the other hooks share (services, stores, per-load maps), once per load: after `deps` are resolved,
   * before `provides`, `routes`, `sockets` and `start`. Its result (awaited when a promise) is the last argument of
   * every hook below, `stop` included; a new load (an upgrade, disable then enable) runs it again. Throwing fails the
   * load. Start no timers or processes here: `stop` runs only once `start` has been called, so `start` does that.
   * @since 1.1.0
   */
  setup?: (deps: ResolvedDeps<D>) => S | Promise<S>
  /** Services this plugin offers to plugins that depend on it. `state` since 1.1.0. */
  provides?: (deps: ResolvedDeps<D>, state: S) => ServiceBinding[] | Promise<ServiceBinding[]>
  /** `state` since 1.1.0. */
  routes?: (r: RouteRegistrar, deps: ResolvedDeps<D>, state: S) => void
  /** `state` since 1.1.0. */
  sockets?: (s: SocketRegistrar, deps: ResolvedDeps<D>, state: S) => void
  /** Runs after routes are registered; throwing marks the plugin failed. `state` since 1.1.0. */
  start?: (deps: ResolvedDeps<D>, state: S) => void | Promise<void>
  /**
   * Runs on unload, disable or upgrade, once `start` has been called (even if it threw): close timers, watchers,
   * child processes. `deps` and `state` since 1.1.0.
   */
  stop?: (deps: ResolvedDeps<D>, state: S) => void | Promise<void>
}

/**
 * A definition checked by definePlugin: `ui` is always the object shape, and `warnings` says what of an older contract
 * shape it accepted (each a sentence saying what to change; the kernel logs them at load and lists them in
 * `GET /api/extensions`).
 */
export type HostdPlugin<
  // A list of plugins mixes plugins with different deps and states, and their hooks take those as parameters, so no
  // narrower default than `any` accepts them all.
  // biome-ignore lint/suspicious/noExplicitAny: see above, the default must accept every plugin's deps
  D extends DepsMap = any,
  // biome-ignore lint/suspicious/noExplicitAny: as for D, the default must accept every plugin's setup result
  S = any,
> = Omit<PluginDefinition<D, S>, 'ui'> & {
  readonly ui?: UiManifest
  /** @since 1.1.0 */
  readonly warnings: readonly string[]
  readonly [PLUGIN_BRAND]: true
}

const ID = /^[a-z][a-z0-9-]{0,39}$/
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/

/**
 * Define a plugin. Shape errors throw here, so a broken plugin fails its own load. A shape of an older contract that
 * is still accepted (the 1.0.0 `ui` list) is turned into the current one, with a warning.
 */
export function definePlugin<D extends DepsMap = Record<never, never>, S = undefined>(
  definition: PluginDefinition<D, S>,
): HostdPlugin<D, S> {
  if (!ID.test(definition.id ?? '')) throw new TypeError(`plugin id "${definition.id}" must match ${ID}`)
  if (!SEMVER.test(definition.version ?? ''))
    throw new TypeError(`plugin ${definition.id}: version "${definition.version}" is not semver`)
  if (typeof definition.kernel !== 'string' || definition.kernel.trim() === '') {
    throw new TypeError(`plugin ${definition.id}: "kernel" must name the kernel API range it needs, e.g. "^1.0.0"`)
  }
  const warnings: string[] = []
  const ui = definition.ui === undefined ? undefined : currentUi(definition.ui, warnings)
  if (ui !== undefined) checkUi(definition.id, ui)
  if (definition.permissions !== undefined) checkPermissions(definition.id, definition.permissions)
  return Object.freeze({ ...definition, ui, warnings: Object.freeze(warnings), [PLUGIN_BRAND]: true as const })
}

/** A list entry that names what to mount (checked as a page); a 1.0.0 nav entry names neither. */
const isPage = (entry: UiList[number]): entry is UiPage & { id?: string } => 'module' in entry || 'element' in entry

/** The 1.0.0 list as `{ pages }`: its pages kept, its nav-only entries (no module to mount) left out, each warned of. */
function currentUi(ui: UiManifest | UiList, warnings: string[]): UiManifest {
  if (!Array.isArray(ui)) return ui
  warnings.push('ui is a list (the 1.0.0 shape): write ui: { pages: [...] }; kernel API 2.0.0 will refuse the list')
  const pages: UiPage[] = []
  for (const entry of ui) {
    if (isPage(entry)) {
      const { id: _legacyId, ...page } = entry
      pages.push(page)
    } else {
      warnings.push(`ui entry ${entry.path} is not shown: it names no module and element for the shell to mount`)
    }
  }
  return { pages }
}

const UI_MODULE = /^ui\/(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*[A-Za-z0-9_-][A-Za-z0-9._-]*\.(?:js|mjs|ts|tsx)$/
const UI_ELEMENT = /^[a-z][a-z0-9]*-[a-z0-9-]*$/
const UI_PATH = /^\/[a-z0-9][a-z0-9_-]*(?:\/[a-z0-9][a-z0-9_-]*)*$/
/** Paths the shell serves itself: a plugin page may not take them (nor anything below them). */
export const RESERVED_UI_PATHS = [
  '/api',
  '/ui',
  '/plugins',
  '/health',
  '/setup',
  '/sign-in',
  '/account',
  '/users',
  '/audit',
  '/gallery',
]
const UI_ROLES = ['viewer', 'operator', 'admin']

function checkUi(id: string, ui: UiManifest): void {
  const fail = (what: string) => {
    throw new TypeError(`plugin ${id}: ui ${what}`)
  }
  if (typeof ui !== 'object' || ui === null) fail('must be an object { pages, cards, isolate }')
  const entry = (kind: string, e: UiPage | UiCard) => {
    if (typeof e?.title !== 'string' || e.title.trim() === '') fail(`${kind} needs a title`)
    if (!UI_MODULE.test(e.module ?? '') || e.module.includes('..'))
      fail(
        `${kind} "${e.title}": module "${e.module}" must be a .js, .mjs, .ts or .tsx file in the plugin's ui/ folder`,
      )
    if (!UI_ELEMENT.test(e.element ?? ''))
      fail(`${kind} "${e.title}": element "${e.element}" is not a custom element name (lowercase, with a hyphen)`)
    if (e.role !== undefined && !UI_ROLES.includes(e.role))
      fail(`${kind} "${e.title}": role "${e.role}" is not viewer, operator or admin`)
  }
  const paths = new Set<string>()
  for (const page of ui.pages ?? []) {
    entry('page', page)
    if (!UI_PATH.test(page.path ?? ''))
      fail(`page "${page.title}": path "${page.path}" must look like /name or /name/sub (lowercase)`)
    if (RESERVED_UI_PATHS.some((p) => page.path === p || page.path.startsWith(`${p}/`)))
      fail(`page "${page.title}": path ${page.path} belongs to the shell`)
    if (paths.has(page.path)) fail(`page path ${page.path} is declared twice`)
    paths.add(page.path)
  }
  for (const card of ui.cards ?? []) {
    entry('card', card)
    if (card.size !== undefined && !['small', 'medium', 'large'].includes(card.size))
      fail(`card "${card.title}": size must be small, medium or large`)
  }
}

const SERVICE_ID = /^[a-z][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*$/i
const HELPER_ACTION = /^[a-z][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*$/

function checkPermissions(id: string, permissions: PluginPermissions): void {
  const fail = (what: string) => {
    throw new TypeError(`plugin ${id}: permissions ${what}`)
  }
  if (typeof permissions !== 'object' || permissions === null || Array.isArray(permissions))
    fail('must be an object { services, helper, network }')
  const known = ['services', 'helper', 'network']
  const unknown = Object.keys(permissions).find((key) => !known.includes(key))
  if (unknown !== undefined) fail(`has no "${unknown}" (only ${known.join(', ')})`)
  const { services, helper, network } = permissions
  if (services !== undefined) {
    if (typeof services !== 'object' || services === null || Array.isArray(services))
      fail("services must map a service's token id to 'read' or 'write'")
    for (const [token, access] of Object.entries(services)) {
      if (!SERVICE_ID.test(token)) fail(`services: "${token}" is not a service token id (like hostd.containers)`)
      if (access !== 'read' && access !== 'write') fail(`services: ${token} must be 'read' or 'write'`)
    }
  }
  if (helper !== undefined) {
    if (!Array.isArray(helper)) fail('helper must be a list of helper action names')
    for (const action of helper)
      if (typeof action !== 'string' || !HELPER_ACTION.test(action))
        fail(`helper: "${action}" is not a helper action name (like packages.list)`)
  }
  if (network !== undefined && typeof network !== 'boolean') fail('network must be true or false')
}

export function isHostdPlugin(value: unknown): value is HostdPlugin {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PLUGIN_BRAND] === true
}

/** `expose` since 1.3.0: the methods a third-party plugin may call ({@link ServiceExposure}); none without it. */
export function bind<T>(token: ServiceToken<T>, value: T, expose?: ServiceExposure<T>): ServiceBinding {
  return expose ? { token, value, expose: expose as ServiceExposure } : { token, value }
}
