/**
 * The VPN page (/vpn): tailscaled's state, this machine, the tailnet, its devices, remote access and the settings.
 * Everyone who may see the page sees the state; admins also log in and out, connect, and change the settings
 * (the server decides: every action is admin-only there too). The state is read again every 15 s while the tab is
 * visible, and every 2 s while a login waits for someone to finish it in the tab it opened.
 */
import { useEffect, useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  Checkbox,
  DataTable,
  Empty,
  FieldErrors,
  Form,
  Icon,
  KeyValues,
  PageHeader,
  ProgressBar,
  Select,
  TextField,
  defineElement,
  formatBytes,
  formatDateTime,
  formatRelative,
  useResource,
  type PageContext,
  type Tone,
} from '@hostd/ui'
import type { VpnStatus } from '../src/schemas.ts'

type Peer = VpnStatus['peers'][number]
type Prefs = NonNullable<VpnStatus['prefs']>

const POLL_MS = 15_000
const LOGIN_POLL_MS = 2_000
/** The server's rule for a machine name (schemas.ts DNS_LABEL): a DNS label. */
const DNS_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/

const STATES: Record<string, { label: string; tone: Tone; text: string }> = {
  Running: {
    label: 'Connected',
    tone: 'success',
    text: 'This machine is on the tailnet: the devices below can reach it, and it can reach them.',
  },
  Stopped: {
    label: 'Disconnected',
    tone: 'neutral',
    text: 'Logged in, but the VPN is off: nothing goes through it until you connect again.',
  },
  Starting: { label: 'Connecting…', tone: 'accent', text: 'tailscaled is bringing the VPN up.' },
  NeedsLogin: {
    label: 'Logged out',
    tone: 'warning',
    text: 'This machine is in no tailnet. Log in with a Tailscale account to add it to one.',
  },
  NeedsMachineAuth: {
    label: 'Waiting for approval',
    tone: 'warning',
    text: "Logged in: the tailnet's admin must now approve this machine in the Tailscale admin console.",
  },
  NoState: {
    label: 'Not started',
    tone: 'neutral',
    text: 'tailscaled has not started its VPN yet. Log in to start it.',
  },
  InUseOtherUser: {
    label: 'In use by another user',
    tone: 'danger',
    text: 'Another user of this host runs Tailscale; only they can change it.',
  },
}
const stateOf = (s: VpnStatus) =>
  STATES[s.backendState ?? ''] ?? { label: s.backendState ?? 'Unknown', tone: 'neutral' as Tone, text: '' }

const onOff = (on: boolean, onText = 'On', offText = 'Off') => (
  <Badge tone={on ? 'success' : 'neutral'}>{on ? onText : offText}</Badge>
)

function Addresses({ list }: { list: string[] }) {
  if (list.length === 0) return <span class="muted">none yet</span>
  return (
    <span class="mono">
      {list.map((a, i) => (
        <span key={a}>
          {i > 0 && <br />}
          {a}
        </span>
      ))}
    </span>
  )
}

/** tailscaled is missing or silent: say what is wrong and what to do, and look again by itself. */
function Unavailable({ status, onRetry, busy }: { status: VpnStatus; onRetry: () => void; busy: boolean }) {
  const installed = status.installed
  return (
    <Card>
      <Empty
        icon="shield"
        title={installed ? 'tailscaled is not running' : 'Tailscale is not installed on this host'}
        action={
          <Button icon="refresh" busy={busy} onClick={onRetry}>
            Check again
          </Button>
        }
      >
        <p style={{ marginBottom: 'var(--space-2)' }}>{status.message}</p>
        <p>
          {installed ? (
            <>
              Start it on the host (<code>sudo systemctl start tailscaled</code>); this page notices within seconds.
            </>
          ) : (
            <>
              Install it (
              <a href="https://tailscale.com/download/linux" target="_blank" rel="noopener noreferrer">
                tailscale.com/download/linux
              </a>
              ) and start it; this page notices within seconds. If tailscaled listens elsewhere, set{' '}
              <code>HOSTD_TAILSCALE_SOCKET</code>.
            </>
          )}
        </p>
      </Empty>
    </Card>
  )
}

