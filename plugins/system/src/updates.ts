import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, rename, rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { AuditService, HelperClient, Logger } from '@hostd/sdk'
import gt from 'semver/functions/gt.js'
import valid from 'semver/functions/valid.js'
import { SystemErrors } from './errors.ts'
import type { UpdateStatus } from './schemas.ts'

export interface UpdateOptions {
  /** The release feed (JSON); null: updates are off. */
  feedUrl: string | null
  /** The release signing key: an Ed25519 public key in PEM. */
  publicKeyPem: string | null
  checkEveryHours: number
  /** First check after start (ms). */
  firstCheckDelayMs: number
  /** Releases are unpacked to <installDir>/releases/<version>; <installDir>/current points at the running one. */
  installDir: string
  maxArchiveBytes: number
}

/** What the feed says; `signature` is Ed25519 over signedMessage(version, sha256). */
interface Release {
  version: string
  notes: string
  url: string
  sha256: string
  signature: string
}

/** The bytes the release key signs: the version and the archive's digest, so neither can be swapped. */
export function signedMessage(version: string, sha256: string): Buffer {
  return Buffer.from(`hostd-release:${version}:${sha256}`)
}

const FEED_LIMIT = 64 * 1024

export class Updates {
  readonly #options: UpdateOptions
  readonly #currentVersion: string
  readonly #helper: HelperClient
  readonly #audit: AuditService
  readonly #log: Logger
  readonly #key: KeyObject | null
  #status: UpdateStatus
  #timers: NodeJS.Timeout[] = []

  constructor(options: UpdateOptions, currentVersion: string, helper: HelperClient, audit: AuditService, log: Logger) {
    this.#options = options
    this.#currentVersion = currentVersion
    this.#helper = helper
    this.#audit = audit
    this.#log = log
    this.#key = options.publicKeyPem ? createPublicKey(options.publicKeyPem) : null
    if (this.#key && this.#key.asymmetricKeyType !== 'ed25519')
      throw new Error('the release signing key must be an Ed25519 public key')
    this.#status = {
      currentVersion,
      latestVersion: null,
      updateAvailable: false,
      notes: null,
      checkedAt: null,
      error: null,
      state: 'idle',
    }
  }

