/**
 * One load of an isolated plugin (from its `setup` to its `stop`), supervised: its process, the requests and sockets
 * forwarded to it, the calls it makes into the kernel's services, and what happens when the process goes away (every
 * request in flight answers 503, then a restart after a backoff; after MAX_CRASHES within a minute the plugin is left
 * failed with the reason). The registry hears of each change through `watch` (restarting, running again, failed).
 */
import { mkdir } from 'node:fs/promises'
import { PassThrough } from 'node:stream'
import { join } from 'node:path'
import type { FastifyReply, FastifyRequest } from 'fastify'
import safeRegex from 'safe-regex2'
import type { WebSocket } from 'ws'
import {
  createServiceToken,
  HostdError,
  ROLES,
  tokens,
  type AuditService,
  type HelperClient,
  type KernelInfo,
  type Logger,
  type Role,
  type RouteRegistrar,
  type RouteRole,
  type RouteSchema,
  type ServiceBinding,
  type Settings,
  type SocketAdmission,
  type SocketContext,
  type SocketRegistrar,
} from '@hostd/sdk'
import {
  ALLOWED_RESPONSE_HEADERS,
  FORWARDED_REQUEST_HEADERS,
  SANDBOX_PATHS,
  type ChildCall,
  type ChildMessage,
  type PluginDescription,
  type PluginManifest,
  type ProvidedService,
  type ResponseMessage,
} from '../../../sdk/src/isolated/protocol.ts'
import { MIGRATION_FAILED } from '../../../sdk/src/isolated/database.ts'
import { EntityMigrationError } from '../db/database.ts'
import { KERNEL_SERVICE_IDS } from '../plugins/permissions.ts'
import { KernelErrors } from '../http/errors.ts'
import { CallError, seconds } from './channel.ts'
import { IsolationErrors } from './errors.ts'
import { BOOT_DEADLINE_MS, PluginProcess, type ProcessOptions } from './process.ts'
import type { SandboxBase } from './sandbox.ts'
import { CRASH_WINDOW_MS, MAX_CRASHES, MAX_RESTART_DELAY_MS, type IsolationSettings } from './settings.ts'

/**
 * What the registry resolved for the services the plugin asked (its own settings scope, audit, kernel facts; absent
 * when it did not ask), and the logger its lines go to (its own, prefixed with its id).
 */
export interface IsolatedDeps {
  log: Logger
  settings?: Settings
  audit?: AuditService
  kernel?: KernelInfo
  /** The root helper, limited to the actions it declared (dependencies.ts, grantThirdParty). */
  helper?: HelperClient
  /**
   * Another plugin's service by token id, as the plugin's limited view of it (plugins/service-access.ts): what it
   * named in `deps`, then, when it asked for `tokens.optional`, the current provider of any service it declared.
   */
  service(id: string): unknown
}

/**
 * A change of an isolated plugin's process the registry follows. `error` carries the plugin's file:line in its stack
 * as the registry reads it (supervision.ts).
 */
export type IsolationChange =
  | { state: 'restarting'; reason: string }
  | { state: 'failed'; reason: string; error: Error }
  | { state: 'running' }

/** One plugin folder run isolated: what every load of it shares. */
export interface IsolatedPluginInfo {
  dir: string
  /** The entry's path inside the sandbox. */
  entry: string
  description: PluginDescription
  /** Where its data folders live on the host (`<data dir>/plugin-data`). */
  dataRoot: string
  base: SandboxBase
  settings: IsolationSettings
  /** Whether an admin granted it outbound network (asked as each process starts). */
  network(): boolean
  /** Its lines, prefixed with its id, when it did not ask for a logger itself. */
  log: Logger
}

/** Every answer of an isolated plugin is a sandboxed document: HTML it might send runs in an opaque origin, no script. */
export const ISOLATED_CSP = "sandbox; default-src 'none'; frame-ancestors 'none'"
/** The largest request body an isolated route may accept (it crosses as JSON). */
export const MAX_ISOLATED_BODY = 8 * 1024 * 1024
/** The largest JSON schema of one route (compiled and run by the kernel). */
const MAX_SCHEMA_BYTES = 64 * 1024
/** Calls into the kernel's services one process may have in flight. */
const MAX_CALLS = 32
/** Audit records a plugin may write per second, and the burst above it (a flood would push real records out). */
const AUDIT_RATE = 10
const AUDIT_BURST = 100
/** Settings writes a plugin may make per second, and the burst above it (each is a write to the kernel's database). */
const SETTINGS_RATE = 50
const SETTINGS_BURST = 200
/** Identities of requests and sockets remembered for audit records that name them as actor. */
const MAX_IDENTITIES = 1024
/** What one socket of an isolated plugin may have waiting for a slow client before it is closed (1013). */
const MAX_SOCKET_BUFFER = 8 * 1024 * 1024
/** The same for a streamed answer, which is then cut. */
const MAX_STREAM_BUFFER = 8 * 1024 * 1024
/** The largest settings value (JSON). */
const MAX_SETTING_BYTES = 1024 * 1024

