import type { EntityManager, MikroORM, EntitySchema } from '@mikro-orm/core'
import type { Role } from './roles.ts'

/** A typed key for a service (Backstage's service refs): `deps: { audit: tokens.audit }`. */
export interface ServiceToken<T> {
  readonly id: string
  /** Never set; carries the service type for inference. */
  readonly __type?: T
}

export function createServiceToken<T>(id: string): ServiceToken<T> {
  return Object.freeze({ id })
}

export interface Logger {
  debug(obj: unknown, msg?: string): void
  info(obj: unknown, msg?: string): void
  warn(obj: unknown, msg?: string): void
  error(obj: unknown, msg?: string): void
  child(bindings: Record<string, unknown>): Logger
}

/** Who acted and from where; the kernel fills it from the request. */
export interface Actor {
  userId?: string | null
  username?: string | null
  ip?: string | null
}

export interface AuditEvent {
  /** Dotted verb, e.g. `user.create`, `container.stop`. */
  action: string
  target?: string | null
  result?: 'success' | 'failure'
  /** Short extra facts; never secrets. */
  detail?: Record<string, unknown>
}

export interface AuditEntry extends Required<Omit<AuditEvent, 'detail'>> {
  id: number
  time: string
  userId: string | null
  username: string | null
  ip: string | null
  detail: Record<string, unknown> | null
}

/**
 * Who did something, for the audit log: an Actor, or a request itself (a route's `req`, a socket's `ctx.request`):
 * its user, client address and the API token it signed in with are used. Services that audit take this, so a
 * route hands them its request as it is.
 * @since 1.1.0
 */
export type AuditActor = Actor | { user?: SessionUser | null; ip?: string; apiToken?: ApiTokenRef | null }

export interface AuditService {
  /**
   * Write one entry. `actor` may be a request: its user, client address and API token (as `detail.apiToken`) are used.
   * `AuditActor` since 1.1.0 (1.0.0: an Actor, or `{ user, ip }`).
   */
  record(event: AuditEvent, actor?: AuditActor): Promise<void>
}

export interface SessionUser {
  id: string
  username: string
  role: Role
}

/**
 * The API token a request signed in with.
 * @since 1.1.0
 */
export interface ApiTokenRef {
  id: string
  name: string
}

export interface Database {
  /** A fresh EntityManager (unit of work) for one operation. */
  em(): EntityManager
  readonly orm: MikroORM
}

/** Small persistent settings, scoped to the plugin that asks. Values are JSON. */
export interface Settings {
  get<T = unknown>(key: string): Promise<T | undefined>
  set(key: string, value: unknown): Promise<void>
  delete(key: string): Promise<void>
}

/** The kernel's client of the root helper (helper/). */
export interface HelperClient {
  /** True when the helper answers on HOSTD_HELPER_SOCKET right now. */
  available(): Promise<boolean>
  /** Run one allowlisted action; throws HOSTD_HELPER_UNAVAILABLE (423) without a helper. `options` since 1.1.0. */
  call<T = unknown>(action: string, args?: Record<string, unknown>, options?: HelperCallOptions): Promise<T>
}

/** @since 1.1.0 */
export interface HelperCallOptions {
  /** A streamed action's events (one per line of its output), in order, before the call resolves. */
  onEvent?: (event: unknown) => void
  /** How long to wait for the answer (default 30 s); a streamed job needs longer. */
  timeoutMs?: number
}

export interface KernelInfo {
  version: string
  apiVersion: string
  dataDir: string
  /**
   * The daemon's DOCKER_HOST (unix://, tcp://...), or null: then the usual engine sockets are probed.
   * @since 1.1.0
   */
  dockerHost: string | null
}

/**
 * Services a plugin can use when some other plugin provides them and do without otherwise (an optional
 * dependency). Looked up on every call, so a provider loaded, upgraded or unloaded later is seen at once.
 * @since 1.1.0
 */
export interface OptionalServices {
  /** The current provider's value, or undefined when no active plugin provides it. */
  get<T>(token: ServiceToken<T>): T | undefined
}

/**
 * A plugin's state changed: it is starting, active, restarting (an isolated plugin's process came down), disabled,
 * unavailable (a dependency or condition is missing), failed, or removed (unloaded).
 * @since 1.3.0
 */
export interface PluginStateEvent {
  type: 'plugin.state'
  id: string
  version: string | null
  state: 'starting' | 'active' | 'restarting' | 'disabled' | 'unavailable' | 'failed' | 'removed'
  /** Why it is unavailable, restarting or failed (the error); null otherwise. */
  reason: string | null
  builtin: boolean
  time: string
}

/**
 * An audit record was written, or a repeated failure counted again into its record (`count`). Its detail's plain
 * values only (audit records hold no secrets).
 * @since 1.3.0
 */
export interface AuditRecordEvent {
  type: 'audit'
  action: string
  target: string | null
  result: 'success' | 'failure'
  /** Who acted, when someone signed in did. */
  username: string | null
  ip: string | null
  /** A repeated failure (a wrong password...): how many its record counts now, 1 for the first; null otherwise. */
  count: number | null
  detail: Record<string, string | number | boolean | null>
  time: string
}

/** @since 1.3.0 */
export type KernelEvent = PluginStateEvent | AuditRecordEvent

/**
 * What happens in the kernel, as it happens: plugin state changes and audit records. For built-in plugins only (a
 * third-party plugin asking for it fails its load).
 * @since 1.3.0
 */
export interface KernelEvents {
  /** Calls `listener` with each event from now on (after the change, never inside it) until `signal` aborts or the
   * answered function is called. */
  on(listener: (event: KernelEvent) => void, signal?: AbortSignal): () => void
  /** The last state of each plugin the kernel knows now (removed ones left out). */
  plugins(): PluginStateEvent[]
}

/**
 * Secrets at rest (passwords, API keys, webhook keys), sealed with AES-256-GCM under a key the kernel derives for each
 * plugin from the daemon's own key file: a copy of the database alone reveals none, and one plugin cannot open
 * another's. A sandboxed plugin's calls are made by the kernel: the key never enters its process.
 * @since 1.3.0
 */
export interface SecretSealer {
  seal(plain: string): string | Promise<string>
  /** The plain text, or null when it was sealed with another key (another plugin's, a replaced key file) or damaged. */
  open(sealed: string): string | null | Promise<string | null>
}

export const tokens = {
  logger: createServiceToken<Logger>('hostd.logger'),
  audit: createServiceToken<AuditService>('hostd.audit'),
  database: createServiceToken<Database>('hostd.database'),
  settings: createServiceToken<Settings>('hostd.settings'),
  helper: createServiceToken<HelperClient>('hostd.helper'),
  kernel: createServiceToken<KernelInfo>('hostd.kernel'),
  /** @since 1.1.0 */
  optional: createServiceToken<OptionalServices>('hostd.optional'),
  /** Built-in plugins only. @since 1.3.0 */
  events: createServiceToken<KernelEvents>('hostd.events'),
  /** @since 1.3.0 */
  secrets: createServiceToken<SecretSealer>('hostd.secrets'),
} as const

export type { EntitySchema }
