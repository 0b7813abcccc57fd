/**
 * First-run setup's other way: hostd restored from a backup (the backups plugin's recovery kit) instead of a first
 * admin made. The routes are public by nature, so they hold to the setup route's rule: open only while the instance
 * has no users, and closed for good once a restore has begun; each address gets a few attempts, and one restic run
 * goes at a time. The backups plugin does the restic part (its `backups.setup-restore` service, built-in providers
 * only); the daemon then swaps the data folder and starts a new kernel on it (daemon.ts): the old kernel is closed
 * before the swap and the new one listens only once it has opened the restored state, so nothing serves half of it.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { Type } from '@sinclair/typebox'
import { createServiceToken, defineError, type OptionalServices } from '@hostd/sdk'
import type { KernelRouteRegistrar } from './http/registrar.ts'
import type { KernelServices } from './services.ts'
import { UserErrors } from './users/service.ts'

export const SetupErrors = {
  unavailable: defineError(
    'HOSTD_SETUP_RESTORE_UNAVAILABLE',
    503,
    'Restoring from a backup needs the backups plugin, and the daemon (not an in-process test kernel)',
  ),
  restoring: defineError('HOSTD_SETUP_RESTORING', 409, 'A restore from a backup is under way: setup is closed'),
  throttled: defineError('HOSTD_SETUP_THROTTLED', 429, 'Too many restore attempts; try again later'),
  busy: defineError('HOSTD_SETUP_BUSY', 429, 'Another restore attempt is running; try again when it has ended'),
} as const

/** The backups plugin's service, as the kernel uses it (plugins/backups/src/api.ts `SetupRestoreService`). */
interface SetupRestoreService {
  snapshots(
    repository: string,
    password: string,
  ): Promise<{ id: string; shortId: string; time: string; hostname: string; job: string | null }[]>
  restore(repository: string, password: string, snapshot: string, into: string): Promise<{ snapshot: string }>
}
const SERVICE_ID = 'backups.setup-restore'
const setupRestoreToken = createServiceToken<SetupRestoreService>(SERVICE_ID)

/** Attempts per address in a window, whatever their outcome (each runs restic against a repository). */
const ATTEMPTS = 20
const WINDOW_MS = 10 * 60_000

/** What the daemon does once a restore is in its folder: swap it in and start a new kernel on it. */
export type RestoredHandler = (folder: string, snapshot: string) => Promise<void>

/** Setup's state, shared by the setup route and the restore routes. */
export class SetupState {
  /** Set by the daemon: without it (in-process kernels) restore is not offered. */
  onRestored: RestoredHandler | null = null
  /** A restore has begun (and, once it succeeded, setup stays closed for this kernel). */
  restoring = false
  #running = false
  readonly #attempts = new Map<string, { count: number; resetAt: number }>()

  /** 409 while a restore is under way or done. */
  assertOpen(): void {
    if (this.restoring) throw SetupErrors.restoring()
  }

