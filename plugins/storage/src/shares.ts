import { realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { HostdError, type AuditService, type HelperClient, type Settings } from '@hostd/sdk'
import type { StorageConfig } from './config.ts'
import { StorageErrors } from './errors.ts'
import { readMounts } from './host.ts'
import { inside, pin } from './paths.ts'
import { translateSamba } from './samba.ts'
import { HOST_PATTERN, REMOTE_SHARE_PATTERN } from './schemas.ts'

type Actor = Parameters<AuditService['record']>[1]

export interface ExportRecord {
  name: string
  path: string
  readOnly: boolean
  guestAccess: boolean
  comment?: string
}

export interface MountRecord {
  name: string
  server: string
  share: string
  username: string | null
  domain: string | null
  readOnly: boolean
  mountpoint: string
}

export interface ShareDeps {
  settings: Settings
  helper: HelperClient
  audit: AuditService
  config: () => StorageConfig
}

const RESERVED = new Set(['global', 'homes', 'printers', 'print$', 'ipc$'])

/** "Folders shared over SMB": the records live in the plugin's settings; the helper writes smbd's share file from them. */
export class Exports {
  readonly deps: ShareDeps
  constructor(deps: ShareDeps) {
    this.deps = deps
  }

  async list(): Promise<ExportRecord[]> {
    return (await this.deps.settings.get<ExportRecord[]>('exports')) ?? []
  }

  /**
   * The folder's real path, which must be a directory inside one of the file roots: the folder is opened once and
   * its place, type and name are read from that one descriptor (paths.ts, pin).
   */
  async #confine(path: string): Promise<string> {
    if (!path.startsWith('/')) throw StorageErrors.shareInvalid('path must be absolute')
    const roots = await Promise.all(this.deps.config().roots.map((r) => realpath(r.path).catch(() => null)))
    const folder = await pin(path, (real) => {
      if (!roots.some((r) => r !== null && inside(r, real))) throw StorageErrors.exportOutsideRoots()
    })
    try {
      if (!folder.stat.isDirectory()) throw StorageErrors.notADirectory(`${path} is not a directory`)
      if (/[%\\]/.test(folder.real))
        throw StorageErrors.shareInvalid(
          'A shared path may not hold "%" or "\\" (Samba would read them as substitutions)',
        )
      return folder.real
    } finally {
      await folder.close()
    }
  }

  async #write(next: ExportRecord[], previous: ExportRecord[]): Promise<void> {
    try {
      await this.deps.helper.call('storage.exports.write', { shares: next })
    } catch (err) {
      if (!(err instanceof HostdError) || err.statusCode < 500) throw err
      // The share file was written but smbd did not reload: put the previous list back (best effort).
      await this.deps.helper.call('storage.exports.write', { shares: previous }).catch(() => undefined)
      const known = translateSamba(err)
      if (known !== err) throw known
      throw StorageErrors.smbdUnavailable(`Samba did not take the change: ${err.message}`, undefined, {
        raw: err.message,
      })
    }
    await this.deps.settings.set('exports', next)
  }

  async add(
    body: { name: string; path: string; readOnly?: boolean; guestAccess?: boolean; comment?: string },
    actor: Actor,
  ): Promise<ExportRecord> {
    if (RESERVED.has(body.name.toLowerCase()))
      throw StorageErrors.shareInvalid(`"${body.name}" is a reserved Samba section name`)
    const current = await this.list()
    if (current.some((e) => e.name.toLowerCase() === body.name.toLowerCase()))
      throw StorageErrors.shareExists(`A share named ${body.name} exists`)
    const record: ExportRecord = {
      name: body.name,
      path: await this.#confine(body.path),
      readOnly: body.readOnly ?? true,
      guestAccess: body.guestAccess ?? false,
      ...(body.comment ? { comment: body.comment } : {}),
    }
    await this.#write([...current, record], current)
    await this.deps.audit.record(
      { action: 'storage.export.add', target: record.name, detail: { before: null, after: record } },
      actor,
    )
    return record
  }

  async remove(name: string, actor: Actor): Promise<void> {
    const current = await this.list()
    const found = current.find((e) => e.name.toLowerCase() === name.toLowerCase())
    if (!found) throw StorageErrors.shareNotFound(`No share named ${name}`)
    await this.#write(
      current.filter((e) => e !== found),
      current,
    )
    await this.deps.audit.record(
      { action: 'storage.export.remove', target: found.name, detail: { before: found, after: null } },
      actor,
    )
  }
}

