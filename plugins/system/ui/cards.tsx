/**
 * The system plugin's overview cards: the host's facts, and "Updates": packages waiting, a reboot required, and
 * hostd's own version with its update status. The commit and plugin API version are on the system page.
 */
import {
  Async,
  Badge,
  ErrorState,
  KeyValues,
  adoptStyles,
  formatRelative,
  useResource,
  defineElement,
  type PageContext,
} from '@hostd/ui'
import { HostFacts } from './parts/facts.tsx'
import { updateState, type HostStatus, type UpdateStatus, type Version } from './parts/model.ts'
import css from './system.css' with { type: 'text' }

adoptStyles('system', css)

function Updates({ ctx }: { ctx: PageContext }) {
  const data = useResource(
    async (signal) => {
      const [version, updates, status] = await Promise.all([
        ctx.api.get<Version>('/api/version', { signal }),
        ctx.api.get<UpdateStatus>('/api/updates', { signal }),
        ctx.api.get<HostStatus>('/api/system/status', { signal }),
      ])
      return { version, updates, status }
    },
    [],
    { every: 60_000 },
  )
  if (data.error !== undefined && !data.data) return <ErrorState error={data.error} onRetry={data.reload} />
  return (
    <Async resource={data} label="Reading the updates…">
      {({ version, updates, status }) => {
        const hostd = updateState(updates)
        const waiting = status.updatesWaiting
        return (
          <div class="system-updates">
            <KeyValues
              items={[
                [
                  'System updates',
                  waiting === null ? (
                    <span class="muted">unknown</span>
                  ) : waiting === 0 ? (
                    <Badge tone="success">Up to date</Badge>
                  ) : (
                    <>
                      <Badge tone="warning">
                        {waiting === 1 ? '1 package to update' : `${waiting} packages to update`}
                      </Badge>{' '}
                      <a href="/packages">Review</a>
                    </>
                  ),
                ],
                [
                  'Restart',
                  status.rebootRequired ? (
                    <span title={status.rebootPackages.join(', ') || undefined}>
                      <Badge tone="warning">Restart required</Badge>{' '}
                      {status.rebootPackages.length > 0 && (
                        <span class="muted">
                          for {status.rebootPackages.slice(0, 3).join(', ')}
                          {status.rebootPackages.length > 3 ? ` and ${status.rebootPackages.length - 3} more` : ''}
                        </span>
                      )}
                    </span>
                  ) : (
                    <Badge tone="success">Not needed</Badge>
                  ),
                ],
                [
                  'hostd',
                  <>
                    <Badge tone={hostd.tone}>{hostd.label}</Badge>{' '}
                    {updates.updateAvailable && <a href="/system">{ctx.can('admin') ? 'Install…' : 'Details'}</a>}
                  </>,
                ],
                ...(updates.error ? [['Why the check failed', updates.error] as [string, string]] : []),
              ]}
            />
            <p class="system-about">
              hostd {version.version}
              {updates.checkedAt ? ` · checked ${formatRelative(updates.checkedAt)}` : ''} · <a href="/system">About</a>
            </p>
          </div>
        )
      }}
    </Async>
  )
}

defineElement('system-host', ({ ctx }) => <HostFacts ctx={ctx} />)
defineElement('system-software', ({ ctx }) => <Updates ctx={ctx} />)
