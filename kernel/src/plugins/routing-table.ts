import FindMyWay from 'find-my-way'
import type { HttpMethod } from '@hostd/sdk'

export interface TableRoute<T> {
  method: HttpMethod | 'HEAD'
  path: string
  target: T
}

export interface RouteMatch<T> {
  target: T
}

/**
 * Which instance serves a method and path. Rebuilt whole on every plugin change (microseconds for
 * hundreds of routes) and swapped in one assignment, so a request sees either the old or the new table.
 * Building it also finds conflicts: a route declared twice throws.
 */
export class RoutingTable<T> {
  readonly #router = FindMyWay({ ignoreTrailingSlash: false, maxParamLength: 256 })

  constructor(routes: TableRoute<T>[], describe: (target: T) => string) {
    const seen = new Map<string, T>()
    for (const route of routes) {
      const key = `${route.method} ${route.path.replace(/:[^/]+/g, ':')}`
      const prior = seen.get(key)
      if (prior !== undefined) {
        throw new RouteConflictError(`${route.method} ${route.path} is served by ${describe(prior)} already`)
      }
      seen.set(key, route.target)
      this.#router.on(route.method, route.path, () => {}, { target: route.target })
    }
  }

  find(method: string, url: string): T | undefined {
    const q = url.indexOf('?')
    const found = this.#router.find(method as HttpMethod, q < 0 ? url : url.slice(0, q))
    return (found?.store as RouteMatch<T> | undefined)?.target
  }
}

export class RouteConflictError extends Error {
  override name = 'RouteConflictError'
}
