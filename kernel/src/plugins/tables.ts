import type { RouteDefinition } from '@hostd/sdk'
import { needsRecentSignIn } from '../http/instance.ts'
import type { DocumentedRoute } from '../system/openapi.ts'
import type { PluginRecord, PluginRuntime, Serving, SocketTarget } from './records.ts'
import { RoutingTable, type TableRoute } from './routing-table.ts'

/** Who serves each HTTP route (null: the kernel) and each socket path. Built whole and swapped in one assignment. */
export interface Tables {
  http: RoutingTable<PluginRecord | null>
  sockets: RoutingTable<SocketTarget>
}

/** The tables for the kernel's routes and the plugins `serving`; a route or socket path served twice throws. */
export function buildTables(kernelRoutes: RouteDefinition[], serving: Serving[]): Tables {
  const http: TableRoute<PluginRecord | null>[] = []
  const add = (defs: RouteDefinition[], target: PluginRecord | null) => {
    for (const r of defs) {
      http.push({ method: r.method, path: r.path, target })
      if (r.method === 'GET') http.push({ method: 'HEAD', path: r.path, target })
    }
  }
  add(kernelRoutes, null)
  for (const { record, runtime } of serving) add(runtime.routes, record)
  const sockets: TableRoute<SocketTarget>[] = []
  for (const { record, runtime } of serving)
    for (const def of runtime.sockets) sockets.push({ method: 'GET', path: def.path, target: { record, def } })
  return {
    http: new RoutingTable(http, (t) => (t ? `plugin ${t.id}` : 'the kernel')),
    sockets: new RoutingTable(sockets, (t) => `plugin ${t.record.id}`),
  }
}

/** A UI page path of `record` that a plugin `serving` already has (pages, like routes, have one owner). */
export function uiPathConflict(record: PluginRecord, serving: Serving[]): string | null {
  for (const page of record.definition?.ui?.pages ?? []) {
    for (const { record: other } of serving) {
      if (other.definition?.ui?.pages?.some((p) => p.path === page.path))
        return `UI page ${page.path} is served by plugin ${other.id} already`
    }
  }
  return null
}

/** A path that could be read as another one: a `.` or `..` segment, an empty segment, an escape. */
const AMBIGUOUS_PATH = /(?:^|\/)\.{1,2}(?:\/|$)|\/\/|[%\\]/

/**
 * Why a third-party plugin may not serve what it declares, or null (built-in plugins keep their paths). Its routes and
 * sockets lie under its own prefix, `/api/<id>` (that path or below it), and its UI pages under `/<id>`: so never `/`,
 * the sign-in page, `/api/auth` or any other path of the kernel or the shell, nor another plugin's. A prefix the kernel
 * or another plugin already serves paths under (a plugin id like `auth` or `users`) is refused as a whole.
 */
export function groundProblem(
  record: PluginRecord,
  runtime: Pick<PluginRuntime, 'routes' | 'sockets'>,
  kernelRoutes: RouteDefinition[],
  serving: Serving[],
): string | null {
  if (record.builtin) return null
  const prefix = `/api/${record.id}`
  const under = (base: string, path: string) => path === base || path.startsWith(`${base}/`)
  const own = (path: string) => under(prefix, path) && !AMBIGUOUS_PATH.test(path)
  const rule = `a third-party plugin's routes and sockets lie under its own prefix, ${prefix}`
  for (const route of runtime.routes)
    if (!own(route.path)) return `route ${route.method} ${route.path} is refused: ${rule}`
  for (const socket of runtime.sockets) if (!own(socket.path)) return `socket ${socket.path} is refused: ${rule}`
  const kernelPath = kernelRoutes.find((route) => under(prefix, route.path))
  if (kernelPath)
    return `its prefix ${prefix} is the kernel's (${kernelPath.method} ${kernelPath.path}): the plugin needs another id`
  const page = `/${record.id}`
  for (const p of record.definition?.ui?.pages ?? []) {
    if (!under(page, p.path)) return `UI page ${p.path} is refused: a third-party plugin's pages lie under ${page}`
  }
  for (const { record: other, runtime: theirs } of serving) {
    if (other === record) continue
    const taken = [...theirs.routes, ...theirs.sockets].find((r) => under(prefix, r.path))
    if (taken) return `its prefix ${prefix} is used by plugin ${other.id} (${taken.path})`
    const theirPage = other.definition?.ui?.pages?.find((p) => under(page, p.path))
    if (theirPage) return `its page path ${page} is used by plugin ${other.id} (${theirPage.path})`
  }
  return null
}

/** Every route the daemon serves, with its role and owner (`kernel` or a plugin id): the route-table test walks this. */
export function documentedRoutes(kernelRoutes: RouteDefinition[], records: Iterable<PluginRecord>): DocumentedRoute[] {
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
  const kernel = kernelRoutes.map((r) => entry(r, 'kernel'))
  const plugins = [...records].flatMap((rec) => (rec.runtime?.routes ?? []).map((r) => entry(r, rec.id)))
  return [...kernel, ...plugins]
}
