/**
 * The `containers.backup` service (api.ts ContainerBackupService): what the backups plugin reads of a container
 * (its definition and mounts) and how it recreates one from it, with the engine's own create options as the update
 * path uses them (update.ts recreateOptions). Every change is audited like the REST routes' own.
 */
import type Docker from 'dockerode'
import type { ContainerBackupService, ContainerDefinition } from '../api.ts'
import { ContainerErrors, engineError } from '../errors.ts'
import type { Runtime } from '../service.ts'
import { imageExists, pullImage } from './create.ts'
import { recreateOptions } from './update.ts'

const nameOf = (raw: string) => raw.replace(/^\//, '')

export function backupService(rt: Runtime): ContainerBackupService {
  return {
    async list() {
      const found = await rt.engine.find()
      if (!found) return []
      const all = await found.docker.listContainers({ all: true })
      return all.map((c) => ({ id: c.Id, name: nameOf(c.Names?.[0] ?? c.Id), image: c.Image, state: c.State }))
    },

    async describe(idOrName) {
      const info = await rt.containers.inspect(idOrName)
      return definitionOf(info)
    },

    async stop(idOrName, actor) {
      const info = await rt.containers.inspect(idOrName)
      if (!info.State?.Running) return false
      await rt.audited(
        'container.stop',
        nameOf(info.Name),
        actor,
        () => rt.containers.action(info.Id, 'stop'),
        (o) => ({
          before: o.before,
          after: o.after,
          for: 'backup',
        }),
      )
      return true
    },

    async start(idOrName, actor) {
      const info = await rt.containers.inspect(idOrName)
      await rt.audited(
        'container.start',
        nameOf(info.Name),
        actor,
        () => rt.containers.action(info.Id, 'start'),
        (o) => ({
          before: o.before,
          after: o.after,
          for: 'backup',
        }),
      )
    },

    async ensureVolume(name, actor) {
      const docker = await rt.engine.require()
      const existing = await docker
        .getVolume(name)
        .inspect()
        .catch((err: { statusCode?: number }) => (err.statusCode === 404 ? null : Promise.reject(engineError(err))))
      if (existing) return { name, mountpoint: existing.Mountpoint }
      return rt.audited(
        'volume.create',
        name,
        actor,
        async () => {
          try {
            await docker.createVolume({ Name: name, Driver: 'local' })
            const made = await docker.getVolume(name).inspect()
            return { name: made.Name, mountpoint: made.Mountpoint }
          } catch (err) {
            throw engineError(err)
          }
        },
        () => ({ for: 'restore' }),
      )
    },

    async recreate(definition, actor) {
      const docker = await rt.engine.require()
      const clash = await docker
        .getContainer(definition.name)
        .inspect()
        .then(
          () => true,
          () => false,
        )
      if (clash) throw ContainerErrors.conflict(`A container named ${definition.name} exists: remove it first`)
      return rt.audited(
        'container.create',
        definition.name,
        actor,
        async () => {
          if (!(await imageExists(docker, definition.image))) await pullImage(docker, definition.image)
          const old = {
            Id: '',
            Name: `/${definition.name}`,
            Config: definition.engine.config,
            HostConfig: definition.engine.hostConfig,
            NetworkSettings: { Networks: definition.engine.networks },
          } as unknown as Docker.ContainerInspectInfo
          const created = await docker
            .createContainer(recreateOptions(old, definition.name, definition.image))
            .catch((err) => {
              throw engineError(err)
            })
          return { id: created.id, name: definition.name }
        },
        (out) => ({ id: out.id, image: definition.image, restored: true }),
      )
    },
  }
}

export function definitionOf(info: Docker.ContainerInspectInfo): ContainerDefinition {
  const config = { ...(info.Config as unknown as Record<string, unknown>) }
  // The engine's default hostname is the container id: a recreated container gets its own.
  if (config.Hostname === info.Id.slice(0, 12)) delete config.Hostname
  return {
    name: nameOf(info.Name),
    image: info.Config.Image,
    running: Boolean(info.State?.Running),
    mounts: (info.Mounts ?? []).flatMap((m) =>
      m.Type === 'volume' || m.Type === 'bind'
        ? [
            {
              type: m.Type,
              name: m.Type === 'volume' ? (m.Name ?? null) : null,
              source: m.Source,
              target: m.Destination,
              readOnly: m.RW === false,
            },
          ]
        : [],
    ),
    engine: {
      config,
      hostConfig: info.HostConfig as unknown as Record<string, unknown>,
      networks: (info.NetworkSettings?.Networks ?? {}) as unknown as Record<string, unknown>,
    },
  }
}
