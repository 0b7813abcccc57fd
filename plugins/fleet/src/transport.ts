/**
 * The NATS side of membership: one connection (the official @nats-io clients, imported on first use so an idle daemon
 * that is in no fleet loads none of them), the presence bucket and its watch, and the request subscription.
 */
import type { NatsConnection, Msg, MsgHdrs, Subscription } from '@nats-io/transport-node'
import type { KV } from '@nats-io/kv'
import { inboxPrefix, PRESENCE_BUCKET, requestSubject } from './subjects.ts'

export interface NatsCredentials {
  user?: string
  password?: string
  /** The text of a `.creds` file (a user JWT and its nkey seed). */
  creds?: string
  /** An nkey seed (`SU...`). */
  nkeySeed?: string
}

export interface TransportOptions {
  servers: string[]
  host: string
  credentials: NatsCredentials
  /** Replicas of the presence bucket when this member creates it (3 on a three-node cluster). */
  replicas: number
  onPresence: (key: string, value: Uint8Array | null, created: Date) => void
  onRequest: (msg: Msg) => void
  log: { warn(obj: unknown, msg?: string): void }
}

export interface Reply {
  headers: MsgHdrs | undefined
  data: Uint8Array
}

export class Transport {
  readonly #o: TransportOptions
  #nc: NatsConnection | null = null
  #kv: KV | null = null
  #sub: Subscription | null = null
  #watchStop: (() => void) | null = null
  #core: typeof import('@nats-io/transport-node') | null = null

  constructor(options: TransportOptions) {
    this.#o = options
  }

  get connected(): boolean {
    return this.#nc !== null && !this.#nc.isClosed()
  }

  get maxPayload(): number {
    return this.#nc?.info?.max_payload ?? 1024 * 1024
  }

  /** The nats-core module (headers()), once connected. */
  get core(): typeof import('@nats-io/transport-node') {
    if (!this.#core) throw new Error('not connected')
    return this.#core
  }

  async connect(): Promise<void> {
    const core = await import('@nats-io/transport-node')
    this.#core = core
    const c = this.#o.credentials
    const auth = c.creds
      ? { authenticator: core.credsAuthenticator(new TextEncoder().encode(c.creds)) }
      : c.nkeySeed
        ? { authenticator: core.nkeyAuthenticator(new TextEncoder().encode(c.nkeySeed)) }
        : c.user
          ? { user: c.user, pass: c.password ?? '' }
          : {}
    const nc = await core.connect({
      servers: this.#o.servers,
      name: `hostd-${this.#o.host}`,
      inboxPrefix: inboxPrefix(this.#o.host),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      pingInterval: 5000,
      ...auth,
    })
    this.#nc = nc
    this.#sub = nc.subscribe(requestSubject(this.#o.host, '*'), {
      callback: (err, msg) => {
        if (!err) this.#o.onRequest(msg)
      },
    })
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'error' || status.type === 'disconnect')
          this.#o.log.warn({ status: status.type }, 'fleet: NATS connection')
      }
    })().catch(() => {})
  }

  /** Opens (or creates) the presence bucket and watches every key; retried by the caller until it works. */
  async openPresence(): Promise<void> {
    if (this.#kv) return
    const { Kvm } = await import('@nats-io/kv')
    const kvm = new Kvm(this.#nc!)
    let kv: KV
    try {
      kv = await kvm.open(PRESENCE_BUCKET)
      await kv.status()
    } catch {
      kv = await kvm.create(PRESENCE_BUCKET, { history: 1, replicas: this.#o.replicas })
    }
    this.#kv = kv
    await this.#watch()
  }

  async #watch(): Promise<void> {
    const watch = await this.#kv!.watch({ key: '>' })
    this.#watchStop = () => watch.stop()
    void (async () => {
      for await (const e of watch) this.#o.onPresence(e.key, e.operation === 'PUT' ? e.value : null, e.created)
    })().catch((err: unknown) => this.#o.log.warn({ err }, 'fleet: presence watch ended'))
  }

  /** A watch that stopped delivering (its consumer was on a NATS node that went away) is made again. */
  async restartWatch(): Promise<void> {
    this.#watchStop?.()
    this.#watchStop = null
    await this.#watch()
  }

  get presenceOpen(): boolean {
    return this.#kv !== null
  }

  async putPresence(value: string): Promise<void> {
    await this.#kv!.put(this.#o.host, value)
  }

  async request(target: string, headers: MsgHdrs, data: Uint8Array, timeoutMs: number): Promise<Reply> {
    const msg = await this.#nc!.request(requestSubject(target, this.#o.host), data, { timeout: timeoutMs, headers })
    return { headers: msg.headers, data: msg.data }
  }

  /** Fire and forget (a stream's credit or cancel, a streamed answer's pieces). */
  publish(subject: string, data: Uint8Array, headers?: MsgHdrs): void {
    this.#nc!.publish(subject, data, headers ? { headers } : undefined)
  }

  subscribe(subject: string, onMsg: (msg: Msg) => void): Subscription {
    return this.#nc!.subscribe(subject, {
      callback: (err, msg) => {
        if (!err) onMsg(msg)
      },
    })
  }

  headers(): MsgHdrs {
    return this.core.headers()
  }

  async close(): Promise<void> {
    this.#watchStop?.()
    this.#sub?.unsubscribe()
    const nc = this.#nc
    this.#nc = null
    this.#kv = null
    if (nc && !nc.isClosed()) await nc.drain().catch(() => nc.close())
  }
}
