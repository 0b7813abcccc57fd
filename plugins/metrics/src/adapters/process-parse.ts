/** Pure parsers for per-process /proc files and for nethogs trace output. */

export interface ProcStat {
  pid: number
  comm: string
  /** utime + stime, clock ticks. */
  cpuTicks: number
  threads: number
  /** Clock ticks after boot the process started: with the pid, identifies it across pid reuse. */
  startTime: number
  rssPages: number
}

/**
 * /proc/<pid>/stat. The name sits in parentheses and may itself contain spaces and parentheses.
 * Fields are found by scanning for spaces rather than splitting the line: this runs once per process per
 * request, and splitting would allocate ~50 strings for the 5 numbers needed.
 */
export function parsePidStat(text: string): ProcStat | null {
  const open = text.indexOf('(')
  const close = text.lastIndexOf(')')
  if (open < 0 || close < open) return null
  // Field numbers as in proc(5): 3 is the state right after ") ".
  const wanted = [14, 15, 20, 22, 24]
  const values: number[] = []
  let field = 3
  let start = close + 2
  for (const target of wanted) {
    while (field < target) {
      const space = text.indexOf(' ', start)
      if (space < 0) return null
      start = space + 1
      field++
    }
    let end = text.indexOf(' ', start)
    if (end < 0) end = text.length
    values.push(Number(text.slice(start, end)))
  }
  const [utime, stime, threads, startTime, rss] = values as [number, number, number, number, number]
  return {
    pid: Number(text.slice(0, open)),
    comm: text.slice(open + 1, close),
    cpuTicks: utime + stime,
    threads,
    startTime,
    rssPages: rss,
  }
}

/** Longest name or command line kept: a table cell and a search, not an archive of every argument. */
const MAX_NAME = 64
const MAX_COMMAND = 512

/**
 * The process's own name, from /proc/<pid>/cmdline (argv, NUL-separated), not from `comm`: `comm` is the MAIN
 * THREAD's name, which programs rename (Python and Chromium children read "MainThread", Node "node-MainThread").
 *  - argv[0] a path ("/usr/sbin/sshd", or a rewritten command line "/usr/lib/chromium/chromium --type=renderer"):
 *    the last part of its first word ("sshd", "chromium");
 *  - argv[0] a title the program set ("nginx: worker process", "sshd: alice@pts/0", "postgres: checkpointer"):
 *    kept as it is;
 *  - no command line (kernel threads, zombies): `comm`, as ps shows it.
 */
export function processName(cmdline: string | null, comm: string): string {
  const argv0 = (cmdline ?? '').split('\0', 1)[0]!.trim()
  if (!argv0) return comm
  const first = argv0.split(' ', 1)[0]!
  const name =
    first.includes('/') && (argv0 === first || first.startsWith('/')) ? first.slice(first.lastIndexOf('/') + 1) : argv0
  return (name || comm).slice(0, MAX_NAME)
}

/** The whole command line, arguments joined by spaces (empty for kernel threads), at most 512 characters. */
export function commandLine(cmdline: string | null): string {
  return (cmdline ?? '').replace(/\0+$/, '').replaceAll('\0', ' ').trim().slice(0, MAX_COMMAND)
}

export interface ProcStatus {
  uid: number
  /** Voluntary plus involuntary context switches since start. */
  contextSwitches: number
}

/** /proc/<pid>/status: the effective uid (as `ps -o user` shows) and the context switch counters. */
export function parsePidStatus(text: string): ProcStatus | null {
  const uid = /^Uid:\s+\d+\s+(\d+)/m.exec(text)
  if (!uid) return null
  const vol = /^voluntary_ctxt_switches:\s+(\d+)/m.exec(text)
  const nonvol = /^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(text)
  return { uid: Number(uid[1]), contextSwitches: Number(vol?.[1] ?? 0) + Number(nonvol?.[1] ?? 0) }
}

export interface ProcIo {
  /** Bytes the process caused to be fetched from / sent to the storage layer. */
  readBytes: number
  writeBytes: number
}

/** /proc/<pid>/io (readable only for one's own processes, or by root). */
export function parsePidIo(text: string): ProcIo | null {
  const r = /^read_bytes:\s+(\d+)/m.exec(text)
  const w = /^write_bytes:\s+(\d+)/m.exec(text)
  if (!r || !w) return null
  return { readBytes: Number(r[1]), writeBytes: Number(w[1]) }
}

/** /etc/passwd: uid to user name. */
export function parsePasswd(text: string): Map<number, string> {
  const users = new Map<number, string>()
  for (const line of text.split('\n')) {
    const p = line.split(':')
    if (p.length < 4 || line.startsWith('#')) continue
    const uid = Number(p[2])
    if (Number.isInteger(uid) && !users.has(uid)) users.set(uid, p[0]!)
  }
  return users
}

export interface NetTraffic {
  /** Bytes per second. */
  inRate: number
  outRate: number
}

/**
 * `nethogs -t` trace output: blocks that start with `Refreshing:`, then one line per process,
 * `program/pid/uid<TAB>sent KB/s<TAB>received KB/s`. The program may contain slashes (it is often a path),
 * so pid and uid are taken from the right. Only the last complete block counts (the latest rates); lines for
 * pid 0 (traffic nethogs could not tie to a process) are dropped; KB is 1024 bytes, as nethogs computes it.
 */
export function parseNethogs(stdout: string): Map<number, NetTraffic> {
  const blocks = stdout.split(/^Refreshing:\s*$/m).slice(1)
  const last = blocks.findLast((b) => b.trim() !== '') ?? ''
  const out = new Map<number, NetTraffic>()
  for (const line of last.split('\n')) {
    const cols = line.split('\t')
    if (cols.length < 3) continue
    const ids = cols[0]!.split('/')
    if (ids.length < 3) continue
    const pid = Number(ids[ids.length - 2])
    const sent = Number(cols[1])
    const received = Number(cols[2])
    if (!Number.isInteger(pid) || pid <= 0 || !Number.isFinite(sent) || !Number.isFinite(received)) continue
    const seen = out.get(pid) ?? { inRate: 0, outRate: 0 }
    seen.inRate += Math.max(0, received) * 1024
    seen.outRate += Math.max(0, sent) * 1024
    out.set(pid, seen)
  }
  return out
}
