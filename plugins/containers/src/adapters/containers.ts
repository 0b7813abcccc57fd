/**
 * Containers: the list (one /containers/json call; extras from caches filled off the hot path), inspect,
 * one-shot stats, bounded logs and the lifecycle actions.
 */
import type Docker from 'dockerode'
import type { ContainerInfo, ContainerInspectInfo } from 'dockerode'
import type { Container, StatsEntry } from '../schemas.ts'
import { ContainerErrors, engineError, explainPortOwner } from '../errors.ts'
import type { Engine } from './engine.ts'
import type { AutoStart } from '../autostart.ts'
import type { UpdateChecker } from './update-check.ts'
import { readBoundedLogs } from './logs.ts'
import type { LabelledContainer } from '../api.ts'

interface Details {
  at: number
  cpus: number
  memoryInBytes: number
  restartPolicy: string
  /** Its configured port bindings: what a container that does not run (created, exited) shows as its ports. */
  ports: Container['ports']
}
interface ImageFacts {
  os: string
  architecture: string
  digest: string
  repoDigests: string[]
}

const DETAILS_CONCURRENCY = 4
/** Details older than this are refreshed in the background (a `docker update` elsewhere shows within a minute). */
const DETAILS_TTL_MS = 60_000
const IMAGE_FACTS_TTL_MS = 60_000

/** "Up 3 minutes (healthy)" -> healthy; "(health: starting)" -> starting; none -> "". */
export function healthFromStatus(status: string): string {
  const m = /\((healthy|unhealthy|health: starting)\)/.exec(status)
  if (!m) return ''
  return m[1] === 'health: starting' ? 'starting' : m[1]!
}

export class ContainerService {
  readonly engine: Engine
  readonly autostart: AutoStart
  readonly updates: UpdateChecker
  /** Per container id: facts the list endpoint does not carry (from inspect, refreshed in the background). */
  readonly #details = new Map<string, Details>()
  readonly #pendingDetails = new Set<string>()
  #imageFacts = new Map<string, ImageFacts>()
  #imageFactsAt = 0
  #imageFactsLoading: Promise<void> | null = null
  /** The names that have an icon (set by the runtime: the icon store's). */
  iconNames: () => Promise<Set<string>> = async () => new Set()

  constructor(engine: Engine, autostart: AutoStart, updates: UpdateChecker) {
    this.engine = engine
    this.autostart = autostart
    this.updates = updates
  }

  async docker(): Promise<Docker> {
    return this.engine.require()
  }

  /** Wraps an engine call: maps its errors, and notices when the engine went away. */
  async call<T>(fn: (docker: Docker) => Promise<T>, notFound = ContainerErrors.notFound): Promise<T> {
    const docker = await this.docker()
    try {
      return await fn(docker)
    } catch (err) {
      throw engineError(err, notFound, () => this.engine.lost())
    }
  }