interface Identity {
  user: { id: string; username: string; role: 'viewer' | 'operator' | 'admin' } | null
  apiToken: { id: string; name: string } | null
  ip: string
}

interface PendingRequest {
  resolve(response: ResponseMessage): void
  reject(err: Error): void
  timer: NodeJS.Timeout
}

function identityOf(req: FastifyRequest): Identity {
  const user = req.user
  const token = req.apiToken
  return {
    user: user ? { id: user.id, username: user.username, role: user.role } : null,
    apiToken: token ? { id: token.id, name: token.name } : null,
    ip: req.ip,
  }
}

function forwardedHeaders(headers: FastifyRequest['headers']): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = headers[name]
    if (typeof value === 'string') out[name] = value.slice(0, 8192)
  }
  return out
}

const ROUTE_ROLES: readonly unknown[] = [...ROLES, 'public']
/** How deep a route's schema may nest. */
const MAX_SCHEMA_DEPTH = 32

/**
 * What is wrong with a JSON schema an isolated plugin gives the kernel to validate its requests with, or null. The
 * kernel compiles and runs it in its own process, so a regular expression that can take exponential time (a nested
 * quantifier, the classic ReDoS) is refused, as is a schema nested too deep to compile safely.
 */
export function schemaProblem(schema: unknown, depth = 0): string | null {
  if (depth > MAX_SCHEMA_DEPTH) return `is nested deeper than ${MAX_SCHEMA_DEPTH} levels`
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const problem = schemaProblem(item, depth + 1)
      if (problem) return problem
    }
    return null
  }
  if (typeof schema !== 'object' || schema === null) return null
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'pattern' && typeof value === 'string' && !safeRegex(value))
      return `has the pattern ${JSON.stringify(value)}, which can take exponential time to match`
    if (key === 'patternProperties' && typeof value === 'object' && value !== null) {
      const unsafe = Object.keys(value).find((pattern) => !safeRegex(pattern))
      if (unsafe !== undefined)
        return `has the pattern ${JSON.stringify(unsafe)}, which can take exponential time to match`
    }
    const problem = schemaProblem(value, depth + 1)
    if (problem) return problem
  }
  return null
}

/** Why a route or socket of the manifest cannot be served isolated (yet), or null. */
export function manifestProblem(manifest: PluginManifest): string | null {
  for (const route of manifest.routes) {
    const name = `route ${route.method} ${route.path}`
    if (!ROUTE_ROLES.includes(route.options.role as string))
      return `${name} declares no valid role (one of ${ROUTE_ROLES.join(', ')}): refused`
    if (!route.path.startsWith('/')) return `${name}: a route's path must start with /`
    if (route.options.rawBody)
      return `${name} asks for rawBody (a streamed request body), which isolated plugins cannot have yet`
    if ((route.options.bodyLimit ?? 0) > MAX_ISOLATED_BODY)
      return `${name} asks for a body limit over ${MAX_ISOLATED_BODY / 1048576} MiB, the most an isolated plugin may have`
    if (route.options.schema && JSON.stringify(route.options.schema).length > MAX_SCHEMA_BYTES)
      return `${name} has a schema over ${MAX_SCHEMA_BYTES / 1024} KiB`
    const unsafe = schemaProblem(route.options.schema)
    if (unsafe) return `${name}: its schema ${unsafe}`
  }
  for (const socket of manifest.sockets) {
    if (!(ROLES as readonly unknown[]).includes(socket.options.role))
      return `socket ${socket.path} declares no valid role: refused`
    if (!socket.path.startsWith('/')) return `socket ${socket.path}: a socket's path must start with /`
    if (socket.options.query && JSON.stringify(socket.options.query).length > MAX_SCHEMA_BYTES)
      return `socket ${socket.path} has a query schema over ${MAX_SCHEMA_BYTES / 1024} KiB`
    const unsafe = schemaProblem(socket.options.query)
    if (unsafe) return `socket ${socket.path}: its query schema ${unsafe}`
  }
  return null
}

class Budget {
  #tokens: number
  #at = Date.now()
  readonly #rate: number
  readonly #burst: number

  constructor(rate: number, burst: number) {
    this.#rate = rate
    this.#burst = burst
    this.#tokens = burst
  }

