/**
 * Third-party plugins behind a trust boundary (docs/ARCHITECTURE.md, "Third-party plugins: the trust boundary").
 *
 * A plugin from outside the repository's plugins/ folder runs in a sandboxed process of its own (sandbox.ts). The
 * kernel imports nothing of it: a first process reads its definition (`load`), and the registry gets a proxy
 * definition made with the same `definePlugin`, whose `setup` starts the plugin's process for that load (load.ts),
 * whose routes and sockets forward requests that the kernel has already signed in, authorized and validated, and
 * whose `start` and `stop` are calls into the process. The authoring contract is unchanged.
 *
 * The registry asks `PluginIsolation.load` from loader.ts, hears of restarts and failures through `watchIsolated`, and
 * ends a load's process with `releaseIsolated` (runtime.ts).
 */
import { basename, join, relative } from 'node:path'
import type { Logger } from 'pino'
import {
  createServiceToken,
  definePlugin,
  tokens,
  type HelperClient,
  type HostdPlugin,
  type OptionalServices,
  type PluginPermissions,
  type ServiceToken,
  type UiManifest,
} from '@hostd/sdk'
import { SANDBOX_PATHS, type PluginDescription } from '../../../sdk/src/isolated/protocol.ts'
import { PermissionErrors } from '../plugins/permissions.ts'
import { CallError } from './channel.ts'
import {
  IsolatedLoad,
  pluginError,
  type IsolatedDeps,
  type IsolatedPluginInfo,
  type IsolationChange,
  type StartedProcess,
} from './load.ts'
import { PluginProcess } from './process.ts'
import { probeSandbox, type SandboxBase } from './sandbox.ts'
import type { IsolationSettings } from './settings.ts'
import type { PluginCall } from '../plugins/runtime.ts'

export type { IsolationChange } from './load.ts'
export type { IsolationSettings } from './settings.ts'

const ISOLATED = Symbol('hostd.isolated')
const START_SANDBOX = Symbol('hostd.startSandbox')
/** The kernel's services by id: an isolated plugin may ask any in `deps`, granted as to any third-party plugin. */
const KERNEL_TOKENS: Record<string, ServiceToken<unknown>> = Object.fromEntries(
  Object.values(tokens).map((token) => [token.id, token]),
)
/** The registry starts a load right after its `setup` (or stops it): a load it did neither to within this was abandoned. */
const ADOPTION_MS = 10_000

/** How a third-party plugin runs: in its own sandboxed process, or (trusted, or isolation off) in the daemon's. */
export type PluginMode = 'isolated' | 'in-process'

export interface PluginIsolationOptions {
  settings: IsolationSettings
  /** The daemon's data dir: each isolated plugin's data folder is `<data dir>/plugin-data/<id>`. */
  dataDir: string
  log: Logger
  /** Whether the sandbox can start here (sandbox.ts by default; tests give another answer). */
  probe?: () => Promise<SandboxBase | string>
}

/** The kernel's side of isolation: the sandbox probe, the trust question, and loading a folder isolated. */
export class PluginIsolation {
  readonly settings: IsolationSettings
  readonly #dataRoot: string
  readonly #log: Logger
  readonly #probeSandbox: () => Promise<SandboxBase | string>
  #probe: Promise<SandboxBase | string> | null = null
  /**
   * Whether an admin marked the plugin with this id trusted to run in the daemon's process (the registry sets it from
   * the kernel's settings). Without a sandbox, a folder is asked by its name, since its id cannot be read without
   * running its code.
   */
  trusted: (id: string) => boolean | Promise<boolean> = () => false
  /** Whether an admin granted the plugin with this id outbound network (the registry sets it from the grants). */
  networkGranted: (id: string) => boolean = () => false

  constructor(options: PluginIsolationOptions) {
    this.settings = options.settings
    this.#dataRoot = join(options.dataDir, 'plugin-data')
    this.#log = options.log
    this.#probeSandbox = options.probe ?? probeSandbox
  }

  /** Null when third-party plugins can run isolated here, else why not (bwrap missing, user namespaces refused). */
  async unavailableReason(): Promise<string | null> {
    const base = await this.#base()
    return typeof base === 'string' ? base : null
  }

  /** How the third-party plugin with this id runs. */
  async modeFor(id: string): Promise<PluginMode> {
    return this.settings.mode === 'off' || (await this.trusted(id)) ? 'in-process' : 'isolated'
  }

  /**
   * A third-party plugin folder's definition, to run isolated, or null to import it in the daemon's process
   * (isolation off, or trusted). Throws with the reason when it cannot run.
   */
  async load(dir: string, entry: string, call: PluginCall): Promise<HostdPlugin | null> {
    if (this.settings.mode === 'off') return null
    const base = await this.#base()
    if (typeof base === 'string') {
      if (await this.trusted(basename(dir))) return null
      throw new Error(
        `third-party plugins run in a sandbox, which cannot start here: ${base}. An admin may mark this plugin ` +
          'trusted to run it in the daemon process instead',
      )
    }
    const inside = `${SANDBOX_PATHS.plugin}/${relative(dir, entry)}`
    const description = await this.#describe(base, dir, inside, call)
    if (await this.trusted(description.id)) return null
    return proxyDefinition({
      dir,
      entry: inside,
      description,
      dataRoot: this.#dataRoot,
      base,
      settings: this.settings,
      network: () => this.networkGranted(description.id),
      log: this.#log.child({ plugin: description.id }),
    })
  }