interface ActionsProps {
  ctx: PageContext
  status: VpnStatus
  reload: () => void
  waiting: string | null
  setWaiting: (url: string | null) => void
}

/** The state, and for admins: log in (and wait for it), connect, log out. */
function Connection({ ctx, status, reload, waiting, setWaiting }: ActionsProps) {
  const [busy, setBusy] = useState<'login' | 'connect' | 'logout' | null>(null)
  const admin = ctx.can('admin')
  const state = stateOf(status)
  const pendingUrl = waiting ?? (status.loginPending ? status.authUrl : null)

  const run = async (what: typeof busy, action: () => Promise<unknown>) => {
    setBusy(what)
    try {
      await action()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(null)
      reload()
    }
  }

  const login = () =>
    run('login', async () => {
      const answer = await ctx.api.post<{ authUrl: string | null; backendState: string }>('/api/vpn/login')
      if (!answer.authUrl) {
        ctx.toast.info(`Already logged in (${STATES[answer.backendState]?.label ?? answer.backendState}).`)
        return
      }
      // A new tab without a way back to this one (noopener): whoever opens the URL first adds this machine.
      window.open(answer.authUrl, '_blank', 'noopener,noreferrer')
      setWaiting(answer.authUrl)
    })

  const connect = async (up: boolean, control: HTMLInputElement) => {
    if (!up) {
      const ok = await ctx.confirm({
        title: 'Disconnect from the tailnet?',
        message:
          'The devices of the tailnet can no longer reach this machine, and it cannot reach them. If you reached this page through the VPN, you lose it too.',
        confirmLabel: 'Disconnect',
        danger: true,
      })
      if (!ok) {
        control.checked = true
        return
      }
    }
    await run('connect', async () => {
      await ctx.api.post('/api/vpn/connect', { up })
      ctx.toast.success(up ? 'Connected to the tailnet' : 'Disconnected from the tailnet')
    })
  }

  const logout = async () => {
    const ok = await ctx.confirm({
      title: 'Log out of Tailscale?',
      message:
        'This machine leaves the tailnet and its VPN settings are reset. Adding it again needs a new login with a Tailscale account.',
      confirmLabel: 'Log out',
      danger: true,
    })
    if (!ok) return
    await run('logout', async () => {
      await ctx.api.post('/api/vpn/logout')
      setWaiting(null)
      ctx.toast.success('Logged out: this machine left the tailnet')
    })
  }

  return (
    <Card title="Connection">
      <div class="stack">
        <p>
          <Badge tone={state.tone}>{state.label}</Badge>{' '}
          <span class="muted">
            {status.backendState === 'Running' && status.prefs?.shieldsUp
              ? 'This machine is on the tailnet and reaches its devices; shields up refuses every connection they open to it.'
              : state.text}
          </span>
        </p>
        {pendingUrl && admin && (
          <div class="stack" aria-live="polite">
            <ProgressBar label="Waiting for the login to finish" detail="Waiting for you" />
            <p>
              The Tailscale login page opened in a new tab: sign in there to add this machine to your tailnet, and this
              page follows by itself. No new tab (a blocked pop-up)? Open it here.
            </p>
          </div>
        )}
        {status.loginPending && !admin && (
          <p class="muted">A login was started by an admin and waits to be finished.</p>
        )}
        {admin && (
          <div class="toolbar">
            {status.loggedIn ? (
              <>
                <Checkbox
                  name="connected"
                  label="VPN connection"
                  switch
                  checked={status.prefs?.wantRunning ?? false}
                  disabled={busy !== null}
                  hint="Off keeps this machine logged in but sends nothing through the VPN (tailscale down)."
                  onChange={(e) => void connect(e.currentTarget.checked, e.currentTarget)}
                />
                <Button
                  variant="danger"
                  icon="log-out"
                  busy={busy === 'logout'}
                  disabled={busy !== null}
                  onClick={() => void logout()}
                >
                  Log out…
                </Button>
              </>
            ) : pendingUrl ? (
              <div class="page-actions">
                <a class="btn btn-primary btn-md" href={pendingUrl} target="_blank" rel="noopener noreferrer">
                  <Icon name="external-link" size={16} /> Open the login page
                </a>
                <Button icon="log-in" busy={busy === 'login'} disabled={busy !== null} onClick={() => void login()}>
                  Log in again
                </Button>
                {waiting && (
                  <Button variant="ghost" onClick={() => setWaiting(null)}>
                    Stop waiting
                  </Button>
                )}
              </div>
            ) : (
              <Button
                variant="primary"
                icon="log-in"
                busy={busy === 'login'}
                disabled={busy !== null}
                onClick={() => void login()}
              >
                Log in to Tailscale
              </Button>
            )}
          </div>
        )}
        {status.health.length > 0 && (
          <ul class="stack" aria-label="Warnings from tailscaled" style={{ listStyle: 'none', padding: 0, margin: 0 }}>
            {status.health.map((h) => (
              <li key={h} class="notice">
                <Icon name="triangle-alert" /> {h}
              </li>
            ))}
          </ul>
        )}
        <p class="detail">
          {status.version && `Tailscale ${status.version.split('-')[0]}. `}
          {!admin && 'Only admins can log in, connect or change the settings.'}
        </p>
      </div>
    </Card>
  )
}

