/**
 * Repositories: where backups go (a local folder, SFTP, restic's REST protocol), kept in the plugin's settings with
 * their secrets sealed (secrets.ts), and how restic is pointed at one (`open`): the repository in RESTIC_REPOSITORY,
 * the password in an owner-only RESTIC_PASSWORD_FILE, SFTP through `ssh` with hostd's own key.
 */
import { execFile } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { SecretSealer, Settings } from '@hostd/sdk'
import { BackupErrors } from './errors.ts'
import { classify, runRestic, type ResticTarget } from './restic.ts'
import type { Location, RepositoryCreate } from './schemas.ts'
import { SecretFiles } from './secrets.ts'

const run = promisify(execFile)

export interface StoredRepository {
  id: string
  name: string
  location: Location
  /** Sealed repository password. */
  password: string
  /** Sealed REST server password, when it has one. */
  restPassword: string | null
  /** Sealed secret key of an s3 location (absent on repositories stored before s3 existed). */
  s3Secret?: string | null
  createdAt: string
}

export interface OpenRepository {
  target: ResticTarget
  /** Removes the run's secret files. */
  close(): Promise<void>
}

/** restic's name for a location, without credentials (the REST URL's are added only in the run's environment). */
export function repositoryName(location: Location): string {
  if (location.kind === 'local') return location.path
  if (location.kind === 'sftp') return `sftp:${location.user}@${location.host}:${location.path}`
  if (location.kind === 's3')
    return `s3:${location.endpoint.replace(/\/$/, '')}/${location.bucket}${location.path ? `/${location.path}` : ''}`
  const url = new URL(location.url)
  url.username = ''
  url.password = ''
  return `rest:${url.toString()}`
}

export class Repositories {
  readonly #settings: Settings
  readonly #sealer: SecretSealer
  readonly #dir: string
  #lock: Promise<unknown> = Promise.resolve()

  constructor(settings: Settings, sealer: SecretSealer, dir: string) {
    this.#settings = settings
    this.#sealer = sealer
    this.#dir = dir
  }

