/**
 * The fleet page: every member with up or down, CPU, memory, disk, firing alerts and updates waiting (`/fleet`), and
 * one member's page (`/fleet/<host>`) with a host switcher, its inventory and its containers read through
 * `/api/hosts/<host>/...`. Everything drawn here is this hostd's own code: another member sends data, never page
 * code (Cockpit's lesson, cockpit PR #20749). Admins make join codes here, or join a fleet with one.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import {
  Badge,
  Button,
  Card,
  CopyButton,
  DataTable,
  Dialog,
  Empty,
  ErrorState,
  Form,
  KeyValues,
  Loading,
  PageHeader,
  StaleNotice,
  TextArea,
  TextField,
  adoptStyles,
  defineElement,
  formatBytes,
  formatPercent,
  formatRelative,
  useResource,
  type PageContext,
} from '@hostd/ui'
import css from './fleet.css' with { type: 'text' }

interface Used {
  used: number
  total: number
}
interface Inventory {
  cpu: number | null
  memory: Used
  disk: Used | null
  alerts: number | null
  updates: number | null
}
interface Host {
  host: string
  self: boolean
  up: boolean
  lastSeen: string
  version: string
  inventory: Inventory | null
}
interface HostList {
  self: string | null
  hosts: Host[]
}
interface Status {
  joined: boolean
  embedded: boolean
  host: string | null
  servers: string[]
  members: number
}
interface Container {
  id: string
  name: string
  image: string
  state: string
}

const share = (u: Used | null | undefined) => (u && u.total > 0 ? u.used / u.total : null)
const pct = (v: number | null) => (v === null ? '–' : formatPercent(v * 100))
const count = (v: number | null | undefined) => (v === null || v === undefined ? '–' : String(v))

function FleetPage({ ctx }: { ctx: PageContext }) {
  const sub = ctx.location.value.path.slice(ctx.base.length).replace(/^\//, '')
  return sub ? <HostPage key={sub} ctx={ctx} host={decodeURIComponent(sub)} /> : <Overview ctx={ctx} />
}

function Overview({ ctx }: { ctx: PageContext }) {
  const [coding, setCoding] = useState(false)
  const status = useResource((signal) => ctx.api.get<Status>('/api/fleet', { signal }), [])
  const hosts = useResource((signal) => ctx.api.get<HostList>('/api/hosts', { signal }), [], { every: 5000 })
  const joined = status.data?.joined ?? false
  return (
    <div class="fleet">
      <PageHeader
        title="Fleet"
        description={
          joined ? `This host is ${status.data!.host}, one of ${hosts.data?.hosts.length ?? '…'} members.` : undefined
        }
        actions={
          joined && ctx.can('admin') ? (
            <Button icon="plus" onClick={() => setCoding(true)}>
              Make a join code
            </Button>
          ) : undefined
        }
      />
      {status.error && !status.data ? (
        <ErrorState error={status.error} onRetry={status.reload} />
      ) : !status.data ? (
        <Loading label="Loading the fleet…" />
      ) : !joined ? (
        <NotJoined
          ctx={ctx}
          onJoined={() => {
            status.reload()
            hosts.reload()
          }}
        />
      ) : hosts.error && !hosts.data ? (
        <ErrorState error={hosts.error} onRetry={hosts.reload} />
      ) : !hosts.data ? (
        <Loading label="Loading the members…" />
      ) : (
        <>
          {hosts.error && <StaleNotice resource={hosts} />}
          <HostTable ctx={ctx} hosts={hosts.data.hosts} />
        </>
      )}
      {coding && <JoinCodeDialog ctx={ctx} minted={status.data?.embedded ?? false} onClose={() => setCoding(false)} />}
    </div>
  )
}

function HostTable({ ctx, hosts }: { ctx: PageContext; hosts: Host[] }) {
  return (
    <DataTable
      caption="Members"
      rows={hosts}
      rowKey={(h) => h.host}
      rowLabel={(h) => h.host}
      empty={<Empty title="No member has written its presence yet" icon="server" />}
      columns={[
        {
          key: 'host',
          label: 'Host',
          primary: true,
          sortable: true,
          render: (h) => (
            <a
              href={`${ctx.base}/${encodeURIComponent(h.host)}`}
              onClick={(e) => {
                e.preventDefault()
                ctx.navigate(`${ctx.base}/${encodeURIComponent(h.host)}`)
              }}
            >
              {h.host}
              {h.self ? ' (this host)' : ''}
            </a>
          ),
        },
        {
          key: 'up',
          label: 'State',
          render: (h) =>
            h.up ? (
              <Badge tone="success">up</Badge>
            ) : (
              <Badge tone="danger">down since {formatRelative(h.lastSeen)}</Badge>
            ),
        },
        { key: 'cpu', label: 'CPU', align: 'end', render: (h) => pct(h.inventory?.cpu ?? null) },
        { key: 'memory', label: 'Memory', align: 'end', render: (h) => pct(share(h.inventory?.memory)) },
        { key: 'disk', label: 'Disk', align: 'end', render: (h) => pct(share(h.inventory?.disk)) },
        {
          key: 'alerts',
          label: 'Alerts firing',
          align: 'end',
          render: (h) =>
            h.inventory?.alerts ? <Badge tone="danger">{h.inventory.alerts}</Badge> : count(h.inventory?.alerts),
        },
        { key: 'updates', label: 'Updates waiting', align: 'end', render: (h) => count(h.inventory?.updates) },
        { key: 'version', label: 'Version', secondary: true },
      ]}
    />
  )
}

function NotJoined({ ctx, onJoined }: { ctx: PageContext; onJoined: () => void }) {
  return (
    <Empty title="This host is in no fleet" icon="server">
      <p>Set HOSTD_FLEET_NATS_URL, or join with a code an admin made on a member of the fleet.</p>
      {ctx.can('admin') && (
        <Form
          label="Join a fleet"
          submitLabel="Join"
          onSubmit={async (v) => {
            await ctx.api.post('/api/fleet/join', { code: String(v.code).trim() })
            ctx.toast.success('Joined the fleet')
            onJoined()
          }}
        >
          <TextArea name="code" label="Join code" required rows={3} />
        </Form>
      )}
    </Empty>
  )
}

/** On the host running the fleet's nats-server the new host's user is made with the code; elsewhere an admin gives it. */
function JoinCodeDialog({ ctx, minted, onClose }: { ctx: PageContext; minted: boolean; onClose: () => void }) {
  const [made, setMade] = useState<{ code: string; host: string; expiresAt: string } | null>(null)
  return (
    <Dialog open title="Make a join code" onClose={onClose}>
      {made ? (
        <div class="fleet-code">
          <p>
            Give this code to an admin of <strong>{made.host}</strong>: it is shown once, works once, until{' '}
            {new Date(made.expiresAt).toLocaleString()}. It carries NATS credentials: keep it secret.
          </p>
          <TextArea name="code" label="Join code" readOnly value={made.code} rows={4} />
          <CopyButton text={made.code} label="Copy the code" />
          <Button variant="secondary" onClick={onClose}>
            Done
          </Button>
        </div>
      ) : (
        <Form
          submitLabel="Make the code"
          actions={
            <Button variant="ghost" onClick={onClose}>
              Cancel
            </Button>
          }
          onSubmit={async (v) => {
            const credentials = minted ? {} : { user: String(v.user), password: String(v.password) }
            setMade(await ctx.api.post('/api/fleet/join-codes', { host: String(v.host), ...credentials }))
          }}
        >
          <TextField name="host" label="New host's name" required pattern="[a-z0-9]([a-z0-9\-]*[a-z0-9])?" />
          {!minted && <TextField name="user" label="Its NATS user" required />}
          {!minted && <TextField name="password" label="Its NATS password" type="password" required />}
        </Form>
      )}
    </Dialog>
  )
}

