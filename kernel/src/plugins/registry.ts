import type { onRequestHookHandler } from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { readdir } from 'node:fs/promises'
import type { DependencyContainer } from 'tsyringe'
import type { Logger } from 'pino'
import {
  Mutex,
  tokens,
  type HostdPlugin,
  type Settings,
  type RouteDefinition,
  type Role,
  type ServiceBinding,
} from '@hostd/sdk'
import type { InstanceDeps } from '../http/instance.ts'
import { KernelErrors } from '../http/errors.ts'
import type { KernelDatabase } from '../db/database.ts'
import { scopedSettings } from '../db/settings.ts'
import type { KernelAudit } from '../audit/service.ts'
import type { DocumentedRoute } from '../system/openapi.ts'
import { uiProblem } from '../ui/manifest.ts'
import { fingerprint, loadDefinition } from './loader.ts'
import { checkConditions, conditionsStale } from './conditions.ts'
import { ProvidedServices, kernelApiProblem, missingDependency, resolveDeps } from './dependencies.ts'
import {
  awaitDependency,
  extensionInfo,
  newRecord,
  recordKey,
  type ExtensionInfo,
  type PluginRecord,
  type PluginRuntime,
  type Serving,
  type SocketTarget,
} from './records.ts'
import { mountRoutes, prepareRuntime, stopRuntime } from './runtime.ts'
import { buildTables, documentedRoutes, uiPathConflict, type Tables } from './tables.ts'

export type { ExtensionInfo, PluginRecord, PluginState, SocketTarget } from './records.ts'

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

export interface RegistryDeps {
  log: Logger
  container: DependencyContainer
  instance: InstanceDeps
  db: KernelDatabase
  audit: KernelAudit
  /** The kernel's own routes: plugins may not take them over. */
  kernelRoutes: RouteDefinition[]
  /** Services by token id that win over the kernel's and every provider's (the test harness's `services`). */
  overrides?: ReadonlyMap<string, unknown>
}

/**
 * Loads, activates, upgrades and unloads plugins while the daemon runs. Each active plugin has its own
 * Fastify instance; `dispatch` picks the instance from one routing table that is rebuilt and swapped on
 * every change. All changes run one at a time. Beside it: records.ts (what is known of a plugin),
 * dependencies.ts (kernel API range, other plugins, services), runtime.ts (one load: setup, routes, stop),
 * conditions.ts, tables.ts (who serves which path).
 */
export class PluginRegistry {
  readonly #deps: RegistryDeps
  readonly #records = new Map<string, PluginRecord>()
  readonly #mutex = new Mutex()
  readonly #disabled = new Set<string>()
  readonly #services: ProvidedServices
  #tables: Tables
  #conditionTimer: NodeJS.Timeout | null = null

  readonly #settings: Settings

