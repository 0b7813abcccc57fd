/** The "Disks and volumes" view: mounted volumes with usage, disks with SMART and eject, container volumes. */
import {
  ApiError,
  Badge,
  Button,
  Card,
  DataTable,
  Dialog,
  Empty,
  ErrorState,
  KeyValues,
  Loading,
  PrivilegesMissing,
  formatBytes,
  formatDuration,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { useEffect } from 'preact/hooks'
import { UsageBar, usedPercent } from './common.tsx'
import { withQuery, type ContainerVolume, type Disk, type HelperState, type Overview, type Smart } from './model.ts'

interface Props {
  ctx: PageContext
  overview: Overview
  helper: HelperState
  reload: () => void
}

export function DisksView({ ctx, overview, helper, reload }: Props) {
  const smartOf = new URLSearchParams(ctx.location.value.search).get('smart')
  const smartDisk = overview.disks.find((d) => d.name === smartOf) ?? null
  const openSmart = (disk: Disk | null) =>
    ctx.navigate(withQuery(ctx.base, { smart: disk?.name }), { replace: disk === null })

  const eject = async (disk: Disk) => {
    const ok = await ctx.confirm({
      title: `Eject ${disk.name}?`,
      message: `${disk.model ?? disk.path} is ejected; take it out once this is done. Nothing on it may be in use.`,
      confirmLabel: `Eject ${disk.name}`,
    })
    if (!ok) return
    try {
      await ctx.api.post('/api/storage/eject', { device: disk.name })
      ctx.toast.success(`${disk.name} was ejected: it can be removed now`)
      reload()
    } catch (err) {
      if (!helper.report(err)) ctx.toast.error(err)
    }
  }

  return (
    <div class="storage-stack">
      <Card title="Volumes">
        <DataTable
          caption="Mounted volumes"
          hideCaption
          rows={overview.volumes}
          rowKey={(v) => v.mountpoint}
          initialSort={{ key: 'mountpoint', direction: 'ascending' }}
          empty={<Empty icon="hard-drive" title="No mounted data volumes" />}
          columns={[
            {
              key: 'mountpoint',
              label: 'Mount point',
              sortable: true,
              render: (v) => <span class="cell-strong mono">{v.mountpoint}</span>,
            },
            {
              key: 'device',
              label: 'Device',
              sortable: true,
              secondary: true,
              render: (v) => <span class="mono">{v.device}</span>,
            },
            { key: 'fstype', label: 'Type', sortable: true },
            {
              key: 'used',
              label: 'Usage',
              sortValue: (v) => usedPercent(v.used, v.free),
              render: (v) => <UsageBar label={`Usage of ${v.mountpoint}`} used={v.used} free={v.free} />,
            },
            { key: 'free', label: 'Free', sortable: true, align: 'end', render: (v) => formatBytes(v.free) },
          ]}
        />
      </Card>

      <Card title="Disks">
        <DataTable
          caption="Disks"
          hideCaption
          rows={overview.disks}
          rowKey={(d) => d.name}
          initialSort={{ key: 'name', direction: 'ascending' }}
          empty={<Empty icon="hard-drive" title="No disks found" />}
          columns={[
            {
              key: 'name',
              label: 'Disk',
              sortable: true,
              render: (d) => (
                <span>
                  <span class="cell-strong mono">{d.path}</span>
                  <span class="storage-sub">
                    {d.model ?? 'Unknown model'}
                    {d.serial ? ` · ${d.serial}` : ''}
                  </span>
                </span>
              ),
            },
            { key: 'size', label: 'Size', sortable: true, render: (d) => formatBytes(d.size) },
            {
              key: 'transport',
              label: 'Connection',
              sortable: true,
              secondary: true,
              render: (d) => d.transport?.toUpperCase() ?? <span class="muted">internal</span>,
            },
            { key: 'partitions', label: 'Partitions', secondary: true, render: (d) => <Partitions disk={d} /> },
            { key: 'state', label: 'State', render: (d) => <DiskBadges disk={d} /> },
            {
              key: 'actions',
              label: 'Actions',
              align: 'end',
              render: (d) => (
                <div class="row-actions">
                  {ctx.can('operator') && (
                    <Button
                      size="sm"
                      variant="ghost"
                      icon="gauge"
                      aria-label={`SMART report of ${d.name}`}
                      disabled={helper.missing}
                      onClick={() => openSmart(d)}
                    >
                      SMART
                    </Button>
                  )}
                  {ctx.can('admin') && d.removable && (
                    <Button
                      size="sm"
                      variant="ghost"
                      icon="arrow-up"
                      aria-label={`Eject ${d.name}`}
                      disabled={helper.missing}
                      onClick={() => void eject(d)}
                    >
                      Eject
                    </Button>
                  )}
                </div>
              ),
            },
          ]}
        />
      </Card>

      <ContainerVolumes volumes={overview.containerVolumes} />

      {smartDisk && ctx.can('operator') && (
        <SmartDialog ctx={ctx} disk={smartDisk} helper={helper} onClose={() => openSmart(null)} />
      )}
    </div>
  )
}

function DiskBadges({ disk }: { disk: Disk }) {
  const mounted = disk.mountpoints.length > 0 || disk.partitions.some((p) => p.mountpoints.length > 0)
  return (
    <span class="storage-badges">
      {mounted ? <Badge tone="success">In use</Badge> : <Badge>Not mounted</Badge>}
      {disk.removable && <Badge tone="accent">Removable</Badge>}
      {disk.readOnly && <Badge tone="warning">Read-only</Badge>}
    </span>
  )
}

function Partitions({ disk }: { disk: Disk }) {
  if (disk.partitions.length === 0)
    return (
      <span class="muted">{disk.mountpoints.length ? `whole disk at ${disk.mountpoints.join(', ')}` : 'none'}</span>
    )
  return (
    <ul class="storage-parts">
      {disk.partitions.map((p) => (
        <li key={p.name}>
          <span class="mono">{p.name}</span> · {formatBytes(p.size)}
          {p.fstype && ` · ${p.fstype}`}
          {p.label && ` · “${p.label}”`}
          {p.mountpoints.length > 0 && ` · at ${p.mountpoints.join(', ')}`}
        </li>
      ))}
    </ul>
  )
}

function ContainerVolumes({ volumes }: { volumes: ContainerVolume[] | null }) {
  return (
    <Card title="Container volumes">
      {volumes === null ? (
        <Empty icon="box" title="Container volumes are not available">
          They are listed by the containers plugin, which is not active (no container engine, or the plugin is
          disabled).
        </Empty>
      ) : (
        <DataTable
          caption="Container volumes"
          hideCaption
          rows={volumes}
          rowKey={(v) => v.name}
          initialSort={{ key: 'name', direction: 'ascending' }}
          empty={<Empty icon="box" title="No container volumes" />}
          columns={[
            {
              key: 'name',
              label: 'Volume',
              sortable: true,
              render: (v) => <span class="cell-strong mono">{v.name}</span>,
            },
            { key: 'driver', label: 'Driver', sortable: true },
            {
              key: 'usedBy',
              label: 'Used by',
              sortValue: (v) => v.usedBy.length,
              render: (v) => (v.usedBy.length ? v.usedBy.join(', ') : <span class="muted">unused</span>),
            },
            {
              key: 'mountpoint',
              label: 'Location',
              secondary: true,
              render: (v) => <span class="mono detail">{v.mountpoint}</span>,
            },
          ]}
        />
      )}
    </Card>
  )
}

const HEALTH = {
  passed: ['success', 'Passed'],
  failed: ['danger', 'Failing'],
  unknown: ['neutral', 'Unknown'],
} as const

/** The SMART report of one disk (its own URL: ?smart=<disk>). "No SMART on this disk" is an answer, not a failure. */
function SmartDialog({
  ctx,
  disk,
  helper,
  onClose,
}: {
  ctx: PageContext
  disk: Disk
  helper: HelperState
  onClose: () => void
}) {
  const report = useResource(
    (signal) => ctx.api.get<Smart>(`/api/storage/smart/${encodeURIComponent(disk.name)}`, { signal }),
    [disk.name],
  )
  const error = report.error
  const noSmart = error instanceof ApiError && error.code === 'HOSTD_STORAGE_NO_SMART'
  useEffect(() => void (error !== undefined && helper.report(error)), [error])
  return (
    <Dialog
      open
      title={`SMART report of ${disk.path}`}
      size="lg"
      onClose={onClose}
      actions={<Button onClick={onClose}>Close</Button>}
    >
      {report.data ? (
        <SmartReport smart={report.data} />
      ) : error === undefined ? (
        <Loading label={`Asking ${disk.name} for its SMART data…`} />
      ) : noSmart ? (
        <Empty icon="hard-drive" title="SMART cannot be read on this disk">
          <p>
            {disk.model ?? disk.path} does not report SMART data (virtual disks, many USB adapters and memory cards do
            not).
          </p>
          <p class="mono detail">{(error as ApiError).message}</p>
        </Empty>
      ) : error instanceof ApiError && error.status === 423 ? (
        <PrivilegesMissing affected="SMART reports" onRetry={report.reload} />
      ) : (
        <ErrorState title="The SMART report could not be read" error={error} onRetry={report.reload} />
      )}
    </Dialog>
  )
}

function SmartReport({ smart }: { smart: Smart }) {
  const [tone, word] = HEALTH[smart.health]
  const failing = smart.attributes.filter((a) => a.failing).length
  return (
    <div class="storage-stack">
      <div class="storage-smart-head">
        <Badge tone={tone}>Health: {word}</Badge>
        {failing > 0 && (
          <Badge tone="danger">
            {failing} failing attribute{failing === 1 ? '' : 's'}
          </Badge>
        )}
      </div>
      <KeyValues
        items={[
          ['Model', smart.model ?? 'unknown'],
          ['Serial', smart.serial ?? 'unknown'],
          ['Temperature', smart.temperatureC === null ? 'not reported' : `${smart.temperatureC} °C`],
          ['Powered on for', smart.powerOnHours === null ? 'not reported' : formatDuration(smart.powerOnHours * 3600)],
        ]}
      />
      <DataTable
        caption="SMART attributes"
        rows={smart.attributes}
        rowKey={(a) => `${a.id ?? ''}-${a.name}`}
        empty={<Empty icon="list" title="The disk reports no attributes" />}
        columns={[
          { key: 'id', label: 'ID', sortable: true },
          { key: 'name', label: 'Attribute', sortable: true },
          { key: 'value', label: 'Value', sortable: true, align: 'end' },
          { key: 'worst', label: 'Worst', secondary: true, align: 'end' },
          { key: 'threshold', label: 'Threshold', secondary: true, align: 'end' },
          { key: 'raw', label: 'Raw', render: (a) => <span class="mono">{a.raw}</span> },
          {
            key: 'failing',
            label: 'State',
            sortable: true,
            render: (a) => (a.failing ? <Badge tone="danger">Failing</Badge> : <Badge tone="success">OK</Badge>),
          },
        ]}
      />
    </div>
  )
}
