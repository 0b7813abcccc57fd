import { defineError, tokens, type HostdPlugin, type ServiceAccess, type Settings } from '@hostd/sdk'
import type { PluginRecord } from './records.ts'
import { DISPATCH_SERVICE_ID } from '../http/remote-dispatch.ts'

/**
 * A third-party plugin's permissions (PluginPermissions in the sdk) as the kernel lists, grants and compares them:
 * every part present, sorted, and the kernel services it uses read from its `deps`.
 */
export interface PermissionSet {
  /** Other plugins' services it consumes, by token id, with the access it declared. */
  services: Record<string, ServiceAccess>
  /** Root helper actions it may call. */
  helper: string[]
  /** Outbound network from its own process. */
  network: boolean
  /** The kernel's services it uses (its `deps`): `hostd.logger`, `hostd.settings`... */
  kernel: string[]
}

/** The ids of the kernel's own services (`tokens` in the sdk). */
export const KERNEL_SERVICE_IDS: ReadonlySet<string> = new Set([
  ...Object.values(tokens).map((token) => token.id),
  // Built-in plugins only, not in the sdk's tokens: the fleet plugin's way into the local API (remote-dispatch.ts).
  DISPATCH_SERVICE_ID,
])

/**
 * The kernel services a third-party plugin may have: each is scoped to it (its own log child, settings namespace,
 * audit records stamped with its id, only the optional services it declared, a helper client limited to the actions
 * it declared, a sealer with a key of its own, and as `hostd.database` a database of its own in its data folder). The kernel's database (password
 * hashes, sessions) is never given to one.
 */
export const THIRD_PARTY_KERNEL_SERVICES: ReadonlySet<string> = new Set([
  tokens.database.id,
  tokens.logger.id,
  tokens.settings.id,
  tokens.audit.id,
  tokens.kernel.id,
  tokens.optional.id,
  tokens.helper.id,
  tokens.secrets.id,
])

export const PermissionErrors = {
  denied: defineError('HOSTD_PLUGIN_PERMISSION_DENIED', 403, 'The plugin did not declare this permission'),
  noApproval: defineError('HOSTD_PLUGIN_NO_APPROVAL_PENDING', 409, 'No upgrade of this plugin awaits approval'),
  staleApproval: defineError(
    'HOSTD_PLUGIN_APPROVAL_STALE',
    409,
    'Another version of this plugin awaits approval now: look at its permissions again',
  ),
} as const

const sorted = (values: Iterable<string>): string[] => [...new Set(values)].sort()

/** What `def` declares, as the kernel lists and compares it. */
export function declaredPermissions(def: HostdPlugin): PermissionSet {
  const declared = def.permissions ?? {}
  const services: Record<string, ServiceAccess> = {}
  for (const id of sorted(Object.keys(declared.services ?? {}))) services[id] = declared.services![id]!
  const deps = Object.values(def.deps ?? {}) as { id: string }[]
  return {
    services,
    helper: sorted(declared.helper ?? []),
    network: declared.network === true,
    kernel: sorted(deps.map((token) => token.id).filter((id) => KERNEL_SERVICE_IDS.has(id))),
  }
}

/** What `asked` has that `granted` does not (a new service, `write` over `read`, an action, network); null: nothing. */
export function morePermissions(asked: PermissionSet, granted: PermissionSet): PermissionSet | null {
  const services: Record<string, ServiceAccess> = {}
  for (const [id, access] of Object.entries(asked.services)) {
    const had = granted.services[id]
    if (had === undefined || (access === 'write' && had === 'read')) services[id] = access
  }
  const more: PermissionSet = {
    services,
    helper: asked.helper.filter((action) => !granted.helper.includes(action)),
    network: asked.network && !granted.network,
    kernel: asked.kernel.filter((id) => !granted.kernel.includes(id)),
  }
  const empty =
    Object.keys(more.services).length === 0 && more.helper.length === 0 && !more.network && more.kernel.length === 0
  return empty ? null : more
}

/**
 * What a first version asks an admin to approve before it runs: all it declares, when that holds a service of another
 * plugin, a root helper action or network; null when it declares none of these (the kernel services every plugin gets,
 * scoped to it, need no approval).
 */
export function firstAsks(declared: PermissionSet): PermissionSet | null {
  const asks = Object.keys(declared.services).length > 0 || declared.helper.length > 0 || declared.network
  return asks ? declared : null
}

/** One line for a log, a reason or an audit record: `services hostd.containers (write); network`. */
export function describePermissions(set: PermissionSet): string {
  const parts: string[] = []
  const services = Object.entries(set.services).map(([id, access]) => `${id} (${access})`)
  if (services.length > 0) parts.push(`services ${services.join(', ')}`)
  if (set.helper.length > 0) parts.push(`helper actions ${set.helper.join(', ')}`)
  if (set.network) parts.push('network')
  if (set.kernel.length > 0) parts.push(`kernel services ${set.kernel.join(', ')}`)
  return parts.join('; ') || 'nothing'
}

/** What the admin granted one third-party plugin: the permissions of the version last activated or approved. */
export interface Grant {
  version: string
  permissions: PermissionSet
}

/**
 * What each third-party plugin was granted and which ones an admin trusts to run in the daemon's process, kept in the
 * kernel's settings (scope `kernel.plugins`, keys `grants` and `trusted`) and cached, so `isTrusted` answers at once.
 */