function ThisMachine({ status }: { status: VpnStatus }) {
  const self = status.self
  if (!self) return null
  return (
    <Card title="This machine">
      <KeyValues
        items={[
          ['Name', self.name],
          ['Host name', self.hostName],
          ['DNS name', self.dnsName ? <span class="mono">{self.dnsName}</span> : <span class="muted">none</span>],
          ['Addresses', <Addresses list={self.addresses} />],
          ['System', self.os],
          ['Status', self.online ? <Badge tone="success">Online</Badge> : <Badge>Offline</Badge>],
        ]}
      />
    </Card>
  )
}

function Tailnet({ status }: { status: VpnStatus }) {
  const t = status.tailnet
  if (!t) return null
  const online = status.peers.filter((p) => p.online).length
  return (
    <Card title="Tailnet">
      <KeyValues
        items={[
          ['Tailnet', t.name],
          [
            'MagicDNS',
            t.magicDnsEnabled ? (
              <>
                On <span class="mono muted">{t.magicDnsSuffix}</span>
              </>
            ) : (
              'Off'
            ),
          ],
          ['Devices', `${status.peers.length} other, ${online} online`],
          [
            'Exit node',
            status.exitNode ? (
              <>
                {status.exitNode.name}{' '}
                {status.exitNode.online ? <Badge tone="success">Online</Badge> : <Badge tone="danger">Offline</Badge>}
              </>
            ) : (
              <span class="muted">None: internet traffic leaves from here</span>
            ),
          ],
        ]}
      />
    </Card>
  )
}

function RemoteAccess({ status }: { status: VpnStatus }) {
  const { ssh, serve } = status.remoteAccess
  return (
    <Card title="Remote access">
      <KeyValues
        items={[
          [
            'Incoming connections',
            status.prefs?.shieldsUp ? <Badge tone="warning">Refused: shields up</Badge> : 'Allowed',
          ],
          ['Tailscale SSH', onOff(ssh)],
          [
            'Shared with tailscale serve',
            !serve ? (
              <span class="muted">Not available</span>
            ) : !serve.enabled ? (
              <span class="muted">Nothing</span>
            ) : (
              <span class="stack" style={{ gap: 'var(--space-1)' }}>
                {serve.web.map((w) => (
                  <span key={w} class="mono">
                    https://{w.replace(/:443$/, '')}
                  </span>
                ))}
                {serve.tcpPorts.length > 0 && <span>TCP {serve.tcpPorts.join(', ')}</span>}
              </span>
            ),
          ],
          [
            'Open to the internet',
            serve?.funnel ? <Badge tone="warning">Yes: Funnel is on</Badge> : onOff(false, 'Yes', 'No'),
          ],
        ]}
      />
    </Card>
  )
}

function lastSeen(p: Peer) {
  if (p.online) return 'Now'
  if (!p.lastSeen) return <span class="muted">Unknown</span>
  return (
    <time dateTime={p.lastSeen} title={formatDateTime(p.lastSeen)}>
      {formatRelative(p.lastSeen)}
    </time>
  )
}

