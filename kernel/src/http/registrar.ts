import type { FastifyReply } from 'fastify'
import type {
  HttpMethod,
  RouteDefinition,
  RouteOptions,
  RouteRequest,
  RouteSchema,
  SocketDefinition,
  SocketRegistrar,
} from '@hostd/sdk'
import type { KernelRouteOptions } from './instance.ts'
import type { AuthUser } from '../auth/auth-user.ts'

/** A kernel route's request: the sdk's, with the user as the kernel sees it (two-factor state included). */
export type KernelRouteRequest<S extends RouteSchema> = Omit<RouteRequest<S>, 'user'> & { user: AuthUser | null }
type KernelRouteMethod = <S extends RouteSchema>(
  path: string,
  options: RouteOptions<S> & KernelRouteOptions,
  handler: (req: KernelRouteRequest<S>, reply: FastifyReply) => unknown,
) => void

/** The sdk's RouteRegistrar with the options only the kernel's own routes may set (a plugin's are ignored). */
export interface KernelRouteRegistrar {
  get: KernelRouteMethod
  post: KernelRouteMethod
  put: KernelRouteMethod
  patch: KernelRouteMethod
  delete: KernelRouteMethod
}

/** Runs a `routes` function and returns what it declared; mounting happens separately, after checks. */
export function collectRoutes(declare: (r: KernelRouteRegistrar) => void): RouteDefinition[] {
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
