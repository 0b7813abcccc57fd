import type { HttpMethod, RouteDefinition, RouteRegistrar, SocketDefinition, SocketRegistrar } from '@hostd/sdk'

/** Runs a `routes` function and returns what it declared; mounting happens separately, after checks. */
export function collectRoutes(declare: (r: RouteRegistrar) => void): RouteDefinition[] {
  const out: RouteDefinition[] = []
  const add = (method: HttpMethod) => (path: string, options: unknown, handler: unknown) =>
    void out.push({ method, path, options, handler } as RouteDefinition)
  declare({ get: add('GET'), post: add('POST'), put: add('PUT'), patch: add('PATCH'), delete: add('DELETE') })
  return out
}

export function collectSockets(declare: (s: SocketRegistrar) => void): SocketDefinition[] {
  const out: SocketDefinition[] = []
  declare({ ws: (path, options, handler) => void out.push({ path, options, handler } as SocketDefinition) })
  return out
}
