/**
 * The packages page (/packages): the installed Debian packages (filter, sort, upgrades marked with their candidate
 * version), the upgradable ones (/packages/upgrades), and a search of what apt offers (/packages/search?q=). Admins
 * install, upgrade, remove, purge and refresh the lists through the /api/packages/exec socket, with the job's live
 * progress and output in a panel above the lists; the lists are read again when the job ends. One job at a time:
 * while someone else's runs, the page says whose and waits for it.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Callout,
  Checkbox,
  DataTable,
  Dialog,
  Empty,
  Loading,
  ErrorState,
  Tabs,
  TextField,
  PageHeader,
  defineElement,
  formatBytes,
  formatRelative,
  useResource,
  type Column,
  type PageContext,
} from '@hostd/ui'
import type { ExecRequest, InstalledPackageItem, Job, Removal, SearchItem } from '../src/schemas.ts'
import { FIT, JobPanel, createJobStore, describeJob, type JobStore } from './parts/job.tsx'

interface PackageList {
  items: InstalledPackageItem[]
  total: number
  upgradableCount: number
  upgradesCheckedAt: string | null
  job: Job | null
}

interface SearchResult {
  query: string
  total: number
  truncated: boolean
  items: SearchItem[]
}

type View = 'installed' | 'upgrades' | 'search'

const SEARCH_DELAY_MS = 300
const BUSY_POLL_MS = 3000
/**
 * Rows per page of the installed list: a machine has about 800 packages, and rendering them all made the page 57,000 px
 * tall and slow to become usable. A phone shows fewer (each row is a card there).
 */
const PAGE_SIZE = 100
const PHONE_PAGE_SIZE = 25
const pageSize = () =>
  typeof matchMedia === 'function' && matchMedia('(max-width: 640px)').matches ? PHONE_PAGE_SIZE : PAGE_SIZE

/** What the row actions need: start a job, or ask before removing. */
interface Actions {
  admin: boolean
  busy: boolean
  run: (request: ExecRequest) => void
  askRemove: (name: string) => void
}

function packageCell(name: string, summary: string) {
  return (
    <>
      <span class="cell-strong">{name}</span>
      <div class="detail">{summary}</div>
    </>
  )
}

function rowActions(a: Actions, p: { name: string; installed: boolean; upgradable: boolean; essential?: boolean }) {
  if (!a.admin) return null
  return (
    <div class="row-actions">
      {!p.installed && (
        <Button
          size="sm"
          icon="download"
          disabled={a.busy}
          aria-label={`Install ${p.name}`}
          onClick={() => a.run({ action: 'install', packages: [p.name] })}
        >
          Install
        </Button>
      )}
      {p.upgradable && (
        <Button
          size="sm"
          icon="arrow-up"
          disabled={a.busy}
          aria-label={`Upgrade ${p.name}`}
          onClick={() => a.run({ action: 'upgrade', packages: [p.name] })}
        >
          Upgrade
        </Button>
      )}
      {p.installed && !p.essential && (
        <Button
          size="sm"
          variant="ghost"
          icon="trash"
          disabled={a.busy}
          aria-label={`Remove ${p.name}`}
          onClick={() => a.askRemove(p.name)}
        >
          Remove
        </Button>
      )}
    </div>
  )
}

interface InstalledTableProps {
  items: InstalledPackageItem[]
  filter: string
  actions: Actions
  upgradesOnly: boolean
  onFind: () => void
}