  /** Serializes read-modify-write of the settings list. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#lock.then(fn, fn)
    this.#lock = next.catch(() => undefined)
    return next
  }

  async list(): Promise<StoredRepository[]> {
    return (await this.#settings.get<StoredRepository[]>('repositories')) ?? []
  }

  async get(id: string): Promise<StoredRepository> {
    const found = (await this.list()).find((r) => r.id === id)
    if (!found) throw BackupErrors.notFound(`No repository ${id}`)
    return found
  }

  /**
   * Creates (restic init) or opens (a test that the password opens it) the repository, then stores it. Nothing is
   * stored when restic fails. Answers the stored record and the password in clear (for the recovery kit).
   */
  async create(input: RepositoryCreate): Promise<{ stored: StoredRepository; password: string; created: boolean }> {
    const mode = input.mode ?? 'create'
    if (mode === 'open' && !input.password)
      throw BackupErrors.invalid('Opening an existing repository needs its password')
    if (input.location.kind === 'rest' && input.restPassword && !input.location.username)
      throw BackupErrors.invalid('A REST password needs a username')
    if ((input.location.kind === 's3') !== Boolean(input.s3SecretAccessKey))
      throw BackupErrors.invalid('An s3 location needs s3SecretAccessKey (and only an s3 location takes one)')
    const password = input.password ?? randomBytes(32).toString('base64url')
    const stored: StoredRepository = {
      id: randomUUID(),
      name: input.name,
      location: input.location,
      password: await this.#sealer.seal(password),
      restPassword: input.restPassword ? await this.#sealer.seal(input.restPassword) : null,
      s3Secret: input.s3SecretAccessKey ? await this.#sealer.seal(input.s3SecretAccessKey) : null,
      createdAt: new Date().toISOString(),
    }
    const repo = await this.open(stored)
    try {
      if (mode === 'create') {
        if (input.location.kind === 'local') await mkdir(input.location.path, { recursive: true, mode: 0o700 })
        const res = await runRestic(repo.target, ['init'], { timeoutMs: 120_000 })
        if (res.code !== 0) {
          if (/already (exists|initialized)|config file already exists/i.test(res.stderr))
            throw BackupErrors.exists(
              `There is a repository at ${repositoryName(input.location)} already: open it with its password (mode "open")`,
            )
          throw classify(res, 'restic init')
        }
      } else {
        const res = await runRestic(repo.target, ['cat', 'config'], { timeoutMs: 120_000 })
        if (res.code !== 0) throw classify(res, 'opening the repository')
      }
    } finally {
      await repo.close()
    }
    await this.#serial(async () => {
      const all = await this.list()
      if (all.some((r) => r.name === stored.name)) throw BackupErrors.exists(`A repository is named ${stored.name}`)
      await this.#settings.set('repositories', [...all, stored])
    })
    return { stored, password, created: mode === 'create' }
  }

  async remove(id: string): Promise<StoredRepository> {
    return this.#serial(async () => {
      const all = await this.list()
      const found = all.find((r) => r.id === id)
      if (!found) throw BackupErrors.notFound(`No repository ${id}`)
      await this.#settings.set(
        'repositories',
        all.filter((r) => r.id !== id),
      )
      return found
    })
  }

  /** The repository's password in clear (for the recovery kit and restores elsewhere); never logged. */
  async passwordOf(repo: StoredRepository): Promise<string> {
    const plain = await this.#sealer.open(repo.password)
    if (plain === null)
      throw BackupErrors.wrongPassword('The stored password cannot be unsealed (the key file changed)')
    return plain
  }

  /** Points restic at `repo`: its secrets in owner-only files for the time of one run. */
  async open(repo: StoredRepository): Promise<OpenRepository> {
    const files = new SecretFiles(join(this.#dir, 'run'))
    try {
      const passwordFile = await files.write('password', await this.passwordOf(repo))
      const env: Record<string, string> = { RESTIC_CACHE_DIR: join(this.#dir, 'cache') }
      let repository = repositoryName(repo.location)
      const options: string[] = []
      const location = repo.location
      if (location.kind === 'rest' && location.username) {
        const url = new URL(location.url)
        url.username = location.username
        url.password = repo.restPassword ? ((await this.#sealer.open(repo.restPassword)) ?? '') : ''
        repository = `rest:${url.toString()}`
      }
      if (location.kind === 's3') {
        // In the run's environment only, as restic's s3 backend reads them.
        const secret = repo.s3Secret ? await this.#sealer.open(repo.s3Secret) : null
        if (!secret)
          throw BackupErrors.wrongPassword('The stored S3 secret key cannot be unsealed (the key file changed)')
        env.AWS_ACCESS_KEY_ID = location.accessKeyId
        env.AWS_SECRET_ACCESS_KEY = secret
        if (location.region) env.AWS_DEFAULT_REGION = location.region
      }
      if (location.kind === 'sftp') {
        const key = await this.#sshKey()
        const keyFile = await files.write('id_ed25519', key.privateKey)
        const knownHosts = join(this.#dir, 'known_hosts')
        options.push(
          `sftp.command=ssh -i ${keyFile} -p ${location.port ?? 22} -o BatchMode=yes -o IdentitiesOnly=yes ` +
            `-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=${knownHosts} -o ConnectTimeout=10 ` +
            `-o ServerAliveInterval=15 -o ServerAliveCountMax=2 ${location.user}@${location.host} -s sftp`,
        )
      }
      return { target: { repository, passwordFile, options, env }, close: () => files.dispose() }
    } catch (err) {
      await files.dispose()
      throw err
    }
  }

  /** hostd's SSH key for SFTP repositories (ed25519, made on first use); the private half sealed in the settings. */
  async publicKey(): Promise<string> {
    return (await this.#sshKey()).publicKey
  }

  async #sshKey(): Promise<{ publicKey: string; privateKey: string }> {
    return this.#serial(async () => {
      const stored = await this.#settings.get<{ publicKey: string; privateKey: string }>('sshKey')
      if (stored) {
        const privateKey = await this.#sealer.open(stored.privateKey)
        if (privateKey) return { publicKey: stored.publicKey, privateKey }
      }
      const files = new SecretFiles(join(this.#dir, 'run'))
      try {
        await mkdir(files.dir, { recursive: true, mode: 0o700 })
        const path = join(files.dir, 'key')
        await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'hostd-backups', '-f', path])
        const privateKey = await readFile(path, 'utf8')
        const publicKey = (await readFile(`${path}.pub`, 'utf8')).trim()
        await this.#settings.set('sshKey', { publicKey, privateKey: await this.#sealer.seal(privateKey) })
        return { publicKey, privateKey }
      } finally {
        await files.dispose()
      }
    })
  }

  /** Secret files a killed daemon left behind. */
  async sweep(): Promise<void> {
    await rm(join(this.#dir, 'run'), { recursive: true, force: true })
  }
}
