/**
 * The network page (/network, admins): the host's NetworkManager connections as network services, with DNS and IPv4
 * forms and enable/disable, then the interfaces as the kernel reports them (always, NetworkManager or not). When
 * NetworkManager (or its bus) is not running, the page says so and how to start it, instead of a dead end. A change
 * that could cut the admin off must be confirmed before its window ends, or NetworkManager restores the previous
 * settings by itself: the page shows that countdown with Keep and Revert.
 */
import { useEffect, useState } from 'preact/hooks'
import {
  ApiError,
  Badge,
  Button,
  Callout,
  Card,
  Checkbox,
  CopyButton,
  DataTable,
  Countdown,
  Dialog,
  Empty,
  ErrorDetails,
  ErrorState,
  Form,
  Icon,
  KeyValues,
  Loading,
  PageHeader,
  PrivilegesMissing,
  Select,
  TextField,
  defineElement,
  errorDetails,
  errorMessage,
  isPrivilegesMissing,
  adoptStyles,
  useResource,
  type FormValues,
  type PageContext,
} from '@hostd/ui'
import css from './network.css' with { type: 'text' }
import type { Static } from '@hostd/sdk'
import type { NetworkServiceSchema, PendingConfirmSchema } from '../src/schemas.ts'

type Service = Static<typeof NetworkServiceSchema>

/** The kernel's view of the interfaces: the system plugin's `GET /api/system/network` (viewer). */
interface NetworkSummary {
  interfaces: {
    name: string
    mac: string
    state: string
    mtu: number
    speedMbps: number | null
    addresses: { family: 'ipv4' | 'ipv6'; address: string; prefix: number }[]
  }[]
  defaultRoute: { gateway: string; interface: string } | null
  dnsServers: string[]
}
type Interface = NetworkSummary['interfaces'][number]

/** The codes that mean NetworkManager cannot be reached at all (not a failed change). */
const NM_DOWN = new Set(['HOSTD_NETWORK_BACKEND_UNAVAILABLE', 'HOSTD_NETWORK_BUS_UNAVAILABLE'])
type Pending = NonNullable<Static<typeof PendingConfirmSchema>>

const BASE = '/api/system/network/services'
const IPV4 = '((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
const servicePath = (name: string, action: string) => `${BASE}/${encodeURIComponent(name)}/${action}`

adoptStyles('network', css)

type Editing = { kind: 'dns' | 'ipv4'; service: Service } | null

