/**
 * The containers plugin's contract with other plugins: the services it provides and every type they take or give.
 * Types only, so a consumer can `import type` from here (the compiler then checks that both sides agree) and
 * still load none of this plugin's code: a plugin makes its own token with the id named in `ProvidedServices`
 * (see plugins/catalog/src/containers.ts). test/layout.test.ts holds every plugin to this.
 */
import type { AuditActor, Role, Static } from '@hostd/sdk'
import type { RunSpec } from './runspec.ts'
import type { EngineStatusSchema } from './schemas.ts'

export type { RunSpec }

/** The services this plugin provides, by token id. */
export interface ProvidedServices {
  /** For plugins that declare `dependsOn: { containers: '^1.0.0' }` (the catalog). */
  'hostd.containers': ContainersService
  /** Optional for others (the storage overview lists container volumes through it). */
  'containers.volumes': ContainerVolumesService
}

/**
 * Creating a container from a RunSpec through the one validated path (role rules, host-root refusal, audit),
 * listing and removing the containers a plugin made.
 */
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

export interface ContainerVolumesService {
  /** The engine's named volumes; empty when no engine answers (nothing to list is not an error). */
  listVolumes(): Promise<ContainerVolume[]>
}

/** What `GET /api/system/engine` answers. */
export type EngineStatus = Static<typeof EngineStatusSchema>

/** Progress of an image pull, as the engine reports it. */
export interface PullProgress {
  status: string
  id?: string
  progress?: string
  current?: number
  total?: number
}

/** Called while `run` works (the install sockets stream them). */
export interface CreateHooks {
  onPull?: (p: PullProgress) => void
  onPullStart?: (ref: string) => void
  onCreated?: (id: string) => void
}

export interface RunOptions {
  /**
   * Provenance labels the calling plugin sets (every key under `dev.hostd.`, e.g. the catalog's
   * `dev.hostd.catalog.app`). Labels do not reach the host, so the role rules ignore them; a RunSpec's own
   * labels (`extraArgs --label`) may not use the prefix, so no caller can forge them.
   */
  labels?: Record<`dev.hostd.${string}`, string>
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

export interface ContainerVolume {
  name: string
  driver: string
  mountpoint: string
  /** Names of the containers (running or not) that mount it. */
  usedBy: string[]
}
