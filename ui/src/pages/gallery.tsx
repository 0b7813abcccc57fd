/**
 * The kit gallery (/gallery, any signed-in user, not in the navigation): every component of @hostd/ui in its
 * states, drawn by the kit itself, so a page's author sees what exists and how it looks in both themes before
 * writing their own (Home Assistant keeps such a gallery of its components). test/ui/gallery.browser.test.ts opens
 * it, checks it by role and name and with axe, and takes its screenshots. Nothing here calls the API.
 */
import { useMemo, useState } from 'preact/hooks'
import { ApiError } from '../kit/api.ts'
import { Button, IconButton } from '../kit/button.tsx'
import { TimeChart, TimeSeries } from '../kit/chart.tsx'
import { CopyButton } from '../kit/copy.tsx'
import { confirm, Dialog } from '../kit/dialog.tsx'
import {
  Async,
  Badge,
  Callout,
  Empty,
  ErrorState,
  Loading,
  ProgressBar,
  StaleNotice,
  type Tone,
} from '../kit/feedback.tsx'
import { Checkbox, FieldErrors, Form, Select, TextArea, TextField } from '../kit/form.tsx'
import {
  formatBytes,
  formatDateTime,
  formatDuration,
  formatPercent,
  formatRate,
  formatRelative,
} from '../kit/format.ts'
import { Icon, iconNames } from '../kit/icons.tsx'
import { Card, KeyValues, PageHeader, Tabs } from '../kit/layout.tsx'
import { Countdown, FileDrop, ProgressList } from '../kit/live.tsx'
import { PrivilegesMissing } from '../kit/privileges.tsx'
import { type Resource, useResource } from '../kit/resource.ts'
import { DataTable } from '../kit/table.tsx'
import { toast } from '../kit/toast.tsx'

const TONES: Tone[] = ['neutral', 'accent', 'success', 'warning', 'danger']
const MINUTE = 60_000

/** A resource in a fixed state, for showing what `Async` draws in each. */
function stateOf<T>(state: Partial<Resource<T>>): Resource<T> {
  return {
    data: undefined,
    error: undefined,
    loading: false,
    stale: false,
    loadedAt: undefined,
    reload: () => toast.info('Loading again'),
    ...state,
  }
}

function Buttons() {
  const [busy, setBusy] = useState(false)
  return (
    <Card title="Buttons">
      <div class="gallery-row">
        <Button variant="primary" icon="plus">
          Primary
        </Button>
        <Button>Secondary</Button>
        <Button variant="danger" icon="trash">
          Danger
        </Button>
        <Button variant="ghost">Ghost</Button>
        <Button size="sm">Small</Button>
        <Button disabled>Disabled</Button>
        <Button
          busy={busy}
          icon="refresh"
          onClick={() => {
            setBusy(true)
            setTimeout(() => setBusy(false), 1500)
          }}
        >
          Busy for a moment
        </Button>
        <IconButton icon="settings" label="Settings (an icon button)" />
        <CopyButton text="hostd" label="Copy a word" />
      </div>
      <p class="muted">
        <code>Button</code>: <code>variant</code>, <code>size</code>, <code>icon</code>, <code>busy</code>;{' '}
        <code>IconButton</code> needs a <code>label</code>, its accessible name and tooltip.
      </p>
    </Card>
  )
}

function Badges() {
  return (
    <Card title="Badges">
      <div class="gallery-row">
        {TONES.map((tone) => (
          <Badge key={tone} tone={tone}>
            {tone}
          </Badge>
        ))}
      </div>
    </Card>
  )
}

/** A resource whose next refresh can be made to fail: the stale notice over the last good data. */
function LiveResource() {
  const [failNext, setFailNext] = useState(false)
  const resource = useResource(async () => {
    if (failNext) throw new ApiError(0, 'HOSTD_NETWORK', 'The server could not be reached')
    return new Date()
  }, [failNext])
  return (
    <div class="stack">
      <div class="gallery-row">
        <Button icon="refresh" onClick={resource.reload} busy={resource.loading}>
          Refresh
        </Button>
        <Checkbox
          name="fail-next"
          switch
          label="Make the refresh fail"
          checked={failNext}
          onChange={(e) => setFailNext(e.currentTarget.checked)}
        />
      </div>
      <Async resource={resource} label="Loading the time…">
        {(time) => <p>Loaded at {time.toLocaleTimeString()}</p>}
      </Async>
    </div>
  )
}

