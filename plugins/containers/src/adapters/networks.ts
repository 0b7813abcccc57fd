/** Container networks: list, create (name, driver, subnet), delete (409 while containers use it). */
import type { Engine } from './engine.ts'
import { ContainerErrors, engineError, engineMessage } from '../errors.ts'

/** The engine's own networks, which it will not delete. */
const PREDEFINED = new Set(['bridge', 'host', 'none'])

export async function listNetworks(engine: Engine) {
  const status = await engine.status()
  const found = await engine.find()
  if (!found) return { engine: status, items: [] }
  try {
    const nets = await found.docker.listNetworks()
    // The list endpoint leaves Containers empty; count attachments from the container list instead.
    const containers = await found.docker.listContainers({ all: true })
    const count = new Map<string, number>()
    for (const c of containers)
      for (const n of Object.values(c.NetworkSettings?.Networks ?? {}))
        count.set(n.NetworkID, (count.get(n.NetworkID) ?? 0) + 1)
    return {
      engine: status,
      items: nets.map((n) => ({
        id: n.Id,
        name: n.Name,
        driver: n.Driver ?? '',
        scope: n.Scope ?? '',
        subnet: n.IPAM?.Config?.[0]?.Subnet ?? '',
        gateway: n.IPAM?.Config?.[0]?.Gateway ?? '',
        internal: Boolean(n.Internal),
        containers: count.get(n.Id) ?? 0,
      })),
    }
  } catch (err) {
    throw engineError(err, ContainerErrors.networkNotFound, () => engine.lost())
  }
}

export async function createNetwork(engine: Engine, body: { name: string; driver?: string; subnet?: string }) {
  const docker = await engine.require()
  const existing = await docker.listNetworks({ filters: { name: [body.name] } })
  if (existing.some((n) => n.Name === body.name)) throw ContainerErrors.conflict(`A network named ${body.name} exists`)
  try {
    const net = await docker.createNetwork({
      Name: body.name,
      Driver: body.driver ?? 'bridge',
      CheckDuplicate: true,
      ...(body.subnet ? { IPAM: { Driver: 'default', Config: [{ Subnet: body.subnet }] } } : {}),
    })
    return { id: net.id, name: body.name }
  } catch (err) {
    throw engineError(err, ContainerErrors.networkNotFound)
  }
}

export async function removeNetwork(engine: Engine, name: string) {
  const docker = await engine.require()
  let info: { Id: string; Name: string; Containers?: Record<string, { Name?: string }> }
  try {
    info = await docker.getNetwork(name).inspect()
  } catch (err) {
    throw engineError(err, ContainerErrors.networkNotFound, () => engine.lost())
  }
  if (PREDEFINED.has(info.Name))
    throw ContainerErrors.conflict(`${info.Name} is one of the engine's own networks and cannot be deleted`)
  const users = Object.values(info.Containers ?? {}).map((c) => c.Name ?? '?')
  if (users.length > 0) throw ContainerErrors.inUse(`Network ${info.Name} is in use by ${users.join(', ')}`)
  try {
    await docker.getNetwork(info.Id).remove()
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode
    if (status === 403 || status === 409) throw ContainerErrors.inUse(engineMessage(err))
    throw engineError(err, ContainerErrors.networkNotFound)
  }
  return { id: info.Id, name: info.Name }
}
