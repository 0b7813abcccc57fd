import type { ComponentChildren } from 'preact'
import { ApiError } from './api.ts'
import { Button } from './button.tsx'
import { Icon } from './icons.tsx'

/** True for the kernel's answer to a route that needs the root helper while it is absent (423 HOSTD_HELPER_UNAVAILABLE). */
export function isPrivilegesMissing(error: unknown): boolean {
  return error instanceof ApiError && error.status === 423
}

export interface PrivilegesMissingProps {
  /** What is refused on this page meanwhile ("SMART reports, mounting shares and SMB exports"). */
  affected?: string
  /** A "Check again" button (re-read the helper's status or retry the request). */
  onRetry?: () => void
  children?: ComponentChildren
}

/**
 * The one way pages say that Admin Privileges are missing: the root helper is not running, so routes that need it
 * answer 423. Says what is affected and what to do about it. Show it when a request answers 423
 * (`isPrivilegesMissing(err)`) or when `GET /api/system/privileged` says `helper.available: false`.
 */
export function PrivilegesMissing({ affected, onRetry, children }: PrivilegesMissingProps) {
  return (
    <div class="privileges-missing" role="status">
      <Icon name="shield" size={22} />
      <div class="privileges-missing-text">
        <p class="privileges-missing-title">Admin Privileges are not available: the root helper is not running</p>
        <p>
          hostd changes the host through its root helper; until it runs, {affected ?? 'changes to the host'} are
          refused. Start it on the server with <code>sudo systemctl enable --now hostd-helper</code>, then check again.
        </p>
        {children}
      </div>
      {onRetry && (
        <Button size="sm" icon="refresh" onClick={onRetry}>
          Check again
        </Button>
      )}
    </div>
  )
}
