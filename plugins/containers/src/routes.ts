/** The REST routes: roles and schemas from the interface document, logic in the service (service.ts). */
import { errors, Type, type RouteRegistrar } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import {
  AutostartBody,
  ContainerListSchema,
  CreatedSchema,
  EngineStatusSchema,
  IconBody,
  IdParams,
  ImageDeleteBody,
  ImageDeleteResultSchema,
  ImageListSchema,
  ImageRefBody,
  KillQuery,
  LogsQuery,
  NameParams,
  NetworkCreateBody,
  NetworkCreatedSchema,
  NetworkListSchema,
  PullResultSchema,
  type RemoveBody,
  RemoveBodySchema,
  RemoveResultSchema,
  SearchQuery,
  SearchResultSchema,
  StatsEntrySchema,
  StopQuery,
} from './schemas.ts'
import { RunSpecSchema } from './runspec.ts'
import { RecreateBodySchema, RecreateResultSchema } from './adapters/recreate.ts'
import { ContainerErrors } from './errors.ts'
import type { Runtime } from './service.ts'

const tags = ['containers']

export function containerRoutes(r: RouteRegistrar, rt: Runtime): void {
  r.get('/api/system/engine', { role: 'viewer', schema: { tags, response: { 200: EngineStatusSchema } } }, () =>
    rt.engine.status(),
  )

  r.get('/api/containers', { role: 'viewer', schema: { tags, response: { 200: ContainerListSchema } } }, () =>
    rt.containers.list(),
  )

  r.get(
    '/api/containers/:id',
    { role: 'viewer', schema: { tags, params: IdParams, description: "The engine's inspect answer, as is." } },
    (req) => rt.containers.inspect(req.params.id),
  )

  r.get(
    '/api/containers/:id/stats',
    { role: 'viewer', schema: { tags, params: IdParams, response: { 200: Type.Array(StatsEntrySchema) } } },
    async (req) => [await rt.containers.stats(req.params.id)],
  )

  r.get(
    '/api/containers/:id/logs',
    {
      role: 'viewer',
      schema: {
        tags,
        params: IdParams,
        querystring: LogsQuery,
        description: 'The last `tail` lines (default 200, at most 10000) as text/plain.',
      },
    },
    async (req, reply) => {
      const text = await rt.containers.logs(req.params.id, req.query.tail ?? 200, req.query.timestamps ?? false)
      return reply.type('text/plain; charset=utf-8').send(text)
    },
  )

  r.post(
    '/api/containers',
    {
      role: 'operator',
      schema: {
        tags,
        body: RunSpecSchema,
        response: { 201: CreatedSchema },
        description:
          'Create and start from a RunSpec. Admin when the spec reaches the host; the host root is refused for every role.',
      },
    },
    async (req, reply) => {
      const { id } = await rt.runSpec(req.body, req.user!.role, req)
      return reply.code(201).send({ id })
    },
  )

  for (const action of ['start', 'stop', 'restart', 'kill'] as const) {
    const querystring = action === 'kill' ? KillQuery : StopQuery
    r.post(
      `/api/containers/:id/${action}`,
      { role: 'operator', schema: { tags, params: IdParams, querystring } },
      async (req) => {
        const q = req.query as { timeout?: number; signal?: string }
        await rt.audited(
          `container.${action}`,
          req.params.id,
          req,
          () => rt.containers.action(req.params.id, action, q),
          (out) => ({ id: out.id, name: out.name, before: out.before, after: out.after }),
        )
      },
    )
  }

  // The body is optional (none, `{}` or `{ force, ... }`), so it is checked here: a body schema would refuse no body.
  r.post(
    '/api/containers/:id/remove',
    {
      role: 'operator',
      schema: {
        tags,
        params: IdParams,
        response: { 200: RemoveResultSchema },
        // The optional body cannot be a route schema (it would refuse no body): its JSON Schema is given here.
        description: `Optional body (by default a running container is 409 and every volume is kept): ${JSON.stringify(RemoveBodySchema)}`,
      },
    },
    async (req) => {
      if (req.body !== undefined && !Value.Check(RemoveBodySchema, req.body)) {
        throw errors.badRequest(
          'body must be { "force"?: boolean, "anonymousVolumes"?: boolean, "volumes"?: [names] }: ' +
            ([...Value.Errors(RemoveBodySchema, req.body)][0]?.message ?? 'invalid'),
        )
      }
      const body = (req.body ?? {}) as RemoveBody
      const out = await rt.removeContainer(req.params.id, req, body)
      return {
        id: out.id,
        state: out.state,
        converged: out.converged,
        removedVolumes: out.removedVolumes,
        keptVolumes: out.keptVolumes,
      }
    },
  )

  r.post(
    '/api/containers/:id/recreate',
    {
      role: 'operator',
      schema: {
        tags,
        params: IdParams,
        body: RecreateBodySchema,
        response: { 200: RecreateResultSchema },
        description:
          'Edit and recreate keeping the name: the fields given replace its own, the rest is kept. The image is pulled ' +
          'when missing; the old container is restored when the new one cannot be created or started. Role rules as POST /api/containers.',
      },
    },
    (req) => rt.recreate(req.params.id, req.body, req.user!.role, req),
  )

  r.post(
    '/api/containers/:id/autostart',
    { role: 'operator', schema: { tags, params: IdParams, body: AutostartBody } },
    async (req) => {
      const info = await rt.containers.inspect(req.params.id)
      const name = String(info.Name).replace(/^\//, '')
      await rt.audited(
        'container.autostart',
        name,
        req,
        () => rt.autostart.set(name, req.body.enabled),
        (before) => ({ before, after: req.body.enabled }),
      )
    },
  )

  r.get('/api/images', { role: 'viewer', schema: { tags, response: { 200: ImageListSchema } } }, () => rt.listImages())

  r.post(
    '/api/images/pull',
    { role: 'operator', schema: { tags, body: ImageRefBody, response: { 200: PullResultSchema } } },
    async (req) => {
      const out = await rt.audited(
        'image.pull',
        req.body.reference,
        req,
        () => rt.pullImage(req.body.reference),
        (o) => ({ id: o.id, digest: o.digest }),
      )
      await rt.containers.imagesChanged()
      return out
    },
  )

  r.post(
    '/api/images/delete',
    { role: 'operator', schema: { tags, body: ImageDeleteBody, response: { 200: ImageDeleteResultSchema } } },
    async (req) => {
      const force = req.body.force ?? false
      const out = await rt.audited(
        'image.remove',
        req.body.reference,
        req,
        () => rt.removeImage(req.body.reference, force),
        (o) => ({ force, deleted: o.deleted.length, untagged: o.untagged }),
      )
      await rt.containers.imagesChanged()
      return out
    },
  )

  r.get('/api/networks', { role: 'viewer', schema: { tags, response: { 200: NetworkListSchema } } }, () =>
    rt.listNetworks(),
  )

  r.post(
    '/api/networks',
    { role: 'operator', schema: { tags, body: NetworkCreateBody, response: { 201: NetworkCreatedSchema } } },
    async (req, reply) => {
      const out = await rt.audited(
        'network.create',
        req.body.name,
        req,
        () => rt.createNetwork(req.body),
        (o) => ({ id: o.id, driver: req.body.driver ?? 'bridge', subnet: req.body.subnet ?? null }),
      )
      return reply.code(201).send(out)
    },
  )

  r.post('/api/networks/:name/delete', { role: 'operator', schema: { tags, params: NameParams } }, async (req) => {
    await rt.audited(
      'network.remove',
      req.params.name,
      req,
      () => rt.removeNetwork(req.params.name),
      (o) => ({ id: o.id }),
    )
  })

  r.get(
    '/api/registry/search',
    { role: 'viewer', schema: { tags: ['registry'], querystring: SearchQuery, response: { 200: SearchResultSchema } } },
    (req) => rt.searchRegistry(req.query.q, req.query.limit ?? 25),
  )

  r.get(
    '/api/icons/container/:name',
    { role: 'viewer', schema: { tags: ['icons'], params: NameParams } },
    async (req, reply) => {
      const icon = await rt.icons.get(req.params.name)
      return reply
        .type(icon.type)
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
        .header('cache-control', 'private, max-age=60')
        .send(icon.data)
    },
  )

  r.put(
    '/api/icons/container/:name',
    {
      role: 'operator',
      bodyLimit: 512 * 1024,
      schema: {
        tags: ['icons'],
        params: NameParams,
        body: IconBody,
        description: 'Body { data: base64 of a PNG, JPEG or SVG (at most 256 KiB decoded) }.',
      },
    },
    async (req) => {
      await rt.audited(
        'icon.set',
        req.params.name,
        req,
        () => rt.icons.put(req.params.name, req.body.data),
        (o) => ({ type: o.type, bytes: o.bytes, replaced: o.replaced }),
      )
    },
  )

  r.delete(
    '/api/icons/container/:name',
    { role: 'operator', schema: { tags: ['icons'], params: NameParams } },
    async (req) => {
      const removed = await rt.icons.remove(req.params.name)
      if (!removed) throw ContainerErrors.iconNotFound(`Container ${req.params.name} has no icon`)
      await rt.audit.record({ action: 'icon.remove', target: req.params.name, result: 'success' }, req)
    },
  )
}
