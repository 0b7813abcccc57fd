/**
 * The tokens this plugin binds its services to (index.ts `provides`). Their types are the contract in api.ts; a
 * consumer makes its own token with the same id, since no plugin loads another plugin's code.
 */
import { createServiceToken } from '@hostd/sdk'
import type { ProvidedServices } from './api.ts'

export const containersService = createServiceToken<ProvidedServices['hostd.containers']>('hostd.containers')
export const containerVolumesService = createServiceToken<ProvidedServices['containers.volumes']>('containers.volumes')
export const containerStatesService = createServiceToken<ProvidedServices['containers.states']>('containers.states')
export const containerProjectsService =
  createServiceToken<ProvidedServices['containers.projects']>('containers.projects')
export const containerBackupService = createServiceToken<ProvidedServices['containers.backup']>('containers.backup')
