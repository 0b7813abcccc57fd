/**
 * The Processes page (operator): the process table from GET /api/activity/processes, one row per process named by
 * its program (argv[0]), sortable by every column, searched by name, command, user or pid, 50 rows a page, refreshed
 * on a button or on an interval that pauses while the tab is hidden. Admins end a process from its row (end-process.tsx).
 * The network columns cost an extra measurement (nethogs through the root helper, about 2 s), so they are
 * behind a switch. Settings live in the query string (`?q=&every=5&network=1`), so reload keeps them.
 */
import { useEffect, useState } from 'preact/hooks'
import {
  adoptStyles,
  ApiError,
  Button,
  Checkbox,
  DataTable,
  defineElement,
  Empty,
  ErrorState,
  formatDateTime,
  formatRate,
  Icon,
  Loading,
  PageHeader,
  ProgressBar,
  Select,
  TextField,
  type Column,
  useResource,
  type PageContext,
} from '@hostd/ui'
import type { ProcessEntry, ProcessSample } from '../src/schemas.ts'
import css from './activity.css' with { type: 'text' }
import { EndProcessDialog } from './end-process.tsx'

adoptStyles('activity', css)

const INTERVALS = [
  { value: '0', label: 'Off' },
  { value: '2', label: 'Every 2 s' },
  { value: '5', label: 'Every 5 s' },
  { value: '10', label: 'Every 10 s' },
  { value: '30', label: 'Every 30 s' },
]

const percent = (v: number) => `${v.toFixed(1)} %`
const perSecond = (v: number) => `${v < 10 ? v.toFixed(1) : Math.round(v)}/s`

const COLUMNS: Column<ProcessEntry>[] = [
  {
    key: 'name',
    label: 'Name',
    sortable: true,
    primary: true,
    render: (p) => (
      <span class="activity-name" title={p.command || undefined}>
        <span class="cell-strong">{p.name}</span>
        {p.command && p.command !== p.name && <span class="activity-command">{p.command}</span>}
      </span>
    ),
  },
  { key: 'pid', label: 'PID', sortable: true, align: 'end', render: (p) => <span class="mono">{p.pid}</span> },
  { key: 'user', label: 'User', sortable: true, secondary: true },
  {
    key: 'cpu',
    label: 'CPU',
    sortable: true,
    align: 'end',
    render: (p) => <span class={p.cpu >= 50 ? 'activity-hot' : undefined}>{percent(p.cpu)}</span>,
  },
  { key: 'memory', label: 'Memory', sortable: true, align: 'end', render: (p) => percent(p.memory) },
  { key: 'threads', label: 'Threads', sortable: true, align: 'end', secondary: true },
  {
    key: 'diskReadRate',
    label: 'Disk read',
    sortable: true,
    align: 'end',
    secondary: true,
    render: (p) => formatRate(p.diskReadRate),
  },
  {
    key: 'diskWriteRate',
    label: 'Disk write',
    sortable: true,
    align: 'end',
    secondary: true,
    render: (p) => formatRate(p.diskWriteRate),
  },
  {
    key: 'wakeupsRate',
    label: 'Wakeups',
    sortable: true,
    align: 'end',
    secondary: true,
    render: (p) => perSecond(p.wakeupsRate),
  },
]
const NETWORK_COLUMNS: Column<ProcessEntry>[] = [
  {
    key: 'netInRate',
    label: 'Net in',
    sortable: true,
    align: 'end',
    secondary: true,
    render: (p) => formatRate(p.netInRate),
  },
  {
    key: 'netOutRate',
    label: 'Net out',
    sortable: true,
    align: 'end',
    secondary: true,
    render: (p) => formatRate(p.netOutRate),
  },
]

/** The first sample after the daemon starts has no previous one to compare with: every rate is 0. */
const allRatesZero = (list: ProcessEntry[]) =>
  list.length > 1 &&
  list.every((p) => p.cpu === 0 && p.diskReadRate === 0 && p.diskWriteRate === 0 && p.wakeupsRate === 0)

function matches(p: ProcessEntry, filter: string): boolean {
  if (!filter) return true
  // A number is a PID: the digits in other processes' command lines would only get in the way.
  if (/^\d+$/.test(filter)) return String(p.pid) === filter
  const f = filter.toLowerCase()
  return p.name.toLowerCase().includes(f) || p.command.toLowerCase().includes(f) || p.user.toLowerCase().includes(f)
}

