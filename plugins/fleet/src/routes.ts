import type { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import type { RouteRegistrar, RouteRequest, SocketRegistrar } from '@hostd/sdk'
import { errors } from '@hostd/sdk'
import {
  FleetStatusSchema,
  HostListSchema,
  HostParams,
  JoinCodeCreateSchema,
  JoinCodeSchema,
  JoinSchema,
  RolesSchema,
} from './schemas.ts'
import type { FleetService } from './service.ts'

const tags = ['fleet']
/** A forwarded body fits in one NATS message (1 MiB by default). */
const FORWARD_BODY_LIMIT = 900 * 1024

export function fleetRoutes(r: RouteRegistrar, fleet: FleetService): void {
  r.get(
    '/api/hosts',
    {
      role: 'viewer',
      schema: {
        tags,
        summary: 'The members of the fleet with presence and inventory',
        response: { 200: HostListSchema },
      },
    },
    () => ({ self: fleet.host || null, hosts: fleet.hosts() }),
  )

  const forward = async (req: RouteRequest, reply: FastifyReply) => {
    const params = req.params as { host: string }
    const prefix = `/api/hosts/${params.host}`
    const path = req.url.slice(prefix.length)
    // A JSON body comes parsed (the kernel's JSON parser runs first, checks included): it crosses as JSON again.
    const body =
      req.body === undefined || isStream(req.body)
        ? await readBody(req.body as Readable | undefined)
        : serialized(req.body)
    const headers: Record<string, string> = {}
    for (const name of ['content-type', 'accept']) {
      const value = req.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    const forwarded = { host: params.host, method: req.method, path, headers, body, user: req.user! }
    // A stream (server-sent events) is carried piece by piece with flow control; anything else in one answer.
    if (headers.accept?.includes('text/event-stream')) {
      const stream = await fleet.forwardStream(forwarded, req.lifetime)
      return reply.code(stream.status).headers(stream.headers).send(stream.body)
    }
    const answer = await fleet.forward(
      { host: params.host, method: req.method, path, headers, body, user: req.user! },
      req.lifetime,
    )
    return reply.code(answer.status).headers(answer.headers).send(answer.body)
  }
  const options = {
    role: 'viewer' as const,
    rawBody: true,
    schema: {
      tags,
      params: HostParams,
      summary: 'Any API route of member {host}, answered by that member as you, with its own role rules',
    },
  }
  r.get('/api/hosts/:host/*', options, forward)
  r.post('/api/hosts/:host/*', options, forward)
  r.put('/api/hosts/:host/*', options, forward)
  r.patch('/api/hosts/:host/*', options, forward)
  r.delete('/api/hosts/:host/*', options, forward)

  r.get('/api/fleet', { role: 'viewer', schema: { tags, response: { 200: FleetStatusSchema } } }, () => fleet.status())

  r.post(
    '/api/fleet/join-codes',
    { role: 'admin', schema: { tags, body: JoinCodeCreateSchema, response: { 201: JoinCodeSchema } } },
    async (req, reply) => reply.code(201).send(await fleet.makeJoinCode(req.body, req)),
  )

  r.post(
    '/api/fleet/join',
    { role: 'admin', schema: { tags, body: JoinSchema, response: { 200: FleetStatusSchema } } },
    (req) => fleet.join(req.body.code, req),
  )

  r.get('/api/fleet/roles', { role: 'admin', schema: { tags, response: { 200: RolesSchema } } }, () => fleet.roles())
  r.put(
    '/api/fleet/roles',
    { role: 'admin', schema: { tags, body: RolesSchema, response: { 200: RolesSchema } } },
    async (req) => {
      await fleet.setRoles(req.body.rules, req)
      return fleet.roles()
    },
  )
}

/**
 * `wss://<this host>/api/hosts/{host}/{socket path}`: any socket of member {host} (the terminal, container logs),
 * opened there as you and carried over NATS (README.md, "Sockets"). This host's own checks (sign-in, Origin) apply
 * to the browser's socket as to any other; the member's (role, sessionOnly, query) to its own.
 */
export function fleetSockets(s: SocketRegistrar, fleet: FleetService): void {
  s.ws('/api/hosts/:host/*', { role: 'viewer' }, (socket, ctx) => {
    const url = ctx.request.url
    const host = url.slice('/api/hosts/'.length).split(/[/?]/)[0] ?? ''
    const path = url.slice(`/api/hosts/${host}`.length)
    const offered = ctx.request.headers['sec-websocket-protocol']
    const protocols = typeof offered === 'string' ? offered.split(',').map((p) => p.trim()) : []
    const session = (ctx.request as unknown as { apiToken?: unknown }).apiToken == null
    return fleet.bridgeSocket(
      socket,
      { host, method: 'WS', path, headers: {}, body: undefined, user: ctx.user, session, protocols },
      ctx.signal,
    )
  })
}

const isStream = (value: unknown): value is Readable =>
  typeof (value as Readable | null)?.[Symbol.asyncIterator] === 'function' &&
  typeof (value as Readable).pipe === 'function'

/** A parsed JSON body as bytes again; one nested too deep to write back (a stack overflow) is the client's error. */
function serialized(body: unknown): Buffer {
  try {
    return Buffer.from(JSON.stringify(body))
  } catch {
    throw errors.badRequest('The body nests too deeply to forward to another member')
  }
}

async function readBody(stream: Readable | undefined): Promise<Buffer | undefined> {
  if (!stream || typeof stream[Symbol.asyncIterator] !== 'function') return undefined
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    size += (chunk as Buffer).length
    if (size > FORWARD_BODY_LIMIT) {
      stream.destroy()
      throw errors.tooLarge(`A body sent to another member may be at most ${FORWARD_BODY_LIMIT} bytes`)
    }
    chunks.push(chunk as Buffer)
  }
  return chunks.length > 0 ? Buffer.concat(chunks) : undefined
}