function HostPage({ ctx, host }: { ctx: PageContext; host: string }) {
  const hosts = useResource((signal) => ctx.api.get<HostList>('/api/hosts', { signal }), [], { every: 5000 })
  const containers = useResource(
    (signal) =>
      ctx.api.get<{ items: Container[] }>(`/api/hosts/${encodeURIComponent(host)}/api/containers`, { signal }),
    [host],
  )
  const [logsOf, setLogsOf] = useState<Container | null>(null)
  const me = hosts.data?.hosts.find((h) => h.host === host)
  const go = (to: string) => ctx.navigate(to ? `${ctx.base}/${encodeURIComponent(to)}` : ctx.base)
  return (
    <div class="fleet">
      <PageHeader
        title={host}
        breadcrumbs={[{ label: 'Fleet', href: ctx.base }]}
        actions={
          <>
            {ctx.can('admin') && (
              // This hostd's own terminal page, its socket carried to the member (/api/hosts/{host}/api/terminal).
              <Button
                variant="secondary"
                icon="terminal"
                onClick={() => ctx.navigate(`/terminal?host=${encodeURIComponent(host)}`)}
              >
                Terminal
              </Button>
            )}
            <label class="fleet-switcher">
              <span>Host</span>
              <select class="input select" value={host} onChange={(e) => go((e.target as HTMLSelectElement).value)}>
                {(hosts.data?.hosts ?? [{ host } as Host]).map((h) => (
                  <option key={h.host} value={h.host}>
                    {h.host}
                    {h.up ? '' : ' (down)'}
                  </option>
                ))}
              </select>
            </label>
          </>
        }
      />
      <Card title="State">
        {hosts.error && !hosts.data ? (
          <ErrorState error={hosts.error} onRetry={hosts.reload} />
        ) : !hosts.data ? (
          <Loading />
        ) : !me ? (
          <Empty title={`No member is named ${host}`} icon="server" />
        ) : (
          <KeyValues
            items={[
              ['State', me.up ? <Badge tone="success">up</Badge> : <Badge tone="danger">down</Badge>],
              ['Last seen', formatRelative(me.lastSeen)],
              ['CPU', pct(me.inventory?.cpu ?? null)],
              [
                'Memory',
                me.inventory
                  ? `${formatBytes(me.inventory.memory.used)} of ${formatBytes(me.inventory.memory.total)}`
                  : '–',
              ],
              [
                'Disk',
                me.inventory?.disk
                  ? `${formatBytes(me.inventory.disk.used)} of ${formatBytes(me.inventory.disk.total)}`
                  : '–',
              ],
              ['Alerts firing', count(me.inventory?.alerts)],
              ['Updates waiting', count(me.inventory?.updates)],
              ['Version', me.version],
            ]}
          />
        )}
      </Card>
      <Card title="Containers">
        {containers.error && !containers.data ? (
          <ErrorState
            error={containers.error}
            title={`The containers of ${host} could not be read`}
            onRetry={containers.reload}
          />
        ) : !containers.data ? (
          <Loading label={`Asking ${host}…`} />
        ) : (
          <DataTable
            caption={`Containers on ${host}`}
            hideCaption
            rows={containers.data.items}
            rowKey={(c) => c.id}
            rowLabel={(c) => c.name}
            empty={<Empty title={`${host} has no containers`} icon="box" />}
            columns={[
              { key: 'name', label: 'Name', primary: true, sortable: true },
              { key: 'image', label: 'Image' },
              {
                key: 'state',
                label: 'State',
                render: (c) => <Badge tone={c.state === 'running' ? 'success' : 'neutral'}>{c.state}</Badge>,
              },
              {
                key: 'logs',
                label: 'Logs',
                render: (c) => (
                  <Button
                    variant="ghost"
                    size="sm"
                    icon="file"
                    aria-label={`Logs of ${c.name}`}
                    onClick={() => setLogsOf(c)}
                  >
                    Logs
                  </Button>
                ),
              },
            ]}
          />
        )}
      </Card>
      {logsOf && <LogsDialog ctx={ctx} host={host} container={logsOf} onClose={() => setLogsOf(null)} />}
    </div>
  )
}