  status(): UpdateStatus {
    return { ...this.#status }
  }

  settings() {
    return { feedConfigured: this.#options.feedUrl !== null, checkEveryHours: this.#options.checkEveryHours }
  }

  /** Periodic checks: the first shortly after start, then every `checkEveryHours`. */
  start(): void {
    if (!this.#options.feedUrl) return
    const check = () => void this.check().catch(() => undefined)
    const first = setTimeout(check, this.#options.firstCheckDelayMs)
    const every = setInterval(check, this.#options.checkEveryHours * 3600_000)
    first.unref()
    every.unref()
    this.#timers.push(first, every)
  }

  stop(): void {
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers = []
  }

  async check(): Promise<Release> {
    try {
      const release = await this.#readFeed()
      Object.assign(this.#status, {
        latestVersion: release.version,
        notes: release.notes,
        updateAvailable: gt(release.version, this.#currentVersion),
        checkedAt: new Date().toISOString(),
        error: null,
      })
      return release
    } catch (err) {
      Object.assign(this.#status, { checkedAt: new Date().toISOString(), error: (err as Error).message })
      throw err
    }
  }

  async #readFeed(): Promise<Release> {
    const feedUrl = this.#options.feedUrl
    if (!feedUrl) throw SystemErrors.updatesNotConfigured()
    let body: unknown
    try {
      const res = await fetch(feedUrl, { signal: AbortSignal.timeout(15_000), redirect: 'error' })
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      const text = await res.text()
      if (text.length > FEED_LIMIT) throw new Error('feed too large')
      body = JSON.parse(text)
    } catch (err) {
      throw SystemErrors.feedUnreadable(`The release feed could not be read: ${(err as Error).message}`)
    }
    const r = body as Partial<Record<keyof Release, unknown>>
    const str = (v: unknown) => typeof v === 'string'
    if (
      !r ||
      !str(r.version) ||
      !valid(r.version as string) ||
      !str(r.url) ||
      !/^[0-9a-f]{64}$/.test(String(r.sha256)) ||
      !str(r.signature)
    ) {
      throw SystemErrors.feedUnreadable(
        'The release feed is not of the expected shape (version, url, sha256, signature, notes)',
      )
    }
    const url = new URL(r.url as string, feedUrl)
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw SystemErrors.feedUnreadable('The release URL must be http or https')
    return {
      version: r.version as string,
      notes: str(r.notes) ? (r.notes as string) : '',
      url: url.href,
      sha256: r.sha256 as string,
      signature: r.signature as string,
    }
  }

  /** Download, verify (signature, then SHA-256 of the bytes), unpack, switch `current`, restart through the helper. */
  async install(actor: Parameters<AuditService['record']>[1]) {
    if (this.#status.state !== 'idle') throw SystemErrors.updateInProgress()
    if (!this.#options.feedUrl || !this.#key) throw SystemErrors.updatesNotConfigured()
    this.#status.state = 'installing'
    const from = this.#currentVersion
    let release: Release | null = null
    await mkdir(this.#options.installDir, { recursive: true })
    const work = await mkdtemp(join(this.#options.installDir, '.staging-'))
    try {
      release = await this.check()
      if (!gt(release.version, from)) throw SystemErrors.noUpdate(`Already up to date: ${from} is the latest release`)
      if (
        !verify(
          null,
          signedMessage(release.version, release.sha256),
          this.#key,
          Buffer.from(release.signature, 'base64'),
        )
      )
        throw SystemErrors.badSignature()
      const archive = join(work, 'release.tgz')
      const digest = await this.#download(release.url, archive)
      if (digest !== release.sha256) throw SystemErrors.badHash()
      const tree = join(work, 'tree')
      await mkdir(tree)
      // tar is loaded on first use (docs/ARCHITECTURE.md, "Runtime": libraries a start does not need).
      const { x: untar } = await import('tar')
      await untar({
        file: archive,
        cwd: tree,
        strict: true,
        preservePaths: false,
        // Signed content, so symbolic links (node_modules/.bin) are kept; hard links and devices are not.
        filter: (_p, entry) =>
          ['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink'].includes(
            (entry as { type?: string }).type ?? '',
          ),
      })
      const releases = join(this.#options.installDir, 'releases')
      await mkdir(releases, { recursive: true })
      const target = join(releases, release.version)
      await rm(target, { recursive: true, force: true })
      await rename(tree, target)
      // Switch in one rename so `current` is never missing or half-written.
      const link = join(work, 'current')
      await symlink(join('releases', release.version), link)
      await rename(link, join(this.#options.installDir, 'current'))
    } catch (err) {
      this.#status.state = 'idle'
      await this.#audit.record(
        {
          action: 'update.install',
          target: 'hostd',
          result: 'failure',
          detail: { before: from, after: from, offered: release?.version ?? null, error: (err as Error).message },
        },
        actor,
      )
      throw err
    } finally {
      await rm(work, { recursive: true, force: true })
    }
    this.#status.state = 'restarting'
    await this.#audit.record(
      {
        action: 'update.install',
        target: 'hostd',
        detail: { before: from, after: release.version, sha256: release.sha256 },
      },
      actor,
    )
    const restart = await this.#helper
      .call<{ dryRun?: boolean; argv?: string[] }>('daemon.restart')
      .catch((err: Error) => {
        this.#log.error({ err }, 'update installed but the restart failed; restart hostd by hand')
        throw err
      })
    return {
      installed: release.version,
      path: join(this.#options.installDir, 'releases', release.version),
      restart: {
        action: 'daemon.restart',
        dryRun: restart.dryRun === true,
        ...(restart.dryRun ? { argv: restart.argv } : {}),
      },
    }
  }

  /** Streams the archive to `file` with a size cap, hashing as it goes; answers the SHA-256 in hex. */
  async #download(url: string, file: string): Promise<string> {
    const res = await fetch(url, { signal: AbortSignal.timeout(10 * 60_000), redirect: 'follow' }).catch(
      (err: Error) => {
        throw SystemErrors.feedUnreadable(`The release could not be downloaded: ${err.message}`)
      },
    )
    if (!res.ok || !res.body)
      throw SystemErrors.feedUnreadable(`The release could not be downloaded: HTTP ${res.status}`)
    const hash = createHash('sha256')
    let bytes = 0
    const max = this.#options.maxArchiveBytes
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length
        if (bytes > max) return done(SystemErrors.feedUnreadable(`The release is larger than ${max} bytes`))
        hash.update(chunk)
        done(null, chunk)
      },
    })
    await pipeline(
      Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
      meter,
      createWriteStream(file, { mode: 0o600 }),
    )
    return hash.digest('hex')
  }
}
