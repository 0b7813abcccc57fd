/**
 * The `containers.volumes` service other plugins read (the storage overview lists container volumes through it).
 * A plugin cannot import this file; it makes its own token with the same id.
 */
import { createServiceToken } from '@hostd/sdk'
import type { Engine } from './engine.ts'

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
  const [volumes, containers] = await Promise.all([
    found.docker.listVolumes(),
    found.docker.listContainers({ all: true }),
  ])
  const usedBy = new Map<string, string[]>()
  for (const c of containers) {
    for (const m of c.Mounts ?? []) {
      if (m.Type !== 'volume' || !m.Name) continue
      const names = usedBy.get(m.Name) ?? []
      names.push((c.Names?.[0] ?? c.Id).replace(/^\//, ''))
      usedBy.set(m.Name, names)
    }
  }
  return (volumes.Volumes ?? []).map((v) => ({
    name: v.Name,
    driver: v.Driver,
    mountpoint: v.Mountpoint,
    usedBy: usedBy.get(v.Name) ?? [],
  }))
}
