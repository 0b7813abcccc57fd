/**
 * Updating one container: pull its image reference again; when the image changed, recreate the container
 * with the same name and settings (config, host config, networks). Auto-start and the icon are keyed by name,
 * so they carry over. The old container is kept (renamed, stopped) until the new one runs; if the new one
 * fails to start, it is removed and the old one gets its name back and is started again: a rollback.
 */
import type Docker from 'dockerode'
import { engineError, engineMessage } from '../errors.ts'
import type { PullProgress } from '../api.ts'
import { pullImage } from './create.ts'

export type UpdateOutcome =
  | { status: 'up-to-date'; name: string; id: string; image: string }
  | {
      status: 'updated'
      name: string
      id: string
      previousId: string
      image: string
      previousImageId: string
      imageId: string
    }
  | { status: 'rolled-back'; name: string; id: string; image: string; message: string }
  | { status: 'failed'; name: string; id: string; image: string; message: string }

export interface UpdateHooks {
  /** Seconds the old container gets to stop (engine default when unset). */
  stopTimeout?: number
  onPull?: (p: PullProgress) => void
  onStep?: (step: string) => void
}

export async function updateContainer(
  docker: Docker,
  idOrName: string,
  hooks: UpdateHooks = {},
): Promise<UpdateOutcome> {
  let old: Docker.ContainerInspectInfo
  try {
    old = await docker.getContainer(idOrName).inspect()
  } catch (err) {
    throw engineError(err)
  }
  const name = old.Name.replace(/^\//, '')
  const ref = old.Config.Image
  const base = { name, id: old.Id, image: ref }
  if (/^sha256:/.test(ref))
    return {
      status: 'failed',
      ...base,
      message: 'The container was created from an image id, not a reference: nothing to pull',
    }
  hooks.onStep?.('pull')
  try {
    await pullImage(docker, ref, hooks.onPull)
  } catch (err) {
    return { status: 'failed', ...base, message: (err as Error).message }
  }
  const image = await docker.getImage(ref).inspect()
  if (image.Id === old.Image) return { status: 'up-to-date', ...base }

  const wasRunning = Boolean(old.State?.Running)
  const parked = `${name}-hostd-old-${old.Id.slice(0, 8)}`
  hooks.onStep?.('recreate')
  await docker.getContainer(old.Id).rename({ name: parked })
  if (wasRunning)
    await docker
      .getContainer(old.Id)
      .stop(hooks.stopTimeout === undefined ? {} : { t: hooks.stopTimeout })
      .catch((err) => ((err as { statusCode?: number }).statusCode === 304 ? undefined : Promise.reject(err)))

  let fresh: Docker.Container | null = null
  try {
    fresh = await docker.createContainer(recreateOptions(old, name, ref))
    for (const [net, endpoint] of extraNetworks(old))
      await docker.getNetwork(net).connect({ Container: fresh.id, EndpointConfig: endpoint })
    await fresh.start()
    const after = await fresh.inspect()
    if (!after.State.Running && after.State.ExitCode !== 0)
      throw new Error(`it exited at once with code ${after.State.ExitCode}`)
  } catch (err) {
    hooks.onStep?.('rollback')
    if (fresh) await fresh.remove({ force: true }).catch(() => undefined)
    await docker.getContainer(old.Id).rename({ name })
    if (wasRunning)
      await docker
        .getContainer(old.Id)
        .start()
        .catch(() => undefined)
    return {
      status: 'rolled-back',
      ...base,
      message: `The new container failed to start (${engineMessage(err)}); the previous one is back`,
    }
  }
  await docker
    .getContainer(old.Id)
    .remove({ force: true })
    .catch(() => undefined)
  return {
    status: 'updated',
    name,
    id: fresh.id,
    previousId: old.Id,
    image: ref,
    previousImageId: old.Image,
    imageId: image.Id,
  }
}

/** The old container's settings for a new container from `ref`. */
export function recreateOptions(
  old: Docker.ContainerInspectInfo,
  name: string,
  ref: string,
): Docker.ContainerCreateOptions {
  const config = { ...old.Config } as Record<string, unknown>
  // The engine's default hostname is the container id; a new container gets its own.
  if (config.Hostname === old.Id.slice(0, 12)) delete config.Hostname
  const mode = old.HostConfig.NetworkMode ?? ''
  const primary = old.NetworkSettings.Networks?.[mode]
  return {
    ...config,
    name,
    Image: ref,
    HostConfig: old.HostConfig,
    ...(primary && !['bridge', 'host', 'none', 'default'].includes(mode)
      ? { NetworkingConfig: { EndpointsConfig: { [mode]: endpointSettings(primary, old.Id) } } }
      : {}),
  } as Docker.ContainerCreateOptions
}

function endpointSettings(n: Docker.NetworkInfo, oldId: string): Record<string, unknown> {
  return {
    ...(n.IPAMConfig ? { IPAMConfig: n.IPAMConfig } : {}),
    Aliases: (n.Aliases ?? []).filter((a: string) => !oldId.startsWith(a)),
  }
}

export function extraNetworks(old: Docker.ContainerInspectInfo): [string, Record<string, unknown>][] {
  const mode = old.HostConfig.NetworkMode ?? ''
  return Object.entries(old.NetworkSettings.Networks ?? {})
    .filter(([net]) => net !== mode && !(mode === 'default' && net === 'bridge'))
    .map(([net, info]) => [net, endpointSettings(info, old.Id)])
}
