/**
 * The service the routes, sockets and other plugins call: what one load of the plugin holds (the engine finder,
 * caches, auto-start, icons) and the feature's operations over the adapters, among them the one creating path
 * every caller goes through (`runSpec`).
 */
import type { Readable } from 'node:stream'
import { auditOutcome } from '@hostd/sdk'
import type { AuditActor, AuditService, KernelInfo, Logger, Role, Settings } from '@hostd/sdk'
import type { CreateHooks, RemovedContainer, RunOptions } from './api.ts'
import { AutoStart } from './autostart.ts'
import { ContainerErrors, engineError } from './errors.ts'
import { authorizeSpec } from './policy.ts'
import type { RunSpec } from './runspec.ts'
import { normalizeSpec } from './runspec/normalize.ts'
import { ContainerService } from './adapters/containers.ts'
import { createAndStart } from './adapters/create.ts'
import { Engine } from './adapters/engine.ts'
import { ContainerLive } from './adapters/live.ts'
import { IconStore } from './adapters/icons.ts'
import { listImages, pull, removeImage } from './adapters/images.ts'
import { openLogStream } from './adapters/logs.ts'
import { createNetwork, listNetworks, removeNetwork } from './adapters/networks.ts'
import { engineTraits } from './adapters/policy-facts.ts'
import { searchRegistry } from './adapters/registry-search.ts'
import { UpdateChecker } from './adapters/update-check.ts'
import { updateContainer, type UpdateHooks, type UpdateOutcome } from './adapters/update.ts'
import { editAsSpec, recreateContainer, type RecreateBody, type RecreateOutcome } from './adapters/recreate.ts'
import { listVolumes } from './adapters/volumes.ts'
import { applyProjectOptions } from './projects.ts'

/** An anonymous volume's name is 64 hex digits (the engine's random id); a named one is chosen by someone. */
export function isAnonymousVolume(name: string): boolean {
  return /^[0-9a-f]{64}$/.test(name)
}

/** Labels under this prefix are hostd's own provenance marks: only a plugin sets them, through `RunOptions`. */
const RESERVED_LABEL_PREFIX = 'dev.hostd.'

export interface PluginDeps {
  audit: AuditService
  log: Logger
  settings: Settings
  kernel: KernelInfo
}

export class Runtime {
  readonly engine: Engine
  readonly autostart: AutoStart
  readonly updates: UpdateChecker
  readonly containers: ContainerService
  readonly icons: IconStore
  /** The engine's container events and live CPU and memory, for the list and the overview card. */
  readonly live: ContainerLive
  readonly audit: AuditService
  readonly log: Logger

  constructor(deps: PluginDeps) {
    this.engine = new Engine(deps.kernel.dockerHost ?? process.env.DOCKER_HOST ?? null)
    this.autostart = new AutoStart(deps.settings)
    const ttl = Number(process.env.HOSTD_CONTAINERS_UPDATE_CHECK_SECONDS ?? 3600)
    this.updates = new UpdateChecker(this.engine, (Number.isFinite(ttl) ? ttl : 3600) * 1000)
    this.containers = new ContainerService(this.engine, this.autostart, this.updates)
    this.icons = new IconStore(deps.kernel.dataDir)
    this.containers.iconNames = () => this.icons.names()
    // A container updated or renamed elsewhere: its cached facts are read again on the next list.
    this.live = new ContainerLive(this.engine, (change) => {
      if (change.action === 'update' || change.action === 'rename' || change.action === 'destroy')
        this.containers.forget(change.id)
    })
    this.audit = deps.audit
    this.log = deps.log
  }

  /** Records the outcome of `fn` (success with `detail`, or failure with the error) and passes it on. */
  audited<T>(
    action: string,
    target: string,
    actor: AuditActor,
    fn: () => Promise<T>,
    detail: (out: T) => Record<string, unknown> = () => ({}),
  ): Promise<T> {
    return auditOutcome(this.audit, { action, target }, actor, fn, detail)
  }

