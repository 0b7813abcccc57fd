/** The engine's named volumes with the containers that mount them (the `containers.volumes` service). */
import type { ContainerVolume } from '../api.ts'
import type { Engine } from './engine.ts'

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
