import { randomUUID } from 'node:crypto'
import { errors, HostdError, type AuditService, type HelperClient, type Logger } from '@hostd/sdk'
import { translateApt } from './apt-errors.ts'
import { splitRecord, type AptCatalog } from './apt.ts'
import type { DpkgDatabase, InstalledPackage } from './dpkg.ts'
import { PackageErrors } from './errors.ts'
import { checkPackageNames } from './names.ts'
import type { ExecRequest, InstalledPackageItem, Job, Removal, SearchItem } from './schemas.ts'
import { parseStatusLine, type Progress } from './status-fd.ts'

export const SEARCH_LIMIT = 100
/** The helper kills a job after two hours; the daemon waits a little longer for its answer. */
const JOB_TIMEOUT_MS = 7200_000 + 60_000
/** Lines of output kept for the audit entry of a failed job. */
const TAIL_LINES = 20

type Actor = Parameters<AuditService['record']>[1]

/** What a job sends while it runs: apt's progress, parsed, and each line of its output. */
export type JobEvent = Progress | { type: 'line'; stream: 'stdout' | 'stderr' | 'status'; text: string }

export interface JobOutcome {
  ok: boolean
  exitCode: number
  action: ExecRequest['action']
  packages: string[]
  jobId: string
  /** A known apt error found in the output (src/apt-errors.ts): its code, a message naming the next step, apt's words. */
  error?: string
  message?: string
  details?: { raw: string }
}

/** apt-get -s prints one "Remv <name>[:<arch>] [<version>]" line per package a removal takes. */
const REMV = /^Remv (\S+)(?: \[([^\]]*)\])?/

/** The package list, search, and the one-at-a-time jobs; no HTTP. */
export class Packages {
  readonly #dpkg: DpkgDatabase
  readonly #apt: AptCatalog
  readonly #helper: HelperClient
  readonly #audit: AuditService
  readonly #log: Logger
  #job: Job | null = null

  constructor(dpkg: DpkgDatabase, apt: AptCatalog, helper: HelperClient, audit: AuditService, log: Logger) {
    this.#dpkg = dpkg
    this.#apt = apt
    this.#helper = helper
    this.#audit = audit
    this.#log = log
  }

  get job(): Job | null {
    return this.#job
  }

