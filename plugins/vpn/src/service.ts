import { HostdError, type AuditService, type Logger } from '@hostd/sdk'
import { VpnErrors } from './errors.ts'
import { LocalApiRefusal, type BusWatch, type LocalApi } from './localapi.ts'
import type { SettingsBody, VpnStatus } from './schemas.ts'

type Actor = Parameters<AuditService['record']>[1]

// tailscale's JSON, as far as we read it (ipn/ipnstate/ipnstate.go, ipn/prefs.go, ipn/serve.go).
interface PeerStatus {
  ID?: string
  HostName?: string
  DNSName?: string
  OS?: string
  TailscaleIPs?: string[] | null
  Relay?: string
  RxBytes?: number
  TxBytes?: number
  LastSeen?: string
  Online?: boolean
  ExitNode?: boolean
  ExitNodeOption?: boolean
  Active?: boolean
}
interface Status {
  Version?: string
  BackendState?: string
  HaveNodeKey?: boolean
  AuthURL?: string
  Self?: PeerStatus | null
  ExitNodeStatus?: { ID?: string; Online?: boolean; TailscaleIPs?: string[] | null } | null
  Health?: string[] | null
  CurrentTailnet?: { Name?: string; MagicDNSSuffix?: string; MagicDNSEnabled?: boolean } | null
  Peer?: Record<string, PeerStatus> | null
}
interface Prefs {
  RouteAll?: boolean
  CorpDNS?: boolean
  RunSSH?: boolean
  ShieldsUp?: boolean
  ExitNodeID?: string
  Hostname?: string
  WantRunning?: boolean
  LoggedOut?: boolean
}
interface ServeConfig {
  TCP?: Record<string, unknown> | null
  Web?: Record<string, unknown> | null
  AllowFunnel?: Record<string, boolean> | null
}

/** ipn.State in bus messages is an integer (ipn/backend.go): 6 is Running. */
const STATE_RUNNING = 6
/** States in which the node is logged in: a login has nothing to do. */
const LOGGED_IN_STATES = new Set(['Running', 'Stopped', 'Starting', 'NeedsMachineAuth'])
/** How long a started login is watched for its end (to audit it), after its URL was handed out. */
const LOGIN_WATCH_MS = 15 * 60_000
const ZERO_TIME = '0001-01-01T00:00:00Z'

const STATUS = '/localapi/v0/status'
const PREFS = '/localapi/v0/prefs'

export interface VpnOptions {
  /** tailscaled's LocalAPI socket. */
  socketPath: string
  /** How long POST /api/vpn/login waits for tailscaled's login URL. */
  loginTimeoutMs: number
}

/** The VPN client's logic over tailscaled's LocalAPI; no HTTP of its own. */
export class Vpn {
  readonly #api: LocalApi
  readonly #audit: AuditService
  readonly #log: Logger
  readonly #loginTimeoutMs: number
  #loginWatch: { watch: BusWatch; timer: NodeJS.Timeout } | null = null

  constructor(api: LocalApi, audit: AuditService, log: Logger, loginTimeoutMs: number) {
    this.#api = api
    this.#audit = audit
    this.#log = log
    this.#loginTimeoutMs = loginTimeoutMs
  }

