import type { HostdPlugin, ServiceExposure } from '@hostd/sdk'
import { PermissionErrors } from './permissions.ts'

/** The exposure of a service by its token id, as its current provider bound it (ProvidedServices). */
export type ExposureLookup = (id: string) => ServiceExposure | undefined

/**
 * Why the third-party plugin `def` may not call `method` of the service `id`, or null when it may: the method must be
 * exposed by the service's provider (`bind(token, value, { read, write })`) for the access `def` declared in
 * `permissions.services` (a `read` grant calls only the `read` methods).
 */
export function methodProblem(
  def: HostdPlugin,
  id: string,
  method: string,
  exposure: ServiceExposure | undefined,
): string | null {
  const access = def.permissions?.services?.[id]
  if (access === undefined) return `plugin ${def.id} did not declare the service "${id}" in permissions.services`
  if (exposure?.read?.includes(method)) return null
  if (exposure?.write?.includes(method)) {
    if (access === 'write') return null
    return (
      `plugin ${def.id} has read access to the service "${id}", and ${method} changes things: ` +
      `declare permissions: { services: { '${id}': 'write' } }`
    )
  }
  return `the service "${id}" does not let third-party plugins call ${method}`
}

/**
 * A third-party plugin's view of another plugin's service: each method it may call (methodProblem) goes through to
 * the provider's, any other throws HOSTD_PLUGIN_PERMISSION_DENIED when called. Fields that are not methods are not
 * there. The provider's exposure is read on each access, so an upgrade of the provider is seen at once.
 */
export function limitedService(def: HostdPlugin, id: string, value: unknown, exposure: ExposureLookup): unknown {
  if (value === undefined || value === null) return value
  const service = value as Record<string, unknown>
  return new Proxy(Object.create(null) as object, {
    get(_target, name) {
      // Not a thenable, not a symbol-keyed protocol: only method names reach the provider.
      if (typeof name !== 'string' || name === 'then') return undefined
      const problem = methodProblem(def, id, name, exposure(id))
      if (problem)
        return () => {
          throw PermissionErrors.denied(problem)
        }
      const method = service[name]
      if (typeof method !== 'function') return undefined
      return (...args: unknown[]) => method.apply(service, args)
    },
    has: (_target, name) => typeof name === 'string' && methodProblem(def, id, name, exposure(id)) === null,
    ownKeys: () => [],
    set: () => false,
    defineProperty: () => false,
  })
}
