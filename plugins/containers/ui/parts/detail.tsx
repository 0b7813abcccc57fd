/** One container: facts from inspect, live stats, the log followed live, its icon, and the actions. */
import type { ComponentChildren } from 'preact'
import { useRef, useState } from 'preact/hooks'
import {
  ApiError,
  Async,
  Badge,
  Button,
  Card,
  Empty,
  KeyValues,
  Loading,
  PageHeader,
  ProgressBar,
  formatBytes,
  formatDateTime,
  formatDuration,
  formatRate,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { AutoStartSwitch, ContainerActions } from './actions.tsx'
import { ExecConsole } from './console.tsx'
import { EditDialog } from './edit.tsx'
import { ContainerLog } from './log.tsx'
import { ContainerIcon, PortLinks, StateBadges, fileBase64, iconChanged } from './common.tsx'
import { shortId, type Container, type ContainerList, type Inspect, type StatsEntry } from './model.ts'

const REFRESH_MS = 5000
/** Stats are one engine sample each; every 2 s matches the overview's metrics stream. */
const STATS_MS = 2000
const ICON_MAX_BYTES = 256 * 1024
/** What each restart policy does, in words (the engine restarts the container; hostd's auto-start is separate). */
const RESTART_WORDS: Record<string, string> = {
  no: 'Never: the engine leaves it stopped when it exits',
  always: 'Always: the engine restarts it when it exits, and when the engine starts (even after a stop by hand)',
  'unless-stopped': 'Unless stopped by hand: the engine restarts it when it exits, and when the engine starts',
  'on-failure': 'When it fails: the engine restarts it when it exits with an error',
}

function restartWords(policy: Inspect['HostConfig']['RestartPolicy']): string {
  const name = policy?.Name || 'no'
  const words = RESTART_WORDS[name] ?? name
  return name === 'on-failure' && policy?.MaximumRetryCount
    ? `${words} (at most ${policy.MaximumRetryCount} times)`
    : words
}

interface Sample {
  at: number
  stats: StatsEntry
}

interface Samples {
  current: Sample
  previous?: Sample
}

function LiveStats({
  ctx,
  id,
  running,
  cpuLimit,
}: {
  ctx: PageContext
  id: string
  running: boolean
  cpuLimit: number
}) {
  if (!running) return <p class="muted">Not running: start it to see its processor, memory, network and disk use.</p>
  // Mounted while it runs: a container started again measures afresh.
  return <RunningStats ctx={ctx} id={id} cpuLimit={cpuLimit} />
}

function RunningStats({ ctx, id, cpuLimit }: { ctx: PageContext; id: string; cpuLimit: number }) {
  // Rates need two samples: each answer is kept with the one before it.
  const last = useRef<Samples | null>(null)
  const samples = useResource(
    async (signal) => {
      const [stats] = await ctx.api.get<StatsEntry[]>(`/api/containers/${encodeURIComponent(id)}/stats`, { signal })
      if (stats) last.current = { current: { at: performance.now(), stats }, previous: last.current?.current }
      return last.current
    },
    [id],
    { every: STATS_MS },
  )
  return (
    <Async resource={samples} label="Measuring…" errorTitle="Live figures are not available">
      {(pair) => (pair ? <Figures samples={pair} cpuLimit={cpuLimit} /> : <Loading label="Measuring…" />)}
    </Async>
  )
}

function Figures({ samples, cpuLimit }: { samples: Samples; cpuLimit: number }) {
  const { current, previous } = samples
  const s = current.stats
  const seconds = previous ? (current.at - previous.at) / 1000 : 0
  const rate = (pick: (x: StatsEntry) => number) =>
    previous && seconds > 0 ? Math.max(0, (pick(s) - pick(previous.stats)) / seconds) : null
  const cpuPercent =
    previous && seconds > 0
      ? Math.max(0, ((s.cpuUsageUsec - previous.stats.cpuUsageUsec) / (seconds * 1e6)) * 100)
      : null
  const cpuMax = cpuLimit > 0 ? cpuLimit * 100 : 100
  const memoryShare = s.memoryLimitBytes > 0 ? (s.memoryUsageBytes / s.memoryLimitBytes) * 100 : 0
  return (
    <div class="stack ctr-stats" aria-live="off">
      <ProgressBar
        label="Processor"
        value={cpuPercent ?? undefined}
        max={cpuMax}
        detail={
          cpuPercent === null
            ? 'measuring…'
            : `${cpuPercent.toFixed(1)} % of ${cpuLimit > 0 ? `its ${cpuLimit} CPU limit` : 'one core'}`
        }
        tone={cpuPercent !== null && cpuPercent > cpuMax * 0.9 ? 'warning' : 'accent'}
      />
      <ProgressBar
        label="Memory"
        value={s.memoryUsageBytes}
        max={s.memoryLimitBytes || undefined}
        detail={`${formatBytes(s.memoryUsageBytes)} of ${formatBytes(s.memoryLimitBytes)} (${memoryShare.toFixed(0)} %)`}
        tone={memoryShare > 90 ? 'warning' : 'accent'}
      />
      <KeyValues
        items={[
          ['Network in', <Figure rate={rate((x) => x.networkRxBytes)} total={s.networkRxBytes} />],
          ['Network out', <Figure rate={rate((x) => x.networkTxBytes)} total={s.networkTxBytes} />],
          ['Disk read', <Figure rate={rate((x) => x.blockReadBytes)} total={s.blockReadBytes} />],
          ['Disk written', <Figure rate={rate((x) => x.blockWriteBytes)} total={s.blockWriteBytes} />],
          ['Processes', String(s.numProcesses)],
        ]}
      />
    </div>
  )
}

/** hostd's auto-start beside the engine's restart policy: what it adds (or that it adds nothing). */
function autoStartWords(policy: string, on: boolean): string {
  if (policy === 'always' || policy === 'unless-stopped')
    return on
      ? 'hostd starts it when hostd starts, if it is not running (even after a stop by hand)'
      : 'Not needed for most: the restart policy already starts it with the engine'
  return on
    ? 'hostd starts it when hostd starts, if it is not running'
    : 'Off: with this restart policy nothing starts it after a reboot'
}

function Figure({ rate, total }: { rate: number | null; total: number }) {
  return (
    <>
      {rate !== null && <span class="ctr-figure">{formatRate(Math.round(rate))} </span>}
      <span class="detail">{formatBytes(total)} in all</span>
    </>
  )
}

function IconEditor({ ctx, name }: { ctx: PageContext; name: string }) {
  const input = useRef<HTMLInputElement>(null)
  const [busy, setBusy] = useState<'upload' | 'remove' | null>(null)
  const upload = async (file: File) => {
    if (file.size > ICON_MAX_BYTES) {
      ctx.toast.error(`${file.name} is ${formatBytes(file.size)}: an icon may be at most 256 KiB`)
      return
    }
    setBusy('upload')
    try {
      await ctx.api.put(`/api/icons/container/${encodeURIComponent(name)}`, { data: await fileBase64(file) })
      iconChanged(name)
      ctx.toast.success(`New icon for ${name}`)
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(null)
    }
  }
  const clear = async () => {
    setBusy('remove')
    try {
      await ctx.api.delete(`/api/icons/container/${encodeURIComponent(name)}`)
      iconChanged(name)
      ctx.toast.success(`${name} shows the default icon again`)
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) ctx.toast.info(`${name} has no icon of its own`)
      else ctx.toast.error(err)
    } finally {
      setBusy(null)
    }
  }
  return (
    <div class="ctr-icon-editor">
      <ContainerIcon name={name} size={56} />
      <div class="stack">
        <p class="muted">
          A PNG, JPEG or SVG of at most 256 KiB, shown in the list. It stays when the container is updated.
        </p>
        <div class="ctr-actions">
          <Button
            icon="upload"
            busy={busy === 'upload'}
            disabled={busy !== null}
            onClick={() => input.current?.click()}
          >
            Upload icon
          </Button>
          <Button
            icon="x"
            variant="ghost"
            busy={busy === 'remove'}
            disabled={busy !== null}
            onClick={() => void clear()}
          >
            Use the default icon
          </Button>
        </div>
        <input
          ref={input}
          type="file"
          class="sr-only"
          tabIndex={-1}
          accept="image/png,image/jpeg,image/svg+xml"
          aria-label={`Icon file for ${name}`}
          onChange={(e) => {
            const file = e.currentTarget.files?.[0]
            e.currentTarget.value = ''
            if (file) void upload(file)
          }}
        />
      </div>
    </div>
  )
}

