import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import type { Logger } from 'pino'
import { ROLES, type DepsMap, type HostdPlugin, type ResolvedDeps } from '@hostd/sdk'
import { collectRoutes, collectSockets } from '../http/registrar.ts'
import { checkRouteDefinition, createInstance, mountRoute, type InstanceDeps } from '../http/instance.ts'
import type { PluginRuntime } from './records.ts'

const DRAIN_TIMEOUT_MS = 10_000

/**
 * One load of a plugin, not serving yet: its `setup` run once with the resolved deps, the routes and sockets it
 * declares checked, its own Fastify instance made. The hooks get the deps and the setup result from here on.
 */
export async function prepareRuntime(
  def: HostdPlugin,
  deps: ResolvedDeps<DepsMap>,
  instance: InstanceDeps,
): Promise<PluginRuntime> {
  const state = def.setup ? await def.setup(deps) : undefined
  const { routes: declareRoutes, sockets: declareSockets } = def
  const routes = declareRoutes ? collectRoutes((r) => declareRoutes(r, deps, state)) : []
  routes.forEach(checkRouteDefinition)
  const sockets = declareSockets ? collectSockets((s) => declareSockets(s, deps, state)) : []
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

/** Ends one load: long-lived responses and sockets hear it first, other requests get up to 10 s, then `stop`. */
export async function stopRuntime(runtime: PluginRuntime, log: Logger): Promise<void> {
  runtime.lifetime.abort()
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  while (runtime.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  for (const socket of runtime.openSockets) socket.close(1012, 'plugin reloaded or unloaded')
  try {
    if (runtime.started) await runtime.hooks.stop()
  } catch (err) {
    log.warn({ err }, 'plugin stop failed')
  }
  await runtime.app.close().catch(() => undefined)
}
