/** What the system plugin's cards and page share: the API's shapes (type-only, from the plugin's schemas) and the update badge. */
import { Badge } from '@hostd/ui'
import type { Static } from '@hostd/sdk'
import type {
  PowerResultSchema,
  PrivilegedListSchema,
  PrivilegedResultSchema,
  SettingsSnapshotSchema,
  SystemInfoSchema,
  UpdateInstallResultSchema,
  UpdateStatusSchema,
} from '../../src/schemas.ts'

export type SystemInfo = Static<typeof SystemInfoSchema>
export type Settings = Static<typeof SettingsSnapshotSchema>
export type UpdateStatus = Static<typeof UpdateStatusSchema>
export type UpdateInstall = Static<typeof UpdateInstallResultSchema>
export type PowerResult = Static<typeof PowerResultSchema>
export type Privileged = Static<typeof PrivilegedListSchema>
export type PrivilegedAction = Privileged['actions'][number]
export type PrivilegedResult = Static<typeof PrivilegedResultSchema>

export interface Version {
  version: string
  commit: string | null
  apiVersion: string
}

export function updateBadge(u: UpdateStatus) {
  if (u.state === 'installing') return <Badge tone="accent">Installing {u.latestVersion}</Badge>
  if (u.state === 'restarting') return <Badge tone="accent">Restarting</Badge>
  if (u.updateAvailable) return <Badge tone="warning">Update available: {u.latestVersion}</Badge>
  if (u.error) return <Badge tone="danger">Update check failed</Badge>
  if (!u.checkedAt) return <Badge>Not checked yet</Badge>
  return <Badge tone="success">Up to date</Badge>
}

/** "Dry run: nothing happened; the helper would run `systemctl reboot`" for an answer of a helper in dry-run mode. */
export function dryRunText(argv: string[] | undefined): string {
  return `Dry run: nothing was changed; the root helper would run "${(argv ?? []).join(' ')}"`
}
