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
 * Which instance serves a method and path. Rebuilt whole on every plugin change and swapped in one assignment, so a
 * request sees either the old or the new table. Building it finds conflicts (a route declared twice throws); the
 * router itself is made on the first lookup: a start that loads the thirteen built-in plugins makes fourteen tables,
 * of which only the last is ever asked, and making each router took 1-10 ms (about 65 ms of a start).
 */
export class RoutingTable<T> {
  readonly #routes: readonly TableRoute<T>[]
  #router: Router | undefined

  constructor(routes: TableRoute<T>[], describe: (target: T) => string) {
    const seen = new Map<string, T>()
    for (const route of routes) {
      const key = `${route.method} ${route.path.replace(/:[^/]+/g, ':')}`
      const prior = seen.get(key)
      if (prior !== undefined) {
        throw new RouteConflictError(`${route.method} ${route.path} is served by ${describe(prior)} already`)
      }
      seen.set(key, route.target)
    }
    this.#routes = routes
  }

  find(method: string, url: string): T | undefined {
    const q = url.indexOf('?')
    const found = (this.#router ??= this.#makeRouter()).find(method as HttpMethod, q < 0 ? url : url.slice(0, q))
    return (found?.store as RouteMatch<T> | undefined)?.target
  }

  #makeRouter(): Router {
    const router = FindMyWay({ ignoreTrailingSlash: false, maxParamLength: 256 })
    for (const route of this.#routes) router.on(route.method, route.path, () => {}, { target: route.target })
    return router
  }
}

type Router = ReturnType<typeof FindMyWay>

export class RouteConflictError extends Error {
  override name = 'RouteConflictError'
}
