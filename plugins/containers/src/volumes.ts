/**
 * The `containers.volumes` service other plugins read (the storage overview lists container volumes through it).
 * A plugin cannot import this file; it makes its own token with the same id.
 */
import type Docker from 'dockerode'
import { createServiceToken } from '@hostd/sdk'
import type { Engine } from './engine.ts'
import { engineError } from './errors.ts'
import type { EngineVolume } from './policy.ts'

export interface ContainerVolume {
  name: string
  driver: string
  mountpoint: string
  /** Names of the containers (running or not) that mount it. */
  usedBy: string[]
}

export interface ContainerVolumesService {
  /** The engine's named volumes; empty when no engine answers (nothing to list is not an error). */
  listVolumes(): Promise<ContainerVolume[]>
}

export const containerVolumesService = createServiceToken<ContainerVolumesService>('containers.volumes')

export async function listVolumes(engine: Engine): Promise<ContainerVolume[]> {
  const found = await engine.find()
  if (!found) return []
  const [volumes, containers] = await Promise.all([found.docker.listVolumes(), found.docker.listContainers({ all: true })])
  const usedBy = new Map<string, string[]>()
  for (const c of containers) {
    for (const m of c.Mounts ?? []) {
      if (m.Type !== 'volume' || !m.Name) continue
      const names = usedBy.get(m.Name) ?? []
      names.push((c.Names?.[0] ?? c.Id).replace(/^\//, ''))
      usedBy.set(m.Name, names)
    }
  }
  return (volumes.Volumes ?? []).map((v) => ({ name: v.Name, driver: v.Driver, mountpoint: v.Mountpoint, usedBy: usedBy.get(v.Name) ?? [] }))
}

/** Named volumes as the engine has them now, for the role rules; null for a name the engine does not know. */
export async function inspectVolumes(docker: Docker, names: string[]): Promise<Map<string, EngineVolume | null>> {
  const out = new Map<string, EngineVolume | null>()
  for (const name of names) {
    try {
      const v = await docker.getVolume(name).inspect()
      out.set(name, { name: v.Name, driver: v.Driver, options: (v.Options as Record<string, string> | null) ?? {} })
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw engineError(err)
      out.set(name, null)
    }
  }
  return out
}
