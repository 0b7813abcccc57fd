import type { RouteNeed, RouteRegistrar, RouteRequest } from '@hostd/sdk'
import {
  DnsBodySchema,
  EnabledBodySchema,
  Ipv4BodySchema,
  PendingAnswerSchema,
  ServiceChangeSchema,
  ServiceListSchema,
  ServiceParamsSchema,
  ServicesChangeSchema,
} from './schemas.ts'
import type { NetworkConfiguration } from './service.ts'

const BASE = '/api/system/network/services'
const gated = { role: 'admin' as const, needs: ['helper'] as RouteNeed[] }

function actorOf(req: RouteRequest) {
  return { userId: req.user?.id ?? null, username: req.user?.username ?? null, ip: req.ip }
}

/** "Network configuration": admin, and Admin Privileges (the root helper) required; 423 without it. */
export function networkRoutes(r: RouteRegistrar, network: () => NetworkConfiguration): void {
  r.get(BASE, { ...gated, schema: { response: { 200: ServiceListSchema } } }, () => network().list())

  r.post(
    `${BASE}/:service/dns`,
    { ...gated, schema: { params: ServiceParamsSchema, body: DnsBodySchema, response: { 200: ServiceChangeSchema } } },
    (req) => network().setDns(req.params.service, req.body.servers, actorOf(req as RouteRequest)),
  )

  r.post(
    `${BASE}/:service/ipv4`,
    { ...gated, schema: { params: ServiceParamsSchema, body: Ipv4BodySchema, response: { 200: ServiceChangeSchema } } },
    (req) => network().setIpv4(req.params.service, req.body, actorOf(req as RouteRequest), req.socket.localAddress),
  )

  r.post(
    `${BASE}/:service/enabled`,
    {
      ...gated,
      schema: { params: ServiceParamsSchema, body: EnabledBodySchema, response: { 200: ServicesChangeSchema } },
    },
    (req) =>
      network().setEnabled(req.params.service, req.body.enabled, actorOf(req as RouteRequest), req.socket.localAddress),
  )

  // The change waiting for confirmation (not gated: it is the daemon's own state, and it tells a reloaded page).
  r.get('/api/system/network/pending', { role: 'admin', schema: { response: { 200: PendingAnswerSchema } } }, () => ({
    confirm: network().pending(),
  }))

  // Undoes a change made with confirm-or-revert at once, instead of waiting for the window to end.
  r.post(`${BASE}/:service/revert`, { ...gated, schema: { params: ServiceParamsSchema } }, async (req, reply) => {
    await network().revert(req.params.service, actorOf(req as RouteRequest))
    return reply.code(204).send()
  })

  // Keeps a change made with confirm-or-revert; without it NetworkManager restores the previous settings.
  r.post(`${BASE}/:service/confirm`, { ...gated, schema: { params: ServiceParamsSchema } }, async (req, reply) => {
    await network().confirm(req.params.service, actorOf(req as RouteRequest))
    return reply.code(204).send()
  })
}