function Peers({ peers }: { peers: Peer[] }) {
  return (
    <DataTable
      caption="Devices in the tailnet"
      rows={peers}
      rowKey={(p) => p.id}
      initialSort={{ key: 'name', direction: 'ascending' }}
      empty={
        <Empty icon="network" title="No other devices">
          Devices you add to this tailnet appear here.
        </Empty>
      }
      columns={[
        {
          key: 'name',
          label: 'Name',
          sortable: true,
          render: (p) => (
            <span class="cell-strong" title={p.dnsName || undefined}>
              {p.name}
            </span>
          ),
        },
        { key: 'os', label: 'System', sortable: true, secondary: true },
        { key: 'addresses', label: 'Addresses', secondary: true, render: (p) => <Addresses list={p.addresses} /> },
        {
          key: 'online',
          label: 'Status',
          sortValue: (p) => (p.online ? 0 : 1),
          render: (p) => (p.online ? <Badge tone="success">Online</Badge> : <Badge>Offline</Badge>),
        },
        {
          key: 'lastSeen',
          label: 'Last seen',
          sortValue: (p) => (p.online ? Number.MAX_SAFE_INTEGER : p.lastSeen ? Date.parse(p.lastSeen) : 0),
          render: lastSeen,
        },
        {
          key: 'exitNode',
          label: 'Exit node',
          sortValue: (p) => (p.exitNode ? 0 : p.exitNodeOption ? 1 : 2),
          render: (p) =>
            p.exitNode ? (
              <Badge tone="accent">In use</Badge>
            ) : p.exitNodeOption ? (
              'Offered'
            ) : (
              <span class="muted">–</span>
            ),
        },
        {
          key: 'traffic',
          label: 'Traffic',
          align: 'end',
          secondary: true,
          sortValue: (p) => p.rxBytes + p.txBytes,
          render: (p) => (
            <span class="mono" style={{ whiteSpace: 'nowrap' }} title="Received and sent since tailscaled started">
              ↓ {formatBytes(p.rxBytes)}
              <br />↑ {formatBytes(p.txBytes)}
            </span>
          ),
        },
      ]}
    />
  )
}

/** Admins edit; only the fields that differ from the current preferences are sent (a masked edit on the server). */
function Settings({ ctx, status, reload }: { ctx: PageContext; status: VpnStatus; reload: () => void }) {
  const prefs = status.prefs!
  const exitOptions = status.peers.filter((p) => p.exitNodeOption || p.id === prefs.exitNodeId)
  if (!ctx.can('admin')) {
    const exit = status.peers.find((p) => p.id === prefs.exitNodeId)
    return (
      <Card title="Settings">
        <KeyValues
          items={[
            ['Use subnet routes', onOff(prefs.acceptRoutes)],
            ["Use the tailnet's DNS", onOff(prefs.acceptDns)],
            ['Tailscale SSH server', onOff(prefs.ssh)],
            ['Shields up', onOff(prefs.shieldsUp)],
            ['Exit node', exit ? exit.name : prefs.exitNodeId || 'None'],
            ['Machine name', prefs.hostname || <span class="muted">the OS host name</span>],
          ]}
        />
      </Card>
    )
  }
  const save = async (v: Record<string, string | boolean>) => {
    const hostname = String(v.hostname).trim()
    if (hostname && !DNS_LABEL.test(hostname)) {
      throw new FieldErrors({
        hostname: 'Use letters, digits and hyphens (not first or last), at most 63: one DNS label.',
      })
    }
    const next: Partial<Prefs> = {
      acceptRoutes: Boolean(v.acceptRoutes),
      acceptDns: Boolean(v.acceptDns),
      ssh: Boolean(v.ssh),
      shieldsUp: Boolean(v.shieldsUp),
      exitNodeId: String(v.exitNodeId),
      hostname,
    }
    const changes = Object.fromEntries(Object.entries(next).filter(([k, value]) => prefs[k as keyof Prefs] !== value))
    if (Object.keys(changes).length === 0) {
      ctx.toast.info('Nothing to save: no setting changed.')
      return
    }
    await ctx.api.post('/api/vpn/settings', changes)
    ctx.toast.success('VPN settings saved')
    reload()
  }
  return (
    <Card title="Settings">
      {/* Keyed by the current preferences: after a save (or someone else's) the fields show the new values. */}
      <Form
        key={JSON.stringify([prefs, exitOptions.map((p) => p.id)])}
        label="VPN settings"
        submitLabel="Save settings"
        onSubmit={save}
        errorFields={{ HOSTD_VPN_SETTING_INVALID: 'exitNodeId' }}
      >
        <Checkbox
          name="acceptRoutes"
          label="Use subnet routes"
          switch
          defaultChecked={prefs.acceptRoutes}
          hint="Reach the networks that other devices share with the tailnet (--accept-routes)."
        />
        <Checkbox
          name="acceptDns"
          label="Use the tailnet's DNS"
          switch
          defaultChecked={prefs.acceptDns}
          hint="MagicDNS names and the DNS servers the tailnet's admin chose (--accept-dns)."
        />
        <Checkbox
          name="ssh"
          label="Tailscale SSH server"
          switch
          defaultChecked={prefs.ssh}
          hint="Devices the tailnet's access rules allow can open a shell here, with no SSH keys (--ssh)."
        />
        <Checkbox
          name="shieldsUp"
          label="Shields up"
          switch
          defaultChecked={prefs.shieldsUp}
          hint="Refuse every incoming connection from the tailnet; outgoing ones still work (--shields-up)."
        />
        <Select
          name="exitNodeId"
          label="Exit node"
          defaultValue={prefs.exitNodeId}
          options={[
            { value: '', label: "None: use this machine's own internet connection" },
            ...exitOptions.map((p) => ({
              value: p.id,
              label: `${p.name}${p.online ? '' : ' (offline)'}${p.exitNodeOption ? '' : ' (no longer offered)'}`,
            })),
          ]}
          hint={
            exitOptions.length
              ? 'Send all internet traffic through this device.'
              : 'No device of the tailnet offers to be an exit node.'
          }
        />
        <TextField
          name="hostname"
          label="Machine name"
          defaultValue={prefs.hostname}
          maxLength={63}
          autoComplete="off"
          spellcheck={false}
          hint={`The name other devices see. Empty: the OS host name${status.self && !prefs.hostname ? ` (${status.self.hostName})` : ''}.`}
        />
      </Form>
    </Card>
  )
}

