/**
 * The service this plugin provides to plugins that declare `dependsOn: { containers: '^1.0.0' }` (the catalog):
 * create a container from a RunSpec through the one validated path (role rules, host-root refusal, audit).
 * A plugin cannot import this file; it makes its own token with the same id: createServiceToken('hostd.containers').
 */
import { createServiceToken, type AuditActor, type Role } from '@hostd/sdk'
import type { RunSpec } from './runspec.ts'
import type { CreateHooks } from './create.ts'
import type { EngineStatus } from './engine.ts'

/** Labels under this prefix are hostd's own provenance marks: only a plugin sets them, through `RunOptions`. */
export const RESERVED_LABEL_PREFIX = 'dev.hostd.'

export interface RunOptions {
  /**
   * Provenance labels the calling plugin sets (every key under `dev.hostd.`, e.g. the catalog's
   * `dev.hostd.catalog.app`). Labels do not reach the host, so the role rules ignore them; a RunSpec's own
   * labels (`extraArgs --label`) may not use the prefix, so no caller can forge them.
   */
  labels?: Record<string, string>
}

/** A container as `listLabelled` answers it. */
export interface LabelledContainer {
  id: string
  name: string
  image: string
  state: string
  createdAt: string
  labels: Record<string, string>
  /** The registry has another digest for the image reference (the update checker's flag, as in the list). */
  updateAvailable: boolean
}

export interface RemovedContainer {
  id: string
  name: string
  /** Named volumes removed with it (only when asked). */
  removedVolumes: string[]
  /** Named volumes it used that were kept, with why (not asked, or still used by another container). */
  keptVolumes: { name: string; reason: string }[]
}

export interface ContainersService {
  /** Validates `spec` for `role` (403/400 as the REST route), pulls if missing, creates, starts; audited. */
  run(
    spec: RunSpec,
    role: Role,
    actor: AuditActor,
    hooks?: CreateHooks,
    options?: RunOptions,
  ): Promise<{ id: string; name: string }>
  engineStatus(): Promise<EngineStatus>
  /** Containers (running or not) carrying the label `key`; `[]` when no engine answers. */
  listLabelled(key: string): Promise<LabelledContainer[]>
  /** Removes a container (forced) and, with `volumes`, the named volumes it mounted; audited as container.remove. */
  remove(idOrName: string, actor: AuditActor, options?: { volumes?: boolean }): Promise<RemovedContainer>
}

export const containersService = createServiceToken<ContainersService>('hostd.containers')
