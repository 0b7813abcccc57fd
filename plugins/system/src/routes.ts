import type { RouteNeed, RouteRegistrar, RouteRequest } from '@hostd/sdk'
import { readSystemInfo } from './host/info.ts'
import { readNetworkSummary } from './host/network.ts'
import { readSettings, readTimeZone } from './host/settings.ts'
import { listTimeZones } from './host/timezones.ts'
import type { Power, PowerAction } from './power.ts'
import type { PrivilegedActions } from './privileged.ts'
import {
  HostStatusSchema,
  NetworkSummarySchema,
  PowerResultSchema,
  PrivilegedBodySchema,
  PrivilegedKeyParams,
  PrivilegedListSchema,
  PrivilegedResultSchema,
  SettingsSnapshotSchema,
  SystemInfoSchema,
  TimeZoneListSchema,
  UpdateInstallResultSchema,
  UpdateStatusSchema,
} from './schemas.ts'
import type { Updates } from './updates.ts'
import type { HostStatus } from './schemas.ts'

const helperNeeded: RouteNeed[] = ['helper']

function actorOf(req: unknown) {
  const r = req as RouteRequest
  return { userId: r.user?.id ?? null, username: r.user?.username ?? null, ip: r.ip }
}

export interface SystemServices {
  sshdPath: string
  /** Updates waiting and a reboot required: `GET /api/system/status`. */
  status: () => Promise<HostStatus>
  power: Power
  privileged: PrivilegedActions
  updates: Updates
}

export function systemRoutes(r: RouteRegistrar, s: SystemServices): void {
  r.get('/api/system/info', { role: 'viewer', schema: { response: { 200: SystemInfoSchema } } }, () => readSystemInfo())
  r.get('/api/system/network', { role: 'viewer', schema: { response: { 200: NetworkSummarySchema } } }, () =>
    readNetworkSummary(),
  )
  r.get('/api/system/timezones', { role: 'viewer', schema: { response: { 200: TimeZoneListSchema } } }, async () => ({
    zones: await listTimeZones(),
    current: await readTimeZone(),
  }))
  r.get('/api/system/status', { role: 'viewer', schema: { response: { 200: HostStatusSchema } } }, () => s.status())
  r.get('/api/system/settings', { role: 'viewer', schema: { response: { 200: SettingsSnapshotSchema } } }, () =>
    readSettings(s.updates.settings(), s.sshdPath),
  )

  for (const action of ['sleep', 'display-sleep', 'restart', 'shutdown'] as PowerAction[]) {
    r.post(
      `/api/system/power/${action}`,
      { role: 'admin', needs: helperNeeded, schema: { response: { 200: PowerResultSchema } } },
      (req) => s.power.run(action, actorOf(req)),
    )
  }

  // Viewer, and not gated: it reports whether the helper is there.
  r.get('/api/system/privileged', { role: 'viewer', schema: { response: { 200: PrivilegedListSchema } } }, () =>
    s.privileged.list(),
  )
  r.post(
    '/api/system/privileged/:key',
    {
      role: 'admin',
      needs: helperNeeded,
      schema: { params: PrivilegedKeyParams, body: PrivilegedBodySchema, response: { 200: PrivilegedResultSchema } },
    },
    (req) => s.privileged.apply(req.params.key, req.body.choice, req.body.value, actorOf(req)),
  )

  r.get('/api/updates', { role: 'viewer', schema: { response: { 200: UpdateStatusSchema } } }, () => s.updates.status())
  r.post(
    '/api/updates/install',
    { role: 'admin', needs: helperNeeded, schema: { response: { 200: UpdateInstallResultSchema } } },
    (req) => s.updates.install(actorOf(req)),
  )
}
