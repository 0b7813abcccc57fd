import type { RouteDefinition } from '@hostd/sdk'
import { needsRecentSignIn } from '../http/instance.ts'
import type { DocumentedRoute } from '../system/openapi.ts'
import type { PluginRecord, Serving, SocketTarget } from './records.ts'
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
