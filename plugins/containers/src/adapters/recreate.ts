/**
 * Edit and recreate, keeping the name: the fields of an edit (image, ports, volumes, environment, restart policy)
 * replace the container's own; everything else is the engine's definition of the old container, as an update
 * recreates it (adapters/update.ts). The image is pulled first when missing (the old container still runs). The old
 * container is kept (renamed, stopped) until the new one runs; when creating or starting the new one fails, it is
 * removed and the old one gets its name back and runs again, and the error says why (translated).
 */
import type Docker from 'dockerode'
import { Type, type Static } from '@hostd/sdk'
import { ContainerErrors, engineError, explainPortOwner } from '../errors.ts'
import { ImageReferenceSchema } from '../image-reference.ts'
import { RunSpecSchema, type NormalizedSpec, type RunSpec } from '../runspec.ts'
import { createOptions, imageExists, pullImage } from './create.ts'
import { extraNetworks, recreateOptions } from './update.ts'

const runSpecField = RunSpecSchema.properties

export const RecreateBodySchema = Type.Object(
  {
    image: Type.Optional(ImageReferenceSchema),
    ports: runSpecField.ports,
    volumes: runSpecField.volumes,
    env: runSpecField.env,
    restartPolicy: runSpecField.restartPolicy,
  },
  { additionalProperties: false, minProperties: 1 },
)
export type RecreateBody = Static<typeof RecreateBodySchema>

/** The edit as a RunSpec, for the role rules (only what the edit sets is judged: the rest the container had already). */
export function editAsSpec(edit: RecreateBody, currentImage: string): RunSpec {
  return { ...edit, image: edit.image ?? currentImage }
}

export const RecreateResultSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  previousId: Type.String(),
  image: Type.String(),
  previousImage: Type.String(),
  /** The fields the edit set. */
  changed: Type.Array(Type.String()),
  /** The image had to be pulled first. */
  pulled: Type.Boolean(),
})
export type RecreateOutcome = Static<typeof RecreateResultSchema>

export async function recreateContainer(
  docker: Docker,
  old: Docker.ContainerInspectInfo,
  edit: RecreateBody,
  spec: NormalizedSpec,
): Promise<RecreateOutcome> {
  const name = old.Name.replace(/^\//, '')
  const image = edit.image ?? old.Config.Image
  let pulled = false
  if (!(await imageExists(docker, image))) {
    await pullImage(docker, image)
    pulled = true
  }
  const options = recreateOptions(old, name, image) as Docker.ContainerCreateOptions & {
    HostConfig: Record<string, unknown>
  }
  options.HostConfig = { ...options.HostConfig }
  const fresh = createOptions(spec)
  if (edit.ports) {
    options.ExposedPorts = { ...(old.Config.ExposedPorts ?? {}), ...fresh.ExposedPorts }
    options.HostConfig.PortBindings = fresh.HostConfig?.PortBindings
  }
  if (edit.volumes) options.HostConfig.Binds = fresh.HostConfig?.Binds
  if (edit.env) options.Env = fresh.Env ?? []
  if (edit.restartPolicy) options.HostConfig.RestartPolicy = fresh.HostConfig?.RestartPolicy

  const wasRunning = Boolean(old.State?.Running)
  const parked = `${name}-hostd-previous-${old.Id.slice(0, 8)}`
  await docker.getContainer(old.Id).rename({ name: parked })
  if (wasRunning)
    await docker
      .getContainer(old.Id)
      .stop()
      .catch((err) => ((err as { statusCode?: number }).statusCode === 304 ? undefined : Promise.reject(err)))

  let created: Docker.Container | null = null
  try {
    created = await docker.createContainer(options)
    for (const [net, endpoint] of extraNetworks(old))
      await docker.getNetwork(net).connect({ Container: created.id, EndpointConfig: endpoint })
    if (wasRunning) await created.start()
  } catch (err) {
    if (created) await created.remove({ force: true }).catch(() => undefined)
    await docker.getContainer(old.Id).rename({ name })
    if (wasRunning)
      await docker
        .getContainer(old.Id)
        .start()
        .catch(() => undefined)
    const reason = await explainPortOwner(docker, engineError(err, ContainerErrors.imageNotFound), old.Id)
    throw withPrefix(reason, `${name} was not changed (the previous container is back): `)
  }
  await docker
    .getContainer(old.Id)
    .remove({ force: true })
    .catch(() => undefined)
  return {
    id: created.id,
    name,
    previousId: old.Id,
    image,
    previousImage: old.Config.Image,
    changed: Object.keys(edit),
    pulled,
  }
}

/** The same error with a prefix on its message (status, code and details kept). */
function withPrefix(err: unknown, prefix: string): unknown {
  if (!(err instanceof Error) || !('code' in err)) return err
  const e = err as Error & { code: string; statusCode: number; details?: { raw: string } }
  const factory = Object.values(ContainerErrors).find((f) => f.code === e.code)
  return factory ? factory(`${prefix}${e.message}`, undefined, e.details) : err
}
