import { spawn } from 'node:child_process'
import { stat } from 'node:fs/promises'
import type { Logger } from '@hostd/sdk'
import { runReader, type DpkgDatabase } from './dpkg.ts'
import { PackageErrors } from './errors.ts'

/**
 * The packages apt can install, its candidate version of each: one string per package, `name\tarchitecture\t
 * version\tsummary` (one string rather than four: a full Debian archive's 64,000 packages then take about 6 MB of
 * heap instead of 16). Read them with `splitRecord`.
 */
export type AvailableIndex = string[]

export function splitRecord(record: string): { name: string; architecture: string; version: string; summary: string } {
  const [name, architecture, version, summary] = record.split('\t', 4) as [string, string, string, string]
  return { name, architecture, version, summary }
}

const FIELDS = { 'Package: ': 0, 'Architecture: ': 1, 'Version: ': 2, 'Description: ': 3 } as const
const PREFIXES = Object.entries(FIELDS).map(([prefix, slot]) => [Buffer.from(prefix), slot] as const)

/**
 * Reads `apt-cache dumpavail` (one deb822 record per package: apt's candidate version, with its one-line
 * Description) as it streams, on raw bytes: only the four fields kept become strings, so the 50 MB of a full
 * Debian archive's records are never held. Calls `record` once per package.
 */
export class DumpavailParser {
  readonly #record: (name: string, architecture: string, version: string, summary: string) => void
  #rest: Buffer = Buffer.alloc(0)
  #fields: (string | undefined)[] = []

  constructor(record: (name: string, architecture: string, version: string, summary: string) => void) {
    this.#record = record
  }

  push(chunk: Buffer): void {
    const data = this.#rest.length ? Buffer.concat([this.#rest, chunk]) : chunk
    let start = 0
    for (let end = data.indexOf(10, start); end >= 0; start = end + 1, end = data.indexOf(10, start))
      this.#line(data, start, end)
    this.#rest = Buffer.from(data.subarray(start))
  }

  end(): void {
    if (this.#rest.length) this.#line(this.#rest, 0, this.#rest.length)
    this.#rest = Buffer.alloc(0)
    this.#flush()
  }

  #line(data: Buffer, start: number, end: number): void {
    if (end === start) {
      this.#flush()
      return
    }
    for (const [prefix, slot] of PREFIXES) {
      if (
        end - start > prefix.length &&
        data[start] === prefix[0] &&
        data.compare(prefix, 0, prefix.length, start, start + prefix.length) === 0
      ) {
        this.#fields[slot] = data.toString('utf8', start + prefix.length, end).trim()
        return
      }
    }
  }

  #flush(): void {
    const [name, architecture, version, summary] = this.#fields
    if (name && version) this.#record(name, architecture ?? '', version, summary ?? '')
    this.#fields = []
  }
}

/**
 * What apt offers, next to what dpkg has: the candidate version of each installed package (so the list can say
 * which are upgradable) and, while someone searches, the whole available index. Both come from one
 * `apt-cache dumpavail` run (about a second on a full Debian archive: apt rebuilds its cache in memory when, as in
 * Debian's images, pkgcache.bin is off), made off the request path and again whenever apt's lists or dpkg's
 * database change. The index is dropped after `indexIdleMs` without a search: it is several megabytes.
 */
export class AptCatalog {
  readonly #env: Record<string, string>
  readonly #dpkg: DpkgDatabase
  readonly #log: Logger
  readonly #indexIdleMs: number
  #listsDir: Promise<string | null> | null = null
  #candidates: { signature: string; map: Map<string, string>; checkedAt: Date } | null = null
  #index: { signature: string; index: AvailableIndex } | null = null
  #indexTimer: NodeJS.Timeout | null = null
  #building: { withIndex: boolean; promise: Promise<void> } | null = null

  constructor(env: Record<string, string>, dpkg: DpkgDatabase, log: Logger, indexIdleMs = 10 * 60_000) {
    this.#env = env
    this.#dpkg = dpkg
    this.#log = log
    this.#indexIdleMs = indexIdleMs
  }