function NetworkPage({ ctx }: { ctx: PageContext }) {
  const services = useResource((signal) => ctx.api.get<Service[]>(BASE, { signal }), [])
  const pendingNow = useResource(
    (signal) => ctx.api.get<{ confirm: Pending | null }>('/api/system/network/pending', { signal }),
    [],
  )
  const [pending, setPending] = useState<Pending | null>(null)
  const [expired, setExpired] = useState<string | null>(null)
  const [editing, setEditing] = useState<Editing>(null)
  const [kernelGeneration, setKernelGeneration] = useState(0)
  useEffect(() => setPending(pendingNow.data?.confirm ?? null), [pendingNow.data])

  const changed = (confirm: Pending | null, message: string) => {
    setEditing(null)
    setExpired(null)
    if (confirm) setPending(confirm)
    else ctx.toast.success(message)
    services.reload()
  }

  const toggle = async (s: Service) => {
    if (s.enabled) {
      const ok = await ctx.confirm({
        title: `Disable ${s.name}?`,
        message:
          `${s.device || 'Its interface'} goes offline and stays off after a restart. If you reach this server ` +
          'through it, the page asks you to confirm, and without that it comes back by itself.',
        confirmLabel: 'Disable',
        danger: true,
      })
      if (!ok) return
    }
    try {
      const answer = await ctx.api.post<{ confirm: Pending | null }>(servicePath(s.name, 'enabled'), {
        enabled: !s.enabled,
      })
      changed(answer.confirm, `${s.name} is ${s.enabled ? 'disabled' : 'enabled'}`)
    } catch (err) {
      ctx.toast.error(err)
      services.reload()
    }
  }

  const missing = isPrivilegesMissing(services.error)
  const nmDown = services.error instanceof ApiError && NM_DOWN.has(services.error.code) ? services.error : null
  return (
    <>
      <PageHeader
        title="Network"
        description={
          "This server's network connections. A change that could cut you off must be confirmed in time, " +
          'or the previous settings come back by themselves.'
        }
        actions={
          <Button
            icon="refresh"
            onClick={() => {
              services.reload()
              pendingNow.reload()
              setKernelGeneration((g) => g + 1)
            }}
            busy={services.loading && services.data !== undefined}
          >
            Refresh
          </Button>
        }
      />
      <div class="stack">
        {pending && (
          <PendingChange
            ctx={ctx}
            pending={pending}
            onSettled={(message) => {
              setPending(null)
              ctx.toast.success(message)
              services.reload()
            }}
            onExpired={() => {
              setPending(null)
              setExpired(pending.service)
              // NetworkManager restores the checkpoint at the deadline; give it a moment, then show what is there.
              setTimeout(services.reload, 2000)
            }}
          />
        )}
        {expired && (
          <p class="notice" role="status">
            <Icon name="rotate-ccw" /> Time is up: the change to {expired} was not confirmed, so NetworkManager restored
            its previous settings.
          </p>
        )}
        {services.data === undefined ? (
          nmDown ? (
            <NetworkManagerDown error={nmDown} onRetry={services.reload} />
          ) : missing ? (
            <PrivilegesMissing affected="reading and changing network settings" onRetry={services.reload} />
          ) : services.error !== undefined ? (
            <ErrorState
              title={
                services.error instanceof ApiError && services.error.code === 'HOSTD_NETWORK_BACKEND_UNAVAILABLE'
                  ? 'NetworkManager is not running'
                  : 'The network settings could not be read'
              }
              error={services.error}
              onRetry={services.reload}
            />
          ) : (
            <Loading label="Reading the network settings…" />
          )
        ) : services.data.length === 0 ? (
          <Empty icon="network" title="No network connections">
            NetworkManager manages no connection on this server.
          </Empty>
        ) : (
          <div class="network-services">
            {services.data.map((s) => (
              <ServiceCard
                key={s.name}
                service={s}
                busy={pending !== null}
                onEdit={(kind) => setEditing({ kind, service: s })}
                onToggle={() => void toggle(s)}
              />
            ))}
          </div>
        )}
      </div>
      <div class="stack network-kernel">
        <Interfaces ctx={ctx} generation={kernelGeneration} />
      </div>
      {editing?.kind === 'dns' && (
        <DnsDialog ctx={ctx} service={editing.service} onClose={() => setEditing(null)} onDone={changed} />
      )}
      {editing?.kind === 'ipv4' && (
        <Ipv4Dialog ctx={ctx} service={editing.service} onClose={() => setEditing(null)} onDone={changed} />
      )}
    </>
  )
}

