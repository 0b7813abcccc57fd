/** What the system plugin's cards and page share: the API's shapes (type-only, from the plugin's schemas) and the update state's words. */
import type { Static } from '@hostd/sdk'
import type { Tone } from '@hostd/ui'
import type {
  HostStatusSchema,
  PowerResultSchema,
  PrivilegedListSchema,
  PrivilegedResultSchema,
  SettingsSnapshotSchema,
  SystemInfoSchema,
  UpdateInstallResultSchema,
  UpdateStatusSchema,
} from '../../src/schemas.ts'

export type SystemInfo = Static<typeof SystemInfoSchema>
export type HostStatus = Static<typeof HostStatusSchema>
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

/** The update status as a badge's tone and words (the card and the page show it alike). */
export function updateState(u: UpdateStatus): { tone: Tone; label: string } {
  if (u.state === 'installing') return { tone: 'accent', label: `Installing ${u.latestVersion ?? ''}`.trim() }
  if (u.state === 'restarting') return { tone: 'accent', label: 'Restarting' }
  if (u.updateAvailable) return { tone: 'warning', label: `Update available: ${u.latestVersion}` }
  if (u.error) return { tone: 'danger', label: 'Update check failed' }
  if (!u.checkedAt) return { tone: 'neutral', label: 'Not checked yet' }
  return { tone: 'success', label: 'Up to date' }
}

/** "Dry run: nothing happened; the helper would run `systemctl reboot`" for an answer of a helper in dry-run mode. */
export function dryRunText(argv: string[] | undefined): string {
  return `Dry run: nothing was changed; the root helper would run "${(argv ?? []).join(' ')}"`
}
