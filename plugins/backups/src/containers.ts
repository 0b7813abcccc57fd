/**
 * The containers plugin's backup service, as this plugin uses it (an optional dependency: without that plugin, jobs
 * back up hostd and folders only). Types from that plugin's contract, types only; the token is made here.
 */
import { createServiceToken } from '@hostd/sdk'
import type { ProvidedServices } from '../../containers/src/api.ts'

export type { ContainerBackupService, ContainerDefinition } from '../../containers/src/api.ts'

const BACKUP = 'containers.backup' satisfies keyof ProvidedServices
export const containerBackupService = createServiceToken<ProvidedServices[typeof BACKUP]>(BACKUP)
