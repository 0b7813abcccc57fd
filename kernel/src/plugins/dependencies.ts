import type { DependencyContainer } from 'tsyringe'
// Only the two functions used: the whole package is about 45 modules (10-15 ms of a start).
import satisfies from 'semver/functions/satisfies.js'
import validRange from 'semver/ranges/valid.js'
import {
  KERNEL_API_VERSION,
  tokens,
  type AuditService,
  type DepsMap,
  type HelperClient,
  type HostdPlugin,
  type OptionalServices,
  type ResolvedDeps,
  type ServiceBinding,
  type ServiceExposure,
  type ServiceToken,
} from '@hostd/sdk'
import type { PluginRecord, PluginRuntime } from './records.ts'
import { KERNEL_SERVICE_IDS, PermissionErrors, THIRD_PARTY_KERNEL_SERVICES } from './permissions.ts'
import { limitedService, type ExposureLookup } from './service-access.ts'

/** Why this kernel cannot run a plugin made for the kernel API `range`, or null when it can. */
export function kernelApiProblem(range: string): string | null {
  if (!validRange(range)) return `its kernel API range "${range}" is not a semver range`
  if (satisfies(KERNEL_API_VERSION, range)) return null
  return (
    `needs kernel API ${range}, but this kernel provides ${KERNEL_API_VERSION}: ` +
    `install a version of the plugin made for ${KERNEL_API_VERSION}, or a hostd that provides ${range}`
  )
}

/** The first plugin `def` depends on that is not installed, not active, or not in its range; null when none. */
export function missingDependency(def: HostdPlugin, find: (id: string) => PluginRecord | undefined): string | null {
  for (const [id, range] of Object.entries(def.dependsOn ?? {})) {
    const dep = find(id)
    if (!dep?.definition) return `needs plugin ${id} ${range}, which is not installed`
    if (dep.state !== 'active') return `needs plugin ${id} ${range}, which is ${dep.state}`
    if (!satisfies(dep.definition.version, range))
      return `needs plugin ${id} ${range}, but ${dep.definition.version} is installed`
  }
  return null
}

/**
 * The services a definition's `deps` names, from `scope`; throws naming the first one nobody provides. With `exposure`
 * (a third-party plugin), another plugin's service is its limited view (service-access.ts).
 */
export function resolveDeps(
  scope: DependencyContainer,
  def: HostdPlugin,
  exposure?: ExposureLookup,
): ResolvedDeps<DepsMap> {
  const deps: ResolvedDeps<DepsMap> = {}
  for (const [name, token] of Object.entries<DepsMap[string]>(def.deps ?? {})) {
    if (!scope.isRegistered(token.id, true))
      throw new Error(`needs service "${token.id}", which neither the kernel nor an active plugin provides`)
    const value = scope.resolve(token.id)
    deps[name] = exposure && !KERNEL_SERVICE_IDS.has(token.id) ? limitedService(def, token.id, value, exposure) : value
  }
  return deps
}

/**
 * Narrows `scope` to what the third-party plugin `def` declared (its `permissions`), or throws naming the first service
 * it asks and may not have: `hostd.database` never; `hostd.helper` only as a client limited to its declared helper
 * actions; another plugin's service only when declared in `permissions.services`, in `deps` and through
 * `tokens.optional` alike. Its audit records are stamped with its id (`detail.plugin`).
 */