/** A container's logs on `host`, followed live through this hostd's socket to the member's. */
function LogsDialog({
  ctx,
  host,
  container,
  onClose,
}: {
  ctx: PageContext
  host: string
  container: Container
  onClose: () => void
}) {
  const [text, setText] = useState('')
  const [state, setState] = useState<{ kind: 'connecting' | 'open' | 'ended' | 'failed'; message?: string }>({
    kind: 'connecting',
  })
  const pre = useRef<HTMLPreElement>(null)
  useEffect(() => {
    const id = encodeURIComponent(container.id)
    const socket = ctx.socket(`/api/hosts/${encodeURIComponent(host)}/api/containers/logs?id=${id}&tail=200`)
    let failed = false
    socket.onopen = () => setState({ kind: 'open' })
    socket.onmessage = (e) => {
      let frame: { type?: string; data?: string; reason?: string; message?: string }
      try {
        frame = JSON.parse(String(e.data))
      } catch {
        return
      }
      if (frame.type === 'log' && frame.data) setText((t) => (t + frame.data).slice(-200_000))
      else if (frame.type === 'end') setState({ kind: 'ended', message: frame.reason })
      else if (frame.type === 'error') {
        failed = true
        setState({ kind: 'failed', message: frame.message })
      }
    }
    socket.onclose = (e) => {
      if (!failed)
        setState((s) =>
          s.kind === 'ended' ? s : { kind: e.code === 1000 ? 'ended' : 'failed', message: e.reason || undefined },
        )
    }
    return () => socket.close()
  }, [host, container.id])
  useEffect(() => {
    const el = pre.current
    if (el) el.scrollTop = el.scrollHeight
  }, [text])
  return (
    <Dialog open size="lg" title={`Logs of ${container.name} on ${host}`} onClose={onClose}>
      <p class="fleet-logs-state" role="status">
        {state.kind === 'connecting'
          ? `Connecting to ${host}…`
          : state.kind === 'open'
            ? 'Following'
            : state.kind === 'ended'
              ? `Ended${state.message ? `: ${state.message}` : ''}`
              : `Failed${state.message ? `: ${state.message}` : ''}`}
      </p>
      <pre ref={pre} class="fleet-logs" role="log" aria-label={`Logs of ${container.name}`}>
        {text || (state.kind === 'open' ? 'No output yet.' : '')}
      </pre>
    </Dialog>
  )
}

adoptStyles('fleet', css)
defineElement('fleet-page', FleetPage)
