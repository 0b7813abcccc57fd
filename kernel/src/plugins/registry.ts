import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void
import { basename } from 'node:path'
import { readdir } from 'node:fs/promises'
import type { DependencyContainer } from 'tsyringe'
// Only the two functions used: the whole package is about 45 modules (10-15 ms of a start).
import satisfies from 'semver/functions/satisfies.js'
import validRange from 'semver/ranges/valid.js'
import type { WebSocket } from 'ws'
import type { Logger } from 'pino'
import {
  KERNEL_API_VERSION,
  ROLES,
  isHostdPlugin,
  tokens,
  type DepsMap,
  type ResolvedDeps,
  type HostdPlugin,
  type Settings,
  type RouteDefinition,
  type SocketDefinition,
  type Role,
} from '@hostd/sdk'
import { collectRoutes, collectSockets } from '../http/registrar.ts'
import {
  createInstance,
  mountRoute,
  checkRouteDefinition,
  needsRecentSignIn,
  type InstanceDeps,
} from '../http/instance.ts'
import { KernelErrors } from '../http/errors.ts'
import { Mutex } from '../auth/mutex.ts'
import type { KernelDatabase } from '../db/database.ts'
import { scopedSettings } from '../db/settings.ts'
import type { KernelAudit } from '../audit/service.ts'
import { fingerprint, importPlugin, readPluginPackage } from './loader.ts'
import { RoutingTable, type TableRoute } from './routing-table.ts'
import type { DocumentedRoute } from '../system/openapi.ts'
import { uiInfo, uiProblem, type UiInfo } from '../ui/manifest.ts'

export type PluginState = 'active' | 'disabled' | 'unavailable' | 'failed'

/** One loaded version of a plugin, and what it runs while active. */
interface PluginRuntime {
  app: FastifyInstance
  routes: RouteDefinition[]
  sockets: SocketDefinition[]
  openSockets: Set<WebSocket>
  inflight: number
  provided: string[]
  /** Set once `start` has been called (even if it threw): only then does `stop` run. */
  started: boolean
  /** Aborted when this version stops: sockets and plugin work listen to it. */
  lifetime: AbortController
}

export interface PluginRecord {
  /** The definition's id, or the folder name when the definition could not be read. */
  id: string
  /** Folder the plugin was loaded from; null for a definition handed over in-process (tests). */
  dir: string | null
  builtin: boolean
  fingerprint: string
  definition: HostdPlugin | null
  state: PluginState
  /** Why unavailable, or the error that failed it. */
  reason: string | null
  /** 'dependency' when unavailable because another plugin is not active: settled again on every change. */
  waitingOn: 'dependency' | 'condition' | null
  conditionsCheckedAt: number
  runtime: PluginRuntime | null
}

export interface ExtensionInfo {
  id: string
  version: string | null
  description: string | null
  state: PluginState
  reason?: string
  error?: string
  builtin: boolean
  /** What it adds to the web UI while active, filtered by the caller's role; null when nothing. */
  ui: UiInfo | null
}

interface Serving {
  record: PluginRecord
  runtime: PluginRuntime
}

export interface SocketTarget {
  record: PluginRecord
  def: SocketDefinition
}

export interface RegistryDeps {
  log: Logger
  container: DependencyContainer
  instance: InstanceDeps
  db: KernelDatabase
  audit: KernelAudit
  /** The kernel's own routes: plugins may not take them over. */
  kernelRoutes: RouteDefinition[]
}

const CONDITION_RECHECK_MS = 2000
const DRAIN_TIMEOUT_MS = 10_000

/**
 * Loads, activates, upgrades and unloads plugins while the daemon runs. Each active plugin has its own
 * Fastify instance; `dispatch` picks the instance from one routing table that is rebuilt and swapped on
 * every change. All changes run one at a time.
 */
export class PluginRegistry {
  readonly #deps: RegistryDeps
  readonly #records = new Map<string, PluginRecord>()
  readonly #mutex = new Mutex()
  readonly #disabled = new Set<string>()
  readonly #serviceOwners = new Map<string, PluginRecord>()
  #http: RoutingTable<PluginRecord | null>
  #sockets: RoutingTable<SocketTarget>
  #conditionTimer: NodeJS.Timeout | null = null

  readonly #settings: Settings

  constructor(deps: RegistryDeps) {
    this.#deps = deps
    this.#settings = scopedSettings(deps.db, 'kernel.plugins')
    this.#http = this.#buildHttpTable([])
    this.#sockets = new RoutingTable([], () => '')
  }

