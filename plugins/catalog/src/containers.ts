/**
 * The containers plugin's service, as this plugin uses it. Its types come from that plugin's contract (its
 * `src/api.ts`, types only), so the compiler checks both sides agree; no code of it is loaded: the token is made
 * here, with an id the contract names.
 */
import { createServiceToken, type Static } from '@hostd/sdk'
import type { ProvidedServices, RunSpec as ContainersRunSpec } from '../../containers/src/api.ts'
import type { ProvidedServices as StackServices } from '../../stacks/src/api.ts'
import type { CatalogRunSpecSchema } from './schemas.ts'

export type { ContainersService, CreateHooks, LabelledContainer } from '../../containers/src/api.ts'

const CONTAINERS = 'hostd.containers' satisfies keyof ProvidedServices
export const containersService = createServiceToken<ProvidedServices[typeof CONTAINERS]>(CONTAINERS)

/** The RunSpec fields a catalog entry may carry: a subset of the containers plugin's RunSpec. */
export type RunSpec = Static<typeof CatalogRunSpecSchema>

/** Compiles only while each of those fields is a field of the containers plugin's RunSpec, of a type it takes. */
export type RunSpecFitsContainers = IsTrue<RunSpec extends Pick<ContainersRunSpec, keyof RunSpec> ? true : false>
type IsTrue<T extends true> = T

/** The provenance labels the catalog sets on the containers it installs (through the service's RunOptions). */
export const LABELS = {
  app: 'dev.hostd.catalog.app',
  /** On each container of an app that is a stack: the stack's name. */
  stack: 'dev.hostd.catalog.stack',
  source: 'dev.hostd.catalog.source',
  version: 'dev.hostd.catalog.version',
} as const

/** The stacks plugin's installer (optional: through tokens.optional), for apps that are stacks. */
const STACKS = 'hostd.stacks' satisfies keyof StackServices
export const stacksInstaller = createServiceToken<StackServices[typeof STACKS]>(STACKS)
export type { StackProgress } from '../../stacks/src/api.ts'
