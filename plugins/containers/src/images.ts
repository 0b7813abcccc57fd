/** Images: list, pull by reference, delete by reference (409 when in use unless forced). */
import type { Engine } from './engine.ts'
import { ContainerErrors, engineError, engineMessage } from './errors.ts'
import { pullImage, type PullProgress } from './create.ts'

export async function listImages(engine: Engine) {
  const status = await engine.status()
  const found = await engine.find()
  if (!found) return { engine: status, items: [] }
  try {
    const [images, containers] = await Promise.all([found.docker.listImages(), found.docker.listContainers({ all: true })])
    const uses = new Map<string, number>()
    for (const c of containers) uses.set(c.ImageID, (uses.get(c.ImageID) ?? 0) + 1)
    return {
      engine: status,
      items: images.map((img) => ({
        id: img.Id,
        repoTags: (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>'),
        repoDigests: (img.RepoDigests ?? []).filter((d) => d !== '<none>@<none>'),
        size: img.Size ?? 0,
        createdAt: new Date((img.Created ?? 0) * 1000).toISOString(),
        containers: uses.get(img.Id) ?? 0,
      })),
    }
  } catch (err) {
    throw engineError(err, ContainerErrors.imageNotFound, () => engine.lost())
  }
}

export async function pull(engine: Engine, reference: string, onProgress?: (p: PullProgress) => void) {
  const docker = await engine.require()
  await pullImage(docker, reference, onProgress)
  try {
    const info = await docker.getImage(reference).inspect()
    const digest = (info.RepoDigests ?? [])[0]?.split('@')[1] ?? ''
    return { reference, id: info.Id, digest }
  } catch (err) {
    throw engineError(err, ContainerErrors.imageNotFound)
  }
}

export async function removeImage(engine: Engine, reference: string, force: boolean) {
  const docker = await engine.require()
  let info: { Id: string }
  try {
    info = await docker.getImage(reference).inspect()
  } catch (err) {
    throw engineError(err, ContainerErrors.imageNotFound, () => engine.lost())
  }
  if (!force) {
    const users = (await docker.listContainers({ all: true })).filter((c) => c.ImageID === info.Id)
    if (users.length > 0) {
      throw ContainerErrors.inUse(`Image ${reference} is used by ${users.map((c) => (c.Names?.[0] ?? c.Id).replace(/^\//, '')).join(', ')}: remove them first or delete with force`)
    }
  }
  try {
    const answer = (await docker.getImage(reference).remove({ force })) as { Deleted?: string; Untagged?: string }[]
    return {
      deleted: answer.map((e) => e.Deleted).filter((x): x is string => Boolean(x)),
      untagged: answer.map((e) => e.Untagged).filter((x): x is string => Boolean(x)),
    }
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 409) throw ContainerErrors.inUse(engineMessage(err))
    throw engineError(err, ContainerErrors.imageNotFound)
  }
}
