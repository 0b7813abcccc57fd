/**
 * The containers list: search (name, image), a state filter, selection with bulk actions, live state (engine events
 * over /api/containers/live) and live CPU and memory of the running rows on the page shown, state, ports, health,
 * update badges, icons, auto-start and the lifecycle actions. One page of rows is rendered (DataTable pageSize);
 * under 640 px each row is a card with its actions beside its name. The search and filter are in the address
 * (`?q=&state=`), so the overview card links to a filtered list.
 */
import type { ReadonlySignal } from '@preact/signals'
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  DataTable,
  Empty,
  formatBytes,
  formatRelative,
  useResource,
  type Column,
  type PageContext,
} from '@hostd/ui'
import { ContainerActions } from './actions.tsx'
import { ContainerIcon, EngineUnavailable, PortLinks, StateBadges } from './common.tsx'
import { shouldRun, useContainersLive, useDebounced, type LiveChange, type LiveStats } from './live.ts'
import { containerPath, shortId, type Container, type ContainerList } from './model.ts'
import { RemoveDialog } from './remove-dialog.tsx'

/** Without live events (the socket down) the list still refreshes this often. */
const REFRESH_MS = 15_000
const PAGE_SIZE = 50
const DETAILS_RETRY_MS = 1_500
const BULK_CONCURRENCY = 4

export const STATE_FILTERS = [
  { value: 'all', label: 'All states' },
  { value: 'running', label: 'Running' },
  { value: 'stopped', label: 'Stopped' },
  { value: 'other', label: 'Other (paused, restarting…)' },
  { value: 'down', label: 'Down but should run' },
] as const
type StateFilter = (typeof STATE_FILTERS)[number]['value']

const STOPPED = new Set(['exited', 'created', 'dead'])

export function matchesState(c: Container, filter: StateFilter): boolean {
  if (filter === 'running') return c.state === 'running'
  if (filter === 'stopped') return STOPPED.has(c.state)
  if (filter === 'other') return c.state !== 'running' && !STOPPED.has(c.state)
  if (filter === 'down') return shouldRun(c)
  return true
}

/** The image reference, or a short id when its tag has moved on to another image (after a pull of that tag). */
function ImageName({ image }: { image: string }) {
  if (!/^sha256:/.test(image)) return <span class="mono">{image}</span>
  return (
    <span class="mono muted" title={`${image}: its tag now names another image`}>
      {shortId(image)} (untagged)
    </span>
  )
}

function summary(list: ContainerList): string {
  const running = list.items.filter((c) => c.state === 'running').length
  const engine = list.engine.version ? `Engine ${list.engine.version}` : 'Engine'
  return `${engine} · ${list.items.length} container${list.items.length === 1 ? '' : 's'}, ${running} running`
}

/** CPU (of one core) over memory in use, live for a running container on the page shown. */
function UsageCell({ c, live }: { c: Container; live: ReadonlySignal<ReadonlyMap<string, LiveStats>> }) {
  if (c.state !== 'running') return <span class="muted">–</span>
  const stats = live.value.get(c.id)
  if (!stats) return <span class="muted">…</span>
  return (
    <span class="ctr-usage">
      <span>{stats.cpuPercent === null ? '… CPU' : `${stats.cpuPercent.toFixed(1)} % CPU`}</span>
      <span
        class="detail"
        title={stats.memoryLimitBytes ? `limit ${formatBytes(stats.memoryLimitBytes)}` : 'no memory limit'}
      >
        {formatBytes(stats.memoryBytes)}
      </span>
    </span>
  )
}

/**
 * Each row's place in name (or image) order, as a number for the table's sort: comparing numbers is what the table
 * does fastest (its string comparison builds a collator per call: 100-200 ms for 1,000 rows), the order is the same.
 */
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' })
function ranks(items: Container[], key: 'name' | 'image'): ReadonlyMap<string, number> {
  const sorted = [...items].sort((a, b) => collator.compare(a[key], b[key]))
  return new Map(sorted.map((c, i) => [c.id, i]))
}

type Bulk = 'start' | 'stop' | 'restart'
const BULK_DONE: Record<Bulk, string> = { start: 'started', stop: 'stopped', restart: 'restarted' }