  #base(): Promise<SandboxBase | string> {
    this.#probe ??= this.#probeSandbox().then((base) => {
      if (typeof base === 'string') this.#log.warn(`third-party plugins cannot run isolated: ${base}`)
      return base
    })
    return this.#probe
  }

  /** Imports the plugin in a first, short-lived process (no data folder) and reads its definition. */
  async #describe(base: SandboxBase, dir: string, entry: string, call: PluginCall): Promise<PluginDescription> {
    const proc = new PluginProcess(base, {
      id: basename(dir),
      pluginDir: dir,
      dataDir: null,
      heapMb: this.settings.heapMb,
      log: this.#log.child({ plugin: basename(dir) }),
      onMessage: () => undefined,
    })
    try {
      // The import's deadline starts once the sandbox is up (the call's own is a backstop: the same, started later).
      const load = () => proc.call('load', [{ entry, sdk: base.sdkUrl }], this.settings.callTimeoutMs)
      return (await call('import', load, proc.booted)) as PluginDescription
    } catch (err) {
      if (err instanceof CallError && err.kind === 'gone') {
        const end = await proc.ended
        throw pluginError(end.reason, end.origin, dir)
      }
      if (err instanceof CallError && err.origin)
        throw pluginError(`${err.message} (at ${err.origin})`, err.origin, dir)
      throw err
    } finally {
      proc.kill('its definition was read')
    }
  }
}

/** The definition the registry runs for an isolated plugin: the plugin's own fields, hooks that call its process. */
function proxyDefinition(info: IsolatedPluginInfo): HostdPlugin {
  const d = info.description
  let current: IsolatedLoad | null = null
  let ahead: StartedProcess | null = null
  const def = definePlugin({
    id: d.id,
    version: d.version,
    kernel: d.kernel,
    ...(d.description === undefined ? {} : { description: d.description }),
    ...(d.dependsOn ? { dependsOn: d.dependsOn } : {}),
    ...(d.ui === undefined ? {} : { ui: d.ui as UiManifest }),
    ...(d.permissions === undefined ? {} : { permissions: d.permissions as PluginPermissions }),
    // The plugin's own deps under its own names (the kernel's tokens, other plugins' by id), so
    // that what it is granted (permissions.ts) is the same whether it runs isolated or trusted in process.
    deps: Object.fromEntries(
      Object.entries(d.deps).map(([name, id]) => [name, KERNEL_TOKENS[id] ?? createServiceToken(id)]),
    ),
    ...(d.conditions.length > 0
      ? {
          conditions: d.conditions.map((name, index) => ({
            name,
            check: () => current?.condition(index) ?? 'its process is not running',
          })),
        }
      : {}),
    setup: async (resolved) => {
      const byId = <T = never>(id: string): T => {
        const name = Object.keys(d.deps).find((key) => d.deps[key] === id)
        return (name === undefined ? undefined : (resolved as Record<string, unknown>)[name]) as T
      }
      const optional: OptionalServices | undefined = byId(tokens.optional.id)
      const deps: IsolatedDeps = {
        log: byId(tokens.logger.id) ?? info.log,
        settings: byId(tokens.settings.id),
        audit: byId(tokens.audit.id),
        kernel: byId(tokens.kernel.id),
        helper: byId<HelperClient>(tokens.helper.id),
        // What it named in deps (already its limited view), else the live provider through its limited optional.
        service: (id) => {
          const named = byId<unknown>(id)
          if (named !== undefined) return named
          if (!optional) throw PermissionErrors.denied(`plugin ${d.id} did not name the service "${id}" in its deps`)
          return optional.get(createServiceToken(id))
        },
      }
      const started = ahead ?? undefined
      ahead = null
      const load = await IsolatedLoad.create(info, deps, started)
      current = load
      load.expectAdoption(ADOPTION_MS)
      return load
    },
    ...(d.provides ? { provides: (_deps: unknown, load: IsolatedLoad) => load.provides() } : {}),
    routes: (r, _deps, load) => load.declareRoutes(r),
    sockets: (s, _deps, load) => load.declareSockets(s),
    start: (_deps, load) => load.start(),
    stop: async (_deps, load) => {
      await load.stop()
      if (current === load) current = null
    },
  })
  const startSandbox = async () => {
    ahead?.proc.kill('a newer start replaced it')
    ahead = await IsolatedLoad.startProcess(info)
    await ahead.proc.booted
  }
  return Object.freeze({
    ...def,
    warnings: Object.freeze([...d.warnings]),
    [ISOLATED]: info,
    [START_SANDBOX]: startSandbox,
  })
}

/**
 * For an isolated plugin's definition, starts its process ahead of `setup` and resolves once it is up: the registry
 * starts `setup`'s deadline then (runtime.ts). Undefined for any other definition.
 */
export function sandboxStarted(definition: HostdPlugin): Promise<void> | undefined {
  return (definition as { [START_SANDBOX]?: () => Promise<void> })[START_SANDBOX]?.()
}

/** True for the proxy definition of an isolated plugin. */
export function isIsolated(definition: HostdPlugin | null | undefined): boolean {
  return Boolean(definition && (definition as { [ISOLATED]?: unknown })[ISOLATED])
}

/** Runs `listener` on each change of an isolated load's process (`state` is a load's setup result). */
export function watchIsolated(state: unknown, listener: (change: IsolationChange) => void): void {
  if (state instanceof IsolatedLoad) state.watch(listener)
}

/** Ends an isolated load's process, whatever state it is in (runtime.ts, as a load ends, started or not). */
export function releaseIsolated(state: unknown): void {
  if (state instanceof IsolatedLoad) state.release()
}

/** The process of an isolated load: its id while it runs. */
export function isolatedPid(state: unknown): number | null {
  return state instanceof IsolatedLoad ? state.pid : null
}
