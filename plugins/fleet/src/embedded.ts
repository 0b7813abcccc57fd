/**
 * The embedded default (HOSTD_FLEET_EMBEDDED=1): this hostd starts and supervises a local `nats-server` (Debian's
 * package) so a small fleet needs nothing else. Its configuration is written from the members' users this plugin
 * keeps (one NATS user per member, limited to its own subjects: subjects.ts), mode 0600 in the plugin's data folder;
 * a join code made here mints the new host's user and the server reloads its configuration (SIGHUP). The process is
 * started with an argument vector, restarted when it dies (1 s, doubling to 30 s), and stopped by its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { access, constants, mkdir, writeFile } from 'node:fs/promises'
import { delimiter, join } from 'node:path'
import type { Logger } from '@hostd/sdk'
import { FleetErrors } from './errors.ts'
import { renderServerConfig, type ServerUser } from './subjects.ts'

export interface EmbeddedOptions {
  /** The plugin's data folder. */
  dir: string
  port: number
  /** The address it listens on (127.0.0.1 unless other hosts are to join). */
  listen: string
  /** The binary: a path, or a name looked up in PATH. */
  binary: string
  log: Logger
}

/** The binary's path, or null when it is not installed. */
export async function findBinary(binary: string): Promise<string | null> {
  const candidates = binary.includes('/')
    ? [binary]
    : [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin'].map((d) => join(d, binary))
  for (const path of candidates) {
    try {
      await access(path, constants.X_OK)
      return path
    } catch {
      /* next */
    }
  }
  return null
}

export class EmbeddedServer {
  readonly #o: EmbeddedOptions
  #child: ChildProcess | null = null
  #users: ServerUser[] = []
  #stopping = false
  #delay = 1000
  #restart: NodeJS.Timeout | null = null
  #path = ''

  constructor(options: EmbeddedOptions) {
    this.#o = options
  }

  get url(): string {
    return `nats://127.0.0.1:${this.#o.port}`
  }

  get pid(): number | null {
    return this.#child?.pid ?? null
  }

  async start(users: ServerUser[]): Promise<void> {
    const path = await findBinary(this.#o.binary)
    if (!path) throw FleetErrors.serverMissing()
    this.#path = path
    this.#users = users
    this.#stopping = false
    await this.#writeConfig()
    this.#spawn()
  }

  /** A new member's user: written to the configuration, which the running server reloads. */
  async setUsers(users: ServerUser[]): Promise<void> {
    this.#users = users
    await this.#writeConfig()
    if (this.#child?.pid) process.kill(this.#child.pid, 'SIGHUP')
  }

  get #configFile(): string {
    return join(this.#o.dir, 'nats.conf')
  }

  async #writeConfig(): Promise<void> {
    await mkdir(join(this.#o.dir, 'jetstream'), { recursive: true, mode: 0o700 })
    const text = renderServerConfig({
      name: 'hostd',
      host: this.#o.listen,
      port: this.#o.port,
      storeDir: join(this.#o.dir, 'jetstream'),
      users: this.#users,
    })
    await writeFile(this.#configFile, text, { mode: 0o600 })
  }

  #spawn(): void {
    const child = spawn(this.#path, ['-c', this.#configFile], { stdio: ['ignore', 'ignore', 'pipe'] })
    this.#child = child
    let tail = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (tail = (tail + d).slice(-2000)))
    child.once('spawn', () => (this.#delay = 1000))
    child.once('error', (err) => this.#o.log.warn({ err }, 'fleet: nats-server could not start'))
    child.once('exit', (code, signal) => {
      if (this.#child === child) this.#child = null
      if (this.#stopping) return
      const last = tail.trim().split('\n').at(-1) ?? ''
      this.#o.log.warn({ code, signal, last }, `fleet: nats-server ended; starting it again in ${this.#delay} ms`)
      this.#restart = setTimeout(() => this.#spawn(), this.#delay)
      this.#restart.unref()
      this.#delay = Math.min(30_000, this.#delay * 2)
    })
  }

  async stop(): Promise<void> {
    this.#stopping = true
    if (this.#restart) clearTimeout(this.#restart)
    const child = this.#child
    this.#child = null
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    process.kill(child.pid, 'SIGTERM')
    const killer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), 5000)
    await exited
    clearTimeout(killer)
  }
}
