import type { DependencyContainer } from 'tsyringe'
// Only the two functions used: the whole package is about 45 modules (10-15 ms of a start).
import satisfies from 'semver/functions/satisfies.js'
import validRange from 'semver/ranges/valid.js'
import { KERNEL_API_VERSION, type DepsMap, type HostdPlugin, type ResolvedDeps, type ServiceBinding } from '@hostd/sdk'
import type { PluginRecord, PluginRuntime } from './records.ts'

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

/** The services a definition's `deps` names, from `scope`; throws naming the first one nobody provides. */
export function resolveDeps(scope: DependencyContainer, def: HostdPlugin): ResolvedDeps<DepsMap> {
  const deps: ResolvedDeps<DepsMap> = {}
  for (const [name, token] of Object.entries<DepsMap[string]>(def.deps ?? {})) {
    if (!scope.isRegistered(token.id, true))
      throw new Error(`needs service "${token.id}", which neither the kernel nor an active plugin provides`)
    deps[name] = scope.resolve(token.id)
  }
  return deps
}

/**
 * The services active plugins provide, in the kernel's container: registered when a load goes live, withdrawn when it
 * stops, unless a newer version of the same plugin has taken them over by then.
 */
export class ProvidedServices {
  readonly #container: DependencyContainer
  readonly #owners = new Map<string, PluginRecord>()

  constructor(container: DependencyContainer) {
    this.#container = container
  }

  publish(record: PluginRecord, runtime: PluginRuntime, bindings: ServiceBinding[]): void {
    for (const binding of bindings) {
      this.#container.register(binding.token.id, { useValue: binding.value })
      this.#owners.set(binding.token.id, record)
      runtime.provided.push(binding.token.id)
    }
  }

  withdraw(record: PluginRecord): void {
    for (const id of record.runtime?.provided ?? []) {
      if (this.#owners.get(id) !== record) continue
      this.#owners.delete(id)
      this.#container.register(id, {
        useFactory: () => {
          throw new Error(`service "${id}" is gone: plugin ${record.id} was unloaded`)
        },
      })
    }
  }
}
