/**
 * The `containers.projects` service (api.ts): what a multi-container project (the stacks plugin) needs besides the
 * one creating path. Containers are still created only by `runSpec`; here are the run options a project adds to
 * it (compose labels, a health check, network aliases), checked, and the audited network, volume, pull and
 * lifecycle operations around it.
 */
import type Docker from 'dockerode'
import type { ContainerInspectInfo } from 'dockerode'
import type { AuditActor } from '@hostd/sdk'
import type { ContainerProjectsService, ProjectContainer, RunOptions } from './api.ts'
import { checkedBySchema, ContainerErrors, engineError } from './errors.ts'
import { requiredRole } from './policy.ts'
import { RunSpecSchema, type NormalizedSpec, type RunSpec } from './runspec.ts'
import { normalizeSpec } from './runspec/normalize.ts'
import { imageExists, pullImage } from './adapters/create.ts'
import { openLogStream } from './adapters/logs.ts'
import type { Runtime } from './service.ts'

const COMPOSE_PREFIX = 'com.docker.compose.'
const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/
/** Networks a project may not join beside its own: the host's, none, the default bridge, another container's. */
const NOT_JOINABLE = new Set(['host', 'none', 'bridge', 'default'])
const plainText = (v: string) => !v.includes('\0') && v.isWellFormed()

/** Adds a calling plugin's project options to the spec, each checked (400 naming it), before the role rules run. */
export function applyProjectOptions(spec: NormalizedSpec, options: RunOptions): void {
  for (const [key, value] of Object.entries(options.composeLabels ?? {})) {
    if (!key.startsWith(COMPOSE_PREFIX)) throw new TypeError(`compose label ${key} must start with ${COMPOSE_PREFIX}`)
    if (typeof value !== 'string' || !plainText(value) || !plainText(key))
      throw ContainerErrors.invalidSpec(`label ${key} holds a NUL or an invalid character`)
    spec.labels[key] = value
  }
  for (const [key, value] of Object.entries(options.extraLabels ?? {})) {
    if (key.startsWith(COMPOSE_PREFIX) || key.startsWith('dev.hostd.') || key === '')
      throw ContainerErrors.invalidSpec(`label "${key}" is reserved (or empty)`)
    if (typeof value !== 'string' || !plainText(value) || !plainText(key))
      throw ContainerErrors.invalidSpec(`label ${key} holds a NUL or an invalid character`)
    spec.labels[key] = value
  }
  const hc = options.healthcheck
  if (hc) {
    if (!Array.isArray(hc.test) || hc.test.length === 0 || !hc.test.every((t) => typeof t === 'string' && plainText(t)))
      throw ContainerErrors.invalidSpec('healthcheck test must be a non-empty list of words')
    for (const key of ['interval', 'timeout', 'retries', 'startPeriod'] as const) {
      const v = hc[key]
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0))
        throw ContainerErrors.invalidSpec(`healthcheck ${key} must be a whole number of at least 0`)
    }
    spec.healthcheck = { ...hc, test: [...hc.test] }
  }
  const joinable = (name: string) => NAME.test(name) && !NOT_JOINABLE.has(name)
  if (options.aliases?.length || options.moreNetworks?.length) {
    if (!spec.network || !joinable(spec.network))
      throw ContainerErrors.invalidSpec('network aliases and more networks need a user-defined network')
  }
  for (const alias of options.aliases ?? [])
    if (!NAME.test(alias)) throw ContainerErrors.invalidSpec(`network alias "${alias}" is not a name`)
  if (options.aliases?.length) spec.aliases = [...options.aliases]
  for (const net of options.moreNetworks ?? []) {
    if (!joinable(net.name)) throw ContainerErrors.invalidSpec(`network "${net.name}" cannot be joined here`)
    for (const alias of net.aliases ?? [])
      if (!NAME.test(alias)) throw ContainerErrors.invalidSpec(`network alias "${alias}" is not a name`)
  }
  if (options.moreNetworks?.length) spec.moreNetworks = options.moreNetworks.map((n) => ({ ...n }))
  if (options.stopTimeout !== undefined) {
    if (!(Number.isSafeInteger(options.stopTimeout) && options.stopTimeout >= 0 && options.stopTimeout <= 86400))
      throw ContainerErrors.invalidSpec('the stop timeout is a whole number of seconds up to a day')
    spec.stopTimeout = options.stopTimeout
  }
  if (options.stopSignal !== undefined) {
    if (!/^(SIG)?[A-Z0-9+]{1,16}$/.test(options.stopSignal))
      throw ContainerErrors.invalidSpec(`stop signal "${options.stopSignal}" is not a signal name`)
    spec.stopSignal = options.stopSignal
  }
  if (options.hostname !== undefined) {
    if (!/^[a-zA-Z0-9][a-zA-Z0-9.-]{0,62}$/.test(options.hostname))
      throw ContainerErrors.invalidSpec(`hostname "${options.hostname}" is not a host name`)
    spec.hostname = options.hostname
  }
}