function commandLine(words: (string | null | undefined)[]): string {
  return words
    .filter((w): w is string => typeof w === 'string')
    .map((w) => (w === '' || /[\s'"\\$`]/.test(w) ? `'${w.replace(/'/g, `'\\''`)}'` : w))
    .join(' ')
}

function List({ items, empty = 'none' }: { items: ComponentChildren[]; empty?: string }) {
  if (items.length === 0) return <span class="muted">{empty}</span>
  return (
    <ul class="ctr-plain-list">
      {items.map((item, i) => (
        <li key={i}>{item}</li>
      ))}
    </ul>
  )
}

function Configuration({ info }: { info: Inspect }) {
  const env = info.Config.Env ?? []
  const labels = Object.entries(info.Config.Labels ?? {})
  const networks = Object.entries(info.NetworkSettings.Networks ?? {})
  const cpus = (info.HostConfig.NanoCpus ?? 0) / 1e9
  return (
    <div class="stack">
      <KeyValues
        items={[
          ['Container id', <code title={info.Id}>{shortId(info.Id)}</code>],
          ['Image', <span class="mono">{info.Config.Image}</span>],
          ['Image id', <code title={info.Image}>{shortId(info.Image)}</code>],
          ['Created', formatDateTime(info.Created)],
          ['Command', <code>{commandLine([info.Path, ...info.Args]) || '–'}</code>],
          [
            'Entrypoint',
            info.Config.Entrypoint?.length ? (
              <code>{commandLine(info.Config.Entrypoint)}</code>
            ) : (
              <span class="muted">image default</span>
            ),
          ],
          ['Working directory', info.Config.WorkingDir || <span class="muted">/</span>],
          ['User', info.Config.User || <span class="muted">image default</span>],
          ['Host name', info.Config.Hostname],
          ['Processor limit', cpus > 0 ? `${cpus} CPU${cpus === 1 ? '' : 's'}` : <span class="muted">none</span>],
          [
            'Memory limit',
            info.HostConfig.Memory ? formatBytes(info.HostConfig.Memory) : <span class="muted">none</span>,
          ],
          [
            'Networks',
            <List
              items={networks.map(([name, n]) => (
                <>
                  <strong>{name}</strong>
                  {n.IPAddress && <span class="mono"> {n.IPAddress}</span>}
                </>
              ))}
              empty={info.HostConfig.NetworkMode ?? 'none'}
            />,
          ],
          [
            'Mounts',
            <List
              items={info.Mounts.map((m) => (
                <span class="mono">
                  {m.Type === 'volume' ? m.Name : m.Source} → {m.Destination}
                  {m.RW ? '' : ' (read-only)'}
                </span>
              ))}
            />,
          ],
        ]}
      />
      <details class="ctr-details">
        <summary>
          Environment ({env.length} variable{env.length === 1 ? '' : 's'})
        </summary>
        <List items={env.map((e) => <code>{e}</code>)} />
      </details>
      <details class="ctr-details">
        <summary>Labels ({labels.length})</summary>
        <List
          items={labels.map(([k, v]) => (
            <code>
              {k}={v}
            </code>
          ))}
        />
      </details>
    </div>
  )
}

function NotFound({ ctx, id }: { ctx: PageContext; id: string }) {
  return (
    <>
      <PageHeader title={id} />
      <Empty
        icon="container"
        title={`There is no container ${id}`}
        action={<Button onClick={() => ctx.navigate(ctx.base)}>All containers</Button>}
      >
        It may have been removed, or renamed by an update.
      </Empty>
    </>
  )
}

export function ContainerDetail({ ctx, id }: { ctx: PageContext; id: string }) {
  const detail = useResource(
    async (signal) => {
      const [info, list] = await Promise.all([
        ctx.api.get<Inspect>(`/api/containers/${encodeURIComponent(id)}`, { signal }),
        ctx.api.get<ContainerList>('/api/containers', { signal }),
      ])
      return { info, item: list.items.find((c) => c.id === info.Id) as Container | undefined }
    },
    [id],
    { every: REFRESH_MS },
  )
  const [editing, setEditing] = useState(false)

  if (detail.data === undefined) {
    if (detail.error instanceof ApiError && detail.error.code === 'HOSTD_CONTAINERS_NOT_FOUND')
      return <NotFound ctx={ctx} id={id} />
    return (
      <>
        <PageHeader title={id} />
        <Async resource={detail} label="Loading the container…">
          {() => null}
        </Async>
      </>
    )
  }
  const { info, item } = detail.data
  const name = info.Name.replace(/^\//, '')
  const state = info.State.Status
  const running = info.State.Running
  const operator = ctx.can('operator')
  return (
    <>
      <nav class="ctr-back" aria-label="Breadcrumb">
        <a href={ctx.base}>Containers</a> <span aria-hidden="true">/</span> <span aria-current="page">{name}</span>
      </nav>
      <PageHeader
        title={name}
        description={
          <span class="ctr-head">
            <ContainerIcon name={name} size={28} />
            <span class="mono">{info.Config.Image}</span>
            <StateBadges state={state} health={info.State.Health?.Status ?? ''} />
            {item?.updateAvailable && <Badge tone="warning">Update available</Badge>}
          </span>
        }
        actions={
          operator && (
            <>
              <Button icon="pencil" onClick={() => setEditing(true)}>
                Edit
              </Button>
              {item?.updateAvailable && (
                <Button
                  icon="download"
                  onClick={() => ctx.navigate(`${ctx.base}/updates?select=${encodeURIComponent(name)}`)}
                >
                  Update
                </Button>
              )}
              <ContainerActions
                ctx={ctx}
                container={{
                  id: info.Id,
                  name,
                  state,
                  mountedVolumes: info.Mounts.map((m) => (m.Type === 'volume' && m.Name ? m.Name : m.Source)),
                }}
                onChanged={detail.reload}
                onRemoved={() => ctx.navigate(ctx.base)}
              />
            </>
          )
        }
      />
      <div class="ctr-detail-grid">
        <Card title="Status">
          <KeyValues
            items={[
              [
                'State',
                running
                  ? `Up for ${formatDuration((Date.now() - Date.parse(info.State.StartedAt)) / 1000)}`
                  : `${state}${info.State.FinishedAt?.startsWith('0001') ? '' : ` since ${formatDateTime(info.State.FinishedAt)}`}`,
              ],
              ...(!running && state === 'exited'
                ? [['Exit code', String(info.State.ExitCode)] as [string, string]]
                : []),
              ...(info.State.Error ? [['Error', info.State.Error] as [string, string]] : []),
              ['Ports', item ? <PortLinks ports={item.ports} name={name} /> : <span class="muted">–</span>],
              [
                'Address',
                Object.values(info.NetworkSettings.Networks ?? {})
                  .map((n) => n.IPAddress)
                  .filter(Boolean)
                  .join(', ') || <span class="muted">none</span>,
              ],
              ['Restart policy', restartWords(info.HostConfig.RestartPolicy)],
              ['Restarted by the engine', info.RestartCount ? `${info.RestartCount}×` : 'never'],
              [
                'Also start with hostd',
                item ? (
                  <span class="ctr-autostart">
                    <AutoStartSwitch ctx={ctx} container={item} onChanged={detail.reload} />
                    <span class="detail">
                      {autoStartWords(info.HostConfig.RestartPolicy?.Name || 'no', item.autoStart)}
                    </span>
                  </span>
                ) : (
                  <span class="muted">–</span>
                ),
              ],
            ]}
          />
        </Card>
        <Card title="Live usage">
          <LiveStats
            ctx={ctx}
            id={info.Id}
            running={running && !info.State.Paused}
            cpuLimit={(info.HostConfig.NanoCpus ?? 0) / 1e9}
          />
        </Card>
      </div>
      <Card title="Log">
        <ContainerLog ctx={ctx} id={info.Id} name={name} restartedAt={info.State.StartedAt} />
      </Card>
      {ctx.can('admin') && (
        <Card title="Console">
          <ExecConsole ctx={ctx} id={info.Id} name={name} running={running && !info.State.Paused} />
        </Card>
      )}
      <Card title="Configuration">
        <Configuration info={info} />
      </Card>
      {operator && (
        <Card title="Icon">
          <IconEditor ctx={ctx} name={name} />
        </Card>
      )}
      {editing && (
        <EditDialog
          ctx={ctx}
          info={info}
          onClose={() => setEditing(false)}
          onDone={() => {
            setEditing(false)
            detail.reload()
          }}
        />
      )}
    </>
  )
}