function InstalledTable({ items, filter, actions, upgradesOnly, onFind }: InstalledTableProps) {
  const needle = filter.trim().toLowerCase()
  const rows = useMemo(
    () =>
      items.filter(
        (p) =>
          (!upgradesOnly || p.upgradable) &&
          (!needle || p.name.includes(needle) || p.summary.toLowerCase().includes(needle)),
      ),
    [items, needle, upgradesOnly],
  )
  const columns: Column<InstalledPackageItem>[] = [
    { key: 'name', label: 'Package', sortable: true, primary: true, render: (p) => packageCell(p.name, p.summary) },
    {
      key: 'version',
      label: 'Version',
      sortable: true,
      render: (p) => (
        <>
          <span class="mono">{p.version}</span>
          {p.upgradable && (
            <div>
              <Badge tone="warning">Upgrade to {p.candidateVersion}</Badge>
            </div>
          )}
          {p.state !== 'installed' && (
            <div>
              <Badge tone="danger">{p.state}</Badge>
            </div>
          )}
        </>
      ),
    },
    { key: 'architecture', label: 'Arch', sortable: true, secondary: true },
    {
      key: 'installedSizeInBytes',
      label: 'Size',
      sortable: true,
      align: 'end',
      secondary: true,
      render: (p) => <span style={{ whiteSpace: 'nowrap' }}>{formatBytes(p.installedSizeInBytes)}</span>,
    },
  ]
  if (actions.admin)
    columns.push({
      key: 'actions',
      label: 'Actions',
      align: 'end',
      render: (p) =>
        rowActions(actions, { name: p.name, installed: true, upgradable: p.upgradable, essential: p.essential }),
    })
  return (
    <DataTable
      caption={upgradesOnly ? 'Upgradable packages' : 'Installed packages'}
      hideCaption
      rows={rows}
      rowKey={(p) => `${p.name}:${p.architecture}`}
      initialSort={{ key: 'name', direction: 'ascending' }}
      columns={columns}
      pageSize={pageSize()}
      empty={
        needle ? (
          <Empty
            icon="search"
            title={`No ${upgradesOnly ? 'upgradable' : 'installed'} package matches “${filter.trim()}”`}
          />
        ) : upgradesOnly ? (
          <Empty icon="circle-check" title="Everything is up to date">
            Refresh the package lists to look for new versions.
          </Empty>
        ) : (
          <Empty
            icon="package"
            title="No packages installed"
            action={
              <Button icon="search" onClick={onFind}>
                Find packages
              </Button>
            }
          >
            dpkg's database is empty.
          </Empty>
        )
      }
    />
  )
}

function SearchView({
  ctx,
  query,
  actions,
  generation,
}: {
  ctx: PageContext
  query: string
  actions: Actions
  generation: number
}) {
  const [text, setText] = useState(query)
  const results = useResource(
    (signal) =>
      query
        ? ctx.api.get<SearchResult>(`/api/packages/search?q=${encodeURIComponent(query)}`, { signal })
        : Promise.resolve(null),
    [query, generation],
  )
  // While the next search loads, the previous results stay on screen.
  const found = results.data ?? null
  // Typing searches after a short pause; the query lives in the URL (/packages/search?q=), so reload and back keep it.
  useEffect(() => {
    const wanted = text.trim()
    if (wanted === query) return
    const timer = setTimeout(
      () => ctx.navigate(`${ctx.base}/search${wanted ? `?q=${encodeURIComponent(wanted)}` : ''}`, { replace: true }),
      SEARCH_DELAY_MS,
    )
    return () => clearTimeout(timer)
  }, [text, query])

  const columns: Column<SearchItem>[] = [
    { key: 'name', label: 'Package', primary: true, render: (p) => packageCell(p.name, p.summary) },
    { key: 'version', label: 'Version', render: (p) => <span class="mono">{p.version}</span> },
    {
      key: 'installed',
      label: 'Status',
      render: (p) =>
        !p.installed ? (
          <span class="muted">Not installed</span>
        ) : p.upgradable ? (
          <Badge tone="warning">{p.installedVersion} installed, upgradable</Badge>
        ) : (
          <Badge tone="success">Installed</Badge>
        ),
    },
    { key: 'architecture', label: 'Arch', secondary: true },
  ]
  if (actions.admin)
    columns.push({ key: 'actions', label: 'Actions', align: 'end', render: (p) => rowActions(actions, p) })
  return (
    <div class="stack" style={FIT}>
      <search style={{ maxWidth: '36rem' }}>
        <form onSubmit={(e) => e.preventDefault()}>
          <TextField
            name="q"
            type="search"
            label="Search packages"
            value={text}
            maxLength={100}
            autoComplete="off"
            spellcheck={false}
            hint="Part of a name or of a description, as plain text."
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </form>
      </search>
      {!query ? (
        <Empty icon="search" title="Find a package">
          Type part of its name or of its description. What apt offers is searched, installed or not.
        </Empty>
      ) : results.error !== undefined && !results.loading ? (
        <ErrorState error={results.error} onRetry={results.reload} />
      ) : !found ? (
        <Loading label="Searching… (the first search reads apt's whole catalog: a few seconds)" />
      ) : (
        <>
          <p class="toolbar-status" aria-live="polite">
            {results.loading
              ? 'Searching…'
              : found.total === 0
                ? 'No matches'
                : found.truncated
                  ? `The first ${found.items.length} of ${found.total} matches: type more to narrow it down`
                  : `${found.total} ${found.total === 1 ? 'match' : 'matches'}`}
          </p>
          <DataTable
            caption={`Packages matching “${query}”`}
            hideCaption
            rows={found.items}
            rowKey={(p) => `${p.name}:${p.architecture}`}
            columns={columns}
            empty={
              <Empty icon="search" title={`Nothing matches “${query}”`}>
                Try another word, or refresh the package lists.
              </Empty>
            }
          />
        </>
      )}
    </div>
  )
}