export class PluginGrants {
  readonly #settings: Settings
  #grants = new Map<string, Grant>()
  #trusted = new Set<string>()
  /** Plugins installed through the API whose first version awaits an admin's approval (settings key `pending`). */
  #pending = new Set<string>()

  constructor(settings: Settings) {
    this.#settings = settings
  }

  async load(): Promise<void> {
    this.#grants = new Map(Object.entries((await this.#settings.get<Record<string, Grant>>('grants')) ?? {}))
    this.#trusted = new Set((await this.#settings.get<string[]>('trusted')) ?? [])
    this.#pending = new Set((await this.#settings.get<string[]>('pending')) ?? [])
  }

  /**
   * Marks `def`'s plugin, installed by an admin through the API and never granted anything, as awaiting approval
   * before its first start when it declares anything to approve (`firstAsks`). Kept across restarts: a held first
   * install stays held until approved or removed.
   */
  async awaitFirstApproval(def: HostdPlugin): Promise<void> {
    if (this.#grants.has(def.id) || this.#pending.has(def.id) || !firstAsks(declaredPermissions(def))) return
    this.#pending.add(def.id)
    await this.#settings.set('pending', [...this.#pending].sort())
  }

  /** Whether an admin marked the third-party plugin `id` trusted to run in the daemon's process. */
  isTrusted(id: string): boolean {
    return this.#trusted.has(id)
  }

  /** What the plugin `id` was granted, or undefined (never loaded). */
  granted(id: string): Grant | undefined {
    return this.#grants.get(id)
  }

  /** Whether the plugin `id` was granted outbound network (the sandbox asks this). */
  networkGranted(id: string): boolean {
    return this.#grants.get(id)?.permissions.network === true
  }

  /**
   * What `def` asks beyond what its plugin was granted, or null. A plugin never granted anything: what its first version
   * asks (`firstAsks`) when it was installed through the API (`awaitFirstApproval`); null for a folder dropped into the
   * plugins dir by hand, granted what it declares once it loads (docs/PLUGINS.md, "What a plugin asks for").
   */
  more(def: HostdPlugin): PermissionSet | null {
    const grant = this.#grants.get(def.id)
    if (grant) return morePermissions(declaredPermissions(def), grant.permissions)
    return this.#pending.has(def.id) ? firstAsks(declaredPermissions(def)) : null
  }

  /**
   * Grants `def` what it declares: an admin's approval, or a version that loaded asking no more (so one that asks less
   * lowers the grant, and the next one is compared with it).
   */
  async grant(def: HostdPlugin): Promise<void> {
    const grant = { version: def.version, permissions: declaredPermissions(def) }
    if (this.#pending.delete(def.id)) await this.#settings.set('pending', [...this.#pending].sort())
    if (JSON.stringify(this.#grants.get(def.id)) === JSON.stringify(grant)) return
    this.#grants.set(def.id, grant)
    await this.#settings.set('grants', Object.fromEntries(this.#grants))
  }

  /** Puts back what the plugin `id` was granted before (`grant`), or forgets it when it had none. */
  async restore(id: string, grant: Grant | undefined): Promise<void> {
    if (JSON.stringify(this.#grants.get(id)) === JSON.stringify(grant)) return
    if (grant) this.#grants.set(id, grant)
    else this.#grants.delete(id)
    await this.#settings.set('grants', Object.fromEntries(this.#grants))
  }

  async setTrusted(id: string, trusted: boolean): Promise<void> {
    if (trusted) this.#trusted.add(id)
    else this.#trusted.delete(id)
    await this.#settings.set('trusted', [...this.#trusted].sort())
  }

  /** A removed plugin's grant and trust go with it: installing it again is a first install. */
  async forget(id: string): Promise<void> {
    if (!this.#grants.has(id) && !this.#trusted.has(id) && !this.#pending.has(id)) return
    this.#grants.delete(id)
    this.#trusted.delete(id)
    this.#pending.delete(id)
    await this.#settings.set('grants', Object.fromEntries(this.#grants))
    await this.#settings.set('trusted', [...this.#trusted].sort())
    await this.#settings.set('pending', [...this.#pending].sort())
  }
}

/** A third-party version that asks more than its plugin was granted, waiting for an admin's approval. */
export interface HeldUpgrade {
  record: PluginRecord
  /** What it asks beyond the grant. */
  asks: PermissionSet
}

/** What `GET /api/extensions` adds to a plugin about its permissions. */
export interface PermissionInfo {
  /** What the listed version declares; null when its definition could not be read. */
  permissions: PermissionSet | null
  /** An admin trusts this third-party plugin to run in the daemon's process (always false for a built-in one). */
  trusted: boolean
  /**
   * A version on disk that asks for more than its plugin was granted (or, installed through the API, for anything at
   * all before its first start) and is not activated until an admin approves it. `granted`: the version whose
   * permissions the plugin holds now, null for a first install.
   */
  approval?: { version: string; asks: PermissionSet; granted: string | null }
}

export function permissionInfo(
  record: PluginRecord,
  grants: PluginGrants,
  held: HeldUpgrade | undefined,
): PermissionInfo {
  return {
    permissions: record.definition ? declaredPermissions(record.definition) : null,
    trusted: !record.builtin && grants.isTrusted(record.id),
    ...(held
      ? {
          approval: {
            version: held.record.definition?.version ?? '',
            asks: held.asks,
            granted: grants.granted(record.id)?.version ?? null,
          },
        }
      : {}),
  }
}
