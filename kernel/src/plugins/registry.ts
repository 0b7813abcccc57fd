import type { onRequestHookHandler } from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { mkdir, readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import type { DependencyContainer } from 'tsyringe'
import type { Logger } from 'pino'
import {
  Mutex,
  defineError,
  tokens,
  type HostdPlugin,
  type Settings,
  type RouteDefinition,
  type Role,
  type ServiceBinding,
  type SecretSealer,
  type ServiceExposure,
} from '@hostd/sdk'
import type { InstanceDeps } from '../http/instance.ts'
import { KernelErrors } from '../http/errors.ts'
import type { KernelDatabase } from '../db/database.ts'
import { scopedSettings } from '../db/settings.ts'
import { SettingEntity, kernelEntities } from '../db/entities.ts'
import type { EntitySchema } from '@mikro-orm/core'
import type { KernelAudit } from '../audit/service.ts'
import type { KernelEventHub, PluginStateNow } from '../events.ts'
import type { DocumentedRoute } from '../system/openapi.ts'
import { iconWarnings, uiProblem } from '../ui/manifest.ts'
import { fingerprint, locateSyntaxError, packageVersion } from './loader.ts'
import { EntityMigrationError } from '../db/database.ts'
import { checkConditions, conditionsStale } from './conditions.ts'
import { ProvidedServices, grantThirdParty, kernelApiProblem, missingDependency, resolveDeps } from './dependencies.ts'
import { InstallErrors } from './install.ts'
import {
  PermissionErrors,
  PluginGrants,
  describePermissions,
  permissionInfo,
  type HeldUpgrade,
  type PermissionInfo,
} from './permissions.ts'
import {
  awaitDependency,
  extensionInfo,
  isPlaceholder,
  newRecord,
  recordKey,
  type ExtensionInfo,
  type PluginRecord,
  type PluginRuntime,
  type Serving,
  type SocketTarget,
} from './records.ts'
import { entryOf, importDefinition, mountRoutes, prepareRuntime, stopRuntime, type PluginCall } from './runtime.ts'
import {
  answerWithin,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  errorOrigin,
  formatDuration,
  PluginCallError,
  withDeadline,
} from './supervision.ts'
import { IsolationErrors } from '../isolation/errors.ts'
import { isIsolated, watchIsolated, type IsolationChange, type PluginIsolation } from '../isolation/index.ts'
import {
  MIGRATION_FAILED,
  openPluginDatabase,
  PLUGIN_DATABASE_FILE,
  type PluginDatabase,
} from '../../../sdk/src/isolated/database.ts'
import { dataFolderPath } from './plugin-data.ts'
import { buildTables, documentedRoutes, groundProblem, uiPathConflict, type Tables } from './tables.ts'

export type { ExtensionInfo, PluginRecord, PluginState, SocketTarget } from './records.ts'

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

/** A plugin route asked for while its plugin is still being imported or started (docs/API.md). */
const pluginStarting = defineError('HOSTD_PLUGIN_STARTING', 503, 'This feature is starting: try again in a moment')

/** The 503 for such a request, written straight to the response: no plugin instance is there to answer it yet. */
function answerStarting(res: ServerResponse, message: string): void {
  const err = pluginStarting(message)
  res.writeHead(err.statusCode, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' })
  res.end(JSON.stringify({ error: err.code, message: err.message }))
}

export interface RegistryDeps {
  log: Logger
  container: DependencyContainer
  instance: InstanceDeps
  db: KernelDatabase
  audit: KernelAudit
  /** Where plugin state changes are announced (`hostd.events`, for built-in plugins). */
  events?: KernelEventHub
  /** The kernel's own routes: plugins may not take them over. */
  kernelRoutes: RouteDefinition[]
  /** The daemon's data dir: a third-party plugin's own database is in `<data dir>/plugin-data/<id>`. */
  dataDir: string
  /** Each plugin's `tokens.secrets`: a sealer with a key of its own (kernel/src/auth/secret-box.ts). */
  secrets: { forPlugin(id: string): SecretSealer }
  /** Services by token id that win over the kernel's and every provider's (the test harness's `services`). */
  overrides?: ReadonlyMap<string, unknown>
  /** What those services let third-party plugins call (their bindings' `expose`). */
  overrideExposures?: ReadonlyMap<string, ServiceExposure>
  /** How long each call into plugin code may take (HOSTD_PLUGIN_CALL_TIMEOUT_MS; 10 s by default). */
  callTimeoutMs?: number
  /** Runs third-party plugins in sandboxed processes (kernel/src/isolation); without it they run in process. */
  isolation?: PluginIsolation | null
  /** Development mode (HOSTD_DEV=1): a third-party plugin's module URLs carry its load's revision (`?rev=`). */
  dev?: boolean
}

/** What an isolated plugin's proxy resolves for `tokens.database`: never used, since its runner opens its own. */
const ISOLATED_DATABASE = Object.freeze({
  get orm(): never {
    throw new Error("an isolated plugin's database is opened in its own process")
  },
  em(): never {
    throw new Error("an isolated plugin's database is opened in its own process")
  },
})

/**
 * The one audit record of a load an admin asked for through the install route: what the registry would have written
 * (`plugin.load`, `plugin.upgrade` or `plugin.hold`, with its result and detail), handed to the route instead, which
 * writes one record with the admin as actor (`installOutcome`).
 */
export interface LoadOutcome {
  action: string
  result: 'success' | 'failure'
  detail: Record<string, unknown>
}

/** The actions a load writes: for a folder an admin is installing, the route writes its one record instead. */
const OUTCOME_ACTIONS = new Set(['plugin.load', 'plugin.upgrade', 'plugin.hold'])

/** A removed plugin's settings keys and tables (storedData). */
export interface StoredData {
  settings: string[]
  tables: string[]
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
  readonly #lock = new Mutex()
  /** Changes run one at a time; each ends by announcing the plugin states it changed (#report). */
  readonly #mutex = { run: <T>(task: () => Promise<T>) => this.#lock.run(task).finally(() => this.#report()) }
  readonly #disabled = new Set<string>()
  readonly #services: ProvidedServices
  #tables: Tables
  #conditionTimer: NodeJS.Timeout | null = null
  readonly #callTimeoutMs: number
  /** Aborted by `close`: a call into plugin code still waited on is abandoned, and nothing new loads. */
  readonly #closing = new AbortController()
  /** Loads in progress by record key: disable, removal and `close` abandon them, so a hanging call holds nothing. */
  readonly #loads = new Map<string, AbortController>()
  /** True during the daemon's first loads (`startUp`). */
  #startingUp = false

  readonly #settings: Settings
  /** What each third-party plugin was granted, and which ones an admin trusts to run in process. */
  readonly #grants: PluginGrants
  /** Third-party versions waiting for an admin to approve the permissions they ask for, by plugin id. */
  readonly #held = new Map<string, HeldUpgrade>()
  /** Folders an admin is installing through the API (`expectInstall`), with the outcome of their load once known. */
  readonly #adminInstalls = new Map<string, LoadOutcome | null>()
  /** Whether module URLs carry each load's revision, so an open page reloads a changed module (HOSTD_DEV=1). */
  readonly #dev: boolean

  constructor(deps: RegistryDeps) {
    this.#deps = deps
    this.#callTimeoutMs = deps.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS
    this.#dev = deps.dev === true
    this.#settings = scopedSettings(deps.db, 'kernel.plugins')
    this.#grants = new PluginGrants(this.#settings)
    if (deps.isolation) {
      deps.isolation.trusted = (id) => this.#grants.isTrusted(id)
      deps.isolation.networkGranted = (id) => this.#grants.networkGranted(id)
    }
    this.#services = new ProvidedServices(deps.container)
    this.#tables = buildTables(deps.kernelRoutes, [])
  }

  async init(): Promise<void> {
    for (const id of (await this.#settings.get<string[]>('disabled')) ?? []) this.#disabled.add(id)
    await this.#grants.load()
    this.#conditionTimer = setInterval(() => void this.#recheckConditions(), 10_000)
    this.#conditionTimer.unref()
  }

  /**
   * Every folder directly inside `root` that holds a package.json is a plugin. Each is listed `starting` at once, until
   * its turn comes.
   */
  async loadFolder(root: string, builtin: boolean, only: string[] | null = null): Promise<void> {
    const entries = await readdir(root, { withFileTypes: true }).catch(() => [])
    const dirs = entries
      // A symbolic link to a folder is a plugin folder too, as the watcher's hot load has it (docs/ARCHITECTURE.md).
      .filter((entry) => (entry.isDirectory() || entry.isSymbolicLink()) && !entry.name.startsWith('.'))
      .filter((entry) => !only || only.includes(entry.name))
      .map((entry) => `${root}/${entry.name}`)
    for (const dir of dirs)
      if (!this.#records.has(dir))
        this.#records.set(dir, { ...newRecord(dir, dir, builtin, '', null), state: 'starting' })
    for (const dir of dirs) await this.reconcile(dir, builtin)
  }

  /**
   * Runs the daemon's first loads (`load`), which it starts once it listens: meanwhile a request under /api that no
   * route takes answers 503 HOSTD_PLUGIN_STARTING, as its plugin may be one still to load.
   */
  async startUp(load: () => Promise<void>): Promise<void> {
    this.#startingUp = true
    try {
      await load()
    } finally {
      this.#startingUp = false
    }
  }

  /** Hands over a definition in-process (the test harness, embedded use). */
  add(definition: HostdPlugin): Promise<PluginRecord> {
    return this.#mutex.run(async () => {
      const record = newRecord(`inline:${definition.id}`, null, true, '', definition)
      if (this.#closing.signal.aborted) return record
      await this.#install(record)
      return record
    })
  }

  /**
   * Brings one folder's plugin in line with the disk: load it if new, reload it if its files changed,
   * unload it if the folder is gone.
   */
  reconcile(dir: string, builtin: boolean): Promise<PluginRecord | null> {
    // A folder removed while its plugin loads: the load is abandoned, not waited for (its import or start may hang).
    if (this.#loads.has(dir))
      void readdir(dir).catch(() => this.#loads.get(dir)?.abort(new Error('its folder was removed')))
    return this.#mutex.run(async () => {
      const existing = this.#records.get(dir)
      const current = existing && !isPlaceholder(existing) ? existing : undefined
      if (this.#closing.signal.aborted) return current ?? null
      const print = await fingerprint(dir)
      const exists = await readdir(dir).then(
        () => true,
        () => false,
      )
      if (!exists) {
        if (current) await this.#unload(current, 'removed')
        else if (existing) this.#records.delete(dir)
        return null
      }
      if (current && current.fingerprint === print) return current
      // Listed as `starting` while it is imported (a new folder; a new version of a known one is listed once imported).
      if (!current) this.#records.set(dir, { ...newRecord(dir, dir, builtin, print, null), state: 'starting' })
      const load = this.#beginLoad(dir)
      try {
        const entry = await entryOf(dir, builtin)
        const loaded =
          typeof entry === 'string'
            ? await importDefinition(dir, entry, this.#caller(load.signal), builtin ? null : this.#deps.isolation)
            : { error: entry, reason: entry.message }
        const record = newRecord(dir, dir, builtin, print, 'definition' in loaded ? loaded.definition : null)
        record.entry = typeof entry === 'string' ? entry : null
        record.packageVersion = await packageVersion(dir)
        if ('error' in loaded) {
          const syntax = await this.#syntaxProblem(record, loaded.error)
          // One record for the outcome: the upgrade (or load) failed; the version it replaces stops serving.
          if (current) {
            this.#held.delete(current.id)
            await this.#retire(current)
            this.#records.delete(dir)
          }
          this.#records.set(dir, record)
          if (syntax) this.#fail(record, syntax, `${loaded.reason} (at ${syntax.at})`, current)
          else this.#fail(record, loaded.error, loaded.reason, current)
          if (current) await this.#settle()
          return record
        }
        const declared = record.definition?.version
        if (record.packageVersion && declared && record.packageVersion !== declared)
          record.warnings.push(
            `package.json says version ${record.packageVersion} but definePlugin says ${declared}: ${declared} is the ` +
              'version listed, granted and audited. Write the same version in both',
          )
        await this.#install(record, current)
        return record
      } finally {
        this.#endLoad(dir, load)
        const left = this.#records.get(dir)
        if (left && isPlaceholder(left)) this.#records.delete(dir)
      }
    })
  }

  /**
   * The install route is about to put `dir` in place: its load, whoever starts it (the route or the watcher), is the
   * admin's. A first version that declares permissions to approve is held for approval (permissions.ts,
   * `awaitFirstApproval`), and the load's audit record goes to the route (`installOutcome`) instead of being written.
   */
  expectInstall(dir: string): void {
    this.#adminInstalls.set(dir, null)
  }

  /** The outcome of `dir`'s load since `expectInstall` (null: nothing was loaded, its files had not changed); ends it. */
  installOutcome(dir: string): LoadOutcome | null {
    const outcome = this.#adminInstalls.get(dir) ?? null
    this.#adminInstalls.delete(dir)
    return outcome
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
    // A start in progress is abandoned rather than waited for: it may never end.
    const loading = this.find(id)
    if (loading) this.#loads.get(recordKey(loading))?.abort(new Error('the plugin was disabled'))
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

  /** The plugin with this id (a folder still being imported for the first time has none yet). */
  find(id: string): PluginRecord | undefined {
    for (const record of this.#records.values()) if (record.id === id && !isPlaceholder(record)) return record
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
  async list(role: Role = 'admin'): Promise<(ExtensionInfo & PermissionInfo)[]> {
    await this.#recheckConditions(true)
    return [...this.#records.values()]
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((r) => ({
        ...extensionInfo(r, role, this.#dev),
        // A held version has not run: no page or card of it is offered either.
        ...(this.isHeld(r) ? { ui: null } : {}),
        ...permissionInfo(r, this.#grants, this.#held.get(r.id)),
      }))
  }

  /** Whether `record` is a version held for an admin's approval: nothing of it runs, its UI files are not served. */
  isHeld(record: PluginRecord): boolean {
    return this.#held.get(record.id)?.record === record
  }

  /** Whether an admin trusts the third-party plugin `id` to run in the daemon's process (the loader asks this). */
  isTrusted(id: string): boolean {
    return this.#grants.isTrusted(id)
  }

  /** Whether the third-party plugin `id` was granted outbound network (its sandbox asks this). */
  networkGranted(id: string): boolean {
    return this.#grants.networkGranted(id)
  }

  /**
   * Marks a third-party plugin trusted to run in the daemon's process, or not, and loads it again so the change takes
   * effect. Built-in plugins run in process anyway (409).
   */
  async setTrusted(id: string, trusted: boolean): Promise<PluginRecord> {
    const record = this.#byId(id)
    if (record.builtin)
      throw InstallErrors.builtin(
        "Built-in plugins run in the daemon's process already: only a third-party one is trusted",
      )
    await this.#grants.setTrusted(id, trusted)
    if (!record.dir) return record
    record.fingerprint = '' // load it again, in its new mode
    return (await this.reconcile(record.dir, false)) ?? record
  }

  /**
   * Activates the held version `version` of plugin `id` (one that asked for more than its plugin was granted): its
   * permissions become the grant. 409 when no version, or another version, awaits approval.
   */
  approve(id: string, version: string): Promise<PluginRecord> {
    return this.#mutex.run(async () => {
      const held = this.#held.get(id)
      if (!held) throw PermissionErrors.noApproval(`No upgrade of plugin "${id}" awaits approval`)
      const def = held.record.definition!
      if (def.version !== version)
        throw PermissionErrors.staleApproval(`Version ${def.version} of ${id} awaits approval, not ${version}`)
      await this.#grants.grant(def)
      this.#held.delete(id)
      const current = this.#records.get(recordKey(held.record))
      if (current === held.record) {
        this.#records.delete(recordKey(held.record))
        await this.#install(held.record)
      } else {
        await this.#install(held.record, current)
      }
      return held.record
    })
  }

  /** Forgets what a removed plugin was granted and whether it was trusted: installing it again is a first install. */
  async forget(id: string): Promise<void> {
    this.#held.delete(id)
    await this.#grants.forget(id)
  }

  /**
   * What a plugin keeps in the kernel's database when it is removed: its settings' keys (scope `plugin.<id>`) and the
   * tables its entities declared that exist. With `remove`, they are deleted: the settings, and the tables dropped and
   * their entities forgotten by the ORM (so no later schema update makes them again). Called after it was unloaded.
   */
  async storedData(id: string, entities: readonly EntitySchema[], remove: boolean): Promise<StoredData> {
    const db = this.#deps.db
    const scope = `plugin.${id}`
    const settings = (await db.em().find(SettingEntity, { scope }, { orderBy: { key: 'asc' } })).map((row) => row.key)
    const metas = [...db.orm.getMetadata().getAll().values()]
    const kernelTables = new Set(kernelEntities.map((e) => e.meta.tableName))
    const exists = db.native.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
    const tables = [
      ...new Set(
        entities.map((e) => metas.find((meta) => meta.className === e.meta.className)?.tableName ?? e.meta.tableName),
      ),
    ].filter((table): table is string => !!table && !kernelTables.has(table) && exists.get(table) !== undefined)
    if (remove) {
      await db.em().nativeDelete(SettingEntity, { scope })
      if (entities.length > 0) db.orm.discoverEntity([], [...entities])
      for (const table of tables) db.native.exec(`DROP TABLE IF EXISTS "${table.replaceAll('"', '""')}"`)
    }
    return { settings, tables }
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
      if (record?.state === 'starting') answerStarting(res, `${record.id} is starting: try again in a moment`)
      else if (record === undefined && this.#startingUp && req.url?.startsWith('/api/'))
        answerStarting(res, 'hostd is starting its plugins: try again in a moment')
      else unrouted(req, res) // no route, or its plugin is not running
      return
    }
    runtime.inflight++
    res.once('close', () => runtime.inflight--)
    runtime.app.routing(req, res)
  }

  findSocket(url: string): SocketTarget | undefined {
    return this.#tables.sockets.find('GET', url)
  }

  /**
   * Stops every plugin, side by side. A call into plugin code still waited on (an import or a start that hangs) is
   * abandoned first, so the registry's lock comes free at once; each `stop` has its deadline.
   */
  async close(): Promise<void> {
    if (this.#conditionTimer) clearInterval(this.#conditionTimer)
    this.#closing.abort(new Error('the daemon is stopping'))
    await this.#mutex.run(async () => {
      await Promise.all([...this.#records.values()].map((record) => this.#retire(record)))
    })
  }

  /** Runs a condition-gated plugin's gate: 503 with the reason while it is not available. */
  async gate(record: PluginRecord): Promise<Error | null> {
    if (record.state === 'unavailable' && record.waitingOn === 'condition' && conditionsStale(record)) {
      await checkConditions(record, this.#callTimeoutMs)
      this.#report()
    }
    if (record.state === 'active') return null
    if (record.state === 'starting') return pluginStarting(`${record.id} is starting: try again in a moment`)
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
      if (previous) {
        this.#held.delete(previous.id)
        await this.#retire(previous)
        this.#records.delete(recordKey(previous))
      }
      this.#records.set(key, record)
      this.#fail(record, unsupported, undefined, previous)
      if (previous) await this.#settle()
      return
    }
    // A page's icon the kit lacks: listed with the load's warnings (and logged once, below, when it loads).
    for (const warning of iconWarnings(record)) if (!record.warnings.includes(warning)) record.warnings.push(warning)
    if (!record.builtin && (await this.#hold(record, previous))) return
    // Granted before it starts (its sandbox asks networkGranted), taken back if it fails: the grant follows what loads.
    const granted = this.#grants.granted(def.id)
    if (!record.builtin) await this.#grants.grant(def)
    this.#records.set(key, record)
    // Once per load: what the definition uses of an older contract shape (also listed by GET /api/extensions). A
    // definition made by a copy of an sdk older than 1.1.0 bundled into the plugin has no list.
    for (const warning of [...(def.warnings ?? []), ...record.warnings])
      this.#deps.log.warn({ plugin: def.id, dir: record.dir }, warning)
    if (this.#disabled.has(def.id)) {
      if (previous) await this.#retire(previous)
      record.state = 'disabled'
    } else {
      await this.#activate(record, previous)
    }
    if (!record.builtin && record.state === 'failed') await this.#grants.restore(def.id, granted)
    // A failure was audited where it happened (#fail): one record per outcome.
    if (record.state !== 'failed') {
      if (previous) await this.#audit('plugin.upgrade', record, { from: previous.definition?.version ?? null })
      else await this.#audit('plugin.load', record)
    }
    await this.#settle()
  }

  async #unload(record: PluginRecord, why: string): Promise<void> {
    this.#held.delete(record.id)
    await this.#retire(record)
    this.#records.delete(recordKey(record))
    await this.#audit('plugin.unload', record, { why })
    await this.#settle()
  }

  /**
   * Holds a third-party version that asks for more than its plugin was granted (permissions.ts), until an admin
   * approves it: the version it replaces keeps serving if it runs; otherwise the held one is listed, unavailable with
   * the reason. False when nothing more is asked (the grant then follows this version).
   */
  async #hold(record: PluginRecord, previous?: PluginRecord): Promise<boolean> {
    const def = record.definition!
    if (record.dir && this.#adminInstalls.has(record.dir)) await this.#grants.awaitFirstApproval(def)
    const asks = this.#grants.more(def)
    if (!asks) {
      this.#held.delete(def.id)
      return false
    }
    this.#held.set(def.id, { record, asks })
    const granted = this.#grants.granted(def.id)?.version
    record.state = this.#disabled.has(def.id) ? 'disabled' : 'unavailable'
    record.reason = granted
      ? `version ${def.version} awaits an admin's approval: it asks for more than version ${granted} was granted (${describePermissions(asks)})`
      : `version ${def.version} awaits an admin's approval before it first runs: it asks for ${describePermissions(asks)}`
    record.waitingOn = null
    if (!previous?.runtime) this.#records.set(recordKey(record), record)
    this.#deps.log.warn({ plugin: def.id, dir: record.dir }, `plugin held: ${record.reason}`)
    await this.#audit('plugin.hold', record, { from: granted ?? null, asks })
    return true
  }

  /**
   * Starts a plugin on its own Fastify instance. The routing tables are swapped only when everything has
   * succeeded; until then the previous version (if any) keeps serving.
   */
  async #activate(record: PluginRecord, previous?: PluginRecord): Promise<void> {
    const def = record.definition!
    if (this.#held.get(def.id)?.record === record) {
      record.state = 'unavailable' // enabling a held version does not approve it
      return
    }
    if (this.#closing.signal.aborted) return
    const missing = missingDependency(def, (id) => this.find(id))
    if (missing) {
      if (previous) await this.#retire(previous)
      awaitDependency(record, missing)
      return
    }
    let runtime: PluginRuntime | null = null
    const key = recordKey(record)
    const load = this.#loads.has(key) ? null : this.#beginLoad(key)
    const call = this.#caller(this.#loads.get(key)!.signal)
    record.state = 'starting'
    record.reason = null
    record.origin = null
    record.waitingOn = null
    this.#report()
    let database: PluginDatabase | null = null
    try {
      database = await this.#ownDatabase(record)
      const scope = this.#scope(def, record.builtin, database)
      const deps = resolveDeps(scope, def, record.builtin ? undefined : this.#exposure)
      const uiError = uiProblem(record) ?? uiPathConflict(record, this.#serving(previous, record))
      if (uiError) throw new Error(uiError)
      runtime = await prepareRuntime(def, deps, this.#deps.instance, call)
      if (database) runtime.closers.push(database.close)
      database = null // closed with its runtime from here
      const ground = groundProblem(record, runtime, this.#deps.kernelRoutes, this.#serving(previous, record))
      if (ground) throw new Error(ground)
      // Build the next tables first: a route conflict fails this plugin before anything of it runs.
      const next = buildTables(this.#deps.kernelRoutes, [...this.#serving(previous, record), { record, runtime }])
      // A new plugin's routes answer 503 HOSTD_PLUGIN_STARTING until it is active; a previous version serves on.
      if (!previous?.runtime) this.#tables = next
      // Its tables migrated while the version it replaces serves on (database.ts: the new entities replace the old).
      // A third-party plugin's are in its own database, migrated as it opened (#ownDatabase).
      if (record.builtin && def.entities?.length) await this.#deps.db.addEntities(def.entities, def.id)
      const started = runtime
      // A third-party plugin in the daemon's process answers within the deadline its requests would have isolated.
      if (!record.builtin && !isIsolated(def)) {
        const ms = this.#deps.isolation?.settings.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
        answerWithin(started.app, ms, (req) => {
          this.#pluginLog(record).warn(
            { reqId: req.id, url: req.url },
            `route did not answer within ${formatDuration(ms)}`,
          )
          return IsolationErrors.timeout(`The plugin ${def.id} did not answer within ${formatDuration(ms)}`)
        })
      }
      await mountRoutes(started, this.#deps.instance, def.id, this.#gateHook(record))
      const provided = await call('provides()', () => started.hooks.provides())
      this.#services.check(record, provided)
      started.started = true
      await call('start()', () => started.hooks.start())
      record.runtime = runtime
      watchIsolated(started.state, (change) => this.#isolationChanged(record, started, change))
      await checkConditions(record, this.#callTimeoutMs)
      await this.#takeOver(record, runtime, provided, next, previous)
    } catch (err) {
      record.runtime = null
      await database?.close()
      if (runtime) await this.#stop(record, runtime)
      if (err instanceof EntityMigrationError && previous?.runtime) {
        this.#keepServing(record, previous, err)
        return
      }
      if (previous) await this.#retire(previous)
      this.#tables = buildTables(this.#deps.kernelRoutes, this.#serving())
      this.#fail(record, err, undefined, previous)
    } finally {
      if (load) this.#endLoad(key, load)
    }
  }

  /**
   * A new version whose tables could not be migrated: the version it replaces was never stopped, and stays listed and
   * serving, saying so in its warnings; the new one is audited as a failed upgrade (`record`, failed, is not listed).
   */
  #keepServing(record: PluginRecord, previous: PluginRecord, err: EntityMigrationError): void {
    this.#records.set(recordKey(previous), previous)
    this.#tables = buildTables(this.#deps.kernelRoutes, this.#serving())
    const to = record.definition?.version ?? '?'
    const running = previous.definition?.version ?? '?'
    previous.warnings = [
      ...previous.warnings.filter((w) => !w.startsWith('version ')),
      `version ${to} failed to load: ${err.message}; version ${running} keeps serving`,
    ]
    this.#fail(record, err, undefined, previous)
  }

  /**
   * Where a folder that failed to import does not parse, for a SyntaxError or an error whose stack names no line of the
   * plugin (Node names no location in an ES module's SyntaxError, and only the line for TypeScript): loader.ts parses
   * its files again one by one. `at` (`file:line:column`) is relative to the folder.
   */
  async #syntaxProblem(record: PluginRecord, error: unknown): Promise<(Error & { at: string }) | null> {
    if (!record.dir || error instanceof PluginCallError) return null // a deadline missed is no parse
    const name = (error as Error | null)?.name
    if (name !== 'SyntaxError' && errorOrigin(error, record.dir)) return null // a throw: its stack says where
    const found = await locateSyntaxError(record.dir, record.entry)
    if (!found) return null
    const syntax = new SyntaxError(found.message) as SyntaxError & { at: string }
    syntax.stack = `SyntaxError: ${found.message}\n    at ${found.origin}`
    syntax.at = relative(record.dir, found.origin)
    return syntax
  }

  /** An isolated plugin's process went down or came back (kernel/src/isolation): its state follows; given up, it fails. */
  #isolationChanged(record: PluginRecord, runtime: PluginRuntime, change: IsolationChange): void {
    if (record.runtime !== runtime) return
    if (change.state !== 'failed') {
      record.state = change.state === 'running' ? 'active' : 'restarting'
      record.reason = change.state === 'running' ? null : change.reason
      this.#report()
      return
    }
    void this.#mutex.run(async () => {
      if (record.runtime !== runtime) return
      await this.#retire(record)
      this.#fail(record, change.error, change.reason)
      await this.#settle()
    })
  }

  /** A runner for calls into plugin code: each has the deadline, and is abandoned on `signal` or when the daemon stops. */
  #caller(signal: AbortSignal): PluginCall {
    const any = AbortSignal.any([this.#closing.signal, signal])
    return (what, fn, startAfter) => withDeadline(what, fn, this.#callTimeoutMs, any, startAfter)
  }

  #beginLoad(key: string): AbortController {
    const load = new AbortController()
    this.#loads.set(key, load)
    return load
  }

  #endLoad(key: string, load: AbortController): void {
    if (this.#loads.get(key) === load) this.#loads.delete(key)
  }

  /** Ends a load (runtime.ts); a `stop` that threw or missed its deadline is logged there and audited here. */
  async #stop(record: PluginRecord, runtime: PluginRuntime): Promise<void> {
    const failure = await stopRuntime(runtime, this.#pluginLog(record), this.#callTimeoutMs)
    if (!failure) return
    const origin = failure instanceof PluginCallError ? record.entry : errorOrigin(failure, record.dir)
    await this.#audit('plugin.stop', record, { error: failure.message, origin }, 'failure')
  }

  /** What a service lets third-party plugins call, as its current provider (or the test harness) bound it. */
  readonly #exposure = (id: string): ServiceExposure | undefined =>
    this.#deps.overrideExposures?.get(id) ?? this.#services.exposure(id)

  /**
   * The services a plugin's deps resolve from: the kernel's and active plugins', with its own logger and settings, and
   * for a third-party plugin its own database instead of the kernel's.
   */
  #scope(def: HostdPlugin, builtin: boolean, database: PluginDatabase | null): DependencyContainer {
    const scope = this.#deps.container.createChildContainer()
    scope.register(tokens.logger.id, { useValue: this.#deps.log.child({ plugin: def.id }) })
    scope.register(tokens.settings.id, { useValue: scopedSettings(this.#deps.db, `plugin.${def.id}`) })
    scope.register(tokens.secrets.id, { useValue: this.#deps.secrets.forPlugin(def.id) })
    for (const [id, value] of this.#deps.overrides ?? []) scope.register(id, { useValue: value })
    if (builtin) return scope
    // Never the kernel's (its users and sessions): its own file, or, for an isolated one, none here (its runner opens it).
    scope.register(tokens.database.id, {
      useValue: database ?? ISOLATED_DATABASE,
    })
    grantThirdParty(scope, def, this.#exposure) // only what its permissions declare
    return scope
  }

  /**
   * A third-party plugin's own database, opened for a load in the daemon's process (trusted, or isolation off) when it
   * has entities or asks for `tokens.database`: `<data dir>/plugin-data/<id>/plugin.sqlite`, its tables brought to
   * what its entities ask (a refusal is an EntityMigrationError: the version it replaces serves on). An isolated
   * plugin's runner opens the same file in its sandbox.
   */
  async #ownDatabase(record: PluginRecord): Promise<PluginDatabase | null> {
    const def = record.definition!
    if (record.builtin || isIsolated(def)) return null
    const wanted =
      (def.entities?.length ?? 0) > 0 ||
      Object.values(def.deps ?? {}).some((t) => (t as { id: string }).id === tokens.database.id)
    if (!wanted) return null
    const folder = dataFolderPath(this.#deps.dataDir, def.id)
    await mkdir(folder, { recursive: true, mode: 0o700 })
    try {
      return await openPluginDatabase(join(folder, PLUGIN_DATABASE_FILE), def.entities ?? [])
    } catch (err) {
      throw (err as { code?: unknown }).code === MIGRATION_FAILED ? new EntityMigrationError(err) : err
    }
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
      await this.#stop(previous, old)
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
    await this.#stop(record, runtime)
  }

  /**
   * Fails a plugin with `problem`: a sentence, or what was thrown (`reason` overrides its message). Where it came from
   * is the plugin's line in the error's stack, or its entry for a call that missed its deadline or was abandoned.
   */
  #fail(record: PluginRecord, problem: unknown, reason?: string, previous?: PluginRecord): void {
    record.state = 'failed'
    record.reason = reason ?? (typeof problem === 'string' ? problem : ((problem as Error)?.message ?? String(problem)))
    record.origin = problem instanceof PluginCallError ? record.entry : errorOrigin(problem, record.dir)
    record.waitingOn = null
    const { reason: error, origin } = record
    this.#deps.log.warn({ plugin: record.id, dir: record.dir, origin }, `plugin failed: ${error}`)
    // A new version that replaced (or failed to replace) a loaded one is a failed upgrade: one record, with both versions.
    const upgrade = previous?.definition ? { from: previous.definition.version } : null
    void this.#audit(
      upgrade ? 'plugin.upgrade' : 'plugin.load',
      record,
      { error, ...(origin ? { origin } : {}), ...upgrade },
      'failure',
    )
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
      await checkConditions(record, this.#callTimeoutMs)
    }
    this.#report()
  }

  /**
   * Announces the plugins' states as they are now (`hostd.events`): kernel/src/events.ts compares them with the last
   * report and emits each change, so the states set all over the registry are noticed in this one place. Called at the
   * end of every change (#mutex), and where a state changes outside one (a start beginning, an isolated plugin's
   * process, the conditions' timer).
   */
  #report(): void {
    const events = this.#deps.events
    if (!events) return
    const now = new Map<string, PluginStateNow>()
    for (const [key, r] of this.#records)
      now.set(key, {
        id: r.id,
        version: r.definition?.version ?? r.packageVersion,
        state: r.state,
        reason: r.state === 'active' || r.state === 'starting' || r.state === 'disabled' ? null : r.reason,
        builtin: r.builtin,
      })
    events.reportPlugins(now)
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
    const entry = {
      action,
      target: record.id,
      result,
      detail: { version: record.definition?.version ?? record.packageVersion, ...detail },
    }
    // An admin's install: its route writes the one record, naming the admin and this outcome.
    if (record.dir && this.#adminInstalls.has(record.dir) && OUTCOME_ACTIONS.has(action)) {
      this.#adminInstalls.set(record.dir, { action, result, detail: entry.detail })
      return
    }
    await this.#deps.audit.record(entry)
  }
}
