/**
 * The fleet: this host's membership (NATS connection, presence heartbeat with inventory), the members' registry as the
 * presence bucket says, remote calls both ways (signing ours, verifying theirs and answering through the local API as
 * the caller), join codes and the role map. See README.md.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { PassThrough, type Readable } from 'node:stream'
import { hostname } from 'node:os'
import { join } from 'node:path'
import type { Msg, MsgHdrs } from '@nats-io/transport-node'
import type { WebSocket } from 'ws'
import {
  HostdError,
  isRole,
  type AuditActor,
  type AuditService,
  type KernelInfo,
  type Logger,
  type OptionalServices,
  type Role,
  type SecretSealer,
  type SessionUser,
  type Settings,
} from '@hostd/sdk'
import { FleetErrors } from './errors.ts'
import { type Assertion, AssertionError, bodyDigest, generateHostKeys, Signer, Verifier } from './identity.ts'
import { readInventory, type Inventory } from './inventory.ts'
import type { RemoteDispatch } from './tokens.ts'
import type { EmbeddedServer } from './embedded.ts'
import { newPassword } from './password.ts'
import { readBridgeHeaders, SocketBridge, writeBridgeHeaders, type BridgeHeaders } from './socket-bridge.ts'
import { HOST_NAME, requestSubject, streamSubject, type ServerUser } from './subjects.ts'
import { Transport, type NatsCredentials } from './transport.ts'

/** How often a member writes its presence, and how old it may be before the member is shown down. */
export const HEARTBEAT_MS = 2000
export const DOWN_AFTER_MS = 13_000
/** A streamed answer's flow control: pieces of at most 64 KiB, 32 in flight, credit given back 8 at a time; a stream
 * whose caller gives no credit for a minute is ended. */
const PIECE_BYTES = 64 * 1024
const INITIAL_CREDIT = 32
const CREDIT_STEP = 8
const STREAM_IDLE_MS = 60_000
/** How long a remote call may take. */
const CALL_TIMEOUT_MS = 15_000
/** Response headers that cross back (as the isolated plugins' channel allows). */
const ANSWER_HEADERS = ['content-type', 'cache-control', 'content-disposition', 'etag', 'last-modified', 'retry-after']
/** Paths never forwarded: no second hop, no sign-in on another host's behalf. */
const REFUSED_PREFIXES = ['/api/hosts', '/api/auth', '/api/fleet', '/api/setup']

export interface FleetEnv {
  natsUrl?: string
  credentials: NatsCredentials
  host?: string
  replicas: number
  /** Start and supervise a local nats-server (when no natsUrl is given). */
  embedded?: { port: number; listen: string; url: string | null; binary: string }
}

/** HOSTD_FLEET_* from the environment (README.md, "Configuration"). */
export function readFleetEnv(env: NodeJS.ProcessEnv = process.env): FleetEnv {
  return {
    natsUrl: env.HOSTD_FLEET_NATS_URL || undefined,
    credentials: {
      user: env.HOSTD_FLEET_NATS_USER || undefined,
      password: env.HOSTD_FLEET_NATS_PASSWORD || undefined,
      creds: env.HOSTD_FLEET_NATS_CREDS || undefined,
      nkeySeed: env.HOSTD_FLEET_NATS_NKEY_SEED || undefined,
    },
    host: env.HOSTD_FLEET_HOST || undefined,
    replicas: Math.min(5, Math.max(1, Number(env.HOSTD_FLEET_KV_REPLICAS) || 1)),
    ...(env.HOSTD_FLEET_EMBEDDED === '1'
      ? {
          embedded: {
            port: Number(env.HOSTD_FLEET_EMBEDDED_PORT) || 4222,
            listen: env.HOSTD_FLEET_EMBEDDED_LISTEN || '127.0.0.1',
            url: env.HOSTD_FLEET_EMBEDDED_URL || null,
            binary: env.HOSTD_FLEET_NATS_SERVER || 'nats-server',
          },
        }
      : {}),
  }
}

export interface Presence {
  host: string
  publicKey: string
  version: string
  status: 'up' | 'stopped'
  inventory: Inventory | null
}

export interface HostView {
  host: string
  self: boolean
  up: boolean
  lastSeen: string
  version: string
  inventory: Inventory | null
}

interface Membership {
  servers: string[]
  host: string
  user: string | null
  passwordSealed: string | null
  issuer: string | null
  joinedAt: string
}

interface JoinCodeRecord {
  host: string
  exp: number
  used: boolean
}

interface JoinCode {
  v: 1
  servers: string[]
  host: string
  user: string | null
  password: string | null
  issuer: string
  issuerKey: string
  nonce: string
  exp: number
}

export interface FleetDeps {
  settings: Settings
  audit: AuditService
  log: Logger
  kernel: KernelInfo
  secrets: SecretSealer
  optional: OptionalServices
  dispatch: RemoteDispatch
}

export interface ForwardRequest {
  host: string
  method: string
  /** Path and query on the member, `/api/...`. */
  path: string
  headers: Record<string, string>
  body: Buffer | undefined
  user: SessionUser
  /** The caller signed in with a session here (not an API token): signed into the assertion (sessionOnly sockets). */
  session?: boolean
}

export interface ForwardAnswer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

/** A streamed answer this member is sending. */
interface OutgoingStream {
  origin: string
  credit: number
  body: Readable
  idle: NodeJS.Timeout
  end(): void
}