  /**
   * The one creating path (REST, install socket, catalog): schema-valid RunSpec -> normalized -> role rules ->
   * pull if missing -> create -> start. Audited as container.create.
   */
  async runSpec(
    input: RunSpec,
    role: Role,
    actor: AuditActor,
    hooks: CreateHooks = {},
    options: RunOptions = {},
  ): Promise<{ id: string; name: string }> {
    const spec = normalizeSpec(input)
    const forged = Object.keys(spec.labels).filter((key) => key.startsWith(RESERVED_LABEL_PREFIX))
    if (forged.length > 0)
      throw ContainerErrors.invalidSpec(
        `Labels under "${RESERVED_LABEL_PREFIX}" are set by hostd only: ${forged.join(', ')}`,
      )
    for (const [key, value] of Object.entries(options.labels ?? {})) {
      if (!key.startsWith(RESERVED_LABEL_PREFIX))
        throw new TypeError(`provenance label ${key} must start with ${RESERVED_LABEL_PREFIX}`)
      spec.labels[key] = value
    }
    applyProjectOptions(spec, options)
    // Role rules first, so a refused spec is refused whether or not an engine answers; the rules that need the
    // engine (Docker Desktop, named volumes and a joined container's network as the engine has them) are checked
    // again once it is found, before anything is pulled or created.
    await authorizeSpec(spec, role)
    const found = await this.engine.info()
    await authorizeSpec(spec, role, await engineTraits(found.docker, found.operatingSystem, spec))
    return this.audited(
      'container.create',
      spec.name ?? spec.image,
      actor,
      async () => {
        // Checked once more on the created container, before it starts: it now holds its volumes (the engine
        // refuses to remove a volume in use) and names the container it joins by id, so a volume or container
        // replaced between the first check and the create is seen here.
        const { id, pulled } = await createAndStart(found.docker, spec, hooks, async (created) =>
          authorizeSpec(
            spec,
            role,
            await engineTraits(found.docker, found.operatingSystem, spec, await created.inspect()),
          ),
        )
        if (pulled)
          await this.audit.record(
            { action: 'image.pull', target: spec.image, result: 'success', detail: { for: 'container.create' } },
            actor,
          )
        const info = await this.containers.inspect(id)
        await this.containers.imagesChanged()
        return { id, name: String(info.Name).replace(/^\//, ''), image: spec.image }
      },
      (out) => ({ id: out.id, image: out.image, name: out.name }),
    )
  }

  /** Forced removal, then (when asked) the named volumes the container mounted; audited as container.remove. */
  async removeWithVolumes(idOrName: string, actor: AuditActor, volumes: boolean): Promise<RemovedContainer> {
    const info = await this.containers.inspect(idOrName)
    const named = (info.Mounts ?? []).flatMap((m) => (m.Type === 'volume' && m.Name ? [m.Name] : []))
    const out = await this.removeContainer(info.Id, actor, { force: true, volumes: volumes ? named : [] })
    const kept = volumes ? [] : named.map((name) => ({ name, reason: 'not asked to remove volumes' }))
    return {
      id: out.id,
      name: out.name,
      removedVolumes: out.removedVolumes,
      keptVolumes: [...out.keptVolumes, ...kept],
    }
  }

  /**
   * Removes a container (refused while it runs unless `force`), with its anonymous volumes when asked (the engine's
   * `v`), then the named volumes asked for, each of which must be one it mounts (400 otherwise, before anything is
   * removed). A named volume another container still uses is kept, with the reason. Audited as container.remove.
   */
  async removeContainer(
    idOrName: string,
    actor: AuditActor,
    options: { force?: boolean; anonymousVolumes?: boolean; volumes?: string[] } = {},
  ): Promise<{ id: string; name: string; state: string; converged: boolean } & RemovedContainer> {
    const info = await this.containers.inspect(idOrName)
    const name = String(info.Name).replace(/^\//, '')
    const mounted = (info.Mounts ?? []).flatMap((m) => (m.Type === 'volume' && m.Name ? [m.Name] : []))
    const anonymous = mounted.filter(isAnonymousVolume)
    const asked = options.volumes ?? []
    const foreign = asked.filter((v) => !mounted.includes(v))
    if (foreign.length > 0)
      throw ContainerErrors.invalidSpec(
        `${name} does not mount ${foreign.join(', ')}: only its own volumes can be removed with it`,
      )
    const force = options.force ?? false
    const anonymousVolumes = options.anonymousVolumes ?? false
    return this.audited(
      'container.remove',
      name,
      actor,
      async () => {
        const out = await this.containers.remove(info.Id, force, anonymousVolumes)
        const removedVolumes: string[] = []
        const keptVolumes: { name: string; reason: string }[] = []
        if (anonymousVolumes) {
          const d = await this.engine.require()
          for (const v of anonymous) {
            const gone = await d
              .getVolume(v)
              .inspect()
              .then(
                () => false,
                (err: { statusCode?: number }) => err.statusCode === 404,
              )
            if (gone) removedVolumes.push(v)
          }
        }
        for (const v of asked) {
          try {
            await this.containers.call((d) => d.getVolume(v).remove())
            removedVolumes.push(v)
          } catch (err) {
            keptVolumes.push({ name: v, reason: await this.volumeKeptReason(v, err) })
          }
        }
        return { ...out, removedVolumes, keptVolumes }
      },
      (o) => ({
        id: o.id,
        name: o.name,
        force,
        anonymousVolumes,
        before: o.before,
        after: o.state,
        removedVolumes: o.removedVolumes,
        keptVolumes: o.keptVolumes.map((v) => v.name),
      }),
    )
  }

  /** Why a volume could not be removed, in words: the containers still using it when that is the reason. */
  async volumeKeptReason(volume: string, err: unknown): Promise<string> {
    if ((err as { statusCode?: number }).statusCode === 409) {
      const users = await this.containers
        .call((d) => d.listContainers({ all: true, filters: { volume: [volume] } }))
        .catch(() => [])
      const names = users.map((c) => (c.Names?.[0] ?? c.Id.slice(0, 12)).replace(/^\//, ''))
      if (names.length > 0) return `still used by ${names.join(', ')}`
    }
    return engineError(err).message
  }

  /**
   * Edit and recreate keeping the name (adapters/recreate.ts): the edit passes the role rules as a RunSpec would
   * (only what it sets; the rest the container had already), then the image is pulled when missing and the container
   * recreated, the old one restored when that fails. Audited as container.recreate.
   */
  async recreate(idOrName: string, edit: RecreateBody, role: Role, actor: AuditActor): Promise<RecreateOutcome> {
    const old = await this.containers.inspect(idOrName)
    const name = String(old.Name).replace(/^\//, '')
    const spec = normalizeSpec(editAsSpec(edit, old.Config.Image))
    await authorizeSpec(spec, role)
    const found = await this.engine.info()
    await authorizeSpec(spec, role, await engineTraits(found.docker, found.operatingSystem, spec))
    const out = await this.audited(
      'container.recreate',
      name,
      actor,
      () => recreateContainer(found.docker, old, edit, spec),
      (o) => ({ ...o }),
    )
    this.containers.forget(out.previousId)
    await this.containers.inspect(out.id).catch(() => undefined)
    await this.containers.imagesChanged()
    return out
  }

  /**
   * Updates one container: pulls its image reference, recreates it when the image changed, rolls back when the new
   * one fails to start. Audited as container.update whatever the outcome; an engine error is a `failed` outcome.
   */
  async updateContainer(target: string, actor: AuditActor, hooks: UpdateHooks): Promise<UpdateOutcome> {
    const docker = await this.engine.require()
    let outcome: UpdateOutcome
    try {
      outcome = await updateContainer(docker, target, hooks)
    } catch (err) {
      outcome = { status: 'failed', name: target, id: '', image: '', message: engineError(err).message }
    }
    if (outcome.status === 'updated') {
      this.containers.forget(outcome.previousId)
      await this.containers.inspect(outcome.id).catch(() => undefined)
    }
    await this.audit.record(
      {
        action: 'container.update',
        target: outcome.name,
        result: outcome.status === 'updated' || outcome.status === 'up-to-date' ? 'success' : 'failure',
        detail: { ...outcome },
      },
      actor,
    )
    return outcome
  }

  /** The container's log stream from its last `tail` lines on, followed live; `tty` when it is not multiplexed. */
  async followLogs(idOrName: string, tail: number, timestamps = false): Promise<{ stream: Readable; tty: boolean }> {
    const docker = await this.engine.require()
    const info = await this.containers.inspect(idOrName)
    const tty = Boolean(info.Config?.Tty)
    return { stream: await openLogStream(docker, info.Id, { tail, tty, follow: true, timestamps }), tty }
  }

  listImages() {
    return listImages(this.engine)
  }

  pullImage(reference: string) {
    return pull(this.engine, reference)
  }

  removeImage(reference: string, force: boolean) {
    return removeImage(this.engine, reference, force)
  }

  listNetworks() {
    return listNetworks(this.engine)
  }

  createNetwork(network: { name: string; driver?: string; subnet?: string }) {
    return createNetwork(this.engine, network)
  }

  removeNetwork(name: string) {
    return removeNetwork(this.engine, name)
  }

  listVolumes() {
    return listVolumes(this.engine)
  }

  /** Docker Hub's search (not the engine's): it answers whether or not an engine runs. */
  searchRegistry(query: string, limit: number) {
    return searchRegistry(query, limit)
  }

  /** Starts every container marked for auto-start that is not running. */
  async startMarked(): Promise<{ started: string[]; failed: string[] }> {
    const started: string[] = []
    const failed: string[] = []
    await this.autostart.load()
    const names = this.autostart.names()
    if (names.length === 0) return { started, failed }
    const found = await this.engine.find()
    if (!found) {
      this.log.warn({ names }, 'auto-start skipped: no container engine')
      return { started, failed: names }
    }
    for (const name of names) {
      try {
        const info = await found.docker.getContainer(name).inspect()
        if (info.State.Running) continue
        await found.docker.getContainer(info.Id).start()
        started.push(name)
        await this.audit.record({
          action: 'container.start',
          target: name,
          result: 'success',
          detail: { reason: 'autostart', before: info.State.Status, after: 'running' },
        })
      } catch (err) {
        failed.push(name)
        this.log.warn({ err, name }, 'auto-start failed')
        await this.audit.record({
          action: 'container.start',
          target: name,
          result: 'failure',
          detail: { reason: 'autostart', message: (err as Error).message },
        })
      }
    }
    return { started, failed }
  }
}