  async init(): Promise<void> {
    for (const id of (await this.#settings.get<string[]>('disabled')) ?? []) this.#disabled.add(id)
    this.#conditionTimer = setInterval(() => void this.#recheckConditions(), 10_000)
    this.#conditionTimer.unref()
  }

  /** Every folder directly inside `root` that holds a package.json is a plugin. */
  async loadFolder(root: string, builtin: boolean, only: string[] | null = null): Promise<void> {
    const entries = await readdir(root, { withFileTypes: true }).catch(() => [])
    for (const entry of entries) {
      if (entry.isDirectory() && !entry.name.startsWith('.') && (!only || only.includes(entry.name)))
        await this.reconcile(`${root}/${entry.name}`, builtin)
    }
  }

  /** Hands over a definition in-process (the test harness, embedded use). */
  add(definition: HostdPlugin): Promise<PluginRecord> {
    return this.#mutex.run(async () => {
      const record = this.#newRecord(`inline:${definition.id}`, null, true, '', definition)
      await this.#install(record)
      return record
    })
  }

  /**
   * Brings one folder's plugin in line with the disk: load it if new, reload it if its files changed,
   * unload it if the folder is gone.
   */
  reconcile(dir: string, builtin: boolean): Promise<PluginRecord | null> {
    return this.#mutex.run(async () => {
      const current = this.#records.get(dir)
      const print = await fingerprint(dir)
      const exists = await readdir(dir).then(
        () => true,
        () => false,
      )
      if (!exists) {
        if (current) await this.#unload(current, 'removed')
        return null
      }
      if (current && current.fingerprint === print) return current
      let definition: HostdPlugin | null = null
      let failure: string | null = null
      try {
        const pkg = await readPluginPackage(dir, builtin)
        const exported = await importPlugin(dir, pkg.entry)
        if (!isHostdPlugin(exported))
          throw new Error('its entry does not export default definePlugin({...}) from @hostd/sdk')
        definition = exported
      } catch (err) {
        failure = `could not load: ${(err as Error).message}`
      }
      const record = this.#newRecord(dir, dir, builtin, print, definition)
      if (failure) {
        if (current) await this.#unload(current, 'replaced by a version that fails to load')
        this.#records.set(dir, record)
        this.#fail(record, failure)
        return record
      }
      await this.#install(record, current)
      return record
    })
  }

  enable(id: string): Promise<PluginRecord> {
    return this.#mutex.run(async () => {
      const record = this.#byId(id)
      this.#disabled.delete(id)
      await this.#settings.set('disabled', [...this.#disabled])
      if (record.state === 'disabled' || record.state === 'unavailable') await this.#activate(record)
      await this.#settle()
      return record
    })
  }

  disable(id: string): Promise<PluginRecord> {
    return this.#mutex.run(async () => {
      const record = this.#byId(id)
      this.#disabled.add(id)
      await this.#settings.set('disabled', [...this.#disabled])
      await this.#retire(record)
      record.state = 'disabled'
      record.reason = null
      record.waitingOn = null
      await this.#settle()
      return record
    })
  }

  find(id: string): PluginRecord | undefined {
    for (const record of this.#records.values()) if (record.id === id) return record
    return undefined
  }

  /** Every plugin; `ui` holds the pages and cards `role` may see (all of them without a role). */
  async list(role: Role = 'admin'): Promise<ExtensionInfo[]> {
    await this.#recheckConditions(true)
    return [...this.#records.values()]
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((r) => ({
        id: r.id,
        version: r.definition?.version ?? null,
        description: r.definition?.description ?? null,
        state: r.state,
        ...(r.state === 'unavailable' && r.reason ? { reason: r.reason } : {}),
        ...(r.state === 'failed' && r.reason ? { error: r.reason } : {}),
        builtin: r.builtin,
        ui: uiInfo(r, r.state, role),
      }))
  }

  /** Every route the daemon serves, with its role and owner: the route-table test walks this. */
  routeTable(): DocumentedRoute[] {
    const entry = (r: RouteDefinition, owner: string) => {
      const recentSignIn = needsRecentSignIn(r, owner)
      return {
        method: r.method,
        path: r.path,
        role: r.options.role,
        owner,
        sessionOnly: r.options.sessionOnly === true || recentSignIn,
        recentSignIn,
        schema: r.options.schema,
      }
    }
    const kernel = this.#deps.kernelRoutes.map((r) => entry(r, 'kernel'))
    const plugins = [...this.#records.values()].flatMap((rec) =>
      (rec.runtime?.routes ?? []).map((r) => entry(r, rec.id)),
    )
    return [...kernel, ...plugins]
  }

  /** Hands a request to the instance that serves it: a plugin's, the kernel's (`kernel`), or `unrouted` (404, upgrades). */
  dispatch(req: IncomingMessage, res: ServerResponse, kernel: RequestHandler, unrouted: RequestHandler): void {
    const record = this.#http.find(req.method ?? 'GET', req.url ?? '/')
    if (record === undefined) return unrouted(req, res)
    if (record === null) return kernel(req, res)
    const runtime = record.runtime
    if (!runtime) return unrouted(req, res)
    runtime.inflight++
    res.once('close', () => runtime.inflight--)
    runtime.app.routing(req, res)
  }

  findSocket(url: string): SocketTarget | undefined {
    return this.#sockets.find('GET', url)
  }

  async close(): Promise<void> {
    if (this.#conditionTimer) clearInterval(this.#conditionTimer)
    await this.#mutex.run(async () => {
      for (const record of this.#records.values()) await this.#retire(record)
    })
  }

  /** Runs a condition-gated plugin's gate: 503 with the reason while it is not available. */
  async gate(record: PluginRecord): Promise<Error | null> {
    if (
      record.state === 'unavailable' &&
      record.waitingOn === 'condition' &&
      Date.now() - record.conditionsCheckedAt > CONDITION_RECHECK_MS
    ) {
      await this.#checkConditions(record)
    }
    if (record.state === 'active') return null
    return KernelErrors.pluginUnavailable(`${record.id} is ${record.state}${record.reason ? `: ${record.reason}` : ''}`)
  }

  // ---- internals: every method below runs inside the mutex ----

  #newRecord(
    key: string,
    dir: string | null,
    builtin: boolean,
    print: string,
    definition: HostdPlugin | null,
  ): PluginRecord {
    return {
      id: definition?.id ?? basename(key),
      dir,
      builtin,
      fingerprint: print,
      definition,
      state: 'failed',
      reason: null,
      waitingOn: null,
      conditionsCheckedAt: 0,
      runtime: null,
    }
  }

  #byId(id: string): PluginRecord {
    const record = this.find(id)
    if (!record) throw KernelErrors.pluginNotFound(`No plugin "${id}" is installed`)
    return record
  }

  /** Puts a freshly read record in place of `previous` (an upgrade) or beside the others. */
  async #install(record: PluginRecord, previous?: PluginRecord): Promise<void> {
    const key = record.dir ?? `inline:${record.id}`
    const def = record.definition!
    const clash = this.find(def.id)
    if (clash && clash !== previous) {
      this.#records.set(key, record)
      this.#fail(record, `plugin id "${def.id}" is already provided by ${clash.dir ?? 'a built-in definition'}`)
      return
    }
    if (!validRange(def.kernel) || !satisfies(KERNEL_API_VERSION, def.kernel)) {
      if (previous) await this.#unload(previous, 'replaced')
      this.#records.set(key, record)
      this.#fail(record, `needs kernel API ${def.kernel}, but this kernel provides ${KERNEL_API_VERSION}`)
      return
    }
    this.#records.set(key, record)
    if (this.#disabled.has(def.id)) {
      if (previous) await this.#retire(previous)
      record.state = 'disabled'
    } else {
      await this.#activate(record, previous)
    }
    if (previous) await this.#audit('plugin.upgrade', record, { from: previous.definition?.version ?? null })
    else await this.#audit('plugin.load', record)
    await this.#settle()
  }

  async #unload(record: PluginRecord, why: string): Promise<void> {
    await this.#retire(record)
    this.#records.delete(record.dir ?? `inline:${record.id}`)
    await this.#audit('plugin.unload', record, { why })
    await this.#settle()
  }

  /**
   * Starts a plugin on its own Fastify instance. The routing table is swapped only when everything has
   * succeeded; until then the previous version (if any) keeps serving.
   */
  async #activate(record: PluginRecord, previous?: PluginRecord): Promise<void> {
    const def = record.definition!
    const missing = this.#missingDependency(def)
    if (missing) {
      if (previous) await this.#retire(previous)
      record.state = 'unavailable'
      record.reason = missing
      record.waitingOn = 'dependency'
      return
    }
    const log = this.#deps.log.child({ plugin: def.id })
    const scope = this.#deps.container.createChildContainer()
    scope.register(tokens.logger.id, { useValue: log })
    scope.register(tokens.settings.id, { useValue: scopedSettings(this.#deps.db, `plugin.${def.id}`) })
    let runtime: PluginRuntime | null = null
    try {
      const deps: ResolvedDeps<DepsMap> = {}
      for (const [name, token] of Object.entries((def.deps ?? {}) as DepsMap)) {
        if (!scope.isRegistered(token.id, true))
          throw new Error(`needs service "${token.id}", which neither the kernel nor an active plugin provides`)
        deps[name] = scope.resolve(token.id)
      }
      const uiError = uiProblem(record) ?? this.#uiPathConflict(record, previous)
      if (uiError) throw new Error(uiError)
      const routes = def.routes ? collectRoutes((r) => def.routes!(r, deps)) : []
      routes.forEach(checkRouteDefinition)
      const sockets = def.sockets ? collectSockets((s) => def.sockets!(s, deps)) : []
      for (const socket of sockets) {
        if (!(ROLES as readonly string[]).includes(socket.options?.role))
          throw new Error(`socket ${socket.path} declares no valid role: refused`)
      }
      const app = createInstance(this.#deps.instance, undefined, { liveRequests: true })
      const lifetime = new AbortController()
      app.decorateRequest('lifetime', {
        getter(this: FastifyRequest) {
          return this.liveRequest?.lifetime(lifetime.signal) ?? lifetime.signal
        },
      })
      runtime = { app, routes, sockets, openSockets: new Set(), inflight: 0, provided: [], started: false, lifetime }
      // Build the next tables first: a route conflict fails this plugin before anything of it runs.
      const next = [...this.#serving(previous, record), { record, runtime }]
      const nextHttp = this.#buildHttpTable(next)
      const nextSockets = this.#buildSocketTable(next)
      if (def.entities?.length) await this.#deps.db.addEntities(def.entities)
      const gate: onRequestHookHandler = (_req, _reply, done) => {
        if (record.state === 'active') return done()
        void this.gate(record).then((err) => done(err ?? undefined))
      }
      for (const route of routes) mountRoute(app, this.#deps.instance, route, def.id, [gate])
      await app.ready()
      const provided = def.provides ? await def.provides(deps) : []
      runtime.started = true
      await def.start?.(deps)
      record.runtime = runtime
      await this.#checkConditions(record)
      if (previous) this.#detach(previous)
      for (const binding of provided) {
        this.#deps.container.register(binding.token.id, { useValue: binding.value })
        this.#serviceOwners.set(binding.token.id, record)
        runtime.provided.push(binding.token.id)
      }
      this.#http = nextHttp
      this.#sockets = nextSockets
      if (previous?.runtime) {
        const old = previous.runtime
        previous.runtime = null
        await this.#stopRuntime(previous, old)
      }
      log.info({ version: def.version, state: record.state, routes: routes.length }, 'plugin activated')
    } catch (err) {
      record.runtime = null
      if (runtime) await this.#stopRuntime(record, runtime)
      if (previous) await this.#retire(previous)
      this.#fail(record, (err as Error).message)
    }
  }

  /** Stops serving a plugin: out of the tables first, then in-flight requests finish, then it stops. */
  async #retire(record: PluginRecord): Promise<void> {
    const runtime = record.runtime
    if (!runtime) return
    this.#detach(record)
    record.runtime = null
    const serving = this.#serving()
    this.#http = this.#buildHttpTable(serving)
    this.#sockets = this.#buildSocketTable(serving)
    await this.#stopRuntime(record, runtime)
  }

  /** Withdraws the services a plugin provided (unless a newer version took them over). */
  #detach(record: PluginRecord): void {
    for (const id of record.runtime?.provided ?? []) {
      if (this.#serviceOwners.get(id) !== record) continue
      this.#serviceOwners.delete(id)
      this.#deps.container.register(id, {
        useFactory: () => {
          throw new Error(`service "${id}" is gone: plugin ${record.id} was unloaded`)
        },
      })
    }
  }

  async #stopRuntime(record: PluginRecord, runtime: PluginRuntime): Promise<void> {
    // Long-lived responses and sockets hear the end first; ordinary requests then get up to 10 s to finish.
    runtime.lifetime.abort()
    const deadline = Date.now() + DRAIN_TIMEOUT_MS
    while (runtime.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    for (const socket of runtime.openSockets) socket.close(1012, 'plugin reloaded or unloaded')
    try {
      if (runtime.started) await record.definition?.stop?.()
    } catch (err) {
      this.#deps.log.warn({ err, plugin: record.id }, 'plugin stop failed')
    }
    await runtime.app.close().catch(() => undefined)
  }

  #fail(record: PluginRecord, reason: string): void {
    record.state = 'failed'
    record.reason = reason
    record.waitingOn = null
    this.#deps.log.warn({ plugin: record.id, dir: record.dir }, `plugin failed: ${reason}`)
    void this.#audit('plugin.load', record, { error: reason }, 'failure')
  }

  #missingDependency(def: HostdPlugin): string | null {
    for (const [id, range] of Object.entries(def.dependsOn ?? {})) {
      const dep = this.find(id)
      if (!dep || !dep.definition) return `needs plugin ${id} ${range}, which is not installed`
      if (dep.state !== 'active') return `needs plugin ${id} ${range}, which is ${dep.state}`
      if (!satisfies(dep.definition.version, range))
        return `needs plugin ${id} ${range}, but ${dep.definition.version} is installed`
    }
    return null
  }

  /** After any change: start plugins whose dependencies are now active, stop those whose went away. */
  async #settle(): Promise<void> {
    for (let pass = 0; pass < 10; pass++) {
      let changed = false
      for (const record of this.#records.values()) {
        if (!record.definition) continue
        const missing = this.#missingDependency(record.definition)
        if (record.runtime && missing) {
          await this.#retire(record)
          Object.assign(record, { state: 'unavailable', reason: missing, waitingOn: 'dependency' })
          changed = true
        } else if (!record.runtime && record.waitingOn === 'dependency' && !missing) {
          await this.#activate(record)
          changed = true
        }
      }
      if (!changed) return
    }
  }

  async #checkConditions(record: PluginRecord): Promise<void> {
    record.conditionsCheckedAt = Date.now()
    if (!record.runtime) return
    let reason: string | null = null
    for (const condition of record.definition?.conditions ?? []) {
      try {
        const result = await condition.check()
        if (result !== true) reason = typeof result === 'string' ? result : `${condition.name} is not met`
      } catch (err) {
        reason = `${condition.name}: ${(err as Error).message}`
      }
      if (reason) break
    }
    record.state = reason ? 'unavailable' : 'active'
    record.reason = reason
    record.waitingOn = reason ? 'condition' : null
  }

  async #recheckConditions(onlyStale = false): Promise<void> {
    for (const record of this.#records.values()) {
      if (!record.runtime || !record.definition?.conditions?.length) continue
      if (onlyStale && Date.now() - record.conditionsCheckedAt < CONDITION_RECHECK_MS) continue
      await this.#checkConditions(record)
    }
  }

  /** A UI page path another active plugin already has (pages, like routes, have one owner). */
  #uiPathConflict(record: PluginRecord, previous?: PluginRecord): string | null {
    for (const page of record.definition?.ui?.pages ?? []) {
      for (const { record: other } of this.#serving(previous, record)) {
        if (other.definition?.ui?.pages?.some((p) => p.path === page.path))
          return `UI page ${page.path} is served by plugin ${other.id} already`
      }
    }
    return null
  }

  /** The plugins serving now, leaving out the given records. */
  #serving(...except: (PluginRecord | undefined)[]): Serving[] {
    return [...this.#records.values()]
      .filter((r) => r.runtime && !except.includes(r))
      .map((record) => ({ record, runtime: record.runtime! }))
  }

  #buildHttpTable(serving: Serving[]): RoutingTable<PluginRecord | null> {
    const routes: TableRoute<PluginRecord | null>[] = []
    const add = (defs: RouteDefinition[], target: PluginRecord | null) => {
      for (const r of defs) {
        routes.push({ method: r.method, path: r.path, target })
        if (r.method === 'GET') routes.push({ method: 'HEAD', path: r.path, target })
      }
    }
    add(this.#deps.kernelRoutes, null)
    for (const { record, runtime } of serving) add(runtime.routes, record)
    return new RoutingTable(routes, (t) => (t ? `plugin ${t.id}` : 'the kernel'))
  }

  #buildSocketTable(serving: Serving[]): RoutingTable<SocketTarget> {
    const routes: TableRoute<SocketTarget>[] = []
    for (const { record, runtime } of serving)
      for (const def of runtime.sockets) routes.push({ method: 'GET', path: def.path, target: { record, def } })
    return new RoutingTable(routes, (t) => `plugin ${t.record.id}`)
  }

  async #audit(
    action: string,
    record: PluginRecord,
    detail: Record<string, unknown> = {},
    result: 'success' | 'failure' = 'success',
  ) {
    await this.#deps.audit.record({
      action,
      target: record.id,
      result,
      detail: { version: record.definition?.version ?? null, ...detail },
    })
  }
}