  take(): boolean {
    const now = Date.now()
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#at) / 1000) * this.#rate)
    this.#at = now
    if (this.#tokens < 1) return false
    this.#tokens--
    return true
  }
}

/**
 * An error of the plugin's, for the registry: `origin` (file:line:column inside the plugin's folder) becomes its stack's
 * one frame, under the plugin's folder on the host, which is where supervision.ts looks for it.
 */
export function pluginError(message: string, origin: string | null | undefined, dir: string): Error {
  const err = new Error(message)
  if (origin) err.stack = `Error: ${message}\n    at ${join(dir, origin)}`
  return err
}

/** A failed kernel call as it crosses to the plugin: the message, and the code and status of a HostdError. */
function callError(err: unknown): { message: string; code?: string; status?: number } {
  const message = (err instanceof Error ? err.message : String(err)).slice(0, 4000)
  if (err instanceof HostdError) return { message, code: err.code, status: err.statusCode }
  return { message }
}

/** An error from the plugin's side as the kernel reports it: the message and, where known, the file:line. */
function explain(err: unknown, dir = ''): Error {
  if (err instanceof CallError && err.origin) return pluginError(`${err.message} (at ${err.origin})`, err.origin, dir)
  return err instanceof Error ? err : new Error(String(err))
}

type ChildRequest = Parameters<ProcessOptions['onMessage']>[0]

/** A plugin's process started ahead of its load, and how the load that takes it receives its messages. */
export interface StartedProcess {
  proc: PluginProcess
  adopt(onMessage: (message: ChildRequest) => void): void
}

export class IsolatedLoad {
  readonly #info: IsolatedPluginInfo
  readonly #deps: IsolatedDeps
  readonly #id: string
  #proc: PluginProcess | null = null
  #manifest!: PluginManifest
  #status: 'ready' | 'running' | 'restarting' | 'failed' | 'stopped' = 'ready'
  #reason: string | null = null
  #crashes: number[] = []
  #restartTimer: NodeJS.Timeout | null = null
  #listener: ((change: IsolationChange) => void) | null = null
  readonly #requests = new Map<number, PendingRequest>()
  readonly #identities = new Map<string, Identity>()
  readonly #sockets = new Map<number, WebSocket>()
  /** Streamed answers in progress, by request id. */
  readonly #streams = new Map<number, PassThrough>()
  readonly #auditBudget = new Budget(AUDIT_RATE, AUDIT_BURST)
  readonly #settingsBudget = new Budget(SETTINGS_RATE, SETTINGS_BURST)
  #calls = 0
  #nextRequest = 0
  #nextSocket = 0
  /** The registry took this load up: started, stopped or released it. */
  #claimed = false
  #lastOrigin: string | null = null
  /** The services its `provides` offered (the registry published them): a restarted process must offer the same. */
  #offered: ProvidedService[] | null = null

  private constructor(info: IsolatedPluginInfo, deps: IsolatedDeps) {
    this.#info = info
    this.#deps = deps
    this.#id = info.description.id
  }

  /**
   * Starts a process for the plugin ahead of its load (nothing of the plugin runs yet), so that the registry can start
   * the clock of `setup` once it is up (`booted`). `create` adopts it; one not adopted in time is ended.
   */
  static async startProcess(info: IsolatedPluginInfo): Promise<StartedProcess> {
    const dataDir = join(info.dataRoot, info.description.id)
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    let route: (message: ChildRequest) => void = () => undefined
    const proc = new PluginProcess(info.base, {
      id: info.description.id,
      pluginDir: info.dir,
      dataDir,
      heapMb: info.settings.heapMb,
      network: (info.description.permissions as { network?: unknown } | undefined)?.network === true && info.network(),
      addons: info.description.entities > 0 || Object.values(info.description.deps).includes(tokens.database.id),
      log: info.log as never,
      onMessage: (message) => route(message),
    })
    const unclaimed = setTimeout(() => proc.kill('no load adopted it'), BOOT_DEADLINE_MS + info.settings.callTimeoutMs)
    unclaimed.unref()
    return {
      proc,
      adopt: (onMessage) => {
        clearTimeout(unclaimed)
        route = onMessage
      },
    }
  }

  /** Starts the plugin's process (or adopts one started ahead), imports it and runs its `setup` (each within the call deadline). */
  static async create(info: IsolatedPluginInfo, deps: IsolatedDeps, started?: StartedProcess): Promise<IsolatedLoad> {
    const load = new IsolatedLoad(info, deps)
    const { proc, manifest } = await load.#spawn(started)
    const problem = manifestProblem(manifest)
    if (problem) {
      proc.kill('its routes cannot be served isolated')
      throw new Error(problem)
    }
    load.#adopt(proc, manifest)
    return load
  }

  get status(): string {
    return this.#status
  }

  get pid(): number | null {
    return this.#proc?.alive ? this.#proc.pid : null
  }

  get manifest(): PluginManifest {
    return this.#manifest
  }

