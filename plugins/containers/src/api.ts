/**
 * The containers plugin's contract with other plugins: the services it provides and every type they take or give.
 * Types only, so a consumer can `import type` from here (the compiler then checks that both sides agree) and
 * still load none of this plugin's code: a plugin makes its own token with the id named in `ProvidedServices`
 * (see plugins/catalog/src/containers.ts). test/layout.test.ts holds every plugin to this.
 */
import type { Readable } from 'node:stream'
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
  /** Optional for others (the alerts plugin's container rules). */
  'containers.states': ContainerStatesService
  /**
   * What a multi-container project needs besides `run` (the stacks plugin): networks and volumes by label, the
   * role rules alone, pulls, lifecycle actions, health. Every change is audited here as the REST routes audit it.
   */
  'containers.projects': ContainerProjectsService
  /** Optional for others (the backups plugin reads a container's definition and volumes, and recreates it). */
  'containers.backup': ContainerBackupService
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

/**
 * What the backups plugin needs: a container's definition (the engine's own create options, as `update` recreates
 * from) and mounts, stopping and starting it around a copy, and recreating it with its volumes from a definition.
 */
export interface ContainerBackupService {
  /** Containers (running or not), for choosing what to back up; `[]` when no engine answers. */
  list(): Promise<{ id: string; name: string; image: string; state: string }[]>
  /** One container's definition and mounts; 404 HOSTD_CONTAINERS_NOT_FOUND when the engine has none by that name. */
  describe(idOrName: string): Promise<ContainerDefinition>
  /** Stops it (answers whether it was running); audited as container.stop. */
  stop(idOrName: string, actor: AuditActor): Promise<boolean>
  /** Starts it; audited as container.start. */
  start(idOrName: string, actor: AuditActor): Promise<void>
  /** Creates the named volume when missing (driver local) and answers where its data lives on this host. */
  ensureVolume(name: string, actor: AuditActor): Promise<{ name: string; mountpoint: string }>
  /**
   * Creates a container from a definition `describe` answered (pulling its image when missing) under its name,
   * not started; audited as container.create with `detail.restored`. 409 when a container has that name.
   */
  recreate(definition: ContainerDefinition, actor: AuditActor): Promise<{ id: string; name: string }>
}

/** A container's definition as `describe` answers it: what recreating it needs. JSON, so it can be stored. */
export interface ContainerDefinition {
  name: string
  image: string
  running: boolean
  /** Its mounts: named volumes (with where their data lives) and bind folders of the host. */
  mounts: { type: 'volume' | 'bind'; name: string | null; source: string; target: string; readOnly: boolean }[]
  /** The engine's inspect `Config`, `HostConfig` and network endpoints, as the update path recreates from. */
  engine: { config: Record<string, unknown>; hostConfig: Record<string, unknown>; networks: Record<string, unknown> }
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
  /**
   * Compose's own labels (every key under `com.docker.compose.`), so the compose CLI sees the project. Like the
   * provenance labels they do not reach the host.
   */
  composeLabels?: Record<string, string>
  /** The container's health check (the engine's HealthConfig: durations in nanoseconds; `['NONE']` turns it off). */
  healthcheck?: HealthCheck
  /** Aliases on the spec's own `network` (a user-defined network; the service's name for compose). */
  aliases?: string[]
  /** More user-defined networks joined before the container starts (never host, none or another container's). */
  moreNetworks?: { name: string; aliases?: string[] }[]
  /** Seconds a stop waits before it kills (compose's stop_grace_period). */
  stopTimeout?: number
  /** The signal a stop sends first (compose's stop_signal). */
  stopSignal?: string
  /** The container's hostname. */
  hostname?: string
  /** Labels a project gives its containers (compose's `labels`): none under `dev.hostd.` or `com.docker.compose.`. */
  extraLabels?: Record<string, string>
}

export interface HealthCheck {
  test: string[]
  interval?: number
  timeout?: number
  retries?: number
  startPeriod?: number
}

