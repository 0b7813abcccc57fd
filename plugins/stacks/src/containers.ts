/**
 * The containers plugin's services, as this plugin uses them. Their types come from that plugin's contract (its
 * `src/api.ts`, types only); the tokens are made here with the ids the contract names, so no code of it is loaded.
 */
import { createServiceToken } from '@hostd/sdk'
import type { ProvidedServices } from '../../containers/src/api.ts'

export type {
  ContainerProjectsService,
  ContainersService,
  ProjectContainer,
  PullProgress,
  RunSpec,
} from '../../containers/src/api.ts'

const CONTAINERS = 'hostd.containers' satisfies keyof ProvidedServices
const PROJECTS = 'containers.projects' satisfies keyof ProvidedServices
export const containersService = createServiceToken<ProvidedServices[typeof CONTAINERS]>(CONTAINERS)
export const projectsService = createServiceToken<ProvidedServices[typeof PROJECTS]>(PROJECTS)