/** `smb://server/share` (share may hold spaces as %20) → server and share. */
export function parseSmbUrl(url: string): { server: string; share: string } {
  const m = /^smb:\/\/([^/]+)\/([^/]+)\/?$/i.exec(url)
  if (!m) throw StorageErrors.shareInvalid('url must be smb://server/share')
  let share: string
  try {
    share = decodeURIComponent(m[2]!)
  } catch {
    throw StorageErrors.shareInvalid('url holds a bad percent-encoding')
  }
  return { server: m[1]!, share }
}

export interface MountBodyInput {
  url?: string
  server?: string
  share?: string
  name: string
  username?: string
  password?: string
  domain?: string
  readOnly?: boolean
}

/** Network shares mounted through the helper under the managed mount directory. */
export class NetworkMounts {
  readonly deps: ShareDeps
  constructor(deps: ShareDeps) {
    this.deps = deps
  }

  async #records(): Promise<MountRecord[]> {
    return (await this.deps.settings.get<MountRecord[]>('mounts')) ?? []
  }

  async list(): Promise<(MountRecord & { mounted: boolean })[]> {
    const mounted = new Set((await readMounts().catch(() => [])).map((m) => m.mountpoint))
    return (await this.#records()).map((r) => ({ ...r, mounted: mounted.has(r.mountpoint) }))
  }

  async mount(body: MountBodyInput, actor: Actor) {
    const target = body.url !== undefined ? parseSmbUrl(body.url) : { server: body.server, share: body.share }
    if (body.url !== undefined && (body.server !== undefined || body.share !== undefined))
      throw StorageErrors.shareInvalid('Send either url or server and share, not both')
    if (!target.server || !target.share)
      throw StorageErrors.shareInvalid('Send url (smb://server/share) or server and share')
    // The same checks as the body schema: a url's parts must pass them too (no comma, '=', newline or leading '-').
    if (!HOST_PATTERN.test(target.server)) throw StorageErrors.shareInvalid('server is not a host name or address')
    if (!REMOTE_SHARE_PATTERN.test(target.share))
      throw StorageErrors.shareInvalid('share holds characters that are not allowed')
    if (body.password !== undefined && body.username === undefined)
      throw StorageErrors.shareInvalid('A password needs a username')
    const records = await this.#records()
    if (records.some((r) => r.name === body.name))
      throw StorageErrors.shareExists(`A share is already mounted as ${body.name}`)
    const args: Record<string, unknown> = {
      server: target.server,
      share: target.share,
      name: body.name,
      readOnly: body.readOnly ?? false,
    }
    for (const key of ['username', 'password', 'domain'] as const) if (body[key] !== undefined) args[key] = body[key]
    const record: MountRecord = {
      name: body.name,
      server: target.server,
      share: target.share,
      username: body.username ?? null,
      domain: body.domain ?? null,
      readOnly: body.readOnly ?? false,
      mountpoint: join(this.deps.config().mountRoot, body.name),
    }
    try {
      await this.deps.helper.call('storage.mount', args)
    } catch (err) {
      await this.deps.audit.record(
        {
          action: 'storage.mount',
          target: `//${record.server}/${record.share}`,
          result: 'failure',
          detail: { name: record.name, error: (err as Error).message },
        },
        actor,
      )
      throw err
    }
    await this.deps.settings.set('mounts', [...records, record])
    await this.deps.audit.record(
      {
        action: 'storage.mount',
        target: `//${record.server}/${record.share}`,
        detail: { before: null, after: record },
      },
      actor,
    )
    return { share: (await this.list()).find((r) => r.name === record.name)! }
  }

  async unmount(name: string, actor: Actor): Promise<void> {
    const records = await this.#records()
    const found = records.find((r) => r.name === name)
    if (!found) throw StorageErrors.shareNotFound(`No network share is mounted as ${name}`)
    await this.deps.helper.call('storage.unmount', { name })
    await this.deps.settings.set(
      'mounts',
      records.filter((r) => r !== found),
    )
    await this.deps.audit.record(
      { action: 'storage.unmount', target: `//${found.server}/${found.share}`, detail: { before: found, after: null } },
      actor,
    )
  }
}
