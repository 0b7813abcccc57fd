import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import type { Logger } from 'pino'
import { ROLES, isHostdPlugin, type DepsMap, type HostdPlugin, type ResolvedDeps } from '@hostd/sdk'
import { collectRoutes, collectSockets } from '../http/registrar.ts'
import { checkRouteDefinition, createInstance, mountRoute, type InstanceDeps } from '../http/instance.ts'
import { importPlugin, readPluginPackage } from './loader.ts'
import type { PluginRuntime } from './records.ts'
import { withDeadline } from './supervision.ts'
import { releaseIsolated, sandboxStarted, type PluginIsolation } from '../isolation/index.ts'

/** How long a retiring load's requests in flight may take to finish (then its sockets close and `stop` runs). */
export const DRAIN_TIMEOUT_MS = 10_000

/** Runs one call into plugin code under its deadline (supervision.ts), named for the error: `call('start()', fn)`. */
export type PluginCall = <T>(what: string, fn: () => T | Promise<T>, startAfter?: Promise<unknown>) => Promise<T>

/** What importing a plugin folder gave: its definition, or the error (with its stack, for where it came from). */
export type Imported = { definition: HostdPlugin } | { error: unknown; reason: string }

/**
 * Imports a folder's plugin in the daemon's process (loader.ts: a fresh module graph per load) under `call`'s
 * deadline, or, given `isolation` (a third-party folder), the proxy definition of its sandboxed process. The error is
 * kept whole, not only its message, so that the registry can say which line of the plugin threw.
 */
export async function importDefinition(
  dir: string,
  entry: string,
  call: PluginCall,
  isolation: PluginIsolation | null = null,
): Promise<Imported> {
  try {
    // A third-party plugin is read in its own sandboxed process instead (kernel/src/isolation), unless trusted.
    const isolated = isolation ? await isolation.load(dir, entry, call) : null
    const exported = isolated ?? (await call('import', () => importPlugin(dir, entry)))
    if (!isHostdPlugin(exported))
      throw new Error('its entry does not export default definePlugin({...}) from @hostd/sdk')
    return { definition: exported }
  } catch (err) {
    return { error: err, reason: `could not load: ${err instanceof Error ? err.message : String(err)}` }
  }
}

/** A plugin folder's entry file, or the error that names why it has none (no package.json, no entry...). */
export async function entryOf(dir: string, builtin: boolean): Promise<string | Error> {
  return readPluginPackage(dir, builtin).then(
    (pkg) => pkg.entry,
    (err: Error) => new Error(`could not load: ${err.message}`),
  )
}

/**
 * One load of a plugin, not serving yet: its `setup` run once with the resolved deps, the routes and sockets it
 * declares checked, its own Fastify instance made. The hooks get the deps and the setup result from here on. Every
 * call into the plugin goes through `call` (its deadline).
 */
export async function prepareRuntime(
  def: HostdPlugin,
  deps: ResolvedDeps<DepsMap>,
  instance: InstanceDeps,
  call: PluginCall,
): Promise<PluginRuntime> {
  const { setup, routes: declareRoutes, sockets: declareSockets } = def
  const state = setup ? await call('setup()', () => setup(deps), sandboxStarted(def)) : undefined
  const routes = declareRoutes ? await call('routes()', () => collectRoutes((r) => declareRoutes(r, deps, state))) : []
  routes.forEach(checkRouteDefinition)
  const sockets = declareSockets
    ? await call('sockets()', () => collectSockets((s) => declareSockets(s, deps, state)))
    : []
  for (const socket of sockets) {
    if (!(ROLES as readonly string[]).includes(socket.options?.role))
      throw new Error(`socket ${socket.path} declares no valid role: refused`)
  }
  const app = createInstance(instance, undefined, { liveRequests: true })
  const lifetime = new AbortController()
  app.decorateRequest('lifetime', {
    getter(this: FastifyRequest) {
      return this.liveRequest?.lifetime(lifetime.signal) ?? lifetime.signal
    },
  })
  const hooks = {
    provides: async () => (def.provides ? await def.provides(deps, state) : []),
    start: async () => def.start?.(deps, state),
    stop: async () => def.stop?.(deps, state),
  }
  return {
    app,
    routes,
    sockets,
    openSockets: new Set(),
    inflight: 0,
    provided: [],
    started: false,
    lifetime,
    closers: [],
    state,
    hooks,
  }
}

/** Mounts the routes on the plugin's instance behind `gate` (the plugin's state) and readies it. */
export async function mountRoutes(
  runtime: PluginRuntime,
  instance: InstanceDeps,
  owner: string,
  gate: onRequestHookHandler,
): Promise<void> {
  for (const route of runtime.routes) mountRoute(runtime.app, instance, route, owner, [gate])
  await runtime.app.ready()
}

/**
 * Ends one load: long-lived responses and sockets hear it first, other requests get up to 10 s, then `stop`, which
 * has `timeoutMs` (a `stop` that never ends is abandoned). Answers the error of `stop` (thrown, or its deadline
 * missed), or null.
 */
export async function stopRuntime(runtime: PluginRuntime, log: Logger, timeoutMs: number): Promise<Error | null> {
  runtime.lifetime.abort()
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  while (runtime.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  for (const socket of runtime.openSockets) socket.close(1012, 'plugin reloaded or unloaded')
  let failure: Error | null = null
  try {
    if (runtime.started) await withDeadline('stop()', () => runtime.hooks.stop(), timeoutMs)
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err))
    log.warn({ err }, `plugin stop failed: ${failure.message}`)
  }
  await runtime.app.close().catch(() => undefined)
  releaseIsolated(runtime.state) // an isolated load's process ends with its load, started or not
  for (const close of runtime.closers) await close().catch((err: unknown) => log.warn({ err }, 'closing failed'))
  return failure
}
