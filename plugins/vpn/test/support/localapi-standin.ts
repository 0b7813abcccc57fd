/**
 * A STAND-IN for tailscaled's LocalAPI. tailscaled and Tailscale's control plane cannot run on this test machine,
 * so the VPN tests talk to this small HTTP server on a Unix socket in a temporary directory instead. It is written
 * from tailscale's own code (tailscale/tailscale de9ec7e), and copies only what hostd relies on:
 *   - ipn/localapi/localapi.go ServeHTTP: any Referer or Origin header, or a Host other than "" or
 *     "local-tailscaled.sock", is refused with 403 "invalid localapi request"; every answer carries
 *     Tailscale-Version; handlers answer their own refusals ("want POST", "prefs write access denied", ...).
 *   - read-only clients (ipnserver actor.Permissions: not root, not the operator): reads work, writes get 403.
 *   - PATCH prefs takes an ipn.MaskedPrefs and changes only the fields whose `<Field>Set` is true
 *     (ApplyEdits), checks the result (checkPrefsLocked: "bad hostname [test]", shields-up with Funnel on) and
 *     answers the new prefs, or 400 {"Error": ...} changing nothing.
 *   - the login state machine: NeedsLogin -> login-interactive (204; needs a started backend) -> a Notify
 *     {"BrowseToURL": ...} on watch-ipn-bus -> on the test's `finishLogin()`, {"State": 6, "LoginFinished": {}}
 *     (State is the integer ipn.State: 0 NoState .. 6 Running); logout drops the node key and resets the prefs
 *     with LoggedOut true and WantRunning false (LocalBackend.Logout).
 *   - status is ipnstate.Status built from test/fixtures/status-running.json (field names from
 *     ipn/ipnstate/ipnstate.go), prefs start as test/fixtures/prefs-new.json (ipn.NewPrefs on Linux).
 * The control server behind it is not modelled: login URLs are https://login.example.invalid/a/<random>.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const FIXTURES = join(import.meta.dirname, '..', 'fixtures')
const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'))
const STATES = [
  'NoState',
  'InUseOtherUser',
  'NeedsLogin',
  'NeedsMachineAuth',
  'Stopped',
  'Starting',
  'Running',
] as const
const RUNNING = 6
const STOPPED = 4
const NEEDS_LOGIN = 2
const VERSION = '1.94.1-t0123456789-g0123456789'
const NOTIFY_INITIAL_STATE = 2

export interface StandInOptions {
  /** Where the backend starts: NoState (not started yet), NeedsLogin (started, logged out) or Running. */
  state?: 'NoState' | 'NeedsLogin' | 'Running'
  /** Answer like tailscaled does to a client that is neither root nor its operator. */
  readOnly?: boolean
  /** tailscale serve shares a site over Funnel (test/fixtures/serve-config.json); otherwise nothing is served. */
  funnel?: boolean
}

/** What the (absent) control server does after login-interactive: send a URL, refuse, or never answer. */
export type ControlBehaviour = 'answers' | 'silent' | { refuses: string }

export interface StandInLocalApi {
  socketPath: string
  /** Every request received: method, URL and headers. */
  requests: { method: string; url: string; headers: IncomingMessage['headers'] }[]
  /** Every MaskedPrefs body received by PATCH prefs, as sent. */
  edits: Record<string, any>[]
  readOnly: boolean
  control: ControlBehaviour
  /** The control server's side of a login: the user opened the URL and approved. */
  finishLogin(): void
  /** The control server refused the login. */
  failLogin(message: string): void
  prefs(): Record<string, any>
  backendState(): string
  watchers(): number
  /** Stops serving. `leaveDeadSocket` leaves a file nobody answers on, as a crashed tailscaled does. */
  stop(leaveDeadSocket?: boolean): Promise<void>
  remove(): Promise<void>
}