  async list(): Promise<{ engine: Awaited<ReturnType<Engine['status']>>; items: Container[] }> {
    const engine = await this.engine.status()
    if (!engine.available) return { engine, items: [] }
    const docker = await this.engine.find()
    let raw: ContainerInfo[]
    try {
      raw = await docker!.docker.listContainers({ all: true })
    } catch (err) {
      const mapped = engineError(err, ContainerErrors.notFound, () => this.engine.lost())
      if (mapped.statusCode === 503)
        return { engine: { ...engine, available: false, message: mapped.message }, items: [] }
      throw mapped
    }
    this.#refreshImageFacts(docker!.docker)
    const icons = await this.iconNames()
    const missing: string[] = []
    const now = Date.now()
    const items = raw.map((c) => {
      const details = this.#details.get(c.Id)
      if (!details || now - details.at > DETAILS_TTL_MS) missing.push(c.Id)
      return this.#toContainer(c, details, icons)
    })
    if (missing.length) this.#fillDetails(docker!.docker, missing)
    this.updates.observe(raw.map((c) => c.Image))
    if (this.#details.size > raw.length * 2 + 64) this.#pruneDetails(new Set(raw.map((c) => c.Id)))
    return { engine, items }
  }

  /** Containers carrying the label `key` (one filtered list call; the update flag from the same caches as the list). */
  async listLabelled(key: string): Promise<LabelledContainer[]> {
    const found = await this.engine.find()
    if (!found) return []
    let raw: ContainerInfo[]
    try {
      raw = await found.docker.listContainers({ all: true, filters: { label: [key] } })
    } catch (err) {
      const mapped = engineError(err, ContainerErrors.notFound, () => this.engine.lost())
      if (mapped.statusCode === 503) return []
      throw mapped
    }
    this.#refreshImageFacts(found.docker)
    this.updates.observe(raw.map((c) => c.Image))
    return raw.map((c) => ({
      id: c.Id,
      name: (c.Names?.[0] ?? '').replace(/^\//, ''),
      image: c.Image,
      state: c.State,
      createdAt: new Date(c.Created * 1000).toISOString(),
      labels: c.Labels ?? {},
      updateAvailable: this.updates.available(c.Image, this.#imageFacts.get(c.ImageID)?.repoDigests ?? []),
      ports: (c.Ports ?? [])
        .filter((p) => p.PublicPort)
        .map((p) => ({ containerPort: p.PrivatePort, hostPort: p.PublicPort, protocol: p.Type, hostIp: p.IP ?? '' })),
    }))
  }

  #toContainer(c: ContainerInfo, details: Details | undefined, icons: Set<string>): Container {
    const labels = c.Labels ?? {}
    const networks = c.NetworkSettings?.Networks ?? {}
    const ipv4 =
      Object.values(networks)
        .map((n) => n.IPAddress)
        .find((ip) => ip) ?? ''
    const name = (c.Names?.[0] ?? '').replace(/^\//, '')
    const facts = this.#imageFacts.get(c.ImageID)
    const published = (c.Ports ?? []).filter((p) => p.PublicPort)
    return {
      id: c.Id,
      name,
      image: c.Image,
      state: c.State,
      cpus: details?.cpus ?? 0,
      memoryInBytes: details?.memoryInBytes ?? 0,
      command: c.Command ?? '',
      ipv4,
      os: facts?.os ?? '',
      architecture: facts?.architecture ?? '',
      createdAt: new Date(c.Created * 1000).toISOString(),
      // The engine lists published ports of a running container only; one that does not run shows its bindings.
      ports:
        published.length > 0 || !details
          ? published.map((p) => ({
              hostAddress: p.IP ?? '',
              hostPort: p.PublicPort!,
              containerPort: p.PrivatePort,
              proto: p.Type,
            }))
          : c.State === 'running'
            ? []
            : details.ports,
      mountedVolumes: (c.Mounts ?? []).map((m) => (m.Type === 'volume' && m.Name ? m.Name : m.Source)),
      imageDigest: facts?.digest ?? '',
      updateAvailable: this.updates.available(c.Image, facts?.repoDigests ?? []),
      autoStart: this.autostart.has(name),
      networkMode: c.HostConfig?.NetworkMode ?? '',
      restartPolicy: details?.restartPolicy ?? '',
      health: healthFromStatus(c.Status ?? ''),
      stackProject: labels['com.docker.compose.project'] ?? '',
      stackService: labels['com.docker.compose.service'] ?? '',
      stackWorkingDir: labels['com.docker.compose.project.working_dir'] ?? '',
      hasIcon: icons.has(name),
    }
  }

  /** Records the facts of an inspect answer (also called by inspect and create, so the list has them at once). */
  remember(inspect: {
    Id: string
    HostConfig?: {
      NanoCpus?: number
      CpuQuota?: number
      CpuPeriod?: number
      Memory?: number
      RestartPolicy?: { Name?: string; MaximumRetryCount?: number }
      PortBindings?: Record<string, { HostIp?: string; HostPort?: string }[] | null> | null
    }
  }): void {
    const h = inspect.HostConfig ?? {}
    const cpus = h.NanoCpus ? h.NanoCpus / 1e9 : h.CpuQuota && h.CpuPeriod ? h.CpuQuota / h.CpuPeriod : 0
    const policy = h.RestartPolicy?.Name || 'no'
    const restartPolicy =
      policy === 'on-failure' && h.RestartPolicy?.MaximumRetryCount
        ? `on-failure:${h.RestartPolicy.MaximumRetryCount}`
        : policy
    const ports: Container['ports'] = []
    for (const [key, bindings] of Object.entries(h.PortBindings ?? {})) {
      const [port, proto = 'tcp'] = key.split('/')
      for (const b of bindings ?? [])
        ports.push({
          hostAddress: b.HostIp ?? '',
          hostPort: Number(b.HostPort) || 0,
          containerPort: Number(port),
          proto,
        })
    }
    this.#details.set(inspect.Id, { at: Date.now(), cpus, memoryInBytes: h.Memory ?? 0, restartPolicy, ports })
  }

  forget(id: string): void {
    this.#details.delete(id)
  }

  /** Background: inspect containers the cache has not seen, a few at a time. Never awaited by the list. */
  #fillDetails(docker: Docker, ids: string[]): void {
    const todo = ids.filter((id) => !this.#pendingDetails.has(id))
    for (const id of todo) this.#pendingDetails.add(id)
    let next = 0
    const worker = async () => {
      while (next < todo.length) {
        const id = todo[next++]!
        try {
          this.remember(await docker.getContainer(id).inspect())
        } catch {
          // Gone meanwhile, or the engine hiccuped: the next list asks again.
        } finally {
          this.#pendingDetails.delete(id)
        }
      }
    }
    for (let i = 0; i < Math.min(DETAILS_CONCURRENCY, todo.length); i++) void worker()
  }

  #pruneDetails(live: Set<string>): void {
    for (const id of this.#details.keys()) if (!live.has(id)) this.#details.delete(id)
  }

  /** Image os/arch/digests from one /images/json call, refreshed in the background at most once a minute. */
  #refreshImageFacts(docker: Docker, force = false): Promise<void> {
    if (!force && (this.#imageFactsLoading || Date.now() - this.#imageFactsAt < IMAGE_FACTS_TTL_MS))
      return this.#imageFactsLoading ?? Promise.resolve()
    this.#imageFactsAt = Date.now()
    this.#imageFactsLoading = (async () => {
      try {
        const images = await docker.listImages()
        const next = new Map<string, ImageFacts>()
        for (const img of images) {
          const old = this.#imageFacts.get(img.Id)
          let os = old?.os ?? ''
          let architecture = old?.architecture ?? ''
          if (!old) {
            const info = await docker
              .getImage(img.Id)
              .inspect()
              .catch(() => null)
            os = info?.Os ?? ''
            architecture = info?.Architecture ?? ''
          }
          const repoDigests = img.RepoDigests ?? []
          next.set(img.Id, { os, architecture, repoDigests, digest: repoDigests[0]?.split('@')[1] ?? img.Id })
        }
        this.#imageFacts = next
      } catch {
        this.#imageFactsAt = 0
      } finally {
        this.#imageFactsLoading = null
      }
    })()
    return this.#imageFactsLoading
  }

  /** After a pull, create or delete: image facts are read again before the next list answers. */
  async imagesChanged(): Promise<void> {
    const found = await this.engine.find()
    if (found) await this.#refreshImageFacts(found.docker, true)
  }

  async inspect(id: string): Promise<ContainerInspectInfo> {
    const info = await this.call((d) => d.getContainer(id).inspect())
    this.remember(info)
    return info
  }

  async stats(id: string): Promise<StatsEntry> {
    const s: EngineStats = await this.call((d) => d.getContainer(id).stats({ stream: false, 'one-shot': true }))
    const io: { op: string; value: number }[] = s.blkio_stats?.io_service_bytes_recursive ?? []
    const sumIo = (op: string) => io.filter((e) => e.op.toLowerCase() === op).reduce((a, e) => a + (e.value ?? 0), 0)
    const nets = Object.values<{ rx_bytes?: number; tx_bytes?: number }>(s.networks ?? {})
    const cache = s.memory_stats?.stats?.inactive_file ?? s.memory_stats?.stats?.total_inactive_file ?? 0
    const usage = s.memory_stats?.usage ?? 0
    return {
      id: String(s.id ?? id),
      cpuUsageUsec: Math.floor((s.cpu_stats?.cpu_usage?.total_usage ?? 0) / 1000),
      memoryUsageBytes: Math.max(0, usage - cache),
      memoryLimitBytes: s.memory_stats?.limit ?? 0,
      blockReadBytes: sumIo('read'),
      blockWriteBytes: sumIo('write'),
      networkRxBytes: nets.reduce((a, n) => a + (n.rx_bytes ?? 0), 0),
      networkTxBytes: nets.reduce((a, n) => a + (n.tx_bytes ?? 0), 0),
      numProcesses: s.pids_stats?.current ?? 0,
    }
  }

  async logs(id: string, tail: number, timestamps: boolean): Promise<string> {
    const docker = await this.docker()
    const info = await this.inspect(id)
    try {
      return await readBoundedLogs(docker, info.Id, { tail, timestamps, tty: Boolean(info.Config?.Tty) })
    } catch (err) {
      throw engineError(err, ContainerErrors.notFound, () => this.engine.lost())
    }
  }

  async action(
    id: string,
    action: 'start' | 'stop' | 'restart' | 'kill',
    opts: { timeout?: number; signal?: string } = {},
  ): Promise<{ id: string; name: string; before: string; after: string }> {
    const before = await this.inspect(id)
    const docker = await this.docker()
    await this.call(async (d) => {
      const c = d.getContainer(before.Id)
      try {
        if (action === 'start') await c.start()
        else if (action === 'stop') await c.stop(opts.timeout === undefined ? {} : { t: opts.timeout })
        else if (action === 'restart') await c.restart(opts.timeout === undefined ? {} : { t: opts.timeout })
        else await c.kill(opts.signal ? { signal: opts.signal } : {})
      } catch (err) {
        // 304: already started / already stopped. That is the state asked for.
        if ((err as { statusCode?: number }).statusCode !== 304) {
          if (action === 'kill' && (err as { statusCode?: number }).statusCode === 409)
            throw ContainerErrors.conflict(`Container ${before.Name.replace(/^\//, '')} is not running`)
          throw err
        }
      }
    }).catch(async (err) => {
      // A start that fails on a published port names the container holding it.
      throw await explainPortOwner(docker, err, before.Id)
    })
    const after = await this.inspect(before.Id)
    return {
      id: before.Id,
      name: String(before.Name).replace(/^\//, ''),
      before: before.State?.Status ?? '',
      after: after.State?.Status ?? '',
    }
  }

  /** Remove; refuses a running container unless forced (409). `converged` is true once the engine no longer has it. */
  async remove(
    id: string,
    force: boolean,
    anonymousVolumes = false,
  ): Promise<{ id: string; name: string; before: string; state: string; converged: boolean }> {
    const before = await this.inspect(id)
    const name = String(before.Name).replace(/^\//, '')
    if (before.State?.Running && !force)
      throw ContainerErrors.conflict(`Container ${name} is running: stop it first or remove with force`)
    await this.call((d) => d.getContainer(before.Id).remove({ force, v: anonymousVolumes }))
    this.forget(before.Id)
    let state = 'removed'
    let converged = true
    try {
      const still = await (await this.docker()).getContainer(before.Id).inspect()
      state = still.State?.Status ?? 'removing'
      converged = false
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) {
        state = 'unknown'
        converged = false
      }
    }
    return { id: before.Id, name, before: before.State?.Status ?? '', state, converged }
  }
}

/** The parts of an engine's stats answer read here, all optional: engines and cgroup versions each leave some out. */
interface EngineStats {
  id?: string
  cpu_stats?: { cpu_usage?: { total_usage?: number } }
  memory_stats?: { usage?: number; limit?: number; stats?: { inactive_file?: number; total_inactive_file?: number } }
  blkio_stats?: { io_service_bytes_recursive?: { op: string; value: number }[] | null }
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>
  pids_stats?: { current?: number }
}