/** What apt would remove with the package (its simulation, GET /api/packages/removal), asked when the dialog opens. */
function RemovalPlan({
  ctx,
  name,
  purge,
  onPurge,
  onPlan,
}: {
  ctx: PageContext
  name: string
  purge: boolean
  onPurge: (purge: boolean) => void
  onPlan: (ok: boolean) => void
}) {
  const plan = useResource(
    (signal) => ctx.api.get<Removal>(`/api/packages/removal?name=${encodeURIComponent(name)}`, { signal }),
    [name],
  )
  useEffect(() => onPlan(plan.data !== undefined && plan.error === undefined), [plan.data, plan.error])
  if (plan.error !== undefined && !plan.loading)
    return <ErrorState error={plan.error} title={`${name} cannot be removed here`} />
  if (!plan.data) return <Loading label="Asking apt what goes with it…" />
  const others = plan.data.removes.filter((p) => p.name !== name)
  return (
    <div class="stack">
      <Callout
        tone="danger"
        title={
          others.length === 0
            ? `apt removes ${name} only.`
            : `apt also removes ${others.length} ${others.length === 1 ? 'package' : 'packages'} that ${others.length === 1 ? 'depends' : 'depend'} on it.`
        }
      >
        What they do stops working.
      </Callout>
      <ul
        class="removal-list"
        aria-label="Packages apt removes"
        style={{ maxHeight: '14rem', overflowY: 'auto', margin: 0, paddingInlineStart: '1.25rem' }}
      >
        {plan.data.removes.map((p) => (
          <li key={`${p.name}:${p.architecture}`}>
            <span class="cell-strong">{p.name}</span> <span class="mono muted">{p.version}</span>
            {p.summary && <div class="detail">{p.summary}</div>}
          </li>
        ))}
      </ul>
      <Checkbox
        name="purge"
        label="Also delete their configuration files (purge)"
        checked={purge}
        onChange={(e) => onPurge(e.currentTarget.checked)}
      />
    </div>
  )
}

/**
 * Asks before removing, listing what apt removes with it (a simulation) in red; remove keeps the packages'
 * configuration files, purge deletes them too. A package the system needs is refused by the server (409), said here.
 */
function RemoveDialog({
  ctx,
  name,
  onClose,
  onRemove,
}: {
  ctx: PageContext
  name: string | null
  onClose: () => void
  onRemove: (purge: boolean) => void
}) {
  const [purge, setPurge] = useState(false)
  const [ready, setReady] = useState(false)
  useEffect(() => {
    setPurge(false)
    setReady(false)
  }, [name])
  return (
    <Dialog
      open={name !== null}
      title={`Remove ${name ?? ''}?`}
      size="sm"
      onClose={onClose}
      actions={
        <>
          <Button onClick={onClose}>Cancel</Button>
          {ready && (
            <Button variant="danger" icon="trash" onClick={() => onRemove(purge)}>
              {purge ? 'Remove and purge' : 'Remove'}
            </Button>
          )}
        </>
      }
    >
      {name !== null && (
        <RemovalPlan key={name} ctx={ctx} name={name} purge={purge} onPurge={setPurge} onPlan={setReady} />
      )}
    </Dialog>
  )
}

