/**
 * Applying a stack's model to the engine, through the containers plugin only: every container is created by its
 * `run` (normalization, role rules, audit), networks, volumes, pulls and lifecycle actions by its projects service
 * (audited there). Containers carry compose's labels, so the compose CLI sees the project; a config hash label
 * (compose's `com.docker.compose.config-hash`) and the image id decide what an update recreates.
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { roleSatisfies, type AuditActor, type Role } from '@hostd/sdk'
import type { ContainerProjectsService, ContainersService, ProjectContainer, PullProgress } from './containers.ts'
import { StackErrors } from './errors.ts'
import type { ProjectModel } from './model/compose.ts'
import type { ServiceModel } from './model/translate.ts'

export const LABELS = {
  project: 'com.docker.compose.project',
  service: 'com.docker.compose.service',
  number: 'com.docker.compose.container-number',
  oneoff: 'com.docker.compose.oneoff',
  workingDir: 'com.docker.compose.project.working_dir',
  configFiles: 'com.docker.compose.project.config_files',
  environmentFile: 'com.docker.compose.project.environment_file',
  configHash: 'com.docker.compose.config-hash',
  dependsOn: 'com.docker.compose.depends_on',
  network: 'com.docker.compose.network',
  volume: 'com.docker.compose.volume',
  /** hostd's own provenance mark (set through the containers plugin's RunOptions.labels). */
  stack: 'dev.hostd.stacks.stack',
} as const

export type Step =
  | 'pulling'
  | 'pulled'
  | 'waiting'
  | 'creating'
  | 'started'
  | 'healthy'
  | 'up-to-date'
  | 'recreating'
  | 'removed'
  | 'stopped'
  | 'restarted'
  | 'failed'

export type Progress =
  | { type: 'phase'; stack: string; phase: 'networks' | 'volumes' | 'pull' | 'services' | 'orphans' | 'done' }
  | { type: 'service'; stack: string; service: string; step: Step; message?: string }
  | {
      type: 'pull'
      stack: string
      service: string
      image: string
      layer?: string
      status: string
      current?: number
      total?: number
    }
  | { type: 'network' | 'volume'; stack: string; name: string; created: boolean }

export interface ServiceOutcome {
  service: string
  action: 'created' | 'recreated' | 'started' | 'unchanged'
  container: string
}

export interface ApplyDeps {
  containers: ContainersService
  projects: ContainerProjectsService
  /** How long a depends_on condition may take (ms). */
  healthTimeoutMs: number
}

/** compose's config hash, over what decides the container: its RunSpec and run options. */
export function configHash(svc: ServiceModel): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v
  return createHash('sha256')
    .update(JSON.stringify(canonical({ spec: svc.spec, options: svc.options })))
    .digest('hex')
}

/**
 * The role rules for the whole stack, before anything is created: a key that reaches the host is refused for a
 * non-admin naming the service and the key; then each service's RunSpec goes through the containers plugin's own
 * rules (`check`), which decide in the end.
 */
export async function authorizeProject(project: ProjectModel, role: Role, projects: ContainerProjectsService) {
  const admin = roleSatisfies(role, 'admin')
  for (const svc of project.services.values()) {
    if (!admin && svc.hostKeys.length > 0) {
      const list = svc.hostKeys.map((k) => `${k.path} (${k.why})`).join('; ')
      throw StackErrors.needsAdmin(
        `Service "${svc.name}" reaches the host: ${list}. That needs the admin role; you are ${role}`,
      )
    }
    let verdict: { role: Role; reasons: string[] }
    try {
      verdict = await projects.check(svc.spec)
    } catch (err) {
      const e = err as { statusCode?: number; message?: string }
      if (e.statusCode === 400) throw StackErrors.serviceInvalid(`Service "${svc.name}": ${e.message}`)
      throw err
    }
    if (!roleSatisfies(role, verdict.role))
      throw StackErrors.needsAdmin(
        `Service "${svc.name}" reaches the host (${verdict.reasons.join('; ')}): that needs the admin role; you are ${role}`,
      )
  }
}

/** Services in an order where each comes after what it depends on. */
export function dependencyOrder(project: ProjectModel): ServiceModel[] {
  const out: ServiceModel[] = []
  const seen = new Set<string>()
  const visit = (svc: ServiceModel) => {
    if (seen.has(svc.name)) return
    seen.add(svc.name)
    for (const d of svc.dependsOn) visit(project.services.get(d.service)!)
    out.push(svc)
  }
  for (const svc of project.services.values()) visit(svc)
  return out
}