function Feedback() {
  const loadedAt = useMemo(() => Date.now() - 3 * MINUTE, [])
  const failure = new ApiError(503, 'HOSTD_CONTAINERS_ENGINE_UNAVAILABLE', 'No container engine is reachable')
  const translated = new ApiError(
    409,
    'HOSTD_CONTAINER_PORT_IN_USE',
    'Port 8082 is used by web-8082: stop it or pick another port.',
    'driver failed programming external connectivity on endpoint portclash (c36d0f3a9b1e): Bind for 0.0.0.0:8082 failed: port is already allocated',
  )
  return (
    <Card title="Loading, empty and error states">
      <div class="gallery-grid">
        <section class="gallery-cell" aria-label="Loading state">
          <h3>Loading</h3>
          <Loading label="Loading containers…" />
        </section>
        <section class="gallery-cell" aria-label="Empty state">
          <h3>Empty</h3>
          <Empty icon="container" title="No containers yet" action={<Button variant="primary">Run one</Button>}>
            Containers you run appear here.
          </Empty>
        </section>
        <section class="gallery-cell" aria-label="Error state">
          <h3>Error</h3>
          <ErrorState error={failure} onRetry={() => toast.info('Trying again')} />
        </section>
        <section class="gallery-cell" aria-label="Translated error">
          <h3>Translated error</h3>
          <ErrorState title="The container could not start" error={translated} />
        </section>
        <section class="gallery-cell" aria-label="Stale data">
          <h3>Stale data</h3>
          <Async resource={stateOf({ data: ['a'], error: failure, stale: true, loadedAt })}>
            {() => <p>The list as it was three minutes ago.</p>}
          </Async>
        </section>
      </div>
      <h3>A resource that refreshes</h3>
      <p class="muted">
        <code>useResource(load, deps, {'{ every }'})</code> loads again while the tab is visible; <code>Async</code>{' '}
        draws each state, and over data a refresh could not replace, the notice above.
      </p>
      <LiveResource />
      <h3>Progress</h3>
      <div class="stack">
        <ProgressBar label="Copying files" value={42} detail="42 of 100 files" />
        <ProgressBar label="Waiting for the engine" />
        <ProgressBar label="Disk space used" value={93} tone="danger" />
        <ProgressList
          label="Image layers"
          items={[
            { id: '1', label: 'Layer 1', status: 'Pull complete', state: 'done' },
            { id: '2', label: 'Layer 2', status: 'Downloading', current: 30, total: 80, state: 'running' },
            { id: '3', label: 'Layer 3', status: 'Failed', state: 'failed' },
          ]}
        />
      </div>
      <h3>Notices</h3>
      <div class="stack">
        <StaleNotice resource={stateOf({ error: failure, loadedAt })} />
        <PrivilegesMissing affected="mounting shares" onRetry={() => toast.info('Checking again')} />
        <Callout
          title="Screen sharing is off"
          action={
            <Button variant="secondary" icon="refresh" onClick={() => toast.info('Checking again')}>
              Check again
            </Button>
          }
        >
          No VNC server answers on 127.0.0.1:5900.
        </Callout>
        <Callout tone="neutral" title="Disconnected">
          Connect again to see the screen.
        </Callout>
      </div>
    </Card>
  )
}

function Forms() {
  return (
    <Card title="Forms">
      <Form
        label="Example form"
        submitLabel="Create"
        onSubmit={(values) => {
          if (values.name === 'taken') throw new FieldErrors({ name: 'This name is taken' })
          toast.success(`Created ${String(values.name)}`)
        }}
      >
        <TextField name="name" label="Name" required hint="Type “taken” to see a field error from the server." />
        <Select
          name="role"
          label="Role"
          options={[
            { value: 'viewer', label: 'Viewer' },
            { value: 'operator', label: 'Operator' },
            { value: 'admin', label: 'Admin' },
          ]}
        />
        <TextArea name="notes" label="Notes" rows={3} />
        <Checkbox name="notify" label="Tell the user by mail" />
        <Checkbox name="enabled" switch label="Enabled" defaultChecked />
      </Form>
    </Card>
  )
}

