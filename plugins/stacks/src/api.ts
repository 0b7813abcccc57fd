/**
 * The stacks plugin's contract with other plugins (the catalog installs an app that is a stack through it). Types
 * only: a consumer makes its own token with the id named in `ProvidedServices` and loads none of this plugin's code.
 */
import type { AuditActor, Role } from '@hostd/sdk'

export interface ProvidedServices {
  /** Optional for others (tokens.optional): the catalog's stack apps. */
  'hostd.stacks': StacksInstaller
}

/** One service's outcome of a deploy. */
export interface StackServiceOutcome {
  service: string
  action: 'created' | 'recreated' | 'started' | 'unchanged'
  container: string
}

/** A step of a deploy, as the events socket sends it (`event` of a `progress` message). */
export interface StackProgress {
  type: string
  service?: string
  step?: string
  layer?: string
  status?: string
  current?: number
  total?: number
}

export interface StacksInstaller {
  /**
   * Writes the stack's compose.yaml and .env (creating its folder, or replacing its files) and deploys it for
   * `role`, pulling every image (an update). `labels` (each under `dev.hostd.`) mark every container of the stack
   * and are kept in its folder's `.hostd.json`, so a later deploy from the stacks page keeps them. Audited.
   */
  install(
    input: { name: string; compose: string; env: string; labels: Record<`dev.hostd.${string}`, string> },
    role: Role,
    actor: AuditActor,
    onProgress?: (event: StackProgress) => void,
  ): Promise<{ name: string; services: StackServiceOutcome[] }>
  /** Takes the stack down (its volumes too when asked) and deletes its folder. Audited. */
  uninstall(
    name: string,
    actor: AuditActor,
    options?: { volumes?: boolean },
  ): Promise<{ name: string; containers: string[]; volumes: string[]; keptVolumes: string[] }>
}
