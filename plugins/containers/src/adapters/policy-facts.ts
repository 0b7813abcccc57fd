/**
 * What the role rules (policy.ts) need to know from the engine: the spec's named volumes and the container a
 * `container:<name>` network joins, as the engine has them. Read before anything is created, and again from the
 * created container before it starts (then the engine has resolved its references and holds them).
 */
import type Docker from 'dockerode'
import { engineError } from '../errors.ts'
import { namedVolumeSources, type EngineTraits, type EngineVolume } from '../policy.ts'
import type { NormalizedSpec } from '../runspec.ts'

/** How many `container:` hops are followed; a longer chain is judged as reaching the host. */
const MAX_PEER_HOPS = 4

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode

/** Named volumes as the engine has them now; null for a name the engine does not know (it would create it plain). */
export async function inspectVolumes(docker: Docker, names: string[]): Promise<Map<string, EngineVolume | null>> {
  const out = new Map<string, EngineVolume | null>()
  for (const name of names) {
    try {
      const v = await docker.getVolume(name).inspect()
      out.set(name, { name: v.Name, driver: v.Driver, options: (v.Options as Record<string, string> | null) ?? {} })
    } catch (err) {
      if (statusOf(err) !== 404) throw engineError(err)
      out.set(name, null)
    }
  }
  return out
}

/**
 * For a `container:<name or id>` network mode: whether the container it joins, followed through its own
 * `container:` mode, shares the host's network namespace. undefined for any other mode; false when the container
 * does not exist (the engine refuses the create then).
 */
export async function networkPeerUsesHost(docker: Docker, mode: string | undefined): Promise<boolean | undefined> {
  if (!mode?.startsWith('container:')) return undefined
  let current = mode
  for (let hop = 0; hop < MAX_PEER_HOPS && current.startsWith('container:'); hop++) {
    try {
      current = (await docker.getContainer(current.slice('container:'.length)).inspect()).HostConfig.NetworkMode ?? ''
    } catch (err) {
      if (statusOf(err) === 404) return false
      throw engineError(err)
    }
  }
  return current === 'host' || current.startsWith('container:')
}

/**
 * The engine's side of the role rules for `spec`. With `created` (the created container's inspect), the network
 * peer is the one the engine resolved for that container (`container:<id>`), not whatever has the name now.
 */
export async function engineTraits(
  docker: Docker,
  operatingSystem: string,
  spec: NormalizedSpec,
  created?: Docker.ContainerInspectInfo,
): Promise<EngineTraits> {
  return {
    desktop: /docker desktop/i.test(operatingSystem),
    volumes: await inspectVolumes(docker, namedVolumeSources(spec)),
    networkPeerUsesHost: await networkPeerUsesHost(docker, created ? created.HostConfig.NetworkMode : spec.network),
  }
}