  /** The whole state; without tailscaled, the same shape saying what is missing (never an error for that). */
  async status(showAuthUrl: boolean): Promise<VpnStatus> {
    let status: Status, prefs: Prefs, serve: ServeConfig | null
    try {
      ;[status, prefs, serve] = await Promise.all([
        this.#api.call<Status>('GET', STATUS),
        this.#api.call<Prefs>('GET', PREFS),
        // Built without serve (ts_omit_serve), tailscaled has no such route: say nothing rather than fail.
        this.#api.call<ServeConfig>('GET', '/localapi/v0/serve-config').catch((err: unknown) => {
          if (err instanceof LocalApiRefusal) return null
          throw err
        }),
      ])
    } catch (err) {
      // Reading is always allowed to whoever opens the socket, so a refusal here is the socket itself (EACCES).
      const unreachable = [VpnErrors.notInstalled.code, VpnErrors.notRunning.code, VpnErrors.notPermitted.code]
      if (err instanceof HostdError && unreachable.includes(err.code))
        return absent(err.code === VpnErrors.notInstalled.code, err.message)
      throw asHostdError(err)
    }
    return describe(status ?? {}, prefs ?? {}, serve, showAuthUrl)
  }

  /** A masked edit: only the fields sent change, after every one of them was checked. */
  async settings(body: SettingsBody, actor: Actor): Promise<VpnStatus> {
    const edit: Record<string, unknown> = {}
    const set = (field: string, value: unknown) => {
      edit[field] = value
      edit[`${field}Set`] = true
    }
    if (body.acceptRoutes !== undefined) set('RouteAll', body.acceptRoutes)
    if (body.acceptDns !== undefined) set('CorpDNS', body.acceptDns)
    if (body.ssh !== undefined) set('RunSSH', body.ssh)
    if (body.shieldsUp !== undefined) set('ShieldsUp', body.shieldsUp)
    if (body.hostname !== undefined) set('Hostname', body.hostname)
    if (body.exitNodeId !== undefined) {
      if (body.exitNodeId !== '') await this.#checkExitNode(body.exitNodeId)
      // As `tailscale set --exit-node` does: choose by id, clear any choice by IP.
      set('ExitNodeID', body.exitNodeId)
      set('ExitNodeIP', '')
    }
    const before = await this.#prefs()
    await this.#change('vpn.settings', actor, { changes: body, before }, () => this.#api.call('PATCH', PREFS, edit))
    return this.status(true)
  }

  async connect(up: boolean, actor: Actor): Promise<VpnStatus> {
    const status = await this.#call<Status>('GET', `${STATUS}?peers=false`)
    if (up && !LOGGED_IN_STATES.has(status.BackendState ?? '')) {
      throw VpnErrors.needsLogin(`This node is not logged in (${status.BackendState || 'no state'}): log in first`)
    }
    // What `tailscale up` / `down` and tailscale's web client do: flip WantRunning, nothing else.
    await this.#change('vpn.connect', actor, { up }, () =>
      this.#api.call('PATCH', PREFS, { WantRunning: up, WantRunningSet: true }),
    )
    return this.status(true)
  }

  async logout(actor: Actor): Promise<VpnStatus> {
    this.#stopLoginWatch()
    await this.#change('vpn.logout', actor, {}, () => this.#api.call('POST', '/localapi/v0/logout'))
    return this.status(true)
  }

  /**
   * Starts an interactive login and answers its URL, as tailscale's web client does (client/web/web.go
   * tailscaleUp): a pending URL is answered as it is; a logged-in node needs none; otherwise watch the IPN bus
   * FIRST, then start the backend if it never was and ask for the login, and answer the first BrowseToURL (or
   * nothing, if the node comes up Running without one). The watch then stays open, up to 15 minutes, to audit the
   * login's end.
   */
  async login(actor: Actor): Promise<{ authUrl: string | null; backendState: string }> {
    const status = await this.#call<Status>('GET', `${STATUS}?peers=false`)
    const state = status.BackendState ?? 'NoState'
    if (status.AuthURL) return { authUrl: status.AuthURL, backendState: state }
    if (LOGGED_IN_STATES.has(state)) return { authUrl: null, backendState: state }
    this.#stopLoginWatch()
    const outcome = await new Promise<{ authUrl: string | null; backendState: string }>((resolve, reject) => {
      let watch: BusWatch | null = null
      let done = false
      const finish = (err: Error | null, authUrl: string | null = null, backendState = state) => {
        if (done) return
        done = true
        clearTimeout(timer)
        if (err) reject(err)
        else resolve({ authUrl, backendState })
        // After handing out a URL, keep listening (synchronously here, so no message falls between) for the end.
        if (watch && !err && authUrl !== null) this.#keepLoginWatch(watch)
        else watch?.close()
      }
      const timer = setTimeout(
        () =>
          finish(
            VpnErrors.loginTimeout(
              `tailscaled gave no login URL within ${this.#loginTimeoutMs / 1000} s; is its control server reachable?`,
            ),
          ),
        this.#loginTimeoutMs,
      )
      this.#api
        .watch(
          0,
          (n) => {
            if (typeof n.ErrMessage === 'string') {
              if (done) this.#loginEnded(actor, false, n.ErrMessage)
              else finish(VpnErrors.loginFailed(`tailscaled: ${n.ErrMessage}`))
            } else if (n.State === STATE_RUNNING || n.LoginFinished) {
              if (done) this.#loginEnded(actor, true)
              else finish(null, null, 'Running')
            } else if (typeof n.BrowseToURL === 'string' && n.BrowseToURL) finish(null, n.BrowseToURL, 'NeedsLogin')
          },
          (err) => (done ? this.#stopLoginWatch() : finish(asHostdError(err))),
        )
        .then(async (w) => {
          watch = w
          if (done) return w.close()
          if (state === 'NoState') await this.#api.call('POST', '/localapi/v0/start', {})
          await this.#api.call('POST', '/localapi/v0/login-interactive')
        })
        .catch((err: unknown) => finish(asHostdError(err)))
    }).catch(async (err: unknown) => {
      await this.#audit.record(
        { action: 'vpn.login', result: 'failure', detail: { error: (err as Error).message } },
        actor,
      )
      throw err
    })
    // The URL itself is never audited: whoever opens it first puts this machine into their tailnet.
    await this.#audit.record(
      { action: 'vpn.login', detail: { authUrlIssued: outcome.authUrl !== null, backendState: outcome.backendState } },
      actor,
    )
    return { authUrl: outcome.authUrl, backendState: outcome.backendState }
  }

  stop(): void {
    this.#stopLoginWatch()
  }

  #keepLoginWatch(watch: BusWatch): void {
    const timer = setTimeout(() => this.#stopLoginWatch(), LOGIN_WATCH_MS)
    timer.unref()
    this.#loginWatch = { watch, timer }
  }

  #loginEnded(actor: Actor, ok: boolean, error?: string): void {
    this.#stopLoginWatch()
    this.#audit
      .record(
        {
          action: 'vpn.login.finished',
          result: ok ? 'success' : 'failure',
          detail: ok ? { backendState: 'Running' } : { error },
        },
        actor,
      )
      .catch((err: unknown) => this.#log.warn({ err }, 'auditing the end of a VPN login failed'))
  }

  #stopLoginWatch(): void {
    if (!this.#loginWatch) return
    clearTimeout(this.#loginWatch.timer)
    this.#loginWatch.watch.close()
    this.#loginWatch = null
  }

  async #checkExitNode(id: string): Promise<void> {
    const status = await this.#call<Status>('GET', STATUS)
    const peer = Object.values(status.Peer ?? {}).find((p) => p.ID === id)
    if (!peer) throw VpnErrors.invalidSetting(`exitNodeId: no peer has the id ${id}`)
    if (!peer.ExitNodeOption)
      throw VpnErrors.invalidSetting(`exitNodeId: ${nameOf(peer)} (${id}) does not offer to be an exit node`)
  }

  async #prefs(): Promise<VpnStatus['prefs']> {
    return prefsOf(await this.#call<Prefs>('GET', PREFS))
  }

  /** A change, audited with its outcome; tailscaled's refusals become 409 with its own words. */
  async #change(
    action: string,
    actor: Actor,
    detail: Record<string, unknown>,
    apply: () => Promise<unknown>,
  ): Promise<void> {
    try {
      await apply()
    } catch (err) {
      const e = asHostdError(err)
      await this.#audit.record({ action, result: 'failure', detail: { ...detail, error: e.message } }, actor)
      throw e
    }
    await this.#audit.record({ action, detail }, actor)
  }

  async #call<T>(method: 'GET', path: string): Promise<T> {
    return this.#api.call<T>(method, path).catch((err: unknown) => {
      throw asHostdError(err)
    })
  }
}