export async function startStandInLocalApi(options: StandInOptions = {}): Promise<StandInLocalApi> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-localapi-standin-'))
  const socketPath = join(dir, 'tailscaled.sock')
  const requests: StandInLocalApi['requests'] = []
  const edits: Record<string, any>[] = []
  const watchers = new Set<{ res: ServerResponse }>()
  const fresh = () => fixture('prefs-new.json') as Record<string, any>
  let state: number = options.state === 'Running' ? RUNNING : options.state === 'NoState' ? 0 : NEEDS_LOGIN
  let started = options.state !== 'NoState'
  let haveNodeKey = options.state === 'Running'
  let authURL = ''
  let prefs = fresh()
  if (haveNodeKey) prefs.WantRunning = true
  const serve = options.funnel ? fixture('serve-config.json') : {}
  const api = { readOnly: options.readOnly === true, control: 'answers' as ControlBehaviour }

  const broadcast = (notify: Record<string, unknown>) => {
    for (const w of watchers) w.res.write(`${JSON.stringify(notify)}\n`)
  }

  function status(withPeers: boolean): Record<string, any> {
    const full = fixture('status-running.json')
    const st: Record<string, any> = { ...full, BackendState: STATES[state], HaveNodeKey: haveNodeKey, AuthURL: authURL }
    if (!haveNodeKey) {
      return {
        ...st,
        TailscaleIPs: null,
        MagicDNSSuffix: '',
        CurrentTailnet: null,
        CertDomains: null,
        Peer: null,
        User: null,
        Self: {
          ID: '',
          PublicKey: `nodekey:${'0'.repeat(64)}`,
          HostName: prefs.Hostname || 'homeserver',
          DNSName: '',
          OS: 'linux',
          UserID: 0,
          TailscaleIPs: null,
          Addrs: [],
          CurAddr: '',
          Relay: '',
          RxBytes: 0,
          TxBytes: 0,
          Created: '0001-01-01T00:00:00Z',
          LastWrite: '0001-01-01T00:00:00Z',
          LastSeen: '0001-01-01T00:00:00Z',
          LastHandshake: '0001-01-01T00:00:00Z',
          Online: false,
          ExitNode: false,
          ExitNodeOption: false,
          Active: false,
          PeerAPIURL: null,
          InNetworkMap: false,
          InMagicSock: false,
          InEngine: false,
        },
      }
    }
    st.Self = { ...full.Self, HostName: prefs.Hostname || full.Self.HostName, Online: state === RUNNING }
    const peers = Object.values(full.Peer) as Record<string, any>[]
    for (const peer of peers) peer.ExitNode = peer.ID === prefs.ExitNodeID
    const exit = peers.find((p) => p.ExitNode)
    if (exit)
      st.ExitNodeStatus = {
        ID: exit.ID,
        Online: exit.Online,
        TailscaleIPs: exit.TailscaleIPs.map((ip: string) => `${ip}/${ip.includes(':') ? 128 : 32}`),
      }
    if (!withPeers) st.Peer = null
    return st
  }

  /** ApplyEdits, then checkPrefsLocked's checks this stand-in can model. */
  function edit(masked: Record<string, any>): string | null {
    const next = { ...prefs }
    for (const [key, value] of Object.entries(masked)) {
      if (!key.endsWith('Set') || value !== true) continue
      const field = key.slice(0, -3)
      if (field in prefs) next[field] = field in masked ? masked[field] : zeroOf(prefs[field])
    }
    if (next.Hostname === 'badhostname.tailscale.') return 'bad hostname [test]'
    if (next.ShieldsUp && Object.values(serve.AllowFunnel ?? {}).some(Boolean))
      return 'Cannot enable shields-up when Funnel is enabled.'
    const wasRunning = prefs.WantRunning
    prefs = next
    if (haveNodeKey && next.WantRunning !== wasRunning) {
      state = next.WantRunning ? RUNNING : STOPPED
      broadcast({ State: state })
    }
    broadcast({ Prefs: prefs })
    return null
  }

  const text = (res: ServerResponse, code: number, body: string) => {
    res
      .writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' })
      .end(`${body}\n`)
  }
  const json = (res: ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'Content-Type': 'application/json' }).end(`${JSON.stringify(body, null, '\t')}\n`)
  }
  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let body = ''
      req
        .setEncoding('utf8')
        .on('data', (c: string) => (body += c))
        .on('end', () => resolve(body))
    })

  const server = createServer(async (req, res) => {
    requests.push({ method: req.method!, url: req.url!, headers: req.headers })
    if (req.headers.referer || req.headers.origin || !['', 'local-tailscaled.sock'].includes(req.headers.host ?? '')) {
      return text(res, 403, 'invalid localapi request')
    }
    res.setHeader('Tailscale-Version', VERSION)
    res.setHeader('Tailscale-Cap', '145')
    const url = new URL(req.url!, 'http://local-tailscaled.sock')
    const write = req.method !== 'GET' && req.method !== 'HEAD'
    switch (url.pathname) {
      case '/localapi/v0/status':
        return json(res, 200, status(url.searchParams.get('peers') !== 'false'))
      case '/localapi/v0/prefs': {
        if (req.method === 'GET') return json(res, 200, prefs)
        if (req.method !== 'PATCH') return text(res, 405, 'unsupported method')
        if (api.readOnly) return text(res, 403, 'prefs write access denied')
        let masked: Record<string, any>
        try {
          masked = JSON.parse(await readBody(req))
        } catch (err) {
          return text(res, 400, (err as Error).message)
        }
        edits.push(masked)
        const refused = edit(masked)
        return refused ? json(res, 400, { Error: refused }) : json(res, 200, prefs)
      }
      case '/localapi/v0/start':
        if (api.readOnly) return text(res, 403, 'access denied')
        if (req.method !== 'POST') return text(res, 400, 'want POST')
        await readBody(req)
        started = true
        if (state === 0) {
          state = haveNodeKey ? (prefs.WantRunning ? RUNNING : STOPPED) : NEEDS_LOGIN
          broadcast({ State: state })
        }
        return res.writeHead(204).end()
      case '/localapi/v0/login-interactive':
        if (api.readOnly) return text(res, 403, 'login access denied')
        if (req.method !== 'POST') return text(res, 400, 'want POST')
        if (!started) return text(res, 500, 'LocalBackend.assertClient: b.cc == nil')
        // The control server answers asynchronously; whoever is not watching the bus by then misses the message.
        if (api.control === 'answers') {
          authURL = `https://login.example.invalid/a/${randomBytes(6).toString('hex')}`
          setTimeout(() => broadcast({ BrowseToURL: authURL }), 20)
        } else if (api.control !== 'silent') {
          const { refuses } = api.control
          setTimeout(() => broadcast({ ErrMessage: refuses }), 20)
        }
        return res.writeHead(204).end()
      case '/localapi/v0/logout':
        if (api.readOnly) return text(res, 403, 'logout access denied')
        if (req.method !== 'POST') return text(res, 400, 'want POST')
        haveNodeKey = false
        authURL = ''
        prefs = { ...fresh(), LoggedOut: true, WantRunning: false }
        state = NEEDS_LOGIN
        broadcast({ State: state, Prefs: prefs })
        return res.writeHead(204).end()
      case '/localapi/v0/serve-config':
        if (write) return text(res, 405, 'method not allowed')
        res.setHeader('Etag', '"standin"')
        return json(res, 200, serve)
      case '/localapi/v0/watch-ipn-bus': {
        const mask = Number(url.searchParams.get('mask') ?? '0')
        if (!Number.isInteger(mask) || mask < 0) return text(res, 400, 'bad mask')
        res.writeHead(200, { 'Content-Type': 'application/json' })
        res.flushHeaders()
        if (mask & NOTIFY_INITIAL_STATE)
          res.write(
            `${JSON.stringify({ Version: VERSION, SessionID: 'standin', State: state, ...(authURL ? { BrowseToURL: authURL } : {}) })}\n`,
          )
        const watcher = { res }
        watchers.add(watcher)
        req.on('close', () => watchers.delete(watcher))
        return
      }
      default:
        return text(res, 404, '404 page not found')
    }
  })
  await new Promise<void>((resolve) => server.listen(socketPath, resolve))

  return {
    socketPath,
    requests,
    edits,
    get readOnly() {
      return api.readOnly
    },
    set readOnly(value: boolean) {
      api.readOnly = value
    },
    get control() {
      return api.control
    },
    set control(value: ControlBehaviour) {
      api.control = value
    },
    finishLogin() {
      haveNodeKey = true
      authURL = ''
      prefs = { ...prefs, LoggedOut: false, WantRunning: true }
      state = RUNNING
      broadcast({ State: RUNNING, LoginFinished: {} })
    },
    failLogin(message) {
      authURL = ''
      broadcast({ ErrMessage: message })
    },
    prefs: () => ({ ...prefs }),
    backendState: () => STATES[state]!,
    watchers: () => watchers.size,
    async stop(leaveDeadSocket = false) {
      for (const w of watchers) w.res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      if (leaveDeadSocket) await writeFile(socketPath, '')
    },
    async remove() {
      await rm(dir, { recursive: true, force: true })
    },
  }
}

function zeroOf(value: unknown): unknown {
  if (typeof value === 'boolean') return false
  if (typeof value === 'number') return 0
  if (typeof value === 'string') return ''
  return null
}