  /**
   * Tells `listener` of every change of the process's state (the registry: restarting, running again, failed), and at
   * once of the state it is in when that is not running.
   */
  watch(listener: (change: IsolationChange) => void): void {
    this.#listener = listener
    if (this.#status === 'restarting') listener({ state: 'restarting', reason: this.#reason ?? '' })
    if (this.#status === 'failed') listener({ state: 'failed', reason: this.#reason ?? '', error: this.#error() })
  }

  /**
   * Releases this load unless the registry starts, stops or releases it within `ms`: it gave up on the `setup` that
   * made it (a deadline, a disable or a removal while it ran, a throw before `start`), and nobody else would end its
   * process.
   */
  expectAdoption(ms: number): void {
    setTimeout(() => {
      if (this.#claimed || this.#status === 'stopped') return
      this.#deps.log.warn('plugin process released: the load that started it was abandoned')
      this.release()
    }, ms).unref()
  }

  async start(): Promise<void> {
    this.#claimed = true
    const proc = this.#proc
    if (!proc?.alive) throw new Error(`its process ended before start: ${this.#reason ?? 'unknown reason'}`)
    try {
      await proc.call('start', [], this.#info.settings.callTimeoutMs)
    } catch (err) {
      throw await this.#failedCall(proc, 'start', err)
    }
    this.#status = 'running'
    proc.startHeartbeat(this.#info.settings.heartbeatMs)
  }

  /** `stop` in the plugin's process within its deadline, then the process is killed. */
  async stop(): Promise<void> {
    const proc = this.#proc
    this.#status = 'stopped'
    if (this.#restartTimer) clearTimeout(this.#restartTimer)
    if (proc?.alive) {
      try {
        await proc.call('stop', [], this.#info.settings.callTimeoutMs)
      } catch (err) {
        this.#deps.log.warn({ err: explain(err, this.#info.dir).message }, 'plugin stop failed')
      }
    }
    this.release()
    await proc?.ended // SIGKILL cannot be ignored: the process is gone when stop returns
  }

  /** Ends the process now (no `stop`), whatever state it is in: its load is over. Requests in flight answer 503. */
  release(): void {
    this.#claimed = true
    this.#status = 'stopped'
    if (this.#restartTimer) clearTimeout(this.#restartTimer)
    const proc = this.#proc
    this.#endInflight(`${this.#id} was stopped`, 1012)
    proc?.kill('its load ended')
  }

  /** The process's end, once it has ended (tests and shutdown wait for it). */
  async ended(): Promise<void> {
    await this.#proc?.ended
  }

  // ---- routes, sockets, conditions: what the proxy definition hands the kernel ----

  declareRoutes(r: RouteRegistrar): void {
    this.#manifest.routes.forEach((route, index) => {
      const { response: _response, ...schema } = (route.options.schema ?? {}) as RouteSchema
      const options = {
        role: route.options.role as RouteRole, // checked by manifestProblem
        ...(route.options.sessionOnly ? { sessionOnly: true } : {}),
        // Response schemas are not compiled by the kernel: the plugin's answer is its own, sent as JSON as it is.
        ...(route.options.schema ? { schema } : {}),
        ...(route.options.needs ? { needs: route.options.needs as 'helper'[] } : {}),
        ...(route.options.bodyLimit === undefined ? {} : { bodyLimit: route.options.bodyLimit }),
        ...(route.options.bodyLimitMessage ? { bodyLimitMessage: route.options.bodyLimitMessage } : {}),
      }
      const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete'
      r[method](route.path, options, (req, reply) => this.forward(index, req as unknown as FastifyRequest, reply))
    })
  }

  declareSockets(s: SocketRegistrar): void {
    this.#manifest.sockets.forEach((socket, index) => {
      const { role, sessionOnly, query, protocols, admit } = socket.options
      s.ws(
        socket.path,
        {
          role: role as Role, // checked by manifestProblem
          ...(sessionOnly ? { sessionOnly: true } : {}),
          ...(query ? { query: query as never } : {}),
          ...(protocols ? { protocols } : {}),
          ...(admit ? { admit: (admission: SocketAdmission<unknown>) => this.#admit(index, admission) } : {}),
        },
        (ws: WebSocket, ctx: SocketContext<unknown>) => this.#openSocket(index, ws, ctx),
      )
    })
  }

  /**
   * The services it provides, as the registry publishes them: for each, an object whose methods call the plugin's
   * process (`serve`, within the call deadline; JSON arguments and results), and what it exposes to third-party
   * plugins.
   */
  async provides(): Promise<ServiceBinding[]> {
    const proc = this.#proc
    if (!proc?.alive) throw new Error(`its process ended before provides: ${this.#reason ?? 'unknown reason'}`)
    let offered: ProvidedService[]
    try {
      offered = (await proc.call('provides', [], this.#info.settings.callTimeoutMs)) as ProvidedService[]
    } catch (err) {
      throw await this.#failedCall(proc, 'provides', err)
    }
    this.#offered = offered
    return offered.map((service) => ({
      token: createServiceToken(service.id),
      value: Object.freeze(
        Object.fromEntries(
          service.methods.map((method) => [
            method,
            (...args: unknown[]) => this.#callProvided(service.id, method, args),
          ]),
        ),
      ),
      ...(service.expose ? { expose: service.expose } : {}),
    }))
  }

  /** One call of a method of a service it provides, made by another plugin. */
  async #callProvided(id: string, method: string, args: unknown[]): Promise<unknown> {
    const proc = this.#proc
    if (this.#status !== 'running' || !proc?.alive) throw this.#unavailable()
    try {
      // Arguments cross as JSON, as they do for an isolated consumer.
      return await proc.call('serve', [id, method, JSON.parse(JSON.stringify(args))], this.#info.settings.callTimeoutMs)
    } catch (err) {
      if (err instanceof CallError && err.code && err.status) throw new HostdError(err.code, err.status, err.message)
      if (err instanceof CallError && err.kind === 'timeout')
        throw IsolationErrors.timeout(`The plugin ${this.#id} did not answer ${id}.${method} in time`)
      throw KernelErrors.pluginUnavailable(
        `The plugin ${this.#id} failed in ${id}.${method}: ${explain(err, this.#info.dir).message}`,
      )
    }
  }

  async condition(index: number): Promise<true | string> {
    const proc = this.#proc
    if (this.#status !== 'running' || !proc?.alive) return `its process is ${this.#status}`
    try {
      return (await proc.call('condition', [index], this.#info.settings.callTimeoutMs)) as true | string
    } catch (err) {
      return `its condition check failed: ${explain(err, this.#info.dir).message}`
    }
  }

  /** Hands one signed-in, authorized, validated request to the plugin's process and answers with what it says. */
  forward(index: number, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const proc = this.#proc
    if (this.#status !== 'running' || !proc?.alive) return Promise.reject(this.#unavailable())
    const id = this.#nextRequest++
    const reqId = String(req.id)
    const identity = identityOf(req)
    this.#remember(reqId, identity)
    const { requestTimeoutMs } = this.#info.settings
    return new Promise<ResponseMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#requests.delete(id)
        proc.send({ t: 'cancel', id })
        reject(IsolationErrors.timeout(`The plugin ${this.#id} did not answer within ${seconds(requestTimeoutMs)}`))
      }, requestTimeoutMs)
      this.#requests.set(id, { resolve, reject, timer })
      reply.raw.once('close', () => {
        const pending = this.#requests.get(id)
        if (!pending) return
        this.#requests.delete(id)
        clearTimeout(pending.timer)
        proc.send({ t: 'cancel', id })
        pending.reject(KernelErrors.pluginUnavailable('The request ended before the plugin answered'))
      })
      const route = this.#manifest.routes[index]!
      proc.send({
        t: 'request',
        id,
        route: index,
        method: route.method,
        url: req.url,
        params: req.params ?? {},
        query: req.query ?? {},
        ...(req.body === undefined ? {} : { body: req.body }),
        headers: forwardedHeaders(req.headers),
        user: identity.user,
        apiToken: identity.apiToken,
        ip: identity.ip,
        reqId,
      })
    }).then((response) => this.#answer(response, reply))
  }

  // ---- internals ----

  async #spawn(ahead?: StartedProcess): Promise<{ proc: PluginProcess; manifest: PluginManifest }> {
    const { description, settings, base } = this.#info
    const started = ahead ?? (await IsolatedLoad.startProcess(this.#info))
    const proc = started.proc
    started.adopt((message) => this.#onMessage(proc, message))
    try {
      await proc.booted
      const loaded = (await proc.call(
        'load',
        [{ entry: this.#info.entry, sdk: base.sdkUrl }],
        settings.callTimeoutMs,
      )) as PluginDescription
      if (loaded.id !== description.id || loaded.version !== description.version)
        throw new Error(
          `it loaded as ${loaded.id} ${loaded.version} instead of ${description.id} ${description.version}: its files changed`,
        )
      const facts = this.#deps.kernel
      const kernel: KernelInfo | null = facts ? { ...facts, dataDir: SANDBOX_PATHS.data, dockerHost: null } : null
      const manifest = (await proc.call('setup', [{ kernel }], settings.callTimeoutMs)) as PluginManifest
      return { proc, manifest }
    } catch (err) {
      const failed = await this.#failedCall(proc, 'its load', err)
      // Its own database refused the new tables: the registry keeps the version it replaces serving.
      throw err instanceof CallError && err.code === MIGRATION_FAILED ? new EntityMigrationError(failed) : failed
    }
  }

  /** The error a failed call into the process ends with; a process that missed a deadline is killed. */
  async #failedCall(proc: PluginProcess, what: string, err: unknown): Promise<Error> {
    if (err instanceof CallError && err.kind === 'timeout') {
      proc.kill(`${what}: ${err.message}`)
      return new Error(err.message)
    }
    if (err instanceof CallError && err.kind === 'gone') {
      const end = await proc.ended
      this.#lastOrigin = end.origin
      return pluginError(end.reason, end.origin, this.#info.dir)
    }
    proc.kill(`${what} failed`)
    if (err instanceof CallError) this.#lastOrigin = err.origin ?? null
    return explain(err, this.#info.dir)
  }

  /** The failure as an Error for the registry, with the origin of the last error (file:line) when one was known. */
  #error(): Error {
    return pluginError(this.#reason ?? 'failed', this.#lastOrigin, this.#info.dir)
  }

  #adopt(proc: PluginProcess, manifest: PluginManifest): void {
    this.#proc = proc
    this.#manifest = manifest
    void proc.ended.then((end) => this.#onEnd(proc, end.reason, end.origin))
  }

  #onEnd(proc: PluginProcess, reason: string, origin: string | null): void {
    if (proc !== this.#proc) return
    this.#reason = reason
    this.#lastOrigin = origin
    if (this.#status === 'stopped' || this.#status === 'failed') return
    this.#endInflight(`The plugin ${this.#id} is unavailable: ${reason}`, 1011)
    // Not started yet (start() says why), or ended while a restart starts it (the restart counts it).
    if (this.#status === 'ready' || this.#status === 'restarting') return
    this.#crash(reason)
  }

  #crash(reason: string): void {
    const now = Date.now()
    this.#crashes = this.#crashes.filter((at) => now - at < CRASH_WINDOW_MS)
    this.#crashes.push(now)
    const count = this.#crashes.length
    this.#reason = reason
    if (count >= MAX_CRASHES) {
      this.#status = 'failed'
      const why = `${reason}; it failed ${count} times within a minute, so it is not restarted again`
      this.#reason = why
      this.#listener?.({ state: 'failed', reason: why, error: this.#error() })
      return
    }
    const delay = Math.min(this.#info.settings.restartDelayMs * 2 ** (count - 1), MAX_RESTART_DELAY_MS)
    this.#status = 'restarting'
    const why = `${reason}; restarting in ${seconds(delay)} (failure ${count} of ${MAX_CRASHES} allowed within a minute)`
    this.#deps.log.warn(`plugin process ended: ${why}`)
    this.#listener?.({ state: 'restarting', reason: why })
    this.#restartTimer = setTimeout(() => void this.#restart(), delay)
    this.#restartTimer.unref()
  }

  async #restart(): Promise<void> {
    if (this.#status !== 'restarting') return
    let spawned: { proc: PluginProcess; manifest: PluginManifest }
    try {
      spawned = await this.#spawn()
    } catch (err) {
      if (this.#status === 'restarting') this.#crash((err as Error).message)
      return
    }
    const { proc, manifest } = spawned
    if (this.#status !== 'restarting') {
      proc.kill('no longer needed')
      return
    }
    if (JSON.stringify(manifest) !== JSON.stringify(this.#manifest)) {
      proc.kill('its routes changed')
      this.#status = 'failed'
      this.#reason = 'its routes or sockets changed after a restart: reload the plugin'
      this.#lastOrigin = null
      this.#listener?.({ state: 'failed', reason: this.#reason, error: this.#error() })
      return
    }
    this.#adopt(proc, manifest)
    try {
      // The services it provides are served by the new process: it runs its `provides` again, offering the same.
      if (this.#offered) {
        const offered = await proc.call('provides', [], this.#info.settings.callTimeoutMs)
        if (JSON.stringify(offered) !== JSON.stringify(this.#offered))
          throw new Error('its services changed after a restart: reload the plugin')
      }
      await proc.call('start', [], this.#info.settings.callTimeoutMs)
    } catch (err) {
      const error = await this.#failedCall(proc, 'start', err)
      if (this.#status === 'restarting' && this.#proc === proc) {
        this.#proc = null
        this.#crash(error.message)
      }
      return
    }
    if (this.#status !== 'restarting' || this.#proc !== proc) return
    this.#status = 'running'
    this.#reason = null
    proc.startHeartbeat(this.#info.settings.heartbeatMs)
    this.#deps.log.info('plugin process restarted')
    this.#listener?.({ state: 'running' })
  }

  #unavailable(): HostdError {
    const state = this.#status === 'ready' ? 'starting' : this.#status
    return KernelErrors.pluginUnavailable(
      `The plugin ${this.#id} is ${state}${this.#reason ? `: ${this.#reason}` : ''}`,
    )
  }

  /** Requests in flight answer 503, open sockets close with `code`. */
  #endInflight(message: string, code: number): void {
    for (const [id, pending] of this.#requests) {
      clearTimeout(pending.timer)
      this.#requests.delete(id)
      pending.reject(KernelErrors.pluginUnavailable(message))
    }
    for (const [id, body] of this.#streams) {
      this.#streams.delete(id)
      body.destroy(new Error(message))
    }
    for (const [sid, socket] of this.#sockets) {
      this.#sockets.delete(sid)
      socket.close(code, code === 1012 ? 'plugin stopped' : 'plugin unavailable')
    }
  }

  #remember(key: string, identity: Identity): void {
    this.#identities.set(key, identity)
    if (this.#identities.size > MAX_IDENTITIES) this.#identities.delete(this.#identities.keys().next().value!)
  }

  #answer(res: ResponseMessage, reply: FastifyReply): unknown {
    if (res.error) {
      const e = res.error
      if (e.code && e.status && e.status >= 400) throw new HostdError(e.code, e.status, e.message)
      this.#deps.log.error({ origin: e.origin ?? null, reqId: reply.request.id }, `route failed: ${e.message}`)
      throw new Error(`the isolated plugin ${this.#id} failed: ${e.message}`)
    }
    reply.code(res.status)
    for (const [name, value] of Object.entries(res.headers)) {
      if ((ALLOWED_RESPONSE_HEADERS as readonly string[]).includes(name) && !/[\r\n]/.test(value))
        reply.header(name, value)
    }
    reply.header('content-security-policy', ISOLATED_CSP)
    const type = res.headers['content-type']
    const body = res.stream ? this.#streams.get(res.id) : undefined
    if (body) {
      this.#followClient(res.id, body, reply)
      return reply.type(type ?? 'application/octet-stream').send(body)
    }
    if (res.status === 204 || res.status === 304) return reply.send()
    if (res.body !== undefined)
      return reply.type(type ?? 'application/json; charset=utf-8').send(JSON.stringify(res.body))
    if (res.text !== undefined) return reply.type(type ?? 'text/plain; charset=utf-8').send(res.text)
    if (res.bytes !== undefined)
      return reply.type(type ?? 'application/octet-stream').send(Buffer.from(res.bytes, 'base64'))
    return reply.send()
  }

  /**
   * The body of a streamed answer (opened as its `response` arrives, so the chunks that follow at once find it): the
   * plugin's `chunk` messages until its `end`. The client going away cancels it in the plugin; what the client does
   * not read waits in the daemon's memory, so past MAX_STREAM_BUFFER it is cut.
   */
  #followClient(id: number, body: PassThrough, reply: FastifyReply): void {
    reply.raw.once('close', () => {
      if (this.#streams.get(id) !== body) return
      this.#streams.delete(id)
      // Gone before the plugin's `end`: its stream is stopped.
      if (!body.writableEnded) this.#proc?.send({ t: 'cancel', id })
      body.destroy()
    })
  }

  #streamed(message: Extract<ChildMessage, { t: 'chunk' | 'end' }>): void {
    const body = this.#streams.get(message.id)
    if (!body || body.writableEnded || body.destroyed) return // the client went away, or it ended already
    if (message.t === 'end') {
      // Kept listed until the client has it all (or goes away): the answer may not be attached to the reply yet.
      body.once('close', () => {
        if (this.#streams.get(message.id) === body) this.#streams.delete(message.id)
      })
      if (message.error) {
        const { message: why, origin } = message.error
        this.#deps.log.error({ origin: origin ?? null }, `streamed answer failed: ${why}`)
        // Cut once what came before has gone out: the client sees the answer broke off, not a short one.
        const cut = () => body.destroy(new Error(why))
        if (body.readableFlowing) setImmediate(cut)
        else body.once('resume', () => setImmediate(cut))
      } else body.end()
      return
    }
    if (body.writableLength > MAX_STREAM_BUFFER) {
      this.#streams.delete(message.id)
      this.#proc?.send({ t: 'cancel', id: message.id })
      body.destroy(new Error('the client reads too slowly'))
      return
    }
    body.write(message.bytes !== undefined ? Buffer.from(message.bytes, 'base64') : (message.text ?? ''))
  }

  #onMessage(proc: PluginProcess, message: Exclude<ChildMessage, { t: 'result' | 'pong' | 'log' | 'fatal' }>): void {
    if (proc !== this.#proc) return
    switch (message.t) {
      case 'chunk':
      case 'end':
        this.#streamed(message)
        return
      case 'response': {
        const pending = this.#requests.get(message.id)
        if (!pending) {
          if (message.stream) proc.send({ t: 'cancel', id: message.id })
          return // after its deadline, or the client went away
        }
        this.#requests.delete(message.id)
        clearTimeout(pending.timer)
        if (message.stream) this.#streams.set(message.id, new PassThrough())
        pending.resolve(message)
        return
      }
      case 'call':
        this.#serve(proc, message)
        return
      case 'socket.send': {
        const socket = this.#sockets.get(message.sid)
        if (!socket || socket.readyState !== socket.OPEN) return
        // What the client has not read yet stays in the daemon's memory: a plugin cannot pile up more than this.
        if (socket.bufferedAmount > MAX_SOCKET_BUFFER) {
          socket.close(1013, 'the client reads too slowly')
          return
        }
        if (message.bytes !== undefined) socket.send(Buffer.from(message.bytes, 'base64'), { binary: true })
        else socket.send(message.text ?? '')
        return
      }
      case 'socket.close': {
        const socket = this.#sockets.get(message.sid)
        if (!socket) return
        try {
          socket.close(message.code ?? 1000, message.reason)
        } catch {
          socket.close(1000)
        }
        return
      }
    }
  }

  /** A call from the plugin into the kernel's services, answered with a `result`. */
  #serve(proc: PluginProcess, call: ChildCall): void {
    const answer = (ok: boolean, value: unknown) =>
      proc.send(
        ok
          ? { t: 'result', id: call.id, ok: true, value: value ?? null }
          : { t: 'result', id: call.id, ok: false, error: callError(value) },
      )
    if (this.#calls >= MAX_CALLS) {
      answer(false, `too many calls at once (at most ${MAX_CALLS})`)
      return
    }
    this.#calls++
    this.#run(proc, call)
      .then(
        (value) => answer(true, value),
        (err: unknown) => answer(false, err),
      )
      .finally(() => this.#calls--)
  }

  async #run(proc: PluginProcess, call: ChildCall): Promise<unknown> {
    const { settings, audit, helper } = this.#deps
    // Only what it asked for in `deps`: a call made up on the channel for anything else is refused.
    const refused = () => new Error(`${call.method}: the plugin did not ask for this service in its deps`)
    switch (call.method) {
      case 'settings.get':
        if (!settings) throw refused()
        return settings.get(call.args[0])
      case 'settings.set': {
        if (!settings) throw refused()
        if (!this.#settingsBudget.take()) throw new Error(`too many settings writes: at most ${SETTINGS_RATE} a second`)
        const size = JSON.stringify(call.args[1] ?? null).length
        if (size > MAX_SETTING_BYTES) throw new Error(`a setting may hold at most ${MAX_SETTING_BYTES / 1048576} MiB`)
        await settings.set(call.args[0], call.args[1] ?? null)
        return null
      }
      case 'settings.delete':
        if (!settings) throw refused()
        if (!this.#settingsBudget.take()) throw new Error(`too many settings writes: at most ${SETTINGS_RATE} a second`)
        await settings.delete(call.args[0])
        return null
      case 'audit.record': {
        if (!audit) throw refused()
        if (!this.#auditBudget.take()) throw new Error(`too many audit records: at most ${AUDIT_RATE} a second`)
        const [event, actor] = call.args
        // Stamped: the action is the plugin's own (prefixed with its id) and the record names the plugin.
        const action = event.action.startsWith(`${this.#id}.`) ? event.action : `${this.#id}.${event.action}`
        const record = { ...event, action, detail: { ...(event.detail ?? {}), plugin: this.#id } }
        if (actor && 'request' in actor) {
          const who = this.#identities.get(actor.request)
          await audit.record(record, who ? { user: who.user, ip: who.ip, apiToken: who.apiToken } : undefined)
        } else await audit.record(record, actor ?? undefined)
        return null
      }
      case 'service.call': {
        const [id, method, args] = call.args
        // The kernel's services have channels of their own (settings, audit with its limits and stamps); of them, only
        // the plugin's sealer is called this way (its key stays in the daemon).
        if (KERNEL_SERVICE_IDS.has(id) && id !== tokens.secrets.id)
          throw new Error(`${id}: a service of the kernel, not called this way`)
        const service = this.#deps.service(id) as Record<string, unknown> | undefined
        if (service === undefined || service === null)
          throw KernelErrors.pluginUnavailable(`No active plugin provides the service "${id}"`)
        const fn = service[method]
        if (typeof fn !== 'function') throw new Error(`the service "${id}" has no method ${method}`)
        // What crosses back is JSON: a Date as its ISO text, what does not serialize dropped, as JSON.stringify does.
        const result: unknown = await (fn as (...a: unknown[]) => unknown).apply(service, args)
        return result === undefined ? null : JSON.parse(JSON.stringify(result) ?? 'null')
      }
      case 'helper.available':
        if (!helper) throw refused()
        return helper.available()
      case 'helper.call': {
        if (!helper) throw refused()
        const [action, args, options] = call.args
        const onEvent = options.events ? (event: unknown) => proc.send({ t: 'event', id: call.id, event }) : undefined
        return helper.call(action, args, {
          ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
          ...(onEvent ? { onEvent } : {}),
        })
      }
    }
  }

  async #admit(index: number, admission: SocketAdmission<unknown>): Promise<void> {
    const proc = this.#proc
    if (this.#status !== 'running' || !proc?.alive) throw this.#unavailable()
    const request = admission.request
    const identity = identityOf(request)
    try {
      await proc.call(
        'admit',
        [index, { user: identity.user, apiToken: identity.apiToken, ip: identity.ip, query: admission.query }],
        this.#info.settings.callTimeoutMs,
      )
    } catch (err) {
      if (err instanceof CallError && err.code && err.status) throw new HostdError(err.code, err.status, err.message)
      if (err instanceof CallError && err.kind === 'timeout')
        throw IsolationErrors.timeout(`The plugin ${this.#id} did not admit the socket in time`)
      throw KernelErrors.pluginUnavailable(
        `The plugin ${this.#id} could not admit the socket: ${explain(err, this.#info.dir).message}`,
      )
    }
  }

  #openSocket(index: number, ws: WebSocket, ctx: SocketContext<unknown>): void {
    const proc = this.#proc
    if (this.#status !== 'running' || !proc?.alive) {
      ws.close(1013, 'plugin unavailable')
      return
    }
    const sid = this.#nextSocket++
    const identity = identityOf(ctx.request)
    this.#remember(`socket-${sid}`, identity)
    this.#sockets.set(sid, ws)
    ws.on('message', (data: Buffer, binary: boolean) => {
      if (this.#proc !== proc) return
      proc.send(
        binary
          ? { t: 'socket.message', sid, bytes: Buffer.from(data).toString('base64') }
          : { t: 'socket.message', sid, text: Buffer.from(data).toString('utf8') },
      )
    })
    ws.once('close', (code: number, reason: Buffer) => {
      this.#sockets.delete(sid)
      if (this.#proc === proc) proc.send({ t: 'socket.closed', sid, code, reason: String(reason ?? '') })
    })
    proc.send({
      t: 'socket.open',
      sid,
      socket: index,
      query: ctx.query ?? {},
      user: identity.user!,
      apiToken: identity.apiToken,
      ip: identity.ip,
      protocol: ws.protocol ?? '',
    })
  }
}