  /**
   * Candidate versions of the installed packages (`name:arch` -> version). The first call waits for them; later
   * calls answer at once and start a rebuild in the background when apt's lists or dpkg's database changed.
   */
  async candidates(): Promise<{ map: Map<string, string>; checkedAt: Date } | null> {
    if (!this.#candidates) {
      await this.#build(false).catch((err: unknown) => this.#log.warn({ err }, 'reading apt candidates failed'))
      return this.#candidates
    }
    const signature = await this.#signature()
    if (signature !== this.#candidates.signature)
      this.#build(false).catch((err: unknown) => this.#log.warn({ err }, 'reading apt candidates failed'))
    return this.#candidates
  }

  /** Rebuilds now (after a package job): the next list shows what the job changed. */
  refresh(): Promise<void> {
    return this.#build(this.#index !== null)
  }

  /** The index for a search, current with apt's lists and dpkg's database. */
  async index(): Promise<AvailableIndex> {
    const signature = await this.#signature()
    if (this.#index?.signature !== signature) await this.#build(true)
    if (this.#indexTimer) clearTimeout(this.#indexTimer)
    this.#indexTimer = setTimeout(() => {
      this.#index = null
    }, this.#indexIdleMs)
    this.#indexTimer.unref()
    if (!this.#index) throw PackageErrors.queryFailed('apt-cache gave no package index')
    return this.#index.index
  }

  stop(): void {
    if (this.#indexTimer) clearTimeout(this.#indexTimer)
    this.#index = null
  }

  /** apt's lists directory's time (a refresh renames files into it) and dpkg's database signature. */
  async #signature(): Promise<string> {
    this.#listsDir ??= runReader('apt-config', ['shell', 'LISTS', 'Dir::State::lists/d'], this.#env).then(
      (out) => /^LISTS='(.*)'$/m.exec(out)?.[1] ?? null,
      () => null,
    )
    const lists = await this.#listsDir
    const listsTime = lists
      ? await stat(lists).then(
          (s) => s.mtimeMs,
          () => 0,
        )
      : 0
    // An unreadable database reads as a change: the rebuild then reports what is wrong.
    return `${listsTime}|${await this.#dpkg.signature().catch(() => 'unreadable')}`
  }

  /** One build at a time; a build asked for during another waits for it, unless that one already does the job. */
  #build(withIndex: boolean): Promise<void> {
    const running = this.#building
    if (running && (running.withIndex || !withIndex)) return running.promise
    const promise = (running?.promise ?? Promise.resolve()).catch(() => undefined).then(() => this.#read(withIndex))
    this.#building = { withIndex, promise }
    promise
      .finally(() => {
        if (this.#building?.promise === promise) this.#building = null
      })
      .catch(() => undefined)
    return promise
  }

  async #read(withIndex: boolean): Promise<void> {
    const signature = await this.#signature() // taken first: a change while reading makes the next call read again
    const installed = new Set((await this.#dpkg.list()).map((p) => `${p.name}:${p.architecture}`))
    const map = new Map<string, string>()
    const index: AvailableIndex = []
    const parser = new DumpavailParser((name, architecture, version, summary) => {
      const key = `${name}:${architecture}`
      if (installed.has(key)) map.set(key, version)
      if (withIndex) index.push(`${name}\t${architecture}\t${version}\t${summary.replaceAll('\t', ' ')}`)
    })
    await new Promise<void>((resolve, reject) => {
      const child = spawn('apt-cache', ['dumpavail'], { env: this.#env, stdio: ['ignore', 'pipe', 'pipe'] })
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => parser.push(chunk))
      child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)))
      child.on('error', (err) => reject(PackageErrors.queryFailed(`apt-cache cannot run: ${err.message}`)))
      child.on('close', (code) => {
        if (code !== 0)
          return reject(
            PackageErrors.queryFailed(`apt-cache dumpavail failed: ${stderr.trim().split('\n').pop() ?? code}`),
          )
        parser.end()
        resolve()
      })
    })
    this.#candidates = { signature, map, checkedAt: new Date() }
    if (withIndex) this.#index = { signature, index }
  }
}