function toProjectContainer(info: ContainerInspectInfo): ProjectContainer {
  return {
    id: info.Id,
    name: String(info.Name).replace(/^\//, ''),
    image: info.Config?.Image ?? '',
    imageId: info.Image,
    state: info.State?.Status ?? '',
    health: (info.State as { Health?: { Status?: string } } | undefined)?.Health?.Status ?? null,
    exitCode: info.State?.ExitCode ?? 0,
    labels: info.Config?.Labels ?? {},
    networks: Object.keys(info.NetworkSettings?.Networks ?? {}),
  }
}

const status = (err: unknown) => (err as { statusCode?: number }).statusCode

export function projectsService(rt: Runtime): ContainerProjectsService {
  const docker = () => rt.engine.require()
  const call = async <T>(fn: (d: Docker) => Promise<T>): Promise<T> => {
    const d = await docker()
    try {
      return await fn(d)
    } catch (err) {
      throw engineError(err, ContainerErrors.notFound, () => rt.engine.lost())
    }
  }
  const inspect = async (idOrName: string): Promise<ProjectContainer | null> => {
    const d = await docker()
    try {
      return toProjectContainer(await d.getContainer(idOrName).inspect())
    } catch (err) {
      if (status(err) === 404) return null
      throw engineError(err, ContainerErrors.notFound, () => rt.engine.lost())
    }
  }
  return {
    async containers(label) {
      const found = await rt.engine.find()
      if (!found) return []
      const list = await call((d) => d.listContainers({ all: true, filters: { label: [label] } }))
      const out = await Promise.all(list.map((c) => inspect(c.Id)))
      return out.filter((c): c is ProjectContainer => c !== null)
    },
    inspect,
    async check(input: RunSpec) {
      const spec = normalizeSpec(checkedBySchema<RunSpec>(RunSpecSchema, input))
      const verdict = await requiredRole(spec)
      return { role: verdict.role, reasons: verdict.reasons }
    },
    async imageId(ref) {
      const d = await docker()
      if (!(await imageExists(d, ref))) return null
      return call(async (dd) => (await dd.getImage(ref).inspect()).Id)
    },
    async pull(ref, actor, onProgress) {
      const d = await docker()
      await rt.audited('image.pull', ref, actor, () => pullImage(d, ref, onProgress))
      await rt.containers.imagesChanged()
    },
    async action(idOrName, action, actor, options = {}) {
      const info = await rt.containers.inspect(idOrName)
      const out = await rt.audited(
        `container.${action}`,
        String(info.Name).replace(/^\//, ''),
        actor,
        () => rt.containers.action(info.Id, action, options),
        (o) => ({ id: o.id, before: o.before, after: o.after }),
      )
      return { before: out.before, after: out.after }
    },
    async networks(label) {
      const found = await rt.engine.find()
      if (!found) return []
      const nets = await call((d) => d.listNetworks({ filters: { label: [label] } }))
      return nets.map((n) => ({ id: n.Id, name: n.Name, labels: n.Labels ?? {} }))
    },
    async ensureNetwork(network, actor: AuditActor) {
      if (!NAME.test(network.name) || NOT_JOINABLE.has(network.name))
        throw ContainerErrors.invalidSpec(`network name "${network.name}" is not allowed`)
      const existing = await call((d) => d.listNetworks({ filters: { name: [network.name] } }))
      if (existing.some((n) => n.Name === network.name)) return { created: false }
      await rt.audited(
        'network.create',
        network.name,
        actor,
        () =>
          call((d) =>
            d.createNetwork({
              Name: network.name,
              Driver: 'bridge',
              CheckDuplicate: true,
              Internal: Boolean(network.internal),
              Labels: network.labels,
            }),
          ),
        () => ({ driver: 'bridge', internal: Boolean(network.internal) }),
      )
      return { created: true }
    },
    async removeNetwork(name, actor) {
      const d = await docker()
      try {
        await d.getNetwork(name).inspect()
      } catch (err) {
        if (status(err) === 404) return
        throw engineError(err, ContainerErrors.networkNotFound, () => rt.engine.lost())
      }
      await rt.audited('network.remove', name, actor, () => call((dd) => dd.getNetwork(name).remove()))
    },
    async volumes(label) {
      const found = await rt.engine.find()
      if (!found) return []
      const out = await call((d) => d.listVolumes({ filters: { label: [label] } }))
      return (out.Volumes ?? []).map((v) => ({ name: v.Name, labels: v.Labels ?? {} }))
    },
    async ensureVolume(volume, actor) {
      if (!NAME.test(volume.name)) throw ContainerErrors.invalidSpec(`volume name "${volume.name}" is not a name`)
      const d = await docker()
      try {
        await d.getVolume(volume.name).inspect()
        return { created: false }
      } catch (err) {
        if (status(err) !== 404) throw engineError(err, ContainerErrors.notFound, () => rt.engine.lost())
      }
      await rt.audited(
        'volume.create',
        volume.name,
        actor,
        () => call((dd) => dd.createVolume({ Name: volume.name, Driver: 'local', Labels: volume.labels })),
        () => ({ driver: 'local' }),
      )
      return { created: true }
    },
    async removeVolume(name, actor) {
      const d = await docker()
      try {
        await d.getVolume(name).inspect()
      } catch (err) {
        if (status(err) === 404) return
        throw engineError(err, ContainerErrors.notFound, () => rt.engine.lost())
      }
      await rt.audited('volume.remove', name, actor, async () => {
        try {
          await d.getVolume(name).remove()
        } catch (err) {
          if (status(err) === 409) throw ContainerErrors.inUse(`Volume ${name} is in use`)
          throw engineError(err)
        }
      })
    },
    async logs(idOrName, tail, follow) {
      const d = await docker()
      const info = await rt.containers.inspect(idOrName)
      const tty = Boolean(info.Config?.Tty)
      try {
        return { stream: await openLogStream(d, info.Id, { tail, tty, follow }), tty }
      } catch (err) {
        throw engineError(err)
      }
    },
  }
}