export interface StreamAnswer {
  status: number
  headers: Record<string, string>
  body: Readable
}

const PRIVATE_KEY = 'key'
const MEMBERSHIP = 'membership'
const PINS = 'pins'
const ROLES = 'roles'
const CODES = 'codes'
const SERVER_USERS = 'serverUsers'

/** A member's user on the embedded server, its password sealed. */
interface StoredUser {
  host: string
  user: string
  passwordSealed: string
}

export class FleetService {
  readonly #d: FleetDeps
  readonly #env: FleetEnv
  readonly #verifier = new Verifier()
  /** host -> its presence and the server time of its last write. */
  readonly #hosts = new Map<string, { p: Presence; at: number }>()
  #transport: Transport | null = null
  #signer: Signer | null = null
  #publicKey = ''
  #host = ''
  #servers: string[] = []
  #timer: NodeJS.Timeout | null = null
  #pins: Record<string, string> = {}
  #roles: Record<string, Role> = {}
  #inventory: Inventory | null = null
  #stopped = false
  #retry: NodeJS.Timeout | null = null
  /** Streamed answers being sent, by `origin/id`. */
  readonly #streams = new Map<string, OutgoingStream>()
  /** Sockets carried across members: answered here by `origin/id`, opened from here by `to:member/id`. */
  readonly #sockets = new Map<string, SocketBridge>()
  #server: EmbeddedServer | null = null
  /** The embedded server's URL as other hosts reach it (what a join code carries). */
  #advertised: string | null = null

  constructor(deps: FleetDeps, env: FleetEnv) {
    this.#d = deps
    this.#env = env
  }

  get host(): string {
    return this.#host
  }

  get joined(): boolean {
    return this.#transport !== null
  }

  async start(): Promise<void> {
    this.#pins = (await this.#d.settings.get<Record<string, string>>(PINS)) ?? {}
    this.#roles = (await this.#d.settings.get<Record<string, Role>>(ROLES)) ?? {}
    const membership = await this.#d.settings.get<Membership>(MEMBERSHIP)
    if (!this.#env.natsUrl && this.#env.embedded) {
      await this.#startEmbedded(this.#env.embedded)
    } else if (this.#env.natsUrl) {
      this.#rejoin(this.#env.natsUrl.split(','), this.#env.host ?? defaultHostName(), this.#env.credentials)
    } else if (membership) {
      const password = membership.passwordSealed ? await this.#d.secrets.open(membership.passwordSealed) : null
      const credentials = { user: membership.user ?? undefined, password: password ?? undefined }
      this.#rejoin(membership.servers, membership.host, credentials)
    }
  }

