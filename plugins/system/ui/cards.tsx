/** The system plugin's overview cards: the host's facts, and hostd's version with its update status. */
import {
  Async,
  Badge,
  ErrorState,
  KeyValues,
  formatDateTime,
  useResource,
  defineElement,
  type PageContext,
} from '@hostd/ui'
import { HostFacts } from './parts/facts.tsx'
import { updateState, type UpdateStatus, type Version } from './parts/model.ts'

function Software({ ctx }: { ctx: PageContext }) {
  const data = useResource(async (signal) => {
    const [version, updates] = await Promise.all([
      ctx.api.get<Version>('/api/version', { signal }),
      ctx.api.get<UpdateStatus>('/api/updates', { signal }),
    ])
    return { version, updates }
  }, [])
  if (data.error !== undefined && !data.data) return <ErrorState error={data.error} onRetry={data.reload} />
  return (
    <Async resource={data} label="Reading the version…">
      {({ version, updates }) => (
        <KeyValues
          items={[
            ['Version', version.version],
            ['Commit', version.commit ? <code>{version.commit.slice(0, 12)}</code> : 'unknown'],
            ['Plugin API', version.apiVersion],
            [
              'Updates',
              <>
                <Badge tone={updateState(updates).tone}>{updateState(updates).label}</Badge>{' '}
                {updates.updateAvailable && <a href="/system">{ctx.can('admin') ? 'Install…' : 'Details'}</a>}
              </>,
            ],
            ['Last checked', updates.checkedAt ? formatDateTime(updates.checkedAt) : 'never'],
            ...(updates.error ? [['Why the check failed', updates.error] as [string, string]] : []),
          ]}
        />
      )}
    </Async>
  )
}

defineElement('system-host', ({ ctx }) => <HostFacts ctx={ctx} />)
defineElement('system-software', ({ ctx }) => <Software ctx={ctx} />)