/** A container as the projects service reads it (inspect), with its health. */
export interface ProjectContainer {
  id: string
  name: string
  image: string
  /** The image's id the container runs. */
  imageId: string
  /** created, running, exited, ... */
  state: string
  /** healthy, unhealthy, starting; null without a health check. */
  health: string | null
  exitCode: number
  labels: Record<string, string>
  networks: string[]
}

export interface ProjectNetwork {
  id: string
  name: string
  labels: Record<string, string>
}

export interface ProjectVolume {
  name: string
  labels: Record<string, string>
}

export interface ContainerProjectsService {
  /** Containers (running or not) whose labels include `label` (`key` or `key=value`), inspected; [] without an engine. */
  containers(label: string): Promise<ProjectContainer[]>
  /** One container; null when the engine has none of that id or name. */
  inspect(idOrName: string): Promise<ProjectContainer | null>
  /** The role rules alone for `spec` (no engine needed): the role it needs and why; 400 when it is invalid. */
  check(spec: RunSpec): Promise<{ role: Role; reasons: string[] }>
  /** The id of the local image `ref` names; null when there is none. */
  imageId(ref: string): Promise<string | null>
  /** Pulls `ref` with the engine's progress; audited as image.pull. */
  pull(ref: string, actor: AuditActor, onProgress?: (p: PullProgress) => void): Promise<void>
  /** start, stop or restart; audited as container.<action>. */
  action(
    idOrName: string,
    action: 'start' | 'stop' | 'restart',
    actor: AuditActor,
    options?: { timeout?: number },
  ): Promise<{ before: string; after: string }>
  networks(label: string): Promise<ProjectNetwork[]>
  /** Creates a bridge network with these labels unless one of that name exists; audited as network.create. */
  ensureNetwork(
    network: { name: string; labels: Record<string, string>; internal?: boolean },
    actor: AuditActor,
  ): Promise<{ created: boolean }>
  /** Removes a network (missing is not an error); audited as network.remove. */
  removeNetwork(name: string, actor: AuditActor): Promise<void>
  volumes(label: string): Promise<ProjectVolume[]>
  /** Creates a plain local volume with these labels unless it exists; audited as volume.create. */
  ensureVolume(
    volume: { name: string; labels: Record<string, string> },
    actor: AuditActor,
  ): Promise<{ created: boolean }>
  /** Removes a named volume (missing is not an error); audited as volume.remove. */
  removeVolume(name: string, actor: AuditActor): Promise<void>
  /** The container's log stream (multiplexed unless `tty`) from its last `tail` lines, followed when asked. */
  logs(idOrName: string, tail: number, follow: boolean): Promise<{ stream: Readable; tty: boolean }>
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
  /** Ports published on the host, as the engine lists them (only while the container runs); for the catalog's Open. */
  ports?: { containerPort: number; hostPort: number; protocol: string; hostIp: string }[]
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

/** Container states and the engine's container events, for plugins that watch containers (alerts). */
export interface ContainerStatesService {
  /** Every container (running or not) with its state; `[]` when no engine answers. */
  list(): Promise<ContainerState[]>
  /** One container's state; null when it does not exist or no engine answers. */
  get(id: string): Promise<ContainerState | null>
  /**
   * The engine's container events (start, die, stop, health_status...) as they happen, until `signal` aborts;
   * reconnects when the engine comes back, calling `onConnect` at each connection (re-read the list then).
   */
  watch(onEvent: (event: ContainerEvent) => void, signal: AbortSignal, onConnect?: () => void): void
}

export interface ContainerState {
  id: string
  name: string
  image: string
  /** The engine's word: running, exited, restarting, paused, created, dead. */
  state: string
  health: 'healthy' | 'unhealthy' | 'starting' | null
  /** no, always, unless-stopped, on-failure. */
  restartPolicy: string
  exitCode: number | null
  restartCount: number
}

export interface ContainerEvent {
  /** The container's full id. */
  id: string
  /** The engine's action: start, die, stop, kill, restart, destroy, `health_status: unhealthy`... */
  action: string
}
