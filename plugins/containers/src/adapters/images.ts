/**
 * Images: list, pull by reference, delete by reference. Deleting one of several references of an image only
 * untags it (as `docker rmi` does), even while a container uses the image; 409 when the last reference of an
 * image in use would go, or when an image in use is deleted by id (unless forced).
 */
import type { Engine } from './engine.ts'
import { ContainerErrors, engineError, engineMessage } from '../errors.ts'
import type { PullProgress } from '../api.ts'
import { pullImage } from './create.ts'
import { canonicalReference, parseImageReference, repositoryOf } from '../image-reference.ts'

export async function listImages(engine: Engine) {
  const status = await engine.status()
  const found = await engine.find()
  if (!found) return { engine: status, items: [] }
  try {
    const [images, containers] = await Promise.all([
      found.docker.listImages(),
      found.docker.listContainers({ all: true }),
    ])
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
  parseImageReference(reference, 'reference')
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

/**
 * The references an image keeps once `reference` is removed, the way the engine removes it (daemon/images/
 * image_delete.go): that reference, and with the last tag of a repository that repository's digest references.
 * null when `reference` is not one of the image's references (it named the image by id).
 */
export function referencesLeft(
  reference: string,
  image: { RepoTags?: string[]; RepoDigests?: string[] },
): string[] | null {
  // The engine's own references are kept as they are if they do not parse (they always should).
  const canonical = (r: string) => {
    try {
      return canonicalReference(r)
    } catch {
      return r
    }
  }
  const tags = (image.RepoTags ?? []).filter((t) => t !== '<none>:<none>').map(canonical)
  const digests = (image.RepoDigests ?? []).filter((d) => d !== '<none>@<none>').map(canonical)
  const removed = canonicalReference(reference)
  if (!tags.includes(removed) && !digests.includes(removed)) return null
  const tagsLeft = tags.filter((t) => t !== removed)
  const repository = repositoryOf(removed)
  const repositoryTagged = tagsLeft.some((t) => repositoryOf(t) === repository)
  const digestsLeft = digests.filter((d) => d !== removed && (repositoryTagged || repositoryOf(d) !== repository))
  return [...tagsLeft, ...digestsLeft]
}

export async function removeImage(engine: Engine, reference: string, force: boolean) {
  parseImageReference(reference, 'reference')
  const docker = await engine.require()
  let info: { Id: string; RepoTags?: string[]; RepoDigests?: string[] }
  try {
    info = await docker.getImage(reference).inspect()
  } catch (err) {
    throw engineError(err, ContainerErrors.imageNotFound, () => engine.lost())
  }
  if (!force) {
    const left = referencesLeft(reference, info)
    if (left === null || left.length === 0) {
      const users = (await docker.listContainers({ all: true })).filter((c) => c.ImageID === info.Id)
      if (users.length > 0) {
        const names = users.map((c) => (c.Names?.[0] ?? c.Id).replace(/^\//, '')).join(', ')
        const what =
          left === null
            ? `deleting image ${reference} by id`
            : `${reference} is the last reference of its image, so deleting it`
        throw ContainerErrors.inUse(
          `The image is used by ${names}: ${what} would remove it; remove the containers first or delete with force`,
        )
      }
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