function ServiceCard({
  service: s,
  busy,
  onEdit,
  onToggle,
}: {
  service: Service
  busy: boolean
  onEdit: (kind: 'dns' | 'ipv4') => void
  onToggle: () => void
}) {
  return (
    <Card title={s.name}>
      <div class="stack">
        <span class="network-badges">
          {s.enabled ? <Badge tone="success">Connected</Badge> : <Badge>Disabled</Badge>}
          <Badge>{s.hardwarePort}</Badge>
          {s.device && <Badge>{s.device}</Badge>}
        </span>
        <KeyValues
          items={[
            ['IPv4', s.dhcp ? 'Automatic (DHCP)' : 'Manual'],
            ['Address', s.ipv4 || <span class="muted">none</span>],
            ['Subnet mask', s.subnetMask || <span class="muted">none</span>],
            ['Router', s.router || <span class="muted">none</span>],
            [
              'DNS servers',
              s.dnsServers.length ? (
                s.dnsServers.join(', ')
              ) : (
                <span class="muted">{s.dhcp ? 'from DHCP' : 'none'}</span>
              ),
            ],
          ]}
        />
      </div>
      <div class="network-actions">
        <Button size="sm" icon="pencil" aria-label={`Edit DNS of ${s.name}`} onClick={() => onEdit('dns')}>
          DNS
        </Button>
        <Button
          size="sm"
          icon="pencil"
          aria-label={`Edit IPv4 of ${s.name}`}
          disabled={busy}
          onClick={() => onEdit('ipv4')}
        >
          IPv4
        </Button>
        <Button
          size="sm"
          variant={s.enabled ? 'ghost' : 'secondary'}
          icon="power"
          disabled={busy && s.enabled}
          onClick={onToggle}
        >
          {s.enabled ? `Disable ${s.name}` : `Enable ${s.name}`}
        </Button>
      </div>
    </Card>
  )
}

interface PendingProps {
  ctx: PageContext
  pending: Pending
  onSettled: (message: string) => void
  onExpired: () => void
}

/** The confirm-or-revert window: Keep (confirm) or Revert now; at zero NetworkManager restores the old settings. */
function PendingChange({ ctx, pending, onSettled, onExpired }: PendingProps) {
  const [busy, setBusy] = useState<'keep' | 'revert' | null>(null)
  const [error, setError] = useState<string | null>(null)
  const act = async (kind: 'keep' | 'revert') => {
    setBusy(kind)
    setError(null)
    try {
      if (kind === 'keep') await ctx.api.post(pending.confirmPath)
      else await ctx.api.post(servicePath(pending.service, 'revert'))
      onSettled(
        kind === 'keep'
          ? `${pending.service} keeps its new settings`
          : `The previous settings of ${pending.service} are back`,
      )
    } catch (err) {
      if (err instanceof ApiError && err.code === 'HOSTD_NETWORK_REVERTED') onExpired()
      else setError(errorMessage(err))
      setBusy(null)
    }
  }
  return (
    <Card title={`Keep the new settings of ${pending.service}?`} class="network-pending">
      <p>
        If you can read this, the change did not cut this page off from the server. Keep it, or put the previous
        settings back. If nobody confirms in time, NetworkManager restores the previous settings by itself, even if this
        page is closed.
      </p>
      <div class="network-pending-row">
        <Countdown until={Date.parse(pending.expiresAt)} label="The previous settings return" onDone={onExpired} />
        <span class="network-actions">
          <Button
            variant="primary"
            icon="check"
            busy={busy === 'keep'}
            disabled={busy !== null}
            onClick={() => void act('keep')}
          >
            Keep these settings
          </Button>
          <Button
            icon="rotate-ccw"
            busy={busy === 'revert'}
            disabled={busy !== null}
            onClick={() => void act('revert')}
          >
            Revert now
          </Button>
        </span>
      </div>
      {error && (
        <p class="form-error" role="alert">
          <Icon name="circle-alert" /> {error}
        </p>
      )}
    </Card>
  )
}

interface EditProps {
  ctx: PageContext
  service: Service
  onClose: () => void
  onDone: (confirm: Pending | null, message: string) => void
}

const text = (v: FormValues[string] | undefined) => (typeof v === 'string' ? v.trim() : '')

