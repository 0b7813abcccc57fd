import { errors, type AuditService, type Logger } from '@hostd/sdk'
import { NetworkErrors } from './errors.ts'
import { maskToPrefix, type NetworkManagerAdapter } from './nmcli.ts'
import type { Ipv4Body, NetworkService, PendingConfirm } from './schemas.ts'

export interface NetworkOptions {
  /** How long an admin has to confirm a change that could cut them off (the interface document's 60 s). */
  confirmSeconds: number
  /** auto: confirm-or-revert when the change could cut the admin off; always / never: for every / no IPv4 or enable change. */
  confirm: 'auto' | 'always' | 'never'
}

type Actor = Parameters<AuditService['record']>[1]

const confirmPathOf = (name: string) => `/api/system/network/services/${encodeURIComponent(name)}/confirm`

interface Pending {
  service: string
  checkpoint: string
  expiresAt: Date
  timer: NodeJS.Timeout
  changed: NetworkService
  actor: Actor
}

/** The network services' logic: look-ups, changes with before/after audit, and confirm-or-revert. */
export class NetworkConfiguration {
  readonly #nm: NetworkManagerAdapter
  readonly #audit: AuditService
  readonly #log: Logger
  readonly #options: NetworkOptions
  #pending: Pending | null = null
  #queue: Promise<unknown> = Promise.resolve()

  constructor(nm: NetworkManagerAdapter, audit: AuditService, log: Logger, options: NetworkOptions) {
    this.#nm = nm
    this.#audit = audit
    this.#log = log
    this.#options = options
  }

  list(): Promise<NetworkService[]> {
    return this.#nm.list()
  }

  async find(name: string): Promise<NetworkService> {
    if (!(await this.#nm.names()).includes(name))
      throw NetworkErrors.serviceNotFound(`No network service named "${name}"`)
    return this.#nm.show(name)
  }

  setDns(name: string, servers: string[], actor: Actor) {
    return this.#change(
      name,
      'network.dns',
      actor,
      () => false,
      async (before) => {
        await this.#nm.setDns(name, servers)
        if (before.enabled) await this.#nm.apply(name)
      },
    )
  }

  setIpv4(name: string, body: Ipv4Body, actor: Actor, localAddress: string | undefined) {
    let change: { dhcp: true } | { dhcp: false; address: string; router?: string }
    if (body.dhcp) {
      if (body.ipv4 || body.subnetMask || body.router)
        throw errors.badRequest('With dhcp true, leave out ipv4, subnetMask and router')
      change = { dhcp: true }
    } else {
      if (!body.ipv4 || !body.subnetMask) throw errors.badRequest('A manual IPv4 setting needs ipv4 and subnetMask')
      const prefix = maskToPrefix(body.subnetMask)
      if (prefix === null || prefix === 0) throw errors.badRequest(`subnetMask ${body.subnetMask} is not a valid mask`)
      change = { dhcp: false, address: `${body.ipv4}/${prefix}`, ...(body.router ? { router: body.router } : {}) }
    }
    return this.#change(
      name,
      'network.ipv4',
      actor,
      (before) => this.#couldCutOff(before, localAddress),
      async (before) => {
        await this.#nm.setIpv4(name, change)
        if (before.enabled) await this.#nm.apply(name)
      },
    )
  }

  async setEnabled(name: string, enabled: boolean, actor: Actor, localAddress: string | undefined) {
    const { confirm } = await this.#change(
      name,
      'network.enabled',
      actor,
      (before) => !enabled && this.#couldCutOff(before, localAddress),
      () => this.#nm.setEnabled(name, enabled),
    )
    return { services: await this.#nm.list(), confirm }
  }