/** Rows a page: long lists stay light (a host runs hundreds of processes). */
const PAGE_SIZE = 50

function useVisible(): boolean {
  const [visible, setVisible] = useState(document.visibilityState === 'visible')
  useEffect(() => {
    const update = () => setVisible(document.visibilityState === 'visible')
    document.addEventListener('visibilitychange', update)
    return () => document.removeEventListener('visibilitychange', update)
  }, [])
  return visible
}

/** The codes that mean only the network measurement failed: the page turns the columns off and samples without. */
const NETWORK_FAILURES = new Set(['HOSTD_HELPER_UNAVAILABLE', 'HOSTD_ACTIVITY_NETWORK_FAILED'])
/** Thrown by the load that turned the network columns off: not an error to show, the sample without them follows. */
class NetworkColumnsOff extends Error {}

function ActivityPage({ ctx }: { ctx: PageContext }) {
  const params = new URLSearchParams(ctx.location.value.search)
  const filter = params.get('q') ?? ''
  const network = params.get('network') === '1'
  const every = INTERVALS.some((i) => i.value === params.get('every')) ? Number(params.get('every')) : 0
  const setParam = (name: string, value: string | null) => {
    const next = new URLSearchParams(ctx.location.value.search)
    if (value) next.set(name, value)
    else next.delete(name)
    const query = next.toString()
    ctx.navigate(`${ctx.base}${query ? `?${query}` : ''}`, { replace: true })
  }

  const [networkError, setNetworkError] = useState<string | null>(null)
  const [ending, setEnding] = useState<ProcessEntry | null>(null)
  const admin = ctx.can('admin')
  const visible = useVisible()
  // A sample now, again whenever the network columns are switched, and with auto-refresh the next one `every`
  // seconds after the last one finished (so a slow network=1 sample never piles up), none while the tab is hidden.
  const resource = useResource(
    async (signal) => {
      try {
        return await ctx.api.get<ProcessSample>(`/api/activity/processes${network ? '?network=1' : ''}`, { signal })
      } catch (err) {
        if (!network || !(err instanceof ApiError) || !NETWORK_FAILURES.has(err.code)) throw err
        // Only the extra measurement failed: say why at the switch and go on without it (a sample follows).
        setNetworkError(
          err.code === 'HOSTD_HELPER_UNAVAILABLE'
            ? 'Network columns need the root helper (Admin Privileges), which is not running on this host. The other columns work without it.'
            : `The network measurement failed: ${err.message}`,
        )
        setParam('network', null)
        throw new NetworkColumnsOff()
      }
    },
    [network],
    { every: every ? every * 1000 : undefined },
  )
  const sample = resource.data
  const error = resource.error instanceof NetworkColumnsOff ? undefined : resource.error
  const busy = resource.loading
  const refresh = resource.reload

  const rows = sample ? sample.processes.filter((p) => matches(p, filter)) : []
  const autoStatus = every
    ? visible
      ? `Refreshing every ${every} s`
      : 'Auto-refresh paused while this tab is hidden'
    : null

  return (
    <div class="stack">
      <PageHeader
        title="Processes"
        description="The programs running on this host, sampled when you ask. CPU, disk and wakeup figures are rates since the previous sample."
        actions={
          <Button variant="primary" icon="refresh" busy={busy && sample !== undefined} onClick={refresh}>
            Refresh
          </Button>
        }
      />
      <div class="activity-controls">
        <TextField
          name="filter"
          label="Search processes"
          type="search"
          hint="Name, command, user or PID"
          value={filter}
          autoComplete="off"
          onInput={(e) => setParam('q', e.currentTarget.value)}
        />
        <Select
          name="every"
          label="Auto-refresh"
          options={INTERVALS}
          value={String(every)}
          onChange={(e) => setParam('every', e.currentTarget.value === '0' ? null : e.currentTarget.value)}
        />
        <div class="activity-network">
          <Checkbox
            name="network"
            switch
            label="Network columns"
            checked={network}
            hint="Costs an extra measurement of per-process traffic on every refresh: about 2 seconds (nethogs, through the root helper)."
            onChange={(e) => {
              setNetworkError(null)
              setParam('network', e.currentTarget.checked ? '1' : null)
            }}
          />
          {networkError && (
            <p class="field-error" role="alert">
              <Icon name="circle-alert" size={14} /> {networkError}
            </p>
          )}
        </div>
      </div>

      {busy && network && <ProgressBar label="Measuring network traffic per process (about 2 seconds)…" />}

      {sample === undefined ? (
        error !== undefined ? (
          <ErrorState title="The process table could not be sampled" error={error} onRetry={refresh} />
        ) : (
          <Loading label="Sampling processes…" />
        )
      ) : (
        <>
          <div class="toolbar">
            <p class="toolbar-status" aria-live={every ? 'off' : 'polite'}>
              Sampled at <time dateTime={sample.sampledAt}>{formatDateTime(sample.sampledAt)}</time> ·{' '}
              {rows.length === sample.processes.length
                ? `${sample.processes.length} processes`
                : `${rows.length} of ${sample.processes.length} processes`}
            </p>
            {autoStatus && <p class="toolbar-status">{autoStatus}</p>}
          </div>
          {error !== undefined && (
            <ErrorState
              title="The last refresh failed; the table shows the sample before it"
              error={error}
              onRetry={refresh}
            />
          )}
          {allRatesZero(sample.processes) && (
            <div class="notice activity-first" role="note">
              <Icon name="info" />
              <p>
                This is the first sample since the daemon started. CPU, disk and wakeups are rates measured against the
                previous sample, so they all read 0 this time.
              </p>
              <Button size="sm" onClick={refresh}>
                Measure again
              </Button>
            </div>
          )}
          <div class="activity-table">
            <DataTable
              caption="Processes"
              hideCaption
              rows={rows}
              rowKey={(p) => p.pid}
              columns={[
                ...COLUMNS,
                ...(network ? NETWORK_COLUMNS : []),
                ...(admin
                  ? [
                      {
                        key: 'actions',
                        label: 'Actions',
                        actions: true,
                        align: 'end' as const,
                        render: (p: ProcessEntry) => (
                          <Button
                            size="sm"
                            variant="ghost"
                            icon="ban"
                            aria-label={`End ${p.name} (PID ${p.pid})`}
                            onClick={() => setEnding(p)}
                          >
                            End
                          </Button>
                        ),
                      },
                    ]
                  : []),
              ]}
              initialSort={{ key: 'cpu', direction: 'descending' }}
              pageSize={PAGE_SIZE}
              empty={
                sample.processes.length === 0 ? (
                  <Empty icon="activity" title="No process could be inspected">
                    The daemon lists only the processes it may read in /proc.
                  </Empty>
                ) : (
                  <Empty
                    icon="search"
                    title={`No process matches “${filter}”`}
                    action={<Button onClick={() => setParam('q', null)}>Clear the filter</Button>}
                  />
                )
              }
            />
          </div>
          <details class="activity-help">
            <summary>About these figures</summary>
            <ul>
              <li>
                <strong>CPU</strong>: percent of one core since the previous sample, as top shows it (a process busy on
                two cores shows 200 %).
              </li>
              <li>
                <strong>Memory</strong>: resident memory as a percent of physical memory.
              </li>
              <li>
                <strong>Disk read and write</strong>: bytes per second the process fetched from or sent to storage
                (cached reads are not counted).
              </li>
              <li>
                <strong>Wakeups</strong>: context switches per second (voluntary and involuntary).
              </li>
              <li>
                <strong>Net in and out</strong>: bytes per second, only with the network columns switched on.
              </li>
              <li>
                Rates compare with the previous sample taken by anyone; the first sample after the daemon starts reads
                0. Processes the daemon may not inspect are left out.
              </li>
            </ul>
          </details>
        </>
      )}
      {ending && (
        <EndProcessDialog
          ctx={ctx}
          process={ending}
          onClose={() => setEnding(null)}
          onEnded={() => {
            setEnding(null)
            refresh()
          }}
        />
      )}
    </div>
  )
}

defineElement('metrics-activity', ({ ctx }) => <ActivityPage ctx={ctx} />)