export interface DeployOptions {
  /** Pull every image (update) rather than only missing ones (deploy). */
  pull: 'missing' | 'always'
  configFile: string
  envFile: string | null
  /** Provenance labels (each under `dev.hostd.`) for every container, e.g. the catalog's. */
  labels?: Record<`dev.hostd.${string}`, string>
}

/** Brings the engine to the model: networks, volumes, images, then each service once its dependencies are up. */
export async function deployProject(
  deps: ApplyDeps,
  project: ProjectModel,
  role: Role,
  actor: AuditActor,
  options: DeployOptions,
  emit: (p: Progress) => void,
): Promise<ServiceOutcome[]> {
  const { containers, projects } = deps
  const stack = project.name
  await authorizeProject(project, role, projects)

  emit({ type: 'phase', stack, phase: 'networks' })
  for (const net of project.networks.values()) {
    if (net.external) continue
    const used = [...project.services.values()].some((s) => s.networks.includes(net.name))
    if (!used) continue
    const { created } = await projects.ensureNetwork(
      {
        name: net.name,
        internal: net.internal,
        labels: { ...net.labels, [LABELS.project]: stack, [LABELS.network]: net.key },
      },
      actor,
    )
    emit({ type: 'network', stack, name: net.name, created })
  }
  emit({ type: 'phase', stack, phase: 'volumes' })
  for (const vol of project.volumes.values()) {
    if (vol.external) continue
    const used = [...project.services.values()].some((s) => s.volumes.includes(vol.name))
    if (!used) continue
    const { created } = await projects.ensureVolume(
      { name: vol.name, labels: { ...vol.labels, [LABELS.project]: stack, [LABELS.volume]: vol.key } },
      actor,
    )
    emit({ type: 'volume', stack, name: vol.name, created })
  }

  emit({ type: 'phase', stack, phase: 'pull' })
  const images = new Map<string, ServiceModel>()
  for (const svc of project.services.values()) if (!images.has(svc.image)) images.set(svc.image, svc)
  await Promise.all(
    [...images.values()].map(async (svc) => {
      const present = (await projects.imageId(svc.image)) !== null
      const pull =
        svc.pullPolicy === 'always' || (svc.pullPolicy === 'missing' && (!present || options.pull === 'always'))
      if (!pull) return
      emit({ type: 'service', stack, service: svc.name, step: 'pulling' })
      await projects.pull(svc.image, actor, (p: PullProgress) =>
        emit({
          type: 'pull',
          stack,
          service: svc.name,
          image: svc.image,
          layer: p.id,
          status: p.status,
          current: p.current,
          total: p.total,
        }),
      )
      emit({ type: 'service', stack, service: svc.name, step: 'pulled' })
    }),
  )

  const existing = await projects.containers(`${LABELS.project}=${stack}`)
  emit({ type: 'phase', stack, phase: 'orphans' })
  for (const c of existing) {
    const service = c.labels[LABELS.service] ?? ''
    if (project.services.has(service)) continue
    await containers.remove(c.id, actor)
    emit({
      type: 'service',
      stack,
      service,
      step: 'removed',
      message: 'not in the compose file (or its profile is off)',
    })
  }

  emit({ type: 'phase', stack, phase: 'services' })
  const started = new Map<string, Promise<ProjectContainer>>()
  const outcomes: ServiceOutcome[] = []
  const converge = async (svc: ServiceModel): Promise<ProjectContainer> => {
    for (const dep of svc.dependsOn) {
      const depContainer = await started.get(dep.service)!
      if (dep.condition === 'service_started') continue
      emit({ type: 'service', stack, service: svc.name, step: 'waiting', message: `${dep.service}: ${dep.condition}` })
      await waitFor(deps, dep.service, depContainer, dep.condition, (healthy) => {
        if (healthy) emit({ type: 'service', stack, service: dep.service, step: 'healthy' })
      })
    }
    const hash = configHash(svc)
    const imageId = await projects.imageId(svc.image)
    const mine = existing.filter((c) => c.labels[LABELS.service] === svc.name)
    // The service's container is the one of its name, else another of the service (the compose CLI names them
    // project_service_1): that one is replaced.
    const current = mine.find((c) => c.name === svc.containerName) ?? mine[0]
    for (const extra of mine) if (extra !== current) await containers.remove(extra.id, actor)
    const same =
      current?.name === svc.containerName &&
      current.labels[LABELS.configHash] === hash &&
      (imageId === null || current.imageId === imageId)
    if (current && same) {
      if (current.state === 'running') {
        outcomes.push({ service: svc.name, action: 'unchanged', container: current.name })
        emit({ type: 'service', stack, service: svc.name, step: 'up-to-date' })
        return current
      }
      await projects.action(current.id, 'start', actor)
      outcomes.push({ service: svc.name, action: 'started', container: current.name })
      emit({ type: 'service', stack, service: svc.name, step: 'started' })
      return (await projects.inspect(current.id)) ?? current
    }
    if (current) {
      emit({ type: 'service', stack, service: svc.name, step: 'recreating' })
      await containers.remove(current.id, actor)
    }
    emit({ type: 'service', stack, service: svc.name, step: 'creating' })
    const out = await containers.run(svc.spec, role, actor, undefined, {
      ...svc.options,
      labels: { ...options.labels, [LABELS.stack]: stack },
      composeLabels: {
        [LABELS.project]: stack,
        [LABELS.service]: svc.name,
        [LABELS.number]: '1',
        [LABELS.oneoff]: 'False',
        [LABELS.workingDir]: project.dir,
        [LABELS.configFiles]: options.configFile,
        ...(options.envFile ? { [LABELS.environmentFile]: options.envFile } : {}),
        [LABELS.configHash]: hash,
        [LABELS.dependsOn]: svc.dependsOn.map((d) => `${d.service}:${d.condition}:false`).join(','),
      },
    })
    outcomes.push({ service: svc.name, action: current ? 'recreated' : 'created', container: out.name })
    emit({ type: 'service', stack, service: svc.name, step: 'started' })
    const now = await projects.inspect(out.id)
    if (!now) throw StackErrors.dependencyFailed(`The container of ${svc.name} vanished after its start`)
    return now
  }
  for (const svc of dependencyOrder(project)) {
    const p = converge(svc)
    // A failure is reported by the await below; a dependent's own await of it must not leave it unhandled.
    p.catch(() => undefined)
    started.set(svc.name, p)
  }
  const settled = await Promise.allSettled(started.values())
  const failed = settled.find((s) => s.status === 'rejected')
  if (failed) throw (failed as PromiseRejectedResult).reason
  emit({ type: 'phase', stack, phase: 'done' })
  return outcomes
}

