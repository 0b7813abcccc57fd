import { Readable } from 'node:stream'
import { basename } from 'node:path'
import {
  createServiceToken,
  type AuditService,
  type HelperClient,
  type Logger,
  type OptionalServices,
  type RouteNeed,
  type RouteRegistrar,
} from '@hostd/sdk'
import type { ContainerVolumesService, ProvidedServices } from '../../containers/src/api.ts'
import type { StorageConfig } from './config.ts'
import { StorageErrors } from './errors.ts'
import {
  contentDisposition,
  etagOf,
  ifRangeHolds,
  LIST_MAX_ENTRIES,
  listDirectory,
  openForRead,
  parseRange,
  preview,
  sendFileRange,
  upload,
} from './files.ts'
import { listDisks, mountedVolumes } from './host.ts'
import { imageType, makeFolder, removeEntries, renameEntry, transfer } from './manage.ts'
import { findRoot, withResolved } from './paths.ts'
import {
  EjectBody,
  ExportBody,
  ExportList,
  ExportSchema,
  DeleteBody,
  DoneAnswer,
  FsQuery,
  ListQuery,
  ListSchema,
  MkdirAnswer,
  MkdirBody,
  RenameBody,
  TransferBody,
  MountAnswer,
  MountBody,
  NameBody,
  OverviewSchema,
  PreviewSchema,
  SmartParams,
  SmartSchema,
  UploadAnswer,
  UploadQuery,
} from './schemas.ts'
import type { Exports, NetworkMounts } from './shares.ts'
import { parseSmart } from './smart.ts'

/**
 * What the containers plugin offers (optional): Docker volumes and the containers using them. The type is that
 * plugin's contract (types only); the token is made here, with an id the contract names.
 */
export type { ContainerVolumesService }
const CONTAINER_VOLUMES = 'containers.volumes' satisfies keyof ProvidedServices
export const containerVolumesToken = createServiceToken<ProvidedServices[typeof CONTAINER_VOLUMES]>(CONTAINER_VOLUMES)

export interface StorageRouteDeps {
  config: () => StorageConfig
  helper: HelperClient
  audit: AuditService
  optional: OptionalServices
  log: Logger
  exports: Exports
  mounts: NetworkMounts
}

const BASE = '/api/storage'
const helperNeeded: RouteNeed[] = ['helper']

