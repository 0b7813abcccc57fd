import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { readProcFile } from './proc-files.ts'
import { parsePageSize, parseMeminfo } from './procfs-parse.ts'
import { commandLine, parsePasswd, parsePidIo, parsePidStat, parsePidStatus, processName } from './process-parse.ts'

/** Cumulative figures of one process at one instant; rates come from two sweeps (see activity.ts). */
export interface ProcessReading {
  /** `pid:starttime`: a reused pid is a new process. */
  key: string
  pid: number
  /** The program's name (argv[0]), not its main thread's (see processName). */
  name: string
  command: string
  user: string
  cpuTicks: number
  rssBytes: number
  threads: number
  readBytes: number
  writeBytes: number
  contextSwitches: number
}

export interface ProcessSweep {
  at: number
  mono: number
  memTotalBytes: number
  processes: ProcessReading[]
}

/**
 * Linux's USER_HZ, the unit of /proc/<pid>/stat times: 100 on every mainstream architecture (x86, arm, riscv,
 * ppc, s390). Asking `getconf CLK_TCK` would mean a child process.
 */
export const CLOCK_TICKS = 100
/** Processes read between two yields to the event loop, so a big table never blocks other requests for long. */
const YIELD_EVERY = 256

/**
 * One sweep of the process table, straight from /proc: four small files per process (stat, status, io, cmdline).
 * A process whose files cannot be read (gone, or not ours to inspect: /proc/<pid>/io needs the same user or
 * root) is left out, as the interface document asks.
 */
export class ProcessTable {
  readonly #proc: string
  readonly #passwdPath: string
  #pageSize = 0
  #users: { mtimeMs: number; map: Map<number, string> } | null = null

  constructor(root = '/') {
    this.#proc = join(root, 'proc')
    this.#passwdPath = join(root, 'etc/passwd')
  }

  async sweep(): Promise<ProcessSweep> {
    if (!this.#pageSize) this.#pageSize = parsePageSize(readProcFile(join(this.#proc, 'self/smaps')) ?? '')
    const users = this.#userNames()
    const memTotalBytes = parseMeminfo(readProcFile(join(this.#proc, 'meminfo')) ?? '').MemTotal ?? 0
    const at = Date.now()
    const mono = performance.now()
    const processes: ProcessReading[] = []
    let n = 0
    for (const entry of readdirSync(this.#proc)) {
      const c = entry.charCodeAt(0)
      if (c < 48 || c > 57) continue // only the numeric entries are processes
      if (++n % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r))
      const p = this.#readOne(entry, users)
      if (p) processes.push(p)
    }
    return { at, mono, memTotalBytes, processes }
  }

  #readOne(pid: string, users: Map<number, string>): ProcessReading | null {
    const dir = `${this.#proc}/${pid}/`
    const stat = parsePidStat(readProcFile(dir + 'stat') ?? '')
    if (!stat) return null
    const status = parsePidStatus(readProcFile(dir + 'status') ?? '')
    if (!status) return null
    const io = parsePidIo(readProcFile(dir + 'io') ?? '')
    if (!io) return null
    const cmdline = readProcFile(dir + 'cmdline')
    return {
      key: `${stat.pid}:${stat.startTime}`,
      pid: stat.pid,
      name: processName(cmdline, stat.comm),
      command: commandLine(cmdline),
      user: users.get(status.uid) ?? String(status.uid),
      cpuTicks: stat.cpuTicks,
      rssBytes: stat.rssPages * this.#pageSize,
      threads: stat.threads,
      readBytes: io.readBytes,
      writeBytes: io.writeBytes,
      contextSwitches: status.contextSwitches,
    }
  }

  /** /etc/passwd, parsed again only when it changes. */
  #userNames(): Map<number, string> {
    let mtimeMs = -1
    try {
      mtimeMs = statSync(this.#passwdPath).mtimeMs
    } catch {
      /* no passwd: numeric uids */
    }
    if (!this.#users || this.#users.mtimeMs !== mtimeMs) {
      this.#users = { mtimeMs, map: parsePasswd(readProcFile(this.#passwdPath) ?? '') }
    }
    return this.#users.map
  }
}