  confirm(name: string, actor: Actor): Promise<void> {
    return this.#serial(async () => {
      const pending = await this.#settle(name, 'confirming', (checkpoint) => this.#nm.confirm(checkpoint))
      await this.#audit.record({ action: 'network.confirm', target: name, detail: { after: pending.changed } }, actor)
    })
  }

  /** Undoes the pending change now, as NetworkManager would at the end of the window. */
  revert(name: string, actor: Actor): Promise<void> {
    return this.#serial(async () => {
      const pending = await this.#settle(name, 'reverting', (checkpoint) => this.#nm.rollback(checkpoint))
      const after = await this.#nm.show(name).catch(() => null)
      await this.#audit.record(
        {
          action: 'network.revert',
          target: name,
          detail: { reason: 'reverted by an admin', before: pending.changed, after },
        },
        actor,
      )
    })
  }

  /** The change waiting for confirmation, if any (so a reloaded page, or another admin, sees the countdown). */
  pending(): PendingConfirm {
    const pending = this.#pending
    if (!pending || Date.now() >= pending.expiresAt.getTime()) return null
    return {
      service: pending.service,
      expiresAt: pending.expiresAt.toISOString(),
      confirmPath: confirmPathOf(pending.service),
    }
  }

  /** Forget pending timers (NetworkManager still rolls back an unconfirmed change by itself). */
  stop(): void {
    if (this.#pending) clearTimeout(this.#pending.timer)
    this.#pending = null
  }

  /** Ends `name`'s pending change through NetworkManager's checkpoint (confirm or roll back): 404 when there is none, 409 when too late. */
  async #settle(name: string, doing: string, end: (checkpoint: string) => Promise<unknown>): Promise<Pending> {
    const pending = this.#pending
    if (!pending || pending.service !== name) throw NetworkErrors.nothingToConfirm()
    if (Date.now() >= pending.expiresAt.getTime()) throw NetworkErrors.reverted()
    try {
      await end(pending.checkpoint)
    } catch (err) {
      this.#log.warn({ err }, `${doing} a network change failed`)
      throw NetworkErrors.reverted()
    }
    clearTimeout(pending.timer)
    this.#pending = null
    return pending
  }

  /** Could this change cut off the admin? The service carries the address they reached us on, or the default route. */
  #couldCutOff(before: NetworkService, localAddress: string | undefined): boolean {
    if (this.#options.confirm !== 'auto') return this.#options.confirm === 'always'
    const local = localAddress?.replace(/^::ffff:/, '')
    return before.enabled && ((!!local && before.ipv4 === local) || before.router !== '')
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work)
    this.#queue = run.catch(() => undefined)
    return run
  }

  #change(
    name: string,
    action: string,
    actor: Actor,
    risky: (before: NetworkService) => boolean,
    apply: (before: NetworkService) => Promise<void>,
  ) {
    return this.#serial(async (): Promise<{ service: NetworkService; confirm: PendingConfirm }> => {
      const before = await this.find(name)
      const guarded = risky(before)
      if (guarded && this.#pending) throw NetworkErrors.confirmPending()
      const checkpoint = guarded ? await this.#nm.checkpoint(this.#options.confirmSeconds) : null
      const expiresAt = new Date(Date.now() + this.#options.confirmSeconds * 1000)
      try {
        await apply(before)
      } catch (err) {
        if (checkpoint)
          await this.#nm.rollback(checkpoint).catch((e: unknown) => this.#log.warn({ err: e }, 'rollback failed'))
        await this.#audit.record(
          { action, target: name, result: 'failure', detail: { before, error: (err as Error).message } },
          actor,
        )
        throw err
      }
      const after = await this.#nm.show(name)
      await this.#audit.record(
        { action, target: name, detail: { before, after, confirmBy: checkpoint ? expiresAt.toISOString() : null } },
        actor,
      )
      if (!checkpoint) return { service: after, confirm: null }
      const timer = setTimeout(() => void this.#reverted(name), this.#options.confirmSeconds * 1000 + 1000)
      timer.unref()
      this.#pending = { service: name, checkpoint, expiresAt, timer, changed: after, actor }
      return {
        service: after,
        confirm: { service: name, expiresAt: expiresAt.toISOString(), confirmPath: confirmPathOf(name) },
      }
    })
  }

  /** NetworkManager rolled the unconfirmed change back; record what the service looks like now. */
  async #reverted(name: string): Promise<void> {
    const pending = this.#pending
    if (!pending || pending.service !== name) return
    this.#pending = null
    const after = await this.#nm.show(name).catch(() => null)
    await this.#audit.record(
      {
        action: 'network.revert',
        target: name,
        detail: { reason: 'not confirmed in time', before: pending.changed, after },
      },
      pending.actor,
    )
  }
}