function DnsDialog({ ctx, service, onClose, onDone }: EditProps) {
  const submit = async (v: FormValues) => {
    const servers = [v.dns1, v.dns2, v.dns3].map(text).filter(Boolean)
    const answer = await ctx.api.post<{ confirm: Pending | null }>(servicePath(service.name, 'dns'), { servers })
    onDone(
      answer.confirm,
      servers.length
        ? `${service.name} now asks ${servers.join(', ')}`
        : `${service.name} now uses the DNS servers DHCP gives`,
    )
  }
  return (
    <Dialog open title={`DNS servers of ${service.name}`} onClose={onClose}>
      <Form submitLabel="Save DNS servers" actions={<Button onClick={onClose}>Cancel</Button>} onSubmit={submit}>
        <p class="dialog-text">
          Up to three IPv4 addresses, asked in this order. Leave them all empty to use the ones DHCP gives.
        </p>
        {[1, 2, 3].map((n) => (
          <TextField
            key={n}
            name={`dns${n}`}
            label={`DNS server ${n}`}
            pattern={IPV4}
            inputMode="decimal"
            autoComplete="off"
            defaultValue={service.dnsServers[n - 1] ?? ''}
            placeholder={n === 1 ? '192.0.2.53' : undefined}
          />
        ))}
      </Form>
    </Dialog>
  )
}

function Ipv4Dialog({ ctx, service, onClose, onDone }: EditProps) {
  const [dhcp, setDhcp] = useState(service.dhcp)
  const submit = async (v: FormValues) => {
    const body = dhcp
      ? { dhcp: true }
      : {
          dhcp: false,
          ipv4: text(v.ipv4),
          subnetMask: text(v.subnetMask),
          ...(text(v.router) ? { router: text(v.router) } : {}),
        }
    const answer = await ctx.api.post<{ confirm: Pending | null }>(servicePath(service.name, 'ipv4'), body)
    onDone(answer.confirm, `${service.name} was changed`)
  }
  return (
    <Dialog open title={`IPv4 of ${service.name}`} onClose={onClose}>
      <Form submitLabel="Apply" actions={<Button onClick={onClose}>Cancel</Button>} onSubmit={submit}>
        <Select
          name="method"
          label="Configure IPv4"
          value={dhcp ? 'dhcp' : 'manual'}
          onChange={(e) => setDhcp(e.currentTarget.value === 'dhcp')}
          options={[
            { value: 'dhcp', label: 'Automatically (DHCP)' },
            { value: 'manual', label: 'Manually' },
          ]}
        />
        {!dhcp && (
          <>
            <TextField
              name="ipv4"
              label="IP address"
              required
              pattern={IPV4}
              inputMode="decimal"
              autoComplete="off"
              defaultValue={service.ipv4}
            />
            <TextField
              name="subnetMask"
              label="Subnet mask"
              required
              pattern={IPV4}
              inputMode="decimal"
              autoComplete="off"
              defaultValue={service.subnetMask || '255.255.255.0'}
            />
            <TextField
              name="router"
              label="Router (optional)"
              pattern={IPV4}
              inputMode="decimal"
              autoComplete="off"
              defaultValue={service.router}
            />
          </>
        )}
        <p class="dialog-text">
          <Icon name="info" size={16} /> If this server is reached through {service.name}, you will have to confirm the
          change; otherwise the previous settings come back by themselves.
        </p>
      </Form>
    </Dialog>
  )
}