  async list() {
    const [installed, candidates] = await Promise.all([this.#dpkg.list(), this.#apt.candidates()])
    const items: InstalledPackageItem[] = installed.map((p) => {
      const candidate = candidates?.map.get(`${p.name}:${p.architecture}`)
      const upgradable = candidate !== undefined && candidate !== p.version
      return { ...p, upgradable, candidateVersion: upgradable ? candidate : null }
    })
    return {
      items,
      total: items.length,
      upgradableCount: items.reduce((n, p) => n + (p.upgradable ? 1 : 0), 0),
      upgradesCheckedAt: candidates?.checkedAt.toISOString() ?? null,
      job: this.#job,
    }
  }

  /** `query` is text: lowercased and compared with String#includes, never compiled into a pattern. */
  async search(query: string) {
    const text = query.trim().toLowerCase()
    if (!text) throw PackageErrors.invalidRequest('q must hold some text')
    const [index, installed, candidates] = await Promise.all([
      this.#apt.index(),
      this.#dpkg.list(),
      this.#apt.candidates(),
    ])
    const byKey = new Map<string, InstalledPackage>(installed.map((p) => [`${p.name}:${p.architecture}`, p]))
    const rank = (name: string, lowerSummary: string) =>
      name === text ? 0 : name.startsWith(text) ? 1 : name.includes(text) ? 2 : lowerSummary.includes(text) ? 3 : -1
    const hits: { rank: number; item: SearchItem }[] = []
    const hit = (r: number, name: string, architecture: string, version: string, summary: string) => {
      const mine = byKey.get(`${name}:${architecture}`)
      hits.push({
        rank: r,
        item: {
          name,
          architecture,
          version,
          summary,
          installed: !!mine,
          installedVersion: mine?.version ?? null,
          upgradable: !!mine && mine.version !== version,
          essential: !!mine?.essential,
        },
      })
    }
    for (const record of index) {
      if (!record.toLowerCase().includes(text)) continue // most records: one cheap test
      const { name, architecture, version, summary } = splitRecord(record)
      const r = rank(name, summary.toLowerCase())
      if (r >= 0) hit(r, name, architecture, version, summary)
    }
    // Installed packages no list offers (a local .deb, a removed suite) are not in apt's index: search them too.
    // The candidates may predate a package a running job just unpacked: one already found in the index is not repeated.
    const found = new Set(hits.map((h) => `${h.item.name}:${h.item.architecture}`))
    for (const p of installed) {
      if (candidates?.map.has(`${p.name}:${p.architecture}`) || found.has(`${p.name}:${p.architecture}`)) continue
      const r = rank(p.name, p.summary.toLowerCase())
      if (r >= 0) hit(r, p.name, p.architecture, p.version, p.summary)
    }
    hits.sort(
      (a, b) =>
        a.rank - b.rank ||
        (a.item.name < b.item.name
          ? -1
          : a.item.name > b.item.name
            ? 1
            : a.item.architecture < b.item.architecture
              ? -1
              : 1),
    )
    return {
      query,
      total: hits.length,
      truncated: hits.length > SEARCH_LIMIT,
      items: hits.slice(0, SEARCH_LIMIT).map((h) => h.item),
    }
  }

  /**
   * What removing `name` takes with it, from apt's simulation through the root helper (it changes nothing). 404 when
   * it is not installed, 409 HOSTD_PACKAGES_ESSENTIAL when it, or anything it takes along, is one the system needs.
   */
  async removal(name: string): Promise<Removal> {
    const [checked] = checkPackageNames([name])
    const installed = await this.#dpkg.list()
    const [bare, arch] = checked!.split(':')
    const mine = installed.find((p) => p.name === bare && (!arch || p.architecture === arch))
    if (!mine) throw PackageErrors.notInstalled(`${checked} is not installed`)
    if (mine.essential) throw essentialError([mine.name], mine.name)
    if (!(await this.#helper.available())) throw errors.privilegesMissing()
    const plan = await this.#simulateRemoval([checked!], installed)
    if (plan.essential.length) throw essentialError(plan.essential, checked!)
    return { name: plan.name, removes: plan.removes }
  }

  /** Refuses a removal of packages the system needs, or one that would take such a package along. */
  async #guardRemoval(packages: string[]): Promise<void> {
    const installed = await this.#dpkg.list()
    const named = installed.filter(
      (p) => p.essential && packages.some((n) => n === p.name || n.split(':')[0] === p.name),
    )
    if (named.length)
      throw essentialError(
        named.map((p) => p.name),
        packages.join(' '),
      )
    const plan = await this.#simulateRemoval(packages, installed).catch((err: unknown) => {
      // A simulation apt refuses (an unknown name) is left to the job itself, whose output then says why.
      if (err instanceof HostdError && err.statusCode < 500) return null
      throw err
    })
    if (plan?.essential.length) throw essentialError(plan.essential, packages.join(' '))
  }

  async #simulateRemoval(packages: string[], installed: InstalledPackage[]): Promise<RemovalPlan> {
    const out = await this.#helper.call<{ stdout: string; stderr: string; exitCode: number }>('pkg.simulateRemove', {
      packages,
    })
    if (out.exitCode !== 0) {
      const both = `${out.stdout}\n${out.stderr}`
      // apt refuses to work out a removal that breaks an essential package ("dash : Depends: dpkg ... but it is not
      // going to be installed"): what the system needs would go with it.
      const broken = new Set([...both.matchAll(/^\s*(\S+) : (?:Pre-?)?Depends: /gm)].map((m) => m[1]!.split(':')[0]!))
      const needed = installed.filter((p) => p.essential && broken.has(p.name)).map((p) => p.name)
      if (needed.length) return { name: packages.join(' '), removes: [], essential: [...new Set(needed)] }
      throw (
        translateApt(both) ??
        PackageErrors.queryFailed(
          `apt could not work out the removal (exit ${out.exitCode})`,
          {},
          { raw: both.trim().slice(-4000) },
        )
      )
    }
    const byName = new Map<string, InstalledPackage[]>()
    for (const p of installed) byName.set(p.name, [...(byName.get(p.name) ?? []), p])
    const removes: (InstalledPackage & { asked: boolean })[] = []
    for (const line of out.stdout.split('\n')) {
      const m = REMV.exec(line)
      if (!m) continue
      const [name, arch] = m[1]!.split(':')
      const found = byName.get(name!)?.find((p) => !arch || p.architecture === arch) ?? byName.get(name!)?.[0]
      const asked = packages.some((n) => n === m[1] || n.split(':')[0] === name)
      removes.push({
        ...(found ?? {
          name: name!,
          architecture: arch ?? '',
          version: m[2] ?? '',
          state: 'installed',
          installedSizeInBytes: 0,
          summary: '',
          essential: false,
        }),
        asked,
      })
    }
    removes.sort((a, b) => Number(b.asked) - Number(a.asked) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    return {
      name: packages.join(' '),
      removes: removes.map(({ name, architecture, version, summary }) => ({ name, architecture, version, summary })),
      essential: removes.filter((p) => p.essential).map((p) => p.name),
    }
  }

  /** Checks a job request: the names (Debian's rules), and how many each action takes. */
  check(request: ExecRequest): string[] {
    const packages = checkPackageNames(request.packages ?? [])
    if (request.action === 'refresh' && packages.length)
      throw PackageErrors.invalidRequest('refresh takes no package names')
    if (['install', 'remove', 'purge'].includes(request.action) && !packages.length) {
      throw PackageErrors.invalidRequest(`${request.action} needs at least one package name`)
    }
    return packages
  }

  /**
   * Runs one job through the root helper to its end, whoever listens: `onStart` and `onEvent` feed a socket that
   * may have closed meanwhile (the job goes on; dpkg is never interrupted). The outcome is audited, then apt's
   * candidates are read again so the list shows what changed. A second job while one runs is refused (409).
   */
  async run(
    request: ExecRequest,
    actor: Actor & { username?: string | null },
    onStart: (job: Job) => void,
    onEvent: (event: JobEvent) => void,
  ): Promise<JobOutcome> {
    const packages = this.check(request)
    if (this.#job) throw busy(this.#job)
    if (!(await this.#helper.available())) throw errors.privilegesMissing()
    // What the system needs is never removed, whatever the page offered: the names themselves, or what apt would
    // take with them (libc6 takes dpkg).
    if (request.action === 'remove' || request.action === 'purge') await this.#guardRemoval(packages)
    if (this.#job) throw busy(this.#job) // another socket started one meanwhile
    const job: Job = {
      id: randomUUID(),
      action: request.action,
      packages,
      startedAt: new Date().toISOString(),
      username: actor?.username ?? null,
    }
    this.#job = job
    const target = packages.join(' ') || (request.action === 'refresh' ? 'package lists' : 'all upgradable packages')
    const tail: string[] = []
    /** Lines that may name a known apt error (E:, W:, Err:, dependency and lock lines), kept whatever else is said. */
    const reasons: string[] = []
    try {
      onStart(job)
      let exitCode: number
      try {
        ;({ exitCode } = await this.#helper.call<{ exitCode: number }>(
          `pkg.${request.action}`,
          packages.length ? { packages } : {},
          {
            timeoutMs: JOB_TIMEOUT_MS,
            onEvent: (raw) => {
              const event = toJobEvent(raw)
              if (!event) return
              if (event.type === 'line' && event.stream !== 'status') {
                tail.push(event.text)
                if (tail.length > TAIL_LINES) tail.shift()
                if (/^(E|W|Err)|Depends:|unmet|lock|resolv|connect/i.test(event.text) && reasons.length < 200)
                  reasons.push(event.text)
              }
              onEvent(event)
            },
          },
        ))
      } catch (err) {
        await this.#audit.record(
          {
            action: `packages.${request.action}`,
            target,
            result: 'failure',
            detail: { jobId: job.id, packages, error: (err as Error).message },
          },
          actor,
        )
        throw err instanceof HostdError && err.code === 'HOSTD_HELPER_BUSY' ? busy(null) : err
      }
      // apt exits 0 from a refresh that reached no mirror (it keeps the old lists): that refresh did not happen.
      const problem =
        exitCode !== 0 || request.action === 'refresh'
          ? translateApt(exitCode === 0 ? reasons : [...reasons, ...tail])
          : null
      const ok = exitCode === 0 && !problem
      await this.#audit.record(
        {
          action: `packages.${request.action}`,
          target,
          result: ok ? 'success' : 'failure',
          detail: {
            jobId: job.id,
            packages,
            exitCode,
            ...(ok ? {} : { output: tail }),
            ...(problem ? { error: problem.code } : {}),
          },
        },
        actor,
      )
      await this.#apt
        .refresh()
        .catch((err: unknown) => this.#log.warn({ err }, 'reading apt candidates after a package job failed'))
      return {
        ok,
        exitCode,
        action: request.action,
        packages,
        jobId: job.id,
        ...(problem ? { error: problem.code, message: problem.message, details: problem.details } : {}),
      }
    } finally {
      this.#job = null
    }
  }
}

export interface RemovalPlan extends Removal {
  /** The removed packages the system needs (never removed here). */
  essential: string[]
}

function essentialError(names: string[], asked: string) {
  const list = names.slice(0, 8).join(', ') + (names.length > 8 ? ` and ${names.length - 8} more` : '')
  const self = names.length === 1 && names[0] === asked
  return PackageErrors.essential(
    self
      ? `${asked} is essential to this system (the package manager or the base system needs it): hostd does not remove it.`
      : `Removing ${asked} would also remove ${list}, which this system needs: hostd does not remove ${names.length === 1 ? 'it' : 'them'}.`,
  )
}

function busy(job: Job | null) {
  if (!job) return PackageErrors.busy('Another package job is running on this host; try again when it has finished')
  const what = [job.action, ...job.packages].join(' ')
  return PackageErrors.busy(
    `Another package job is running: ${what} (started ${job.startedAt}${job.username ? ` by ${job.username}` : ''})`,
  )
}

/** A helper event ({stream, text}) as the socket's message: status lines parsed into progress. */
function toJobEvent(raw: unknown): JobEvent | null {
  const { stream, text } = (raw ?? {}) as { stream?: unknown; text?: unknown }
  if (typeof text !== 'string' || (stream !== 'stdout' && stream !== 'stderr' && stream !== 'status')) return null
  if (stream === 'status') return parseStatusLine(text) ?? { type: 'line', stream, text }
  // apt redraws "(Reading database ... 45%" with carriage returns: keep what the terminal would show last.
  return { type: 'line', stream, text: text.slice(text.lastIndexOf('\r') + 1) }
}