  /** The embedded server with every member's user (this host's made at its first start), then this host joins it. */
  async #startEmbedded(o: NonNullable<FleetEnv['embedded']>): Promise<void> {
    const { EmbeddedServer } = await import('./embedded.ts')
    const host = this.#env.host ?? defaultHostName()
    const server = new EmbeddedServer({
      dir: join(this.#d.kernel.dataDir, 'fleet'),
      port: o.port,
      listen: o.listen,
      binary: o.binary,
      log: this.#d.log,
    })
    let users = (await this.#d.settings.get<StoredUser[]>(SERVER_USERS)) ?? []
    if (!users.some((u) => u.host === host)) {
      users = [...users, { host, user: host, passwordSealed: await this.#d.secrets.seal(newPassword()) }]
      await this.#d.settings.set(SERVER_USERS, users)
    }
    await server.start(await this.#openUsers(users))
    this.#server = server
    this.#advertised = o.url ?? `nats://${hostname()}:${o.port}`
    const own = users.find((u) => u.host === host)!
    const password = (await this.#d.secrets.open(own.passwordSealed)) ?? ''
    this.#rejoin([server.url], host, { user: own.user, password })
  }

  async #openUsers(users: StoredUser[]): Promise<ServerUser[]> {
    const out: ServerUser[] = []
    for (const u of users) {
      const password = await this.#d.secrets.open(u.passwordSealed)
      if (password) out.push({ user: u.user, password, host: u.host })
    }
    return out
  }

  /** A new member's user on the embedded server; resolves once the reloaded server accepts it. */
  async #mintUser(host: string): Promise<{ user: string; password: string }> {
    const users = ((await this.#d.settings.get<StoredUser[]>(SERVER_USERS)) ?? []).filter((u) => u.host !== host)
    const password = newPassword()
    users.push({ host, user: host, passwordSealed: await this.#d.secrets.seal(password) })
    await this.#d.settings.set(SERVER_USERS, users)
    await this.#server!.setUsers(await this.#openUsers(users))
    const { connect } = await import('@nats-io/transport-node')
    const deadline = Date.now() + 5000
    for (;;) {
      try {
        const nc = await connect({ servers: this.#server!.url, user: host, pass: password, reconnect: false })
        await nc.close()
        return { user: host, password }
      } catch (err) {
        if (Date.now() > deadline) throw FleetErrors.unreachable(`nats-server did not take the new user: ${err}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }

  /** At start: NATS may not be up yet, so the first connection is tried again every 5 s in the background. */
  #rejoin(servers: string[], host: string, credentials: NatsCredentials): void {
    this.#host = host
    this.#servers = servers
    const attempt = () => {
      if (this.#stopped || this.#transport) return
      this.#join(servers, host, credentials).catch((err: unknown) => {
        this.#d.log.warn({ reason: (err as Error).message }, 'fleet: cannot join yet; trying again in 5 s')
        if (!this.#stopped) this.#retry = setTimeout(attempt, 5000)
      })
    }
    attempt()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    for (const stream of this.#streams.values()) stream.end()
    for (const bridge of [...this.#sockets.values()]) bridge.close(1001, 'hostd is stopping')
    if (this.#retry) clearTimeout(this.#retry)
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    const t = this.#transport
    this.#transport = null
    if (t) {
      // Shown down at once rather than after the heartbeat's age runs out.
      await this.#publish(t, 'stopped').catch(() => {})
      await t.close()
    }
    await this.#server?.stop()
    this.#server = null
  }

  /** Connects (failing when NATS refuses), then keeps presence going in the background. */
  async #join(servers: string[], host: string, credentials: NatsCredentials): Promise<void> {
    if (!HOST_NAME.test(host)) throw FleetErrors.codeInvalid(`"${host}" is not a host name (a-z, 0-9, -)`)
    await this.#loadKeys()
    const transport = new Transport({
      servers,
      host,
      credentials,
      replicas: this.#env.replicas,
      onPresence: (key, value, created) => this.#onPresence(key, value, created),
      onRequest: (msg) => void this.#onRequest(msg),
      log: this.#d.log,
    })
    try {
      await transport.connect()
    } catch (err) {
      await transport.close().catch(() => {})
      throw FleetErrors.unreachable(
        `NATS at ${servers.join(', ')} refused or did not answer: ${(err as Error).message}`,
      )
    }
    this.#transport = transport
    this.#host = host
    this.#servers = servers
    this.#stopped = false
    void this.#beat()
    this.#timer = setInterval(() => void this.#beat(), HEARTBEAT_MS)
    this.#timer.unref()
  }

  async #loadKeys(): Promise<void> {
    if (this.#signer) return
    const stored = await this.#d.settings.get<{ publicKey: string; privateSealed: string }>(PRIVATE_KEY)
    const pem = stored ? await this.#d.secrets.open(stored.privateSealed) : null
    if (stored && pem) {
      this.#signer = new Signer(pem)
      this.#publicKey = stored.publicKey
      return
    }
    const keys = generateHostKeys()
    await this.#d.settings.set(PRIVATE_KEY, {
      publicKey: keys.publicKey,
      privateSealed: await this.#d.secrets.seal(keys.privatePem),
    })
    this.#signer = new Signer(keys.privatePem)
    this.#publicKey = keys.publicKey
  }

  /** One heartbeat: open the bucket if not yet (JetStream may be electing a leader), read inventory, write. */
  async #beat(): Promise<void> {
    const t = this.#transport
    if (!t || this.#stopped) return
    try {
      if (!t.presenceOpen) await t.openPresence()
      this.#inventory = await readInventory(this.#d, this.#host, this.#inventory)
      await this.#publish(t, 'up')
      // Our own writes come back through the watch every few seconds; when they stop coming while writing works, the
      // watch is stuck (its consumer lived on a node that died): make it again.
      const own = this.#hosts.get(this.#host)
      if (own && Date.now() - own.at > HEARTBEAT_MS * 2.5) {
        this.#d.log.warn('fleet: the presence watch stopped delivering; watching again')
        await t.restartWatch()
      }
    } catch (err) {
      this.#d.log.debug({ err }, 'fleet: heartbeat failed (retried at the next one)')
    }
  }

  #publish(t: Transport, status: Presence['status']): Promise<void> {
    const p: Presence = {
      host: this.#host,
      publicKey: this.#publicKey,
      version: this.#d.kernel.version,
      status,
      inventory: this.#inventory,
    }
    return t.putPresence(JSON.stringify(p))
  }

  #onPresence(key: string, value: Uint8Array | null, created: Date): void {
    if (value === null) {
      this.#hosts.delete(key)
      return
    }
    try {
      const p = JSON.parse(Buffer.from(value).toString('utf8')) as Presence
      // A member writes only its own key (NATS permissions), so the key names who wrote it.
      if (p.host !== key || typeof p.publicKey !== 'string') return
      this.#hosts.set(key, { p, at: created.getTime() })
    } catch {
      /* not ours: ignored */
    }
  }

  /** Every member the presence bucket knows, this host first. */
  hosts(now = Date.now()): HostView[] {
    const out: HostView[] = []
    for (const [host, { p, at }] of this.#hosts) {
      out.push({
        host,
        self: host === this.#host,
        up: p.status === 'up' && now - at < DOWN_AFTER_MS,
        lastSeen: new Date(at).toISOString(),
        version: p.version,
        inventory: p.inventory,
      })
    }
    return out.sort((a, b) => (a.self === b.self ? a.host.localeCompare(b.host) : a.self ? -1 : 1))
  }

  status() {
    return {
      joined: this.joined,
      host: this.#host || null,
      servers: this.#servers,
      publicKey: this.#publicKey || null,
      members: this.#hosts.size,
      embedded: this.#server !== null,
    }
  }

  // ---- remote calls: the calling side

  async forward(req: ForwardRequest, signal?: AbortSignal): Promise<ForwardAnswer> {
    const t = this.#transport
    if (!t) throw FleetErrors.notJoined()
    checkPath(req.path)
    if (req.host === this.#host) {
      const identity = { userId: req.user.id, username: req.user.username, role: req.user.role, origin: this.#host }
      return this.#runLocally(req.method, req.path, req.headers, req.body, identity, Number.POSITIVE_INFINITY, signal)
    }
    if (!this.#hosts.has(req.host)) throw FleetErrors.hostUnknown(`No member of the fleet is named "${req.host}"`)
    const h = this.#callHeaders(t, req)
    const reply = await this.#request(t, req.host, h, req.body)
    return {
      status: replyStatus(req.host, reply),
      headers: answerHeaders(reply.headers),
      body: Buffer.from(reply.data),
    }
  }

  /**
   * A call whose answer is a stream (server-sent events): the member sends its pieces on
   * `hostd.fleet.stream.<this host>.<member>.<id>`, at most INITIAL_CREDIT ahead of what this host has passed on to
   * its client; this host gives credit back as its client reads, and cancels when its client goes away.
   */
  async forwardStream(req: ForwardRequest, signal: AbortSignal): Promise<StreamAnswer> {
    const t = this.#transport
    if (!t) throw FleetErrors.notJoined()
    checkPath(req.path)
    if (req.host === this.#host) {
      const identity = { userId: req.user.id, username: req.user.username, role: req.user.role, origin: this.#host }
      const res = await this.#d.dispatch.dispatch({
        method: req.method,
        url: req.path,
        headers: req.headers,
        body: req.body,
        identity,
        signal,
      })
      return { status: res.status, headers: pick(res.headers), body: res.body }
    }
    if (!this.#hosts.has(req.host)) throw FleetErrors.hostUnknown(`No member of the fleet is named "${req.host}"`)
    const id = randomUUID()
    const control = (kind: 'credit' | 'cancel', credit = 0) => {
      const h = t.headers()
      h.set('Hostd-Kind', kind)
      h.set('Hostd-Stream', id)
      if (credit) h.set('Hostd-Credit', String(credit))
      if (t.connected) t.publish(requestSubject(req.host, this.#host), new Uint8Array(), h)
    }
    const out = new PassThrough()
    let expected = 0
    let consumed = 0
    let ended = false
    const grant = () => {
      if (consumed >= CREDIT_STEP && !out.writableNeedDrain) {
        control('credit', consumed)
        consumed = 0
      }
    }
    out.on('drain', grant)
    const sub = t.subscribe(streamSubject(this.#host, req.host, id), (msg) => {
      const end = msg.headers?.get('Hostd-End')
      if (end) {
        ended = true
        sub.unsubscribe()
        if (end === 'end') out.end()
        else out.destroy(new Error(`${req.host} ended the stream: ${end}`))
        return
      }
      // Core NATS delivers at most once: a piece missing means the stream is broken, not silently shorter.
      if (Number(msg.headers?.get('Hostd-Seq')) !== expected++) {
        ended = true
        sub.unsubscribe()
        control('cancel')
        out.destroy(new Error('a piece of the stream was lost'))
        return
      }
      out.write(Buffer.from(msg.data))
      consumed++
      grant()
    })
    out.once('close', () => {
      sub.unsubscribe()
      if (!ended) control('cancel')
    })
    signal.addEventListener('abort', () => out.destroy(), { once: true })
    const h = this.#callHeaders(t, req)
    h.set('Hostd-Stream', id)
    let reply: Awaited<ReturnType<Transport['request']>>
    try {
      reply = await this.#request(t, req.host, h, req.body)
    } catch (err) {
      ended = true
      out.destroy()
      throw err
    }
    const status = replyStatus(req.host, reply)
    if (reply.headers?.get('Hostd-Streaming') !== '1') {
      // An ordinary answer (an error, or a route that does not stream): all in this one reply.
      ended = true
      out.end(Buffer.from(reply.data))
    }
    return { status, headers: answerHeaders(reply.headers), body: out }
  }

  /**
   * A socket of member `req.host` (the terminal, container logs) for `socket`, a socket of this host: B opens its own
   * socket as the verified caller (the kernel's injected upgrade), then both ends relay frames over NATS with credit
   * (socket-bridge.ts): A to B on B's request subject, B to A on `hostd.fleet.stream.<A>.<B>.<id>`. A refusal ends
   * `socket` with the JSON error frame and close code 4000 + its status, as sockets here do.
   */
  async bridgeSocket(
    socket: WebSocket,
    req: ForwardRequest & { protocols: string[] },
    signal: AbortSignal,
  ): Promise<void> {
    socket.pause()
    let bridge: SocketBridge | null = null
    try {
      const t = this.#transport
      if (!t) throw FleetErrors.notJoined()
      checkPath(req.path)
      if (req.host === this.#host) return await this.#bridgeLocally(socket, req, signal)
      if (!this.#hosts.has(req.host)) throw FleetErrors.hostUnknown(`No member of the fleet is named "${req.host}"`)
      const id = randomUUID()
      const key = `to:${req.host}/${id}`
      // Frames the browser sent before the member answered wait for it (it knows the socket only then).
      let waiting: [BridgeHeaders, Uint8Array][] | null = []
      const toMember = (bh: BridgeHeaders, data: Uint8Array) => {
        if (waiting) return void waiting.push([bh, data])
        const h = t.headers()
        h.set('Hostd-Kind', 'sock')
        h.set('Hostd-Stream', id)
        writeBridgeHeaders(bh, (name, value) => h.set(name, value))
        if (t.connected) t.publish(requestSubject(req.host, this.#host), data, h)
      }
      const carried = new SocketBridge(socket, toMember, () => {
        sub.unsubscribe()
        this.#sockets.delete(key)
      })
      bridge = carried
      this.#sockets.set(key, carried)
      const sub = t.subscribe(streamSubject(this.#host, req.host, id), (msg) => {
        const bh = readBridgeHeaders((name) => msg.headers?.get(name) || undefined)
        if (bh) carried.receive(bh, msg.data)
      })
      // The session here ended (the kernel closes the browser's socket with 4401/4403 right after) or this plugin stops.
      signal.addEventListener('abort', () => queueMicrotask(() => carried.close(1001, 'hostd is stopping')), {
        once: true,
      })
      const h = this.#callHeaders(t, { ...req, method: 'WS', body: undefined, headers: {} })
      h.set('Hostd-Kind', 'socket')
      h.set('Hostd-Stream', id)
      if (req.protocols.length > 0) h.set('Hostd-Protocols', req.protocols.join(', '))
      const reply = await this.#request(t, req.host, h, undefined)
      const status = replyStatus(req.host, reply)
      if (status !== 101) {
        refuseSocket(socket, status, Buffer.from(reply.data).toString('utf8'))
        carried.close(1011, 'refused', false)
        return
      }
      const held = waiting
      waiting = null
      for (const [bh, data] of held) toMember(bh, data)
      // The browser went away while the member was opening its socket: that socket is closed too.
      if (socket.readyState !== socket.OPEN) toMember({ kind: 'close', code: 1001 }, new Uint8Array())
      else socket.resume()
    } catch (err) {
      const e = err instanceof HostdError ? err : FleetErrors.unreachable((err as Error).message)
      refuseSocket(socket, e.statusCode, JSON.stringify({ error: e.code, message: e.message }))
      bridge?.close(1011, 'refused', false)
    }
  }

  /** This host's own socket through /api/hosts/<self>/...: two bridges joined in memory. */
  async #bridgeLocally(socket: WebSocket, req: ForwardRequest & { protocols: string[] }, signal: AbortSignal) {
    const identity = { userId: req.user.id, username: req.user.username, role: req.user.role, origin: this.#host }
    const opened = await this.#d.dispatch.openSocket({
      url: req.path,
      protocols: req.protocols,
      identity: { ...identity, session: req.session === true },
    })
    if (!opened.ok) return refuseSocket(socket, opened.status, opened.body)
    const key = `self/${randomUUID()}`
    const outer: SocketBridge = new SocketBridge(
      socket,
      (h, d) => inner.receive(h, d),
      () => this.#sockets.delete(key),
    )
    const inner: SocketBridge = new SocketBridge(
      opened.socket,
      (h, d) => outer.receive(h, d),
      () => {},
    )
    this.#sockets.set(key, outer)
    signal.addEventListener('abort', () => queueMicrotask(() => outer.close(1001, 'hostd is stopping')), { once: true })
    opened.socket.resume()
    socket.resume()
  }

  #callHeaders(t: Transport, req: ForwardRequest) {
    const assertion = this.#signer!.sign({
      iss: this.#host,
      aud: req.host,
      sub: req.user.id,
      name: req.user.username,
      role: req.user.role,
      method: req.method,
      path: req.path,
      body: bodyDigest(req.body),
      ...(req.session ? { ses: true } : {}),
    })
    const h = t.headers()
    h.set('Hostd-Assertion', assertion)
    h.set('Hostd-Method', req.method)
    h.set('Hostd-Path', req.path)
    for (const name of ['content-type', 'accept']) if (req.headers[name]) h.set(name, req.headers[name])
    return h
  }

  async #request(t: Transport, host: string, h: MsgHdrs, body: Buffer | undefined) {
    try {
      return await t.request(host, h, body ?? new Uint8Array(), CALL_TIMEOUT_MS)
    } catch (err) {
      const name = (err as Error).name
      if (name === 'NoRespondersError' || name === 'TimeoutError' || /no responders|timeout/i.test(String(err)))
        throw FleetErrors.hostDown(`${host} did not answer: it is down or cannot be reached`)
      throw FleetErrors.unreachable(`The call to ${host} failed: ${(err as Error).message}`)
    }
  }

  async #runLocally(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Buffer | undefined,
    identity: { userId: string; username: string; role: Role; origin: string },
    limit: number,
    signal?: AbortSignal,
  ): Promise<ForwardAnswer> {
    const res = await this.#d.dispatch.dispatch({ method, url: path, headers, body, identity, signal })
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length
      if (size > limit) {
        res.body.destroy()
        throw FleetErrors.tooLarge(`The answer of ${path} is larger than one NATS message (${limit} bytes)`)
      }
      chunks.push(chunk as Buffer)
    }
    return { status: res.status, headers: pick(res.headers), body: Buffer.concat(chunks) }
  }

  // ---- remote calls: the answering side

  async #onRequest(msg: Msg): Promise<void> {
    const t = this.#transport
    if (!t) return
    const origin = msg.subject.split('.').at(-1) ?? ''
    const kind = msg.headers?.get('Hostd-Kind')
    if (kind === 'sock') {
      // A carried socket's frame, credit or close: only from the member that opened it (the subject names it).
      const bridge = this.#sockets.get(`${origin}/${msg.headers?.get('Hostd-Stream') ?? ''}`)
      const bh = readBridgeHeaders((name) => msg.headers?.get(name) || undefined)
      if (bridge && bh) bridge.receive(bh, msg.data)
      return
    }
    if (kind === 'credit' || kind === 'cancel') {
      // Only the caller that opened a stream can steer it: the subject names the sender (NATS permissions).
      const stream = this.#streams.get(`${origin}/${msg.headers?.get('Hostd-Stream') ?? ''}`)
      if (!stream) return
      if (kind === 'cancel') stream.end()
      else {
        stream.credit += Math.min(1024, Math.max(0, Number(msg.headers?.get('Hostd-Credit')) || 0))
        stream.idle.refresh()
        if (stream.credit > 0 && stream.body.isPaused()) stream.body.resume()
      }
      return
    }
    if (!msg.reply) return
    const respond = (answer: ForwardAnswer) => {
      const h = t.headers()
      h.set('Hostd-Status', String(answer.status))
      for (const [name, value] of Object.entries(answer.headers)) h.set(name, value)
      msg.respond(answer.body, { headers: h })
    }
    try {
      if (kind === 'join') {
        respond(await this.#answerJoin(origin, msg.data))
        return
      }
      if (kind === 'socket') {
        respond(await this.#answerSocket(t, origin, msg.headers))
        return
      }
      const answer = await this.#answerCall(origin, msg.headers, Buffer.from(msg.data), t.maxPayload - 4096)
      if (!('stream' in answer)) {
        respond(answer)
        return
      }
      respond({ status: answer.status, headers: { ...answer.headers, 'Hostd-Streaming': '1' }, body: Buffer.alloc(0) })
      this.#pump(t, origin, answer.stream, answer.body)
    } catch (err) {
      const e =
        err instanceof HostdError
          ? err
          : FleetErrors.unreachable(`${this.#host} could not answer: ${(err as Error).message}`)
      respond(errorAnswer(e))
    }
  }

  async #answerCall(
    origin: string,
    h: MsgHdrs | undefined,
    body: Buffer,
    limit: number,
  ): Promise<ForwardAnswer | (StreamAnswer & { stream: string })> {
    const method = h?.get('Hostd-Method') ?? ''
    const path = h?.get('Hostd-Path') ?? ''
    checkPath(path)
    const { identity } = await this.#verify(origin, h, method, path, body)
    const headers: Record<string, string> = {}
    for (const name of ['content-type', 'accept']) {
      const value = h?.get(name)
      if (value) headers[name] = value
    }
    const stream = h?.get('Hostd-Stream')
    if (stream) {
      const res = await this.#d.dispatch.dispatch({
        method,
        url: path,
        headers,
        body: body.length > 0 ? body : undefined,
        identity,
      })
      return { status: res.status, headers: pick(res.headers), body: res.body, stream }
    }
    return this.#runLocally(method, path, headers, body.length > 0 ? body : undefined, identity, limit)
  }

  /** A member asks this host to open one of its sockets as the verified caller, relayed over NATS (bridgeSocket). */
  async #answerSocket(t: Transport, origin: string, h: MsgHdrs | undefined): Promise<ForwardAnswer> {
    const path = h?.get('Hostd-Path') ?? ''
    checkPath(path)
    const { identity, a } = await this.#verify(origin, h, 'WS', path, Buffer.alloc(0))
    const id = h?.get('Hostd-Stream') ?? ''
    if (!/^[0-9a-f-]{36}$/.test(id)) throw FleetErrors.assertionRefused('A socket needs a stream id')
    const protocols = (h?.get('Hostd-Protocols') ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
    const opened = await this.#d.dispatch.openSocket({
      url: path,
      protocols,
      identity: { ...identity, session: a.ses === true },
    })
    if (!opened.ok) {
      const contentType = opened.contentType || 'application/json; charset=utf-8'
      return { status: opened.status, headers: { 'content-type': contentType }, body: Buffer.from(opened.body) }
    }
    const key = `${origin}/${id}`
    const subject = streamSubject(origin, this.#host, id)
    const bridge = new SocketBridge(
      opened.socket,
      (bh, data) => {
        const out = t.headers()
        writeBridgeHeaders(bh, (name, value) => out.set(name, value))
        if (t.connected) t.publish(subject, data, out)
      },
      () => this.#sockets.delete(key),
    )
    this.#sockets.set(key, bridge)
    opened.socket.resume()
    return { status: 101, headers: { 'Hostd-Protocol': opened.protocol }, body: Buffer.alloc(0) }
  }

  /** Checks a call's assertion (refusals audited) and gives the identity this host grants it (its role map first). */
  async #verify(origin: string, h: MsgHdrs | undefined, method: string, path: string, body: Buffer) {
    const known = this.#hosts.get(origin)?.p.publicKey
    const pinned = this.#pins[origin]
    let a: Assertion
    try {
      a = this.#verifier.verify(
        h?.get('Hostd-Assertion') ?? '',
        { origin, self: this.#host, method, path, body: bodyDigest(body) },
        pinned ?? known,
      )
    } catch (err) {
      if (!(err instanceof AssertionError)) throw err
      this.#d.log.warn({ origin, reason: err.message }, 'fleet: a remote call was refused')
      await this.#d.audit.record(
        {
          action: 'fleet.call',
          target: `${method} ${path}`,
          result: 'failure',
          detail: { origin, reason: err.message },
        },
        { userId: null, username: null, ip: null },
      )
      throw FleetErrors.assertionRefused(`${this.#host} could not verify the call from ${origin}: ${err.message}`)
    }
    if (!pinned && known) await this.#pin(origin, known)
    const role = this.#roles[`${a.name}@${origin}`] ?? this.#roles[`*@${origin}`] ?? a.role
    return { identity: { userId: a.sub, username: a.name, role, origin }, a }
  }

  /** Sends a streamed answer's pieces to the caller while it has credit (flow control: see forwardStream). */
  #pump(t: Transport, origin: string, id: string, body: Readable): void {
    const key = `${origin}/${id}`
    const subject = streamSubject(origin, this.#host, id)
    let seq = 0
    const send = (data: Uint8Array, end?: string) => {
      const h = t.headers()
      h.set('Hostd-Seq', String(seq++))
      if (end) h.set('Hostd-End', end)
      if (t.connected) t.publish(subject, data, h)
    }
    let done = false
    const finish = (why: string) => {
      if (done) return
      done = true
      clearTimeout(stream.idle)
      this.#streams.delete(key)
      if (why !== 'cancel') send(new Uint8Array(), why)
      body.destroy()
    }
    const stream: OutgoingStream = {
      origin,
      credit: INITIAL_CREDIT,
      body,
      idle: setTimeout(() => finish('no credit for a minute'), STREAM_IDLE_MS),
      end: () => finish('cancel'),
    }
    stream.idle.unref()
    this.#streams.set(key, stream)
    body.on('data', (chunk: Buffer) => {
      for (let at = 0; at < chunk.length; at += PIECE_BYTES) send(chunk.subarray(at, at + PIECE_BYTES))
      stream.credit -= Math.ceil(chunk.length / PIECE_BYTES)
      if (stream.credit <= 0) body.pause()
    })
    body.once('end', () => finish('end'))
    body.once('error', (err) => finish(err.message || 'failed'))
  }

  async #pin(host: string, key: string): Promise<void> {
    this.#pins = { ...this.#pins, [host]: key }
    await this.#d.settings.set(PINS, this.#pins)
  }

  // ---- joining

  async makeJoinCode(
    body: { host: string; user?: string; password?: string; expiresInSeconds?: number },
    actor: AuditActor,
  ): Promise<{ code: string; host: string; expiresAt: string }> {
    if (!this.#transport) throw FleetErrors.notJoined('Make join codes on a member of a fleet')
    if (body.host === this.#host || this.#hosts.has(body.host))
      throw FleetErrors.alreadyJoined(`A member is already named "${body.host}"`)
    let credentials = body.user && body.password ? { user: body.user, password: body.password } : null
    if (!credentials && this.#server) credentials = await this.#mintUser(body.host)
    if (!credentials) throw FleetErrors.credentialsNeeded()
    const exp = Math.floor(Date.now() / 1000) + (body.expiresInSeconds ?? 3600)
    const nonce = randomBytes(18).toString('base64url')
    const code: JoinCode = {
      v: 1,
      servers: this.#server && this.#advertised ? [this.#advertised] : this.#servers,
      host: body.host,
      user: credentials.user,
      password: credentials.password,
      issuer: this.#host,
      issuerKey: this.#publicKey,
      nonce,
      exp,
    }
    const codes = await this.#codes()
    codes[nonce] = { host: body.host, exp, used: false }
    await this.#d.settings.set(CODES, codes)
    await this.#d.audit.record({ action: 'fleet.code.create', target: body.host, detail: { expiresAt: exp } }, actor)
    return {
      code: `hostd-join-1.${Buffer.from(JSON.stringify(code)).toString('base64url')}`,
      host: body.host,
      expiresAt: new Date(exp * 1000).toISOString(),
    }
  }

  async #codes(): Promise<Record<string, JoinCodeRecord>> {
    const now = Math.floor(Date.now() / 1000)
    const all = (await this.#d.settings.get<Record<string, JoinCodeRecord>>(CODES)) ?? {}
    return Object.fromEntries(Object.entries(all).filter(([, c]) => c.exp > now - 86_400))
  }

  /** The issuer's side: a code's nonce is good once, for the host it was made for, before it expires. */
  async #answerJoin(origin: string, data: Uint8Array): Promise<ForwardAnswer> {
    let nonce = ''
    try {
      nonce = String((JSON.parse(Buffer.from(data).toString('utf8')) as { nonce?: unknown }).nonce ?? '')
    } catch {
      /* refused below */
    }
    const codes = await this.#codes()
    const code = codes[nonce]
    const ok = code !== undefined && !code.used && code.host === origin && code.exp > Date.now() / 1000
    await this.#d.audit.record(
      { action: 'fleet.member.join', target: origin, result: ok ? 'success' : 'failure' },
      { userId: null, username: null, ip: null },
    )
    if (!ok) throw FleetErrors.codeRefused()
    codes[nonce] = { ...code, used: true }
    await this.#d.settings.set(CODES, codes)
    return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"ok":true}') }
  }

  /** The new host's side: connect with the code's credentials, have the issuer accept the code, remember it all. */
  async join(text: string, actor: AuditActor): Promise<ReturnType<FleetService['status']>> {
    if (this.#transport) throw FleetErrors.alreadyJoined()
    const code = parseCode(text)
    if (code.exp < Date.now() / 1000) throw FleetErrors.codeRefused('This join code has expired')
    const credentials = { user: code.user ?? undefined, password: code.password ?? undefined }
    await this.#join(code.servers, code.host, credentials)
    try {
      const h = this.#transport!.headers()
      h.set('Hostd-Kind', 'join')
      const reply = await this.#transport!.request(
        code.issuer,
        h,
        Buffer.from(JSON.stringify({ nonce: code.nonce })),
        CALL_TIMEOUT_MS,
      ).catch(() => {
        throw FleetErrors.hostDown(`${code.issuer}, which made the code, did not answer`)
      })
      if (reply.headers?.get('Hostd-Status') !== '200') throw FleetErrors.codeRefused()
    } catch (err) {
      await this.stop()
      await this.#d.audit.record(
        { action: 'fleet.join', target: code.issuer, result: 'failure', detail: { host: code.host } },
        actor,
      )
      throw err
    }
    await this.#pin(code.issuer, code.issuerKey)
    const membership: Membership = {
      servers: code.servers,
      host: code.host,
      user: code.user,
      passwordSealed: code.password ? await this.#d.secrets.seal(code.password) : null,
      issuer: code.issuer,
      joinedAt: new Date().toISOString(),
    }
    await this.#d.settings.set(MEMBERSHIP, membership)
    await this.#d.audit.record({ action: 'fleet.join', target: code.issuer, detail: { host: code.host } }, actor)
    return this.status()
  }

  // ---- roles per host

  roles(): { rules: { who: string; role: Role }[] } {
    return { rules: Object.entries(this.#roles).map(([who, role]) => ({ who, role })) }
  }

  async setRoles(rules: { who: string; role: Role }[], actor: AuditActor): Promise<void> {
    const next: Record<string, Role> = {}
    for (const r of rules) {
      if (!isRole(r.role)) throw FleetErrors.codeInvalid(`"${r.role}" is not a role`)
      next[r.who] = r.role
    }
    this.#roles = next
    await this.#d.settings.set(ROLES, next)
    await this.#d.audit.record({ action: 'fleet.roles.update', detail: { rules: rules.length } }, actor)
  }
}

function checkPath(path: string): void {
  if (!path.startsWith('/api/') || path.includes('..'))
    throw FleetErrors.pathRefused(`Only API paths can be called on another member, not "${path}"`)
  const bare = path.split('?')[0]!
  for (const prefix of REFUSED_PREFIXES)
    if (bare === prefix || bare.startsWith(`${prefix}/`))
      throw FleetErrors.pathRefused(`${prefix} is never called on another member: sign in there, or use this host's`)
}

/** The headers of an answer that may cross back to the caller. */
function pick(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of ANSWER_HEADERS) if (headers[name]) out[name] = headers[name]
  return out
}

function answerHeaders(h: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of ANSWER_HEADERS) {
    const value = h?.get(name)
    if (value) out[name] = value
  }
  return out
}

function replyStatus(host: string, reply: { headers: MsgHdrs | undefined }): number {
  const status = Number(reply.headers?.get('Hostd-Status'))
  if (!Number.isInteger(status) || status < 100 || status > 599)
    throw FleetErrors.unreachable(`${host} answered something that is not a hostd answer`)
  return status
}

/** Ends a socket that could not be carried: the JSON error frame, then 4000 + the status (as sockets here do). */
function refuseSocket(socket: WebSocket, status: number, body: string): void {
  let error = 'HOSTD_FLEET_UNREACHABLE'
  let message = body
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown }
    if (typeof parsed.error === 'string') error = parsed.error
    if (typeof parsed.message === 'string') message = parsed.message
  } catch {
    /* not JSON: the text is the message */
  }
  if (socket.readyState !== socket.OPEN) return
  socket.send(JSON.stringify({ type: 'error', error, message }))
  socket.close(4000 + Math.min(599, Math.max(100, status)), error)
}

function errorAnswer(e: HostdError): ForwardAnswer {
  return {
    status: e.statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: Buffer.from(JSON.stringify({ error: e.code, message: e.message })),
  }
}

function parseCode(text: string): JoinCode {
  const [prefix, payload, extra] = text.trim().split('.')
  if (prefix !== 'hostd-join-1' || !payload || extra !== undefined) throw FleetErrors.codeInvalid()
  let code: JoinCode
  try {
    code = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as JoinCode
  } catch {
    throw FleetErrors.codeInvalid()
  }
  if (
    code.v !== 1 ||
    !Array.isArray(code.servers) ||
    code.servers.length === 0 ||
    !code.servers.every((s) => typeof s === 'string') ||
    typeof code.host !== 'string' ||
    !HOST_NAME.test(code.host) ||
    typeof code.issuer !== 'string' ||
    typeof code.issuerKey !== 'string' ||
    typeof code.nonce !== 'string' ||
    typeof code.exp !== 'number'
  )
    throw FleetErrors.codeInvalid()
  return code
}

export function defaultHostName(): string {
  const name = hostname()
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
  return name || `host-${randomUUID().slice(0, 8)}`
}