interface Row {
  name: string
  state: string
  size: number
}

const ROWS: Row[] = [
  { name: 'web', state: 'running', size: 52_000_000 },
  { name: 'database', state: 'running', size: 410_000_000 },
  { name: 'backup', state: 'exited', size: 8_200_000 },
]

function Tables() {
  return (
    <Card title="Tables">
      <DataTable
        caption="Example containers"
        rows={ROWS}
        rowKey={(r) => r.name}
        initialSort={{ key: 'name', direction: 'ascending' }}
        columns={[
          { key: 'name', label: 'Name', sortable: true },
          {
            key: 'state',
            label: 'State',
            render: (r) => <Badge tone={r.state === 'running' ? 'success' : 'neutral'}>{r.state}</Badge>,
          },
          { key: 'size', label: 'Size', align: 'end', sortable: true, render: (r) => formatBytes(r.size) },
        ]}
      />
      <DataTable
        caption="An empty table"
        rows={[] as Row[]}
        rowKey={(r) => r.name}
        columns={[{ key: 'name', label: 'Name' }]}
        empty={<Empty icon="search" title="Nothing matches the filter" />}
      />
      <PagedTable />
    </Card>
  )
}

const MANY: Row[] = Array.from({ length: 23 }, (_, i) => ({
  name: `service-${String(i + 1).padStart(2, '0')}`,
  state: i % 4 === 0 ? 'exited' : 'running',
  size: (i + 1) * 7_300_000,
}))

/** `pageSize` (a pager), `selection` with `rowLabel`, a `primary` column and row actions: on a phone, cards. */
function PagedTable() {
  const [selected, setSelected] = useState<ReadonlySet<string | number>>(new Set())
  return (
    <div class="stack">
      <p class="muted">
        {selected.size === 0 ? 'Nothing selected.' : `${selected.size} selected.`} Under 640 px wide each row is a card.
      </p>
      <DataTable
        caption="Example services"
        rows={MANY}
        rowKey={(r) => r.name}
        rowLabel={(r) => r.name}
        pageSize={10}
        selection={{ selected, onChange: setSelected }}
        columns={[
          { key: 'name', label: 'Name', sortable: true, primary: true },
          {
            key: 'state',
            label: 'State',
            render: (r) => <Badge tone={r.state === 'running' ? 'success' : 'neutral'}>{r.state}</Badge>,
          },
          { key: 'size', label: 'Size', align: 'end', sortable: true, render: (r) => formatBytes(r.size) },
          {
            key: 'actions',
            label: 'Actions',
            align: 'end',
            render: (r) => (
              <div class="row-actions">
                <IconButton
                  icon="refresh"
                  label={`Restart ${r.name}`}
                  size="sm"
                  onClick={() => toast.info(`${r.name}`)}
                />
                <IconButton icon="trash" label={`Remove ${r.name}`} size="sm" onClick={() => toast.info(`${r.name}`)} />
              </div>
            ),
          },
        ]}
      />
    </div>
  )
}

function Dialogs() {
  const [open, setOpen] = useState(false)
  const ask = async (typed?: string) => {
    const ok = await confirm({
      title: typed ? 'Power off the host?' : 'Remove the example?',
      message: 'Nothing happens here: this is the gallery.',
      confirmLabel: typed ? 'Power off' : 'Remove',
      danger: true,
      typed,
    })
    toast.info(ok ? 'Confirmed' : 'Cancelled')
  }
  return (
    <Card title="Dialogs and toasts">
      <div class="gallery-row">
        <Button onClick={() => setOpen(true)}>Open a dialog</Button>
        <Button onClick={() => void ask()}>Ask to confirm</Button>
        <Button onClick={() => void ask('poweroff')}>Ask to type a word</Button>
        <Button icon="circle-check" onClick={() => toast.success('Saved')}>
          Success toast
        </Button>
        <Button icon="info" onClick={() => toast.info('The check runs in the background')}>
          Info toast
        </Button>
        <Button icon="circle-alert" onClick={() => toast.error(new Error('The server refused the change'))}>
          Error toast
        </Button>
        <Button
          icon="circle-alert"
          onClick={() =>
            toast.error(
              new ApiError(
                409,
                'HOSTD_CONTAINER_PORT_IN_USE',
                'Port 8082 is used by web-8082: stop it or pick another port, then start portclash again.',
                `driver failed programming external connectivity on endpoint portclash (${'c36d0f3a9b1e'.repeat(6)}): ` +
                  'Bind for 0.0.0.0:8082 failed: port is already allocated',
              ),
            )
          }
        >
          Long error toast
        </Button>
      </div>
      <Dialog
        open={open}
        title="An example dialog"
        onClose={() => setOpen(false)}
        actions={
          <>
            <Button onClick={() => setOpen(false)}>Cancel</Button>
            <Button variant="primary" onClick={() => setOpen(false)}>
              Done
            </Button>
          </>
        }
      >
        <p>The rest of the page is inert while it is open; Escape closes it and focus goes back to the button.</p>
      </Dialog>
    </Card>
  )
}