function PackagesPage({ ctx }: { ctx: PageContext }) {
  const store = useMemo<JobStore>(() => createJobStore(ctx), [])
  // Someone else's job: look again every few seconds until it ends (its output goes only to whoever started it).
  const list = useResource((signal) => ctx.api.get<PackageList>('/api/packages', { signal }), [], {
    every: (d) => (d?.job && d.job.id !== store.jobId.value ? BUSY_POLL_MS : undefined),
  })
  const [searchGeneration, setSearchGeneration] = useState(0)
  const [removing, setRemoving] = useState<string | null>(null)
  const admin = ctx.can('admin')

  const { path, search } = ctx.location.value
  const sub = path.slice(ctx.base.length).replace(/^\/+|\/+$/g, '')
  const view: View = sub === 'upgrades' || sub === 'search' ? sub : 'installed'
  const params = new URLSearchParams(search)
  const filter = params.get('filter') ?? ''
  const query = view === 'search' ? (params.get('q') ?? '').trim() : ''
  // The search tab comes back to the last search; the other tabs keep the filter.
  const lastQuery = useRef('')
  if (view === 'search') lastQuery.current = query

  const data = list.data
  const foreignJob = data?.job && data.job.id !== store.jobId.value ? data.job : null
  const busy = store.running.value || foreignJob !== null

  const run = (request: ExecRequest) =>
    store.start(request, () => {
      list.reload()
      setSearchGeneration((g) => g + 1)
    })
  const actions: Actions = { admin, busy, run, askRemove: setRemoving }

  const upgradeAll = async () => {
    const names = data!.items.filter((p) => p.upgradable).map((p) => p.name)
    const ok = await ctx.confirm({
      title: `Upgrade ${names.length} ${names.length === 1 ? 'package' : 'packages'}?`,
      message:
        `${names.slice(0, 12).join(', ')}${names.length > 12 ? ` and ${names.length - 12} more` : ''}. ` +
        'apt installs every upgrade that needs no new package and removes nothing.',
      confirmLabel: 'Upgrade all',
    })
    if (ok) run({ action: 'upgrade' })
  }

  const go = (to: View) => {
    const keep =
      to === 'search'
        ? lastQuery.current && `?q=${encodeURIComponent(lastQuery.current)}`
        : filter && `?filter=${encodeURIComponent(filter)}`
    ctx.navigate(`${ctx.base}${to === 'installed' ? '' : `/${to}`}${keep}`)
  }
  const setFilter = (value: string) =>
    ctx.navigate(
      `${ctx.base}${view === 'installed' ? '' : `/${view}`}${value ? `?filter=${encodeURIComponent(value)}` : ''}`,
      { replace: true },
    )

  return (
    <>
      <PageHeader
        title="Packages"
        description="The Debian packages on this host and what apt offers. Every install, upgrade and removal is written to the audit log."
        actions={
          admin && (
            <>
              <Button icon="refresh" disabled={busy} onClick={() => run({ action: 'refresh' })}>
                Refresh package lists
              </Button>
              {data && data.upgradableCount > 0 && (
                <Button variant="primary" icon="arrow-up" disabled={busy} onClick={() => void upgradeAll()}>
                  Upgrade all ({data.upgradableCount})
                </Button>
              )}
            </>
          )
        }
      />
      <div class="stack" style={FIT}>
        {foreignJob && (
          <p class="notice" role="status">
            Another package job is running: {describeJob(foreignJob)}. New jobs can start when it ends; this page
            follows it.
          </p>
        )}
        <JobPanel store={store} />
        <Tabs
          label="Package views"
          tabs={[
            { id: 'installed', label: data ? `Installed (${data.total})` : 'Installed' },
            { id: 'upgrades', label: data ? `Upgrades (${data.upgradableCount})` : 'Upgrades' },
            { id: 'search', label: 'Find packages' },
          ]}
          selected={view}
          onSelect={(id) => go(id as View)}
        >
          {view === 'search' ? (
            <SearchView ctx={ctx} query={query} actions={actions} generation={searchGeneration} />
          ) : (
            <Async resource={list} label="Reading dpkg's database…">
              {(d) => (
                <div class="stack" style={FIT}>
                  <div class="toolbar" style={{ alignItems: 'flex-end' }}>
                    <div style={{ flex: '1 1 16rem', maxWidth: '24rem' }}>
                      <TextField
                        name="filter"
                        type="search"
                        label={view === 'upgrades' ? 'Filter upgradable packages' : 'Filter installed packages'}
                        value={filter}
                        autoComplete="off"
                        spellcheck={false}
                        onInput={(e) => setFilter(e.currentTarget.value)}
                      />
                    </div>
                    <p class="toolbar-status" style={{ paddingBottom: 'var(--space-2)' }}>
                      {d.total} installed ·{' '}
                      {d.upgradableCount > 0 ? (
                        <Badge tone="warning">
                          {d.upgradableCount} {d.upgradableCount === 1 ? 'upgrade' : 'upgrades'} available
                        </Badge>
                      ) : (
                        'no upgrades available'
                      )}
                      {' · '}
                      {d.upgradesCheckedAt ? `checked ${formatRelative(d.upgradesCheckedAt)}` : 'apt could not be read'}
                    </p>
                  </div>
                  <InstalledTable
                    items={d.items}
                    filter={filter}
                    actions={actions}
                    upgradesOnly={view === 'upgrades'}
                    onFind={() => go('search')}
                  />
                </div>
              )}
            </Async>
          )}
        </Tabs>
      </div>
      <RemoveDialog
        ctx={ctx}
        name={removing}
        onClose={() => setRemoving(null)}
        onRemove={(purge) => {
          const name = removing!
          setRemoving(null)
          run({ action: purge ? 'purge' : 'remove', packages: [name] })
        }}
      />
    </>
  )
}

defineElement('packages-page', ({ ctx }) => <PackagesPage ctx={ctx} />)