  constructor(deps: RegistryDeps) {
    this.#deps = deps
    this.#settings = scopedSettings(deps.db, 'kernel.plugins')
    this.#services = new ProvidedServices(deps.container)
    this.#tables = buildTables(deps.kernelRoutes, [])
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
      const record = newRecord(`inline:${definition.id}`, null, true, '', definition)
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
      const loaded = await loadDefinition(dir, builtin)
      const record = newRecord(dir, dir, builtin, print, typeof loaded === 'string' ? null : loaded)
      if (typeof loaded === 'string') {
        if (current) await this.#unload(current, 'replaced by a version that fails to load')
        this.#records.set(dir, record)
        this.#fail(record, loaded)
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

  /**
   * What `plugin`'s `setup` returned for its running load in this registry, or undefined (not running, or another
   * definition has its id). Tests look inside a plugin's services through it.
   */
  stateOf(plugin: HostdPlugin): unknown {
    const record = this.find(plugin.id)
    return record?.definition === plugin ? record.runtime?.state : undefined
  }

  /** Every plugin; `ui` holds the pages and cards `role` may see (all of them without a role). */
  async list(role: Role = 'admin'): Promise<ExtensionInfo[]> {
    await this.#recheckConditions(true)
    return [...this.#records.values()].sort((a, b) => a.id.localeCompare(b.id)).map((r) => extensionInfo(r, role))
  }

  /** Every route the daemon serves, with its role and owner: the route-table test walks this. */
  routeTable(): DocumentedRoute[] {
    return documentedRoutes(this.#deps.kernelRoutes, this.#records.values())
  }

  /** Hands a request to the instance that serves it: a plugin's, the kernel's (`kernel`), or `unrouted` (404, upgrades). */
  dispatch(req: IncomingMessage, res: ServerResponse, kernel: RequestHandler, unrouted: RequestHandler): void {
    const record = this.#tables.http.find(req.method ?? 'GET', req.url ?? '/')
    if (record === null) {
      kernel(req, res)
      return
    }
    const runtime = record?.runtime
    if (!runtime) {
      unrouted(req, res) // no route, or its plugin is not running
      return
    }
    runtime.inflight++
    res.once('close', () => runtime.inflight--)
    runtime.app.routing(req, res)
  }

  findSocket(url: string): SocketTarget | undefined {
    return this.#tables.sockets.find('GET', url)
  }

  async close(): Promise<void> {
    if (this.#conditionTimer) clearInterval(this.#conditionTimer)
    await this.#mutex.run(async () => {
      for (const record of this.#records.values()) await this.#retire(record)
    })
  }

  /** Runs a condition-gated plugin's gate: 503 with the reason while it is not available. */
  async gate(record: PluginRecord): Promise<Error | null> {
    if (record.state === 'unavailable' && record.waitingOn === 'condition' && conditionsStale(record)) {
      await checkConditions(record)
    }
    if (record.state === 'active') return null
    return KernelErrors.pluginUnavailable(`${record.id} is ${record.state}${record.reason ? `: ${record.reason}` : ''}`)
  }

  // ---- internals: every method below runs inside the mutex ----

  #byId(id: string): PluginRecord {
    const record = this.find(id)
    if (!record) throw KernelErrors.pluginNotFound(`No plugin "${id}" is installed`)
    return record
  }

  /** Puts a freshly read record in place of `previous` (an upgrade) or beside the others. */
  async #install(record: PluginRecord, previous?: PluginRecord): Promise<void> {
    const key = recordKey(record)
    const def = record.definition!
    const clash = this.find(def.id)
    if (clash && clash !== previous) {
      this.#records.set(key, record)
      this.#fail(record, `plugin id "${def.id}" is already provided by ${clash.dir ?? 'a built-in definition'}`)
      return
    }
    const unsupported = kernelApiProblem(def.kernel)
    if (unsupported) {
      if (previous) await this.#unload(previous, 'replaced')
      this.#records.set(key, record)
      this.#fail(record, unsupported)
      return
    }
    this.#records.set(key, record)
    // Once per load: what the definition uses of an older contract shape (also listed by GET /api/extensions). A
    // definition made by a copy of an sdk older than 1.1.0 bundled into the plugin has no list.
    for (const warning of def.warnings ?? []) this.#deps.log.warn({ plugin: def.id, dir: record.dir }, warning)
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
    this.#records.delete(recordKey(record))
    await this.#audit('plugin.unload', record, { why })
    await this.#settle()
  }

  /**
   * Starts a plugin on its own Fastify instance. The routing tables are swapped only when everything has
   * succeeded; until then the previous version (if any) keeps serving.
   */
  async #activate(record: PluginRecord, previous?: PluginRecord): Promise<void> {
    const def = record.definition!
    const missing = missingDependency(def, (id) => this.find(id))
    if (missing) {
      if (previous) await this.#retire(previous)
      awaitDependency(record, missing)
      return
    }
    let runtime: PluginRuntime | null = null
    try {
      const deps = resolveDeps(this.#scope(def), def)
      const uiError = uiProblem(record) ?? uiPathConflict(record, this.#serving(previous, record))
      if (uiError) throw new Error(uiError)
      runtime = await prepareRuntime(def, deps, this.#deps.instance)
      // Build the next tables first: a route conflict fails this plugin before anything of it runs.
      const next = buildTables(this.#deps.kernelRoutes, [...this.#serving(previous, record), { record, runtime }])
      if (def.entities?.length) await this.#deps.db.addEntities(def.entities)
      await mountRoutes(runtime, this.#deps.instance, def.id, this.#gateHook(record))
      const provided = await runtime.hooks.provides()
      runtime.started = true
      await runtime.hooks.start()
      record.runtime = runtime
      await checkConditions(record)
      await this.#takeOver(record, runtime, provided, next, previous)
    } catch (err) {
      record.runtime = null
      if (runtime) await stopRuntime(runtime, this.#pluginLog(record))
      if (previous) await this.#retire(previous)
      this.#fail(record, (err as Error).message)
    }
  }

  /** The services a plugin's deps resolve from: the kernel's and active plugins', with its own logger and settings. */
  #scope(def: HostdPlugin): DependencyContainer {
    const scope = this.#deps.container.createChildContainer()
    scope.register(tokens.logger.id, { useValue: this.#deps.log.child({ plugin: def.id }) })
    scope.register(tokens.settings.id, { useValue: scopedSettings(this.#deps.db, `plugin.${def.id}`) })
    for (const [id, value] of this.#deps.overrides ?? []) scope.register(id, { useValue: value })
    return scope
  }

  /** Lets a condition-gated plugin's requests through only while it is active (503 with the reason otherwise). */
  #gateHook(record: PluginRecord): onRequestHookHandler {
    return (_req, _reply, done) => {
      if (record.state === 'active') return done()
      void this.gate(record).then((err) => done(err ?? undefined))
    }
  }

  /** A started load goes live: its services registered, the tables swapped, the version it replaces stopped. */
  async #takeOver(
    record: PluginRecord,
    runtime: PluginRuntime,
    provided: ServiceBinding[],
    next: Tables,
    previous?: PluginRecord,
  ): Promise<void> {
    if (previous) this.#services.withdraw(previous)
    this.#services.publish(record, runtime, provided)
    this.#tables = next
    if (previous?.runtime) {
      const old = previous.runtime
      previous.runtime = null
      await stopRuntime(old, this.#pluginLog(previous))
    }
    const { version } = record.definition!
    this.#pluginLog(record).info({ version, state: record.state, routes: runtime.routes.length }, 'plugin activated')
  }

  /** Stops serving a plugin: out of the tables first, then in-flight requests finish, then it stops. */
  async #retire(record: PluginRecord): Promise<void> {
    const runtime = record.runtime
    if (!runtime) return
    this.#services.withdraw(record)
    record.runtime = null
    this.#tables = buildTables(this.#deps.kernelRoutes, this.#serving())
    await stopRuntime(runtime, this.#pluginLog(record))
  }

  #fail(record: PluginRecord, reason: string): void {
    record.state = 'failed'
    record.reason = reason
    record.waitingOn = null
    this.#deps.log.warn({ plugin: record.id, dir: record.dir }, `plugin failed: ${reason}`)
    void this.#audit('plugin.load', record, { error: reason }, 'failure')
  }

  /** After any change: start plugins whose dependencies are now active, stop those whose went away. */
  async #settle(): Promise<void> {
    for (let pass = 0; pass < 10; pass++) {
      let changed = false
      for (const record of this.#records.values()) {
        if (!record.definition) continue
        const missing = missingDependency(record.definition, (id) => this.find(id))
        if (record.runtime && missing) {
          await this.#retire(record)
          awaitDependency(record, missing)
          changed = true
        } else if (!record.runtime && record.waitingOn === 'dependency' && !missing) {
          await this.#activate(record)
          changed = true
        }
      }
      if (!changed) return
    }
  }

  async #recheckConditions(onlyStale = false): Promise<void> {
    for (const record of this.#records.values()) {
      if (!record.runtime || !record.definition?.conditions?.length) continue
      if (onlyStale && !conditionsStale(record)) continue
      await checkConditions(record)
    }
  }

  /** The plugins serving now, leaving out the given records. */
  #serving(...except: (PluginRecord | undefined)[]): Serving[] {
    return [...this.#records.values()]
      .filter((r) => r.runtime && !except.includes(r))
      .map((record) => ({ record, runtime: record.runtime! }))
  }

  #pluginLog(record: PluginRecord): Logger {
    return this.#deps.log.child({ plugin: record.id })
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