export function grantThirdParty(scope: DependencyContainer, def: HostdPlugin, exposure: ExposureLookup): void {
  const declared = def.permissions ?? {}
  const services = declared.services ?? {}
  const actions = new Set(declared.helper ?? [])
  for (const id of Object.keys(services)) {
    if (KERNEL_SERVICE_IDS.has(id))
      throw new Error(
        `permissions.services names "${id}", a service of the kernel: use it through deps, not permissions`,
      )
  }
  for (const [name, token] of Object.entries<DepsMap[string]>(def.deps ?? {})) {
    if (token.id === tokens.helper.id && actions.size === 0)
      throw new Error(
        `asks the root helper (deps.${name}) but declares no helper action: list them in permissions: { helper: [...] }`,
      )
    if (KERNEL_SERVICE_IDS.has(token.id) && !THIRD_PARTY_KERNEL_SERVICES.has(token.id))
      throw new Error(
        `asks the kernel's service "${token.id}" (deps.${name}), which is never granted to a third-party plugin`,
      )
    if (!KERNEL_SERVICE_IDS.has(token.id) && !Object.hasOwn(services, token.id))
      throw new Error(
        `uses the service "${token.id}" (deps.${name}) without declaring it: ` +
          `add permissions: { services: { '${token.id}': 'read' } } (or 'write')`,
      )
  }
  const audit = scope.resolve<AuditService>(tokens.audit.id)
  const stamped: AuditService = {
    record: (event, actor) => audit.record({ ...event, detail: { ...event.detail, plugin: def.id } }, actor),
  }
  scope.register(tokens.audit.id, { useValue: stamped })
  const optional = scope.resolve<OptionalServices>(tokens.optional.id)
  const limitedOptional: OptionalServices = {
    get: <T>(token: ServiceToken<T>) => {
      if (!Object.hasOwn(services, token.id))
        throw PermissionErrors.denied(
          `plugin ${def.id} did not declare the service "${token.id}" in permissions.services`,
        )
      return limitedService(def, token.id, optional.get(token), exposure) as T | undefined
    },
  }
  scope.register(tokens.optional.id, { useValue: limitedOptional })
  const helper = scope.resolve<HelperClient>(tokens.helper.id)
  const limitedHelper: HelperClient = {
    available: () => helper.available(),
    call: (action, args, options) => {
      if (!actions.has(action))
        return Promise.reject(
          PermissionErrors.denied(
            `plugin ${def.id} did not declare the helper action "${action}" in permissions.helper`,
          ),
        )
      return helper.call(action, args, options)
    },
  }
  scope.register(tokens.helper.id, { useValue: limitedHelper })
}

/** Why `record` may not provide the service `id`, or null. */
function provideProblem(record: PluginRecord, id: string, owner: PluginRecord | undefined): string | null {
  if (KERNEL_SERVICE_IDS.has(id)) return `provides "${id}", a service of the kernel: no plugin may provide it`
  if (owner && owner.id !== record.id) return `provides "${id}", which plugin ${owner.id} provides already`
  if (record.builtin) return null
  if (id.startsWith('hostd.'))
    return `provides "${id}": the hostd.* services are the kernel's and the built-in plugins'; name it ${record.id}.<name>`
  if (id !== record.id && !id.startsWith(`${record.id}.`))
    return `provides "${id}": a third-party plugin's services are named after it, ${record.id}.<name>`
  return null
}

/**
 * The services active plugins provide, in the kernel's container: registered when a load goes live, withdrawn when it
 * stops, unless a newer version of the same plugin has taken them over by then.
 */
export class ProvidedServices {
  readonly #container: DependencyContainer
  readonly #owners = new Map<string, PluginRecord>()
  /** What each service lets third-party plugins call (`bind`'s `expose`). */
  readonly #exposures = new Map<string, ServiceExposure>()

  constructor(container: DependencyContainer) {
    this.#container = container
  }

  /**
   * Throws when `record` may not provide one of `bindings`: a kernel service (`hostd.logger`, `hostd.audit`...), one
   * another plugin provides, or, for a third-party plugin, any name but `<its id>.<name>`. Called before it starts.
   */
  check(record: PluginRecord, bindings: ServiceBinding[]): void {
    for (const binding of bindings) {
      const problem = provideProblem(record, binding.token?.id ?? '', this.#owners.get(binding.token?.id ?? ''))
      if (problem) throw new Error(problem)
    }
  }

  publish(record: PluginRecord, runtime: PluginRuntime, bindings: ServiceBinding[]): void {
    for (const binding of bindings) {
      this.#container.register(binding.token.id, { useValue: binding.value })
      this.#owners.set(binding.token.id, record)
      if (binding.expose) this.#exposures.set(binding.token.id, binding.expose)
      else this.#exposures.delete(binding.token.id)
      runtime.provided.push(binding.token.id)
    }
  }

  /** The methods the current provider of `id` lets third-party plugins call. */
  exposure(id: string): ServiceExposure | undefined {
    return this.#exposures.get(id)
  }

  withdraw(record: PluginRecord): void {
    for (const id of record.runtime?.provided ?? []) {
      if (this.#owners.get(id) !== record) continue
      this.#owners.delete(id)
      this.#exposures.delete(id)
      this.#container.register(id, {
        useFactory: () => {
          throw new Error(`service "${id}" is gone: plugin ${record.id} was unloaded`)
        },
      })
    }
  }
}
