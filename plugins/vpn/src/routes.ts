import { roleSatisfies, type RouteRegistrar, type RouteRequest } from '@hostd/sdk'
import { ConnectBodySchema, LoginResultSchema, SettingsBodySchema, VpnStatusSchema } from './schemas.ts'
import type { Vpn } from './service.ts'

function actorOf(req: RouteRequest) {
  return { userId: req.user?.id ?? null, username: req.user?.username ?? null, ip: req.ip }
}

/**
 * The VPN routes. GET answers 200 whether or not tailscaled is there (the body says what is missing); the actions
 * answer 503 without it. The plugin has no Cockpit-style condition for that reason: a condition would make GET 503 too.
 */
export function vpnRoutes(r: RouteRegistrar, vpn: Vpn): void {
  const status = { response: { 200: VpnStatusSchema } }

  // The pending login URL is shown to admins only: whoever opens it first puts this machine into their tailnet.
  r.get('/api/vpn', { role: 'viewer', schema: status }, (req) =>
    vpn.status(!!req.user && roleSatisfies(req.user.role, 'admin')),
  )

  r.post('/api/vpn/settings', { role: 'admin', schema: { body: SettingsBodySchema, ...status } }, (req) =>
    vpn.settings(req.body, actorOf(req as RouteRequest)),
  )

  r.post('/api/vpn/login', { role: 'admin', schema: { response: { 200: LoginResultSchema } } }, (req) =>
    vpn.login(actorOf(req as RouteRequest)),
  )

  r.post('/api/vpn/logout', { role: 'admin', schema: status }, (req) => vpn.logout(actorOf(req as RouteRequest)))

  r.post('/api/vpn/connect', { role: 'admin', schema: { body: ConnectBodySchema, ...status } }, (req) =>
    vpn.connect(req.body.up, actorOf(req as RouteRequest)),
  )
}