  /** One restic run at a time, ATTEMPTS per address per window. */
  async attempt<T>(ip: string, fn: () => Promise<T>): Promise<T> {
    const now = Date.now()
    if (this.#attempts.size > 10_000)
      for (const [key, e] of this.#attempts) if (e.resetAt <= now) this.#attempts.delete(key)
    const entry = this.#attempts.get(ip)
    if (!entry || entry.resetAt <= now) this.#attempts.set(ip, { count: 1, resetAt: now + WINDOW_MS })
    else if (entry.count >= ATTEMPTS) {
      const wait = Math.ceil((entry.resetAt - now) / 1000)
      throw SetupErrors.throttled(`Too many restore attempts; try again in ${wait} s`, { 'retry-after': String(wait) })
    } else entry.count++
    if (this.#running) throw SetupErrors.busy()
    this.#running = true
    try {
      return await fn()
    } finally {
      this.#running = false
    }
  }
}

const RepositoryBody = Type.Object(
  {
    repository: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'As the recovery kit names it: a folder, rest:https://user:password@host/path or sftp:user@host:/path',
    }),
    password: Type.String({ minLength: 1, maxLength: 4096 }),
  },
  { additionalProperties: false },
)
const SetupSnapshot = Type.Object({
  id: Type.String(),
  shortId: Type.String(),
  time: Type.String(),
  hostname: Type.String(),
  job: Type.Union([Type.String(), Type.Null()]),
})

export function setupRestoreRoutes(r: KernelRouteRegistrar, k: KernelServices, optional: OptionalServices): void {
  /** The backups plugin's service, when a built-in backups plugin provides it and a daemon can swap the folder. */
  const service = (): SetupRestoreService | null => {
    const record = k.registry().find('backups')
    if (!k.setup.onRestored || !record?.builtin || !record.runtime?.provided.includes(SERVICE_ID)) return null
    return optional.get(setupRestoreToken) ?? null
  }
  const gate = async (): Promise<SetupRestoreService> => {
    if (!(await k.users.needsSetup())) throw UserErrors.setupDone()
    k.setup.assertOpen()
    const s = service()
    if (!s) throw SetupErrors.unavailable()
    return s
  }

  r.get(
    '/api/setup/restore',
    {
      role: 'public',
      schema: { response: { 200: Type.Object({ available: Type.Boolean(), restoring: Type.Boolean() }) } },
    },
    async () => ({
      available: (await k.users.needsSetup()) && !k.setup.restoring && service() !== null,
      restoring: k.setup.restoring,
    }),
  )

  r.post(
    '/api/setup/restore/snapshots',
    {
      role: 'public',
      schema: { body: RepositoryBody, response: { 200: Type.Object({ items: Type.Array(SetupSnapshot) }) } },
    },
    async (req) => {
      const s = await gate()
      return { items: await k.setup.attempt(req.ip, () => s.snapshots(req.body.repository, req.body.password)) }
    },
  )

  r.post(
    '/api/setup/restore',
    {
      role: 'public',
      schema: {
        body: Type.Object(
          { ...RepositoryBody.properties, snapshot: Type.String({ minLength: 8, maxLength: 64 }) },
          { additionalProperties: false },
        ),
        response: { 202: Type.Object({ snapshot: Type.String(), restarting: Type.Literal(true) }) },
      },
    },
    async (req, reply) => {
      const s = await gate()
      const dataDir = k.config.dataDir
      const folder = join(dirname(dataDir), `.${basename(dataDir)}-restore-${randomBytes(4).toString('hex')}`)
      const done = await k.setup.attempt(req.ip, async () => {
        // Closed from here: a first admin made meanwhile would be lost in the swap.
        k.setup.restoring = true
        try {
          const out = await s.restore(req.body.repository, req.body.password, req.body.snapshot, folder)
          // An admin made in the moment before the gate closed: the restore is dropped, not swapped over it.
          if (!(await k.users.needsSetup())) throw UserErrors.setupDone()
          return out
        } catch (err) {
          k.setup.restoring = false
          await rm(folder, { recursive: true, force: true })
          throw err
        }
      })
      const onRestored = k.setup.onRestored!
      // The answer goes out first (or the client went away: the restore stands); then the daemon closes this kernel.
      reply.raw.once('close', () => void onRestored(folder, done.snapshot))
      return reply.code(202).send({ snapshot: done.snapshot, restarting: true as const })
    },
  )
}

/**
 * Puts the restored folder's content in the data folder (which may be a mount point, so its entries move, not it),
 * the fresh install's own content set aside beside it. Answers `commit` (the set-aside content removed) and
 * `rollback` (the fresh content back, the restored one removed), for the daemon to call once the new kernel started
 * or failed to.
 */
export async function swapDataFolder(
  dataDir: string,
  restored: string,
): Promise<{ commit(): Promise<void>; rollback(): Promise<void> }> {
  const aside = join(dirname(dataDir), `.${basename(dataDir)}-before-restore-${randomBytes(4).toString('hex')}`)
  await mkdir(aside, { mode: 0o700 })
  const move = async (from: string, to: string) => {
    for (const entry of await readdir(from)) await rename(join(from, entry), join(to, entry))
  }
  await move(dataDir, aside)
  try {
    await move(restored, dataDir)
  } catch (err) {
    await move(dataDir, restored).catch(() => undefined)
    await move(aside, dataDir)
    throw err
  }
  await rm(restored, { recursive: true, force: true })
  return {
    commit: () => rm(aside, { recursive: true, force: true }),
    async rollback() {
      const dropped = `${aside}-dropped`
      await mkdir(dropped, { mode: 0o700 })
      await move(dataDir, dropped)
      await move(aside, dataDir)
      await rm(aside, { recursive: true, force: true })
      await rm(dropped, { recursive: true, force: true })
    },
  }
}