function Layout() {
  const [tab, setTab] = useState('facts')
  return (
    <Card title="Layout" actions={<Button size="sm">A card action</Button>}>
      <Tabs
        label="Example tabs"
        tabs={[
          { id: 'facts', label: 'Facts' },
          { id: 'formats', label: 'Formats' },
        ]}
        selected={tab}
        onSelect={setTab}
      >
        {tab === 'facts' ? (
          <KeyValues
            items={[
              ['Kernel', '6.12.0'],
              ['Uptime', formatDuration(273_600)],
              ['State', <Badge tone="success">healthy</Badge>],
            ]}
          />
        ) : (
          <KeyValues
            items={[
              ['formatBytes', formatBytes(1_536_000)],
              ['formatRate', formatRate(2_400_000)],
              ['formatPercent', formatPercent(42.3, 1)],
              ['formatDuration', formatDuration(5400)],
              ['formatDateTime', formatDateTime(Date.UTC(2025, 0, 2, 3, 4, 5))],
              ['formatRelative', formatRelative(Date.now() - 5 * MINUTE)],
            ]}
          />
        )}
      </Tabs>
    </Card>
  )
}

function Charts() {
  const data = useMemo(() => {
    const series = new TimeSeries(120, 2)
    const now = Math.floor(Date.now() / 1000)
    for (let i = 119; i >= 0; i--) {
      const t = now - i * 30
      series.push(t, [40 + 25 * Math.sin(i / 9), 10 + 5 * Math.cos(i / 5)])
    }
    return series
  }, [])
  return (
    <Card title="Charts">
      <TimeChart
        label="Example CPU usage"
        series={[
          { label: 'used', color: 1 },
          { label: 'iowait', color: 3 },
        ]}
        data={data}
        format={(v) => `${v.toFixed(0)} %`}
        range={[0, 100]}
      />
    </Card>
  )
}

function Live() {
  const until = useMemo(() => Date.now() + 5 * MINUTE, [])
  return (
    <Card title="Live work">
      <div class="stack">
        <Countdown until={until} label="Settings revert" />
        <FileDrop label="Files to upload" onFiles={(files) => toast.info(`${files.length} file(s) picked`)} />
        <p class="muted">
          <code>LogView</code> follows a socket: see a container&rsquo;s page.
        </p>
      </div>
    </Card>
  )
}

function Icons() {
  return (
    <Card title="Icons">
      <ul class="gallery-icons" aria-label="Icon names">
        {iconNames.map((name) => (
          <li key={name}>
            <Icon name={name} />
            <span class="mono">{name}</span>
          </li>
        ))}
      </ul>
    </Card>
  )
}

export default function GalleryPage() {
  return (
    <>
      <PageHeader
        title="Kit gallery"
        description={
          <>
            The components of <code>@hostd/ui</code> in their states, for writing pages (see docs/ARCHITECTURE.md,
            &ldquo;The web UI&rdquo;).
          </>
        }
      />
      <div class="gallery stack">
        <Buttons />
        <Badges />
        <Feedback />
        <Forms />
        <Tables />
        <Dialogs />
        <Layout />
        <Charts />
        <Live />
        <Icons />
      </div>
    </>
  )
}
