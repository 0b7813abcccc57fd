import { execFile } from 'node:child_process'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { PackageErrors } from './errors.ts'

/** One package in dpkg's database, as dpkg-query reports it. */
export interface InstalledPackage {
  name: string
  architecture: string
  version: string
  /** dpkg's status word: installed, half-configured, unpacked, half-installed, triggers-awaited, triggers-pending. */
  state: string
  installedSizeInBytes: number
  summary: string
  /** Essential: yes, Protected: yes or Priority: required: the system needs it, so hostd does not remove it. */
  essential: boolean
}

// Tab-separated; the summary is last so a tab inside it (never seen, but allowed) cannot shift the other fields.
const FORMAT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's --showformat syntax, not a JS template
  '${Package}\\t${Architecture}\\t${Version}\\t${db:Status-Status}\\t${Installed-Size}\\t${Essential}\\t${Priority}\\t${Protected}\\t${binary:Summary}\\n'
/** Left in the database after a removal (config-files) or never installed: not installed packages. */
const NOT_INSTALLED = new Set(['not-installed', 'config-files'])

/** Runs a read-only apt or dpkg program as the daemon's user, with a fixed environment. */
export function runReader(program: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { env, maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err && !(program === 'dpkg-query' && stdout === '' && /no packages found/i.test(stderr))) {
        reject(
          PackageErrors.queryFailed(
            `${program} failed: ${(stderr.trim().split('\n').pop() || err.message).slice(0, 300)}`,
          ),
        )
      } else resolve(stdout)
    })
  })
}

export function parseDpkgQuery(stdout: string): InstalledPackage[] {
  const out: InstalledPackage[] = []
  for (const line of stdout.split('\n')) {
    if (!line) continue
    const [name, architecture, version, state, size, essential, priority, protect, ...summary] = line.split('\t')
    if (!name || !version || NOT_INSTALLED.has(state!)) continue
    out.push({
      name,
      architecture: architecture!,
      version,
      state: state!,
      installedSizeInBytes: (Number(size) || 0) * 1024,
      summary: summary.join('\t'),
      essential: essential === 'yes' || protect === 'yes' || priority === 'required',
    })
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.architecture < b.architecture ? -1 : 1))
}

/**
 * The installed packages, read with `dpkg-query -W` (unprivileged: dpkg's database is world-readable) and kept
 * until dpkg's database changes. dpkg replaces `status` by a rename on every change and journals into `updates/`
 * meanwhile, so the inode, size and time of both say whether the cached list is still the database's.
 */
export class DpkgDatabase {
  readonly admindir: string
  readonly #env: Record<string, string>
  #cached: { signature: string; packages: InstalledPackage[] } | null = null
  #reading: { signature: string; promise: Promise<InstalledPackage[]> } | null = null

  constructor(admindir: string, env: Record<string, string>) {
    this.admindir = admindir
    this.#env = env
  }

  async signature(): Promise<string> {
    const [status, updates] = await Promise.all([
      stat(join(this.admindir, 'status')),
      stat(join(this.admindir, 'updates')).catch(() => null),
    ])
    return `${status.ino}:${status.size}:${status.mtimeMs}:${updates?.mtimeMs ?? 0}`
  }

  async list(): Promise<InstalledPackage[]> {
    const signature = await this.signature().catch(() => {
      throw PackageErrors.queryFailed(`dpkg's database ${this.admindir} cannot be read`)
    })
    if (this.#cached?.signature === signature) return this.#cached.packages
    if (this.#reading?.signature === signature) return this.#reading.promise
    const promise = runReader('dpkg-query', [`--admindir=${this.admindir}`, '-W', `-f=${FORMAT}`], this.#env).then(
      parseDpkgQuery,
    )
    this.#reading = { signature, promise }
    promise
      .then(
        (packages) => {
          this.#cached = { signature, packages }
        },
        () => undefined,
      )
      .finally(() => {
        if (this.#reading?.promise === promise) this.#reading = null
      })
    return promise
  }
}