async function waitFor(
  deps: ApplyDeps,
  service: string,
  container: ProjectContainer,
  condition: 'service_healthy' | 'service_completed_successfully',
  onHealthy: (healthy: boolean) => void,
): Promise<void> {
  const deadline = Date.now() + deps.healthTimeoutMs
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    const now = await deps.projects.inspect(container.id)
    if (!now) throw StackErrors.dependencyFailed(`The container of ${service} is gone`)
    if (condition === 'service_healthy') {
      if (now.health === null)
        throw StackErrors.dependencyFailed(`${service} has no health check: service_healthy cannot be met`)
      if (now.health === 'healthy') return onHealthy(true)
      if (now.health === 'unhealthy') throw StackErrors.dependencyFailed(`${service} is unhealthy`)
      if (now.state === 'exited' || now.state === 'dead')
        throw StackErrors.dependencyFailed(`${service} exited (code ${now.exitCode}) before it was healthy`)
    } else if (now.state === 'exited' || now.state === 'dead') {
      if (now.exitCode === 0) return
      throw StackErrors.dependencyFailed(`${service} exited with code ${now.exitCode}`)
    }
    if (Date.now() > deadline)
      throw StackErrors.dependencyFailed(`${service} did not meet ${condition} within ${deps.healthTimeoutMs} ms`)
    await sleep(delay)
  }
}

/** The project's containers, dependents first when the model is known (for stop and down). */
export function reverseOrder(containers: ProjectContainer[], project: ProjectModel | null): ProjectContainer[] {
  if (!project) return containers
  const order = dependencyOrder(project).map((s) => s.name)
  const rank = (c: ProjectContainer) => {
    const i = order.indexOf(c.labels[LABELS.service] ?? '')
    return i < 0 ? order.length : i
  }
  return [...containers].sort((a, b) => rank(b) - rank(a))
}