/** Runs `fn` over `items`, a few at a time. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

export function ContainerListView({ ctx }: { ctx: PageContext }) {
  const list = useResource((signal) => ctx.api.get<ContainerList>('/api/containers', { signal }), [], {
    every: REFRESH_MS,
  })
  const operator = ctx.can('operator')
  const params = new URLSearchParams(ctx.location.value.search)
  const query = params.get('q') ?? ''
  const stateParam = params.get('state') ?? 'all'
  const filter: StateFilter = STATE_FILTERS.some((f) => f.value === stateParam) ? (stateParam as StateFilter) : 'all'
  const [search, setSearch] = useState(query)
  const [selected, setSelected] = useState<Set<string>>(new Set())
  const [bulkBusy, setBulkBusy] = useState<Bulk | null>(null)
  const [removing, setRemoving] = useState<Container[] | null>(null)
  /** Changes heard from the engine since the list was last read (applied at once, until the next read). */
  const [overlay, setOverlay] = useState<ReadonlyMap<string, LiveChange>>(new Map())
  const [visibleRunning, setVisibleRunning] = useState<string[]>([])
  const tableRef = useRef<HTMLDivElement>(null)

  const reloadSoon = useDebounced(list.reload, 250)
  const stats = useContainersLive(
    ctx,
    (change) => {
      if (change.id && (change.state || change.health))
        setOverlay((o) => new Map(o).set(change.id, { ...o.get(change.id), ...change }))
      reloadSoon()
    },
    visibleRunning,
  )
  // A fresh read replaces what the events said.
  useEffect(() => setOverlay(new Map()), [list.loadedAt])
  // Facts the engine's list lacks (restart policy, a stopped container's ports) come from a cache the daemon fills in
  // the background on first sight (its restart policy is "" until then): read again shortly, a few times at most.
  const incompleteReads = useRef(0)
  useEffect(() => {
    if (!list.data?.items.some((c) => c.restartPolicy === '') || incompleteReads.current >= 5) return
    incompleteReads.current++
    const timer = setTimeout(list.reload, DETAILS_RETRY_MS)
    return () => clearTimeout(timer)
  }, [list.loadedAt])

  const setAddress = (q: string, state: StateFilter) => {
    const next = new URLSearchParams()
    if (q) next.set('q', q)
    if (state !== 'all') next.set('state', state)
    const search = next.toString()
    ctx.navigate(`${ctx.base}${search ? `?${search}` : ''}`, { replace: true })
  }
  // Typing updates the address a moment later (not one navigation per key); choosing a state updates it at once.
  const searchTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  useEffect(() => () => clearTimeout(searchTimer.current), [])
  const typed = (value: string) => {
    setSearch(value)
    clearTimeout(searchTimer.current)
    searchTimer.current = setTimeout(() => setAddress(value.trim(), filter), 200)
  }
  const chooseState = (state: StateFilter) => {
    clearTimeout(searchTimer.current)
    setAddress(search.trim(), state)
  }

  const items = useMemo(() => {
    const all = list.data?.items ?? []
    if (overlay.size === 0) return all
    return all.flatMap((c) => {
      const change = overlay.get(c.id)
      if (!change) return [c]
      if (change.state === 'removed') return []
      return [{ ...c, state: change.state ?? c.state, health: change.health ?? c.health }]
    })
  }, [list.data, overlay])

  const needle = query.toLowerCase()
  const rows = useMemo(
    () =>
      items.filter(
        (c) =>
          matchesState(c, filter) &&
          (!needle || c.name.toLowerCase().includes(needle) || c.image.toLowerCase().includes(needle)),
      ),
    [items, filter, needle],
  )

  // The selection keeps only containers that still exist.
  useEffect(() => {
    if (selected.size === 0) return
    const ids = new Set(items.map((c) => c.id))
    const kept = [...selected].filter((id) => ids.has(id))
    if (kept.length !== selected.size) setSelected(new Set(kept))
  }, [items])

  // Which running rows the table shows (its current page): only their CPU and memory are asked for.
  useEffect(() => {
    const root = tableRef.current
    if (!root) return
    const read = () => {
      const ids = [...root.querySelectorAll<HTMLElement>('[data-ctr-running]')].map((e) => e.dataset.ctrRunning!)
      setVisibleRunning((prev) => (prev.join(',') === ids.join(',') ? prev : ids))
    }
    read()
    const observer = new MutationObserver(read)
    observer.observe(root, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-ctr-running'] })
    return () => observer.disconnect()
  }, [tableRef.current])

  const nameRank = useMemo(() => ranks(items, 'name'), [items])
  const imageRank = useMemo(() => ranks(items, 'image'), [items])
  const chosen = items.filter((c) => selected.has(c.id))
  const bulk = async (action: Bulk) => {
    const targets = chosen.filter((c) => (action === 'start' ? c.state !== 'running' : c.state === 'running'))
    if (targets.length === 0) {
      ctx.toast.info(`None of the selected containers can be ${BULK_DONE[action]}`)
      return
    }
    setBulkBusy(action)
    const failed: string[] = []
    await eachLimited(targets, BULK_CONCURRENCY, async (c) => {
      try {
        await ctx.api.post(`/api/containers/${encodeURIComponent(c.id)}/${action}`)
      } catch (err) {
        failed.push(`${c.name}: ${err instanceof Error ? err.message : String(err)}`)
      }
    })
    setBulkBusy(null)
    const done = targets.length - failed.length
    if (done > 0) ctx.toast.success(`${done} container${done === 1 ? ' was' : 's were'} ${BULK_DONE[action]}`)
    if (failed.length > 0) ctx.toast.error(new Error(`Not ${BULK_DONE[action]}: ${failed.join('; ')}`))
    list.reload()
  }

  const columns = useMemo<Column<Container>[]>(
    () => [
      {
        key: 'name',
        label: 'Name',
        sortValue: (c) => nameRank.get(c.id),
        primary: true,
        render: (c) => (
          <span class="ctr-name" data-ctr-running={c.state === 'running' ? c.id : undefined}>
            <ContainerIcon name={c.name} known={c.hasIcon} />
            <span class="ctr-name-text">
              <a href={containerPath(ctx.base, c)} class="cell-strong">
                {c.name}
              </a>
              {c.stackProject && <span class="detail ctr-sub">stack {c.stackProject}</span>}
              <span class="detail ctr-sub ctr-narrow-only">
                <ImageName image={c.image} />
              </span>
            </span>
          </span>
        ),
      },
      {
        key: 'image',
        label: 'Image',
        sortValue: (c) => imageRank.get(c.id),
        secondary: true,
        render: (c) => (
          <span class="ctr-image">
            <ImageName image={c.image} />
            {c.updateAvailable && <Badge tone="warning">Update available</Badge>}
          </span>
        ),
      },
      {
        key: 'state',
        label: 'State',
        sortable: true,
        render: (c) => <StateBadges state={c.state} health={c.health} />,
      },
      { key: 'usage', label: 'CPU, memory', render: (c) => <UsageCell c={c} live={stats} /> },
      { key: 'ports', label: 'Ports', render: (c) => <PortLinks ports={c.ports} name={c.name} /> },
      {
        key: 'createdAt',
        label: 'Created',
        sortable: true,
        secondary: true,
        render: (c) => (
          <time class="ctr-nowrap" dateTime={c.createdAt} title={c.createdAt}>
            {formatRelative(c.createdAt)}
          </time>
        ),
      },
      ...(operator
        ? [
            {
              key: 'actions',
              label: 'Actions',
              align: 'end' as const,
              actions: true,
              render: (c: Container) => (
                <ContainerActions ctx={ctx} container={c} compact onChanged={list.reload} onRemoved={list.reload} />
              ),
            },
          ]
        : []),
    ],
    [operator, list.reload, nameRank, imageRank],
  )

  return (
    <Async resource={list} label="Loading containers…">
      {(data) =>
        !data.engine.available ? (
          <EngineUnavailable engine={data.engine} onRetry={list.reload} />
        ) : (
          <div class="stack">
            <div class="toolbar">
              <span class="toolbar-status" aria-live="polite">
                {summary(data)}
              </span>
              <div class="page-actions">
                {operator && data.items.some((c) => c.updateAvailable) && (
                  <Button icon="download" onClick={() => ctx.navigate(`${ctx.base}/updates`)}>
                    Update ({data.items.filter((c) => c.updateAvailable).length})
                  </Button>
                )}
                <Button icon="refresh" onClick={list.reload}>
                  Refresh
                </Button>
              </div>
            </div>
            {/* biome-ignore lint/a11y/useSemanticElements: <search> is not in Preact's element types yet; the role is the same */}
            <div class="ctr-filters" role="search" aria-label="Filter containers">
              <div class="field ctr-filter">
                <label for="ctr-search">Search</label>
                <input
                  id="ctr-search"
                  type="search"
                  class="input"
                  placeholder="Name or image"
                  value={search}
                  onInput={(e) => typed(e.currentTarget.value)}
                />
              </div>
              <div class="field ctr-filter">
                <label for="ctr-state">State</label>
                <select
                  id="ctr-state"
                  class="input select"
                  value={filter}
                  onChange={(e) => chooseState(e.currentTarget.value as StateFilter)}
                >
                  {STATE_FILTERS.map((f) => (
                    <option key={f.value} value={f.value}>
                      {f.label}
                    </option>
                  ))}
                </select>
              </div>
              {(query || filter !== 'all') && (
                <span class="detail" role="status">
                  {`${rows.length} of ${items.length} shown`}
                </span>
              )}
            </div>
            {operator && selected.size > 0 && (
              // biome-ignore lint/a11y/useSemanticElements: a toolbar of buttons, not form fields (a fieldset's frame)
              <div class="ctr-bulk" role="group" aria-label="Selected containers">
                <span class="ctr-bulk-count">{`${selected.size} selected`}</span>
                <Button
                  icon="play"
                  busy={bulkBusy === 'start'}
                  disabled={bulkBusy !== null}
                  onClick={() => void bulk('start')}
                >
                  Start
                </Button>
                <Button
                  icon="square"
                  busy={bulkBusy === 'stop'}
                  disabled={bulkBusy !== null}
                  onClick={() => void bulk('stop')}
                >
                  Stop
                </Button>
                <Button
                  icon="rotate-ccw"
                  busy={bulkBusy === 'restart'}
                  disabled={bulkBusy !== null}
                  onClick={() => void bulk('restart')}
                >
                  Restart
                </Button>
                <Button icon="trash" variant="danger" disabled={bulkBusy !== null} onClick={() => setRemoving(chosen)}>
                  Remove
                </Button>
                <Button variant="ghost" disabled={bulkBusy !== null} onClick={() => setSelected(new Set())}>
                  Clear selection
                </Button>
              </div>
            )}
            <div ref={tableRef} class="ctr-table">
              <DataTable
                caption="Containers"
                hideCaption
                rows={rows}
                rowKey={(c) => c.id}
                rowLabel={(c) => c.name}
                pageSize={PAGE_SIZE}
                selection={
                  operator ? { selected, onChange: (next) => setSelected(new Set([...next].map(String))) } : undefined
                }
                initialSort={{ key: 'name', direction: 'ascending' }}
                empty={
                  items.length > 0 ? (
                    <Empty icon="search" title="No container matches">
                      <Button
                        onClick={() => {
                          clearTimeout(searchTimer.current)
                          setSearch('')
                          setAddress('', 'all')
                        }}
                      >
                        Show all containers
                      </Button>
                    </Empty>
                  ) : (
                    <Empty
                      icon="container"
                      title="No containers yet"
                      action={
                        operator && (
                          <Button variant="primary" icon="plus" onClick={() => ctx.navigate(`${ctx.base}/run`)}>
                            Run a container
                          </Button>
                        )
                      }
                    >
                      {operator
                        ? 'Run one from an image: it is pulled when this host does not have it.'
                        : 'An operator or admin can run containers here.'}
                    </Empty>
                  )
                }
                columns={columns}
              />
            </div>
            {removing && (
              <RemoveDialog
                ctx={ctx}
                containers={removing}
                onClose={() => setRemoving(null)}
                onRemoved={(ids) => {
                  setRemoving(null)
                  setSelected((s) => new Set([...s].filter((id) => !ids.includes(id))))
                  list.reload()
                }}
              />
            )}
          </div>
        )
      }
    </Async>
  )
}