export function storageRoutes(r: RouteRegistrar, d: StorageRouteDeps): void {
  async function containerVolumes() {
    const service = d.optional.get(containerVolumesToken)
    if (!service) return null
    try {
      return await service.listVolumes()
    } catch (err) {
      d.log.warn({ err }, 'container volumes unavailable')
      return null
    }
  }

  r.get(BASE, { role: 'viewer', schema: { response: { 200: OverviewSchema } } }, async () => ({
    disks: await listDisks(),
    volumes: await mountedVolumes(),
    containerVolumes: await containerVolumes(),
    roots: d.config().roots,
    shares: await d.mounts.list(),
  }))

  r.get(
    `${BASE}/smart/:id`,
    { role: 'operator', needs: helperNeeded, schema: { params: SmartParams, response: { 200: SmartSchema } } },
    async (req) => {
      const disk = (await listDisks()).find((x) => x.name === req.params.id)
      if (!disk) throw StorageErrors.diskNotFound(`No disk named ${req.params.id}`)
      const out = await d.helper.call<{ stdout: string; exitCode: number }>('storage.smart', { device: disk.name })
      return parseSmart(disk.name, out.stdout, out.exitCode)
    },
  )

  r.post(`${BASE}/eject`, { role: 'admin', needs: helperNeeded, schema: { body: EjectBody } }, async (req) => {
    const disk = (await listDisks()).find((x) => x.name === req.body.device)
    if (!disk) throw StorageErrors.diskNotFound(`No disk named ${req.body.device}`)
    if (!disk.removable) throw StorageErrors.notRemovable(`${disk.name} is not a removable disk`)
    const busy = [...disk.mountpoints, ...disk.partitions.flatMap((p) => p.mountpoints)]
    if (busy.length) throw StorageErrors.diskBusy(`${disk.name} is mounted at ${busy.join(', ')}; unmount it first`)
    await d.helper.call('storage.eject', { device: disk.name })
    await d.audit.record({ action: 'storage.eject', target: disk.name, detail: { model: disk.model } }, req)
  })

  r.post(
    `${BASE}/mount`,
    { role: 'admin', needs: helperNeeded, schema: { body: MountBody, response: { 200: MountAnswer } } },
    (req) => d.mounts.mount(req.body, req),
  )

  r.post(`${BASE}/unmount`, { role: 'admin', needs: helperNeeded, schema: { body: NameBody } }, (req) =>
    d.mounts.unmount(req.body.name, req),
  )

  r.get(`${BASE}/exports`, { role: 'viewer', schema: { response: { 200: ExportList } } }, async () => ({
    exports: await d.exports.list(),
  }))

  r.post(
    `${BASE}/exports`,
    { role: 'admin', needs: helperNeeded, schema: { body: ExportBody, response: { 201: ExportSchema } } },
    async (req, reply) => reply.code(201).send(await d.exports.add(req.body, req)),
  )

  r.post(`${BASE}/exports/remove`, { role: 'admin', needs: helperNeeded, schema: { body: NameBody } }, (req) =>
    d.exports.remove(req.body.name, req),
  )

  // Each file route opens its path once (withResolved) and works on what it opened: see paths.ts.
  r.get(
    `${BASE}/fs/list`,
    { role: 'operator', schema: { querystring: ListQuery, response: { 200: ListSchema } } },
    (req) =>
      withResolved(findRoot(d.config().roots, req.query.root), req.query.path, async (target) => ({
        root: target.root.name,
        path: target.relative,
        ...(await listDirectory(target, { offset: req.query.offset ?? 0, limit: req.query.limit ?? LIST_MAX_ENTRIES })),
      })),
  )

  r.get(
    `${BASE}/fs/read`,
    { role: 'operator', schema: { querystring: FsQuery, response: { 200: PreviewSchema } } },
    (req) =>
      withResolved(findRoot(d.config().roots, req.query.root), req.query.path, async (target) => ({
        root: target.root.name,
        path: target.relative,
        ...(await preview(target, d.config().previewBytes)),
      })),
  )

  r.get(`${BASE}/fs/download`, { role: 'operator', schema: { querystring: FsQuery } }, async (req, reply) => {
    const { handle, stat, real } = await withResolved(
      findRoot(d.config().roots, req.query.root),
      req.query.path,
      async (target) => ({ ...(await openForRead(target)), real: target.real }),
    )
    const etag = etagOf(stat)
    const rangeHeader = ifRangeHolds(req.headers['if-range'] as string | undefined, etag, stat)
      ? req.headers.range
      : undefined
    const range = parseRange(rangeHeader, stat.size)
    const headers: Record<string, string> = {
      'accept-ranges': 'bytes',
      etag,
      'last-modified': stat.mtime.toUTCString(),
      'content-disposition': contentDisposition(basename(real)),
      'cache-control': 'private, no-store',
    }
    if (range === 'unsatisfiable') {
      await handle.close()
      throw StorageErrors.rangeNotSatisfiable(`The file has ${stat.size} bytes`, {
        'content-range': `bytes */${stat.size}`,
      })
    }
    if (req.headers['if-none-match'] === etag) {
      await handle.close()
      return reply.code(304).headers(headers).send()
    }
    const start = range?.start ?? 0
    const end = range?.end ?? stat.size - 1
    if (range) headers['content-range'] = `bytes ${start}-${end}/${stat.size}`
    headers['content-type'] = 'application/octet-stream'
    headers['content-length'] = String(Math.max(0, end - start + 1))
    // The body is written straight to the socket from the descriptor that was checked against the root.
    reply.hijack()
    reply.raw.writeHead(range ? 206 : 200, headers)
    if (req.method === 'HEAD' || stat.size === 0) {
      await handle.close()
      reply.raw.end()
      return reply
    }
    await sendFileRange(handle, reply.raw, start, end)
    return reply
  })

  r.post(
    `${BASE}/fs/upload`,
    { role: 'admin', rawBody: true, schema: { querystring: UploadQuery, response: { 201: UploadAnswer } } },
    async (req, reply) => {
      // No content type and no body: Fastify parses nothing; that is an empty file.
      const empty =
        req.body === undefined && !req.headers['transfer-encoding'] && (req.headers['content-length'] ?? '0') === '0'
      const body = empty ? Readable.from([]) : (req.body as Readable | undefined)
      if (!body || typeof body.pipe !== 'function') throw StorageErrors.uploadNotRaw()
      const max = d.config().uploadMaxBytes
      const declared = Number(req.headers['content-length'])
      if (Number.isFinite(declared) && declared > max)
        throw StorageErrors.uploadTooLarge(`The upload is larger than the limit of ${max} bytes`)
      const root = findRoot(d.config().roots, req.query.root)
      const done = await withResolved(root, req.query.path, async (dir) => ({
        ...(await upload(dir, req.query.name, body, { overwrite: req.query.overwrite === '1', max })),
        path: dir.relative,
      }))
      const answer = {
        root: root.name,
        path: done.path,
        name: req.query.name,
        size: done.size,
        replaced: done.replaced,
      }
      await d.audit.record(
        {
          action: 'storage.upload',
          target: `${root.name}:${[done.path, req.query.name].filter(Boolean).join('/')}`,
          detail: { size: done.size, replaced: done.replaced },
        },
        req,
      )
      return reply.code(201).send(answer)
    },
  )

  // Managing files (admin): each folder named is opened once and checked; entries are reached through it (manage.ts).
  const at = (root: string, path: string, name?: string) => `${root}:${[path, name].filter(Boolean).join('/')}`
  /** Audits an operation, done or failed partway (what was done before the failure is in its `done`). */
  async function audited<T extends { done: { name: string; as: string }[] }>(
    req: Parameters<AuditService['record']>[1],
    action: string,
    target: string,
    detail: Record<string, unknown>,
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      const result = await run()
      await d.audit.record({ action, target, detail: { ...detail, done: result.done } }, req)
      return result
    } catch (err) {
      const done = (err as { done?: unknown }).done ?? []
      await d.audit.record(
        { action, target, result: 'failure', detail: { ...detail, done, error: (err as Error).message } },
        req,
      )
      throw err
    }
  }

  r.post(
    `${BASE}/fs/mkdir`,
    { role: 'admin', schema: { body: MkdirBody, response: { 201: MkdirAnswer } } },
    async (req, reply) => {
      const { root, path, name } = req.body
      const made = await withResolved(findRoot(d.config().roots, root), path, async (dir) => {
        await audited(req, 'storage.mkdir', at(root, dir.relative, name), {}, async () => {
          await makeFolder(dir, name)
          return { done: [{ name, as: name }] }
        })
        return dir.relative
      })
      return reply.code(201).send({ root, path: made, name })
    },
  )

  r.post(
    `${BASE}/fs/rename`,
    { role: 'admin', schema: { body: RenameBody, response: { 200: DoneAnswer } } },
    async (req) => {
      const { root, path, name, to } = req.body
      return withResolved(findRoot(d.config().roots, root), path, async (dir) => {
        await audited(req, 'storage.rename', at(root, dir.relative, name), { to }, async () => {
          await renameEntry(dir, name, to)
          return { done: [{ name, as: to }] }
        })
        return { root, path: dir.relative, done: [{ name, as: to }], skipped: 0 }
      })
    },
  )

  for (const kind of ['move', 'copy'] as const) {
    r.post(
      `${BASE}/fs/${kind}`,
      { role: 'admin', schema: { body: TransferBody, response: { 200: DoneAnswer } } },
      async (req) => {
        const { root, path, names, toPath } = req.body
        const toRoot = req.body.toRoot ?? root
        const roots = d.config().roots
        return withResolved(findRoot(roots, root), path, (from) =>
          withResolved(findRoot(roots, toRoot), toPath, async (to) => {
            const result = await audited(
              req,
              `storage.${kind}`,
              at(root, from.relative),
              { names, to: at(toRoot, to.relative) },
              () => transfer(kind, from, names, to),
            )
            return { root: toRoot, path: to.relative, ...result }
          }),
        )
      },
    )
  }

  r.post(`${BASE}/fs/delete`, { role: 'admin', schema: { body: DeleteBody, response: { 200: DoneAnswer } } }, (req) => {
    const { root, path, names } = req.body
    return withResolved(findRoot(d.config().roots, root), path, async (dir) => {
      const result = await audited(req, 'storage.delete', at(root, dir.relative), { names }, () =>
        removeEntries(dir, names),
      )
      return { root, path: dir.relative, ...result }
    })
  })

  // A thumbnail is the image itself (no decoding on the daemon), capped, and only when its first bytes say it is one
  // of the raster types a browser shows; sent with its own type, nosniff and a sandboxing CSP.
  r.get(`${BASE}/fs/thumbnail`, { role: 'operator', schema: { querystring: FsQuery } }, async (req, reply) => {
    const max = d.config().thumbnailMaxBytes
    const { handle, stat } = await withResolved(findRoot(d.config().roots, req.query.root), req.query.path, (target) =>
      openForRead(target),
    )
    let type: string | null
    try {
      if (stat.size > max)
        throw StorageErrors.imageTooLarge(`The image has ${stat.size} bytes; thumbnails are served up to ${max}`)
      const head = Buffer.alloc(16)
      const { bytesRead } = await handle.read(head, 0, 16, 0)
      type = imageType(head.subarray(0, bytesRead))
      if (!type) throw StorageErrors.notAnImage()
    } catch (err) {
      await handle.close()
      throw err
    }
    const etag = etagOf(stat)
    const headers: Record<string, string> = {
      etag,
      'last-modified': stat.mtime.toUTCString(),
      'cache-control': 'private, max-age=300',
      'content-type': type,
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
      'content-disposition': 'inline',
    }
    if (req.headers['if-none-match'] === etag) {
      await handle.close()
      return reply.code(304).headers(headers).send()
    }
    headers['content-length'] = String(stat.size)
    reply.hijack()
    reply.raw.writeHead(200, headers)
    if (req.method === 'HEAD' || stat.size === 0) {
      await handle.close()
      reply.raw.end()
      return reply
    }
    await sendFileRange(handle, reply.raw, 0, stat.size - 1)
    return reply
  })
}
