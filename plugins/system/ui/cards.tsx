/** The system plugin's overview cards: the host's facts, and hostd's version with its update status. */
import { Async, ErrorState, KeyValues, formatBytes, formatDateTime, formatDuration, useResource, defineElement, type PageContext } from '@hostd/ui'
import { updateBadge, type SystemInfo, type UpdateStatus, type Version } from './parts/shared.tsx'

function HostFacts({ ctx }: { ctx: PageContext }) {
  const info = useResource((signal) => ctx.api.get<SystemInfo>('/api/system/info', { signal }), [])
  return (
    <Async resource={info} label="Reading the host's facts…">
      {(i) => (
        <KeyValues
          items={[
            ['Host name', i.hostname],
            ['System', i.os.prettyName ?? i.os.name ?? 'unknown'],
            ['Kernel', `${i.kernel.release} (${i.arch})`],
            ['Processor', `${i.cpu.model ?? 'unknown'} · ${i.cpu.cores} cores, ${i.cpu.threads} threads`],
            ['Memory', formatBytes(i.memory.totalBytes)],
            ['Hardware', [i.hardware.vendor, i.hardware.product].filter(Boolean).join(' ') || 'virtual or unknown'],
            ['Up for', formatDuration(i.uptimeSeconds)],
          ]}
        />
      )}
    </Async>
  )
}

function Software({ ctx }: { ctx: PageContext }) {
  const data = useResource(async (signal) => {
    const [version, updates] = await Promise.all([ctx.api.get<Version>('/api/version', { signal }), ctx.api.get<UpdateStatus>('/api/updates', { signal })])
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
            ['Updates', <>{updateBadge(updates)} {updates.updateAvailable && <a href="/system">{ctx.can('admin') ? 'Install…' : 'Details'}</a>}</>],
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