function VpnPage({ ctx }: { ctx: PageContext }) {
  const [waiting, setWaiting] = useState<string | null>(null)
  // Quicker while a login is on its way (this page's or another tab's), to notice when it completes.
  const status = useResource((signal) => ctx.api.get<VpnStatus>('/api/vpn', { signal }), [], {
    every: (s) => (waiting !== null || s?.loginPending ? LOGIN_POLL_MS : POLL_MS),
  })
  const data = status.data

  // The login finished in the other tab (or by someone else): stop waiting and say so.
  useEffect(() => {
    if (waiting && data?.loggedIn) {
      setWaiting(null)
      ctx.toast.success(
        data.backendState === 'Running'
          ? `Logged in: this machine is on the tailnet ${data.tailnet?.name ?? ''}`
          : `Logged in (${stateOf(data).label})`,
      )
    }
  }, [waiting, data])

  return (
    <>
      <PageHeader
        title="VPN"
        description="Tailscale on this host: whether it is connected, the devices of its tailnet, and how they may reach it."
        actions={
          <Button icon="refresh" onClick={status.reload} busy={status.loading && data !== undefined}>
            Refresh
          </Button>
        }
      />
      <Async resource={status} label="Asking tailscaled…">
        {(s) =>
          !s.running ? (
            <Unavailable status={s} onRetry={status.reload} busy={status.loading} />
          ) : (
            <div class="stack">
              <Connection ctx={ctx} status={s} reload={status.reload} waiting={waiting} setWaiting={setWaiting} />
              {s.loggedIn && (
                <>
                  <div class="chart-grid" style={{ marginTop: 0 }}>
                    <ThisMachine status={s} />
                    <Tailnet status={s} />
                    <RemoteAccess status={s} />
                  </div>
                  <Peers peers={s.peers} />
                </>
              )}
              {s.prefs && <Settings ctx={ctx} status={s} reload={status.reload} />}
            </div>
          )
        }
      </Async>
    </>
  )
}

defineElement('vpn-page', ({ ctx }) => <VpnPage ctx={ctx} />)