function asHostdError(err: unknown): HostdError {
  if (err instanceof HostdError) return err
  if (err instanceof LocalApiRefusal) {
    return err.status >= 500
      ? VpnErrors.badAnswer(`tailscaled failed: ${err.message}`)
      : VpnErrors.refused(`tailscaled refused: ${err.message}`)
  }
  return VpnErrors.badAnswer(`tailscaled: ${(err as Error).message}`)
}

function absent(socketMissing: boolean, message: string): VpnStatus {
  return {
    installed: !socketMissing,
    running: false,
    message,
    version: null,
    backendState: null,
    loggedIn: false,
    loginPending: false,
    authUrl: null,
    self: null,
    tailnet: null,
    peers: [],
    exitNode: null,
    remoteAccess: { ssh: false, serve: null },
    prefs: null,
    health: [],
  }
}

const nameOf = (p: PeerStatus) => (p.DNSName ? p.DNSName.split('.')[0]! : '') || p.HostName || p.ID || ''

function nodeOf(p: PeerStatus) {
  return {
    id: p.ID ?? '',
    name: nameOf(p),
    hostName: p.HostName ?? '',
    dnsName: (p.DNSName ?? '').replace(/\.$/, ''),
    os: p.OS ?? '',
    addresses: p.TailscaleIPs ?? [],
    online: p.Online === true,
  }
}