/** The interfaces, their link state and addresses, read from the kernel (works without NetworkManager). */
function Interfaces({ ctx, generation }: { ctx: PageContext; generation: number }) {
  const summary = useResource((signal) => ctx.api.get<NetworkSummary>('/api/system/network', { signal }), [generation])
  const data = summary.data
  // Containers' veth ends are many and say little: hidden unless asked for.
  const [showVeth, setShowVeth] = useState(false)
  const veths = data?.interfaces.filter((i) => i.name.startsWith('veth')).length ?? 0
  const rows = data?.interfaces.filter((i) => showVeth || !i.name.startsWith('veth')) ?? []
  return (
    <Card title="Interfaces">
      {data === undefined ? (
        summary.error !== undefined ? (
          <ErrorState title="The interfaces could not be read" error={summary.error} onRetry={summary.reload} />
        ) : (
          <Loading label="Reading the interfaces…" />
        )
      ) : (
        <div class="stack">
          <DataTable
            caption="Interfaces"
            hideCaption
            rows={rows}
            rowKey={(i) => i.name}
            pageSize={50}
            columns={[
              {
                key: 'name',
                label: 'Interface',
                primary: true,
                render: (i: Interface) => <span class="cell-strong">{i.name}</span>,
              },
              { key: 'state', label: 'Link', render: (i: Interface) => linkBadge(i.state) },
              {
                key: 'addresses',
                label: 'Addresses',
                render: (i: Interface) =>
                  i.addresses.length ? (
                    <span class="network-addresses">
                      {i.addresses.map((a) => (
                        <span key={a.address} class="mono">
                          {a.address}/{a.prefix}
                        </span>
                      ))}
                    </span>
                  ) : (
                    <span class="muted">none</span>
                  ),
              },
              {
                key: 'mac',
                label: 'MAC address',
                secondary: true,
                render: (i: Interface) => <span class="mono">{i.mac || '–'}</span>,
              },
              {
                key: 'speedMbps',
                label: 'Speed',
                secondary: true,
                render: (i: Interface) => (i.speedMbps ? `${i.speedMbps} Mb/s` : <span class="muted">–</span>),
              },
            ]}
          />
          {veths > 0 && (
            <Checkbox
              name="veth"
              label={`Show the containers' virtual links (${veths})`}
              checked={showVeth}
              onChange={(e) => setShowVeth(e.currentTarget.checked)}
            />
          )}
          <KeyValues
            items={[
              [
                'Default route',
                data.defaultRoute ? (
                  `via ${data.defaultRoute.gateway} (${data.defaultRoute.interface})`
                ) : (
                  <span class="muted">none</span>
                ),
              ],
              ['DNS servers', data.dnsServers.length ? data.dnsServers.join(', ') : <span class="muted">none</span>],
            ]}
          />
        </div>
      )}
    </Card>
  )
}

function linkBadge(state: string) {
  if (state === 'up') return <Badge tone="success">Up</Badge>
  if (state === 'down' || state === 'lowerlayerdown') return <Badge tone="warning">Down</Badge>
  return <Badge>{state === 'unknown' ? 'Unknown' : state}</Badge>
}

const START_NM = 'sudo systemctl start NetworkManager'
const START_DBUS = 'sudo systemctl start dbus'

/** NetworkManager (or D-Bus) is not running: what that means here and the commands that start it. */
function NetworkManagerDown({ error, onRetry }: { error: ApiError; onRetry: () => void }) {
  const bus = error.code === 'HOSTD_NETWORK_BUS_UNAVAILABLE'
  const details = errorDetails(error)
  return (
    <Callout
      tone="warning"
      title={bus ? 'NetworkManager cannot be reached: D-Bus is not running' : 'NetworkManager is not running'}
      action={
        <Button icon="refresh" onClick={onRetry}>
          Check again
        </Button>
      }
    >
      <span class="network-howto">
        <span>
          The interfaces below come from the kernel. To change addresses, DNS or connections here, start{' '}
          {bus ? 'the system message bus, then NetworkManager' : 'NetworkManager'} on the server:
        </span>
        {(bus ? [START_DBUS, START_NM] : [START_NM]).map((command) => (
          <span key={command} class="network-command">
            <code>{command}</code>
            <CopyButton text={command} size="sm" aria-label={`Copy ${command}`} />
          </span>
        ))}
        <span class="muted">
          Not installed? <code>sudo apt install network-manager</code>. Interfaces configured elsewhere (ifupdown,
          netplan with systemd-networkd) keep working without it.
        </span>
        {details && <ErrorDetails details={details} />}
      </span>
    </Callout>
  )
}

defineElement('network-page', ({ ctx }) => <NetworkPage ctx={ctx} />)