function prefsOf(p: Prefs): NonNullable<VpnStatus['prefs']> {
  return {
    acceptRoutes: p.RouteAll === true,
    acceptDns: p.CorpDNS === true,
    ssh: p.RunSSH === true,
    shieldsUp: p.ShieldsUp === true,
    exitNodeId: p.ExitNodeID ?? '',
    hostname: p.Hostname ?? '',
    wantRunning: p.WantRunning === true,
    loggedOut: p.LoggedOut === true,
  }
}

function describe(s: Status, p: Prefs, serve: ServeConfig | null, showAuthUrl: boolean): VpnStatus {
  const peers = Object.values(s.Peer ?? {})
    .map((peer) => ({
      ...nodeOf(peer),
      lastSeen: peer.LastSeen && peer.LastSeen !== ZERO_TIME && !peer.Online ? peer.LastSeen : null,
      exitNode: peer.ExitNode === true,
      exitNodeOption: peer.ExitNodeOption === true,
      active: peer.Active === true,
      rxBytes: peer.RxBytes ?? 0,
      txBytes: peer.TxBytes ?? 0,
      relay: peer.Relay ?? '',
    }))
    .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id))
  const exit = s.ExitNodeStatus?.ID ? s.ExitNodeStatus : null
  const loggedIn = s.HaveNodeKey === true && p.LoggedOut !== true
  return {
    installed: true,
    running: true,
    message: null,
    version: s.Version ?? null,
    backendState: s.BackendState ?? null,
    loggedIn,
    loginPending: !!s.AuthURL,
    authUrl: showAuthUrl && s.AuthURL ? s.AuthURL : null,
    self: loggedIn && s.Self ? nodeOf(s.Self) : null,
    tailnet:
      loggedIn && s.CurrentTailnet
        ? {
            name: s.CurrentTailnet.Name ?? '',
            magicDnsSuffix: s.CurrentTailnet.MagicDNSSuffix ?? '',
            magicDnsEnabled: s.CurrentTailnet.MagicDNSEnabled === true,
          }
        : null,
    peers,
    exitNode: exit
      ? {
          id: exit.ID!,
          name: peers.find((x) => x.id === exit.ID)?.name ?? exit.ID!,
          online: exit.Online === true,
          addresses: (exit.TailscaleIPs ?? []).map((a) => a.replace(/\/\d+$/, '')),
        }
      : null,
    remoteAccess: {
      ssh: p.RunSSH === true,
      serve:
        serve === null
          ? null
          : {
              enabled: Object.keys(serve.TCP ?? {}).length > 0 || Object.keys(serve.Web ?? {}).length > 0,
              funnel: Object.values(serve.AllowFunnel ?? {}).some(Boolean),
              tcpPorts: Object.keys(serve.TCP ?? {})
                .map(Number)
                .filter(Number.isInteger)
                .sort((a, b) => a - b),
              web: Object.keys(serve.Web ?? {}).sort(),
            },
    },
    prefs: prefsOf(p),
    health: (s.Health ?? []).filter((h): h is string => typeof h === 'string'),
  }
}
