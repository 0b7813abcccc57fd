/**
 * What every bench shares: figures beside their goals, /proc readings of a server process, the external load
 * generator (wrk, Debian's package, run as its own process), the bare reference server, and child-process
 * bookkeeping so nothing is left running. Plugin benches import it as `../../../test/bench/support.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

const BARE_SERVER = fileURLToPath(new URL('./bare-server.mjs', import.meta.url))

// ---------------------------------------------------------------------------------------------------
// Figures: a value beside its goal, met or not. A bench prints its figures and puts them in BENCH_JSON;
// `npm run bench` (run.ts) prints every bench's figures together at the end.
// ---------------------------------------------------------------------------------------------------

export interface Goal {
  op: '<' | '<=' | '>='
  target: number
}

export interface Figure {
  name: string
  value: number
  unit: string
  goal?: Goal
  /** Undefined when the figure has no goal (shown for context). */
  met?: boolean
  /** What the value is made of: the pair behind a ratio, the spread of the rounds. */
  detail?: string
}

export function figure(name: string, value: number, unit: string, goal?: Goal, detail?: string): Figure {
  const met =
    !goal || !Number.isFinite(value)
      ? undefined
      : goal.op === '<'
        ? value < goal.target
        : goal.op === '<='
          ? value <= goal.target
          : value >= goal.target
  const digits = unit === 'x' ? 3 : Math.abs(value) < 10 ? 2 : 1
  return {
    name,
    value: round(value, digits),
    unit,
    ...(goal ? { goal, met: met ?? false } : {}),
    ...(detail ? { detail } : {}),
  }
}

const showValue = (f: Figure) => `${Number.isFinite(f.value) ? f.value : '-'}${f.unit === 'x' ? '' : ` ${f.unit}`}`
const showGoal = (f: Figure) => (f.goal ? `${f.goal.op} ${f.goal.target}${f.unit === 'x' ? '' : ` ${f.unit}`}` : '')
const showMet = (f: Figure) => (f.goal ? (f.met ? 'met' : 'not met') : '')

/** Figures as a table: name, value, goal, met / not met, detail. */
export function figureTable(figures: (Figure & { bench?: string })[]): string {
  const withBench = figures.some((f) => f.bench)
  const rows = figures.map((f) => [
    ...(withBench ? [f.bench ?? ''] : []),
    f.name,
    showValue(f),
    showGoal(f),
    showMet(f),
    f.detail ?? '',
  ])
  return table(rows, [...(withBench ? ['bench'] : []), 'figure', 'value', 'goal', '', 'detail'])
}

/** A plain text table; numbers right-aligned. */
export function table(rows: (string | number)[][], header: string[]): string {
  const cells = [
    header,
    ...rows.map((r) => r.map((c) => (typeof c === 'number' ? (Number.isFinite(c) ? String(c) : '-') : c))),
  ]
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)))
  const line = (r: (string | number)[], numeric: boolean[]) =>
    '  ' +
    r
      .map((c, i) => (numeric[i] ? String(c).padStart(widths[i]!) : String(c).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'))
  return [
    line(cells[0]!, numeric),
    '  ' + widths.map((w) => '-'.repeat(w)).join('  '),
    ...cells.slice(1).map((r) => line(r, numeric)),
  ].join('\n')
}

/** The one machine-readable line a bench ends with; run.ts collects `figures` from it. */
export function printBenchJson(bench: string, figures: Figure[], extra: Record<string, unknown> = {}): void {
  console.log(`BENCH_JSON ${JSON.stringify({ bench, figures, ...extra })}`)
}

// ---------------------------------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------------------------------

export function round(x: number, digits = 1): number {
  if (!Number.isFinite(x)) return NaN
  const f = 10 ** digits
  return Math.round(x * f) / f
}

export function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return NaN
  const mid = Math.floor(v.length / 2)
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
}

export const MiB = 1024 * 1024

// ---------------------------------------------------------------------------------------------------
// /proc readings of another process
// ---------------------------------------------------------------------------------------------------

/** USER_HZ: the unit of utime and stime in /proc/<pid>/stat (100 on every Linux that matters). */
const CLOCK_TICKS = 100

/** User + system CPU seconds a process has used so far (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

export interface Memory {
  /** Resident set size, MiB. */
  rss: number
  /** Of which anonymous memory (JS heap, malloc arenas, stacks), MiB. */
  anon: number
  /** Of which file-backed pages (the node binary, shared libraries, mapped files), MiB. */
  file: number
}

/** RSS and its anonymous / file-backed split, from /proc/<pid>/smaps_rollup (one read, no page walk of our own). */
export async function memoryOf(pid: number): Promise<Memory> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8')
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN)
  const rss = kib('Rss')
  const anon = kib('Anonymous')
  return { rss: round(rss / 1024), anon: round(anon / 1024), file: round((rss - anon) / 1024) }
}

export const showMemory = (m: Memory) => `${m.rss} MiB (anon ${m.anon}, file ${m.file})`

// ---------------------------------------------------------------------------------------------------
// Child processes: every one is stopped by its pid, on success, on error and on Ctrl-C
// ---------------------------------------------------------------------------------------------------

const children = new Set<ChildProcess>()
const tempDirs = new Set<string>()

export const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

export function track(child: ChildProcess): ChildProcess {
  children.add(child)
  child.once('exit', () => children.delete(child))
  return child
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  tempDirs.add(dir)
  return dir
}

/** SIGTERM by pid, SIGKILL if it has not exited within 5 s. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (alive(child)) {
    const exited = once(child, 'exit').catch(() => undefined)
    child.kill('SIGTERM')
    await Promise.race([exited, sleep(5000)])
    if (alive(child)) {
      child.kill('SIGKILL')
      await Promise.race([exited, sleep(2000)])
    }
  }
  children.delete(child)
}

export async function cleanup(): Promise<void> {
  await Promise.all([...children].map(stopChild))
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
  tempDirs.clear()
}

process.on('exit', () => {
  for (const child of children) if (alive(child)) child.kill('SIGKILL')
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

/** Runs a bench's main with cleanup on errors, Ctrl-C, SIGTERM and after `limitMs`. */
export async function runBench(name: string, main: () => Promise<void>, limitMs: number): Promise<void> {
  let aborting = false
  const abort = (why: string, code: number) => {
    if (aborting) return
    aborting = true
    console.error(`bench ${name}: ${why}, cleaning up`)
    void cleanup().finally(() => process.exit(code))
  }
  process.once('SIGINT', () => abort('SIGINT', 130))
  process.once('SIGTERM', () => abort('SIGTERM', 143))
  setTimeout(() => abort(`took longer than ${Math.round(limitMs / 1000)} s`, 1), limitMs).unref()
  try {
    await main()
  } catch (err) {
    console.error(`bench ${name} failed: ${(err as Error).stack ?? err}`)
    process.exitCode = 1
  } finally {
    await cleanup()
  }
}

// ---------------------------------------------------------------------------------------------------
// The bare reference server (test/bench/bare-server.mjs)
// ---------------------------------------------------------------------------------------------------

export interface Bare {
  pid: number
  origin: string
  child: ChildProcess
  /** Spawn to its "serving" line, ms. */
  spawnedToServingMs: number
  stop(): Promise<void>
}

/** Starts bare-server.mjs; with `publishDir`, it serves PUT /publish into that folder too. */
export async function startBare(certFile: string, keyFile: string, publishDir?: string): Promise<Bare> {
  const t0 = performance.now()
  const child = track(
    spawn(process.execPath, [BARE_SERVER, certFile, keyFile, ...(publishDir ? [publishDir] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  )
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += String(d)))
  const origin = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^bare serving (https:\/\/\S+)$/.exec(line)
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`bare server exited (${code}) before serving: ${stderr}`)))
  })
  return { pid: child.pid!, origin, child, spawnedToServingMs: performance.now() - t0, stop: () => stopChild(child) }
}

// ---------------------------------------------------------------------------------------------------
// wrk: the load generator, in its own process
// ---------------------------------------------------------------------------------------------------

export interface WrkOptions {
  url: string
  connections: number
  durationS: number
  headers?: Record<string, string>
  /** Lua defining request() and/or delay() (see wrk's SCRIPTING); the summary's done() is added. */
  script?: string
  /** The server whose CPU time is read from /proc just before wrk starts and just after it exits. */
  serverPid?: number
}

export interface WrkResult {
  requests: number
  /** Bytes read, headers included. */
  bytes: number
  /** wrk's own measured duration, s. */
  durationS: number
  rps: number
  /** Answers with a status of 400 or more. */
  non2xx: number
  socketErrors: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** The server's CPU seconds over the run (the window: wrk's start to its exit). */
  serverCpuS: number
  /** wrk's own CPU seconds (user + system). */
  clientCpuS: number
  wallS: number
}

const WRK_DONE = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
`

let scriptDir: string | null = null
let scripts = 0

/**
 * One wrk run (1 thread: on a 2-core machine the server gets the other core). bash's `times` reports wrk's CPU
 * after it exits. The server's CPU is read from /proc right before the spawn and right after the exit, so it
 * covers exactly the run that produced the counted requests (including its 1 handshake per connection, the
 * same for every server measured).
 */
export async function wrk(opts: WrkOptions): Promise<WrkResult> {
  scriptDir ??= tempDir('hostd-bench-wrk-')
  const script = join(scriptDir, `run-${++scripts}.lua`)
  writeFileSync(script, `${opts.script ?? ''}\n${WRK_DONE}`)
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.durationS}s`, '--timeout', '10s', '-s', script]
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`)
  args.push(opts.url)
  const cpu0 = opts.serverPid ? cpuSeconds(opts.serverPid) : 0
  const t0 = performance.now()
  const child = track(
    spawn('bash', ['-c', 'wrk "$@"; status=$?; times; exit $status', 'wrk', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  )
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += String(d)))
  child.stderr!.on('data', (d) => (err += String(d)))
  const [code] = (await once(child, 'exit')) as [number | null]
  const wallS = (performance.now() - t0) / 1000
  const serverCpuS = opts.serverPid ? cpuSeconds(opts.serverPid) - cpu0 : NaN
  const json = /^WRK_JSON (.*)$/m.exec(out)
  if (code !== 0 || !json) throw new Error(`wrk failed (exit ${code}): ${err.trim() || out.trim()}`)
  const r = JSON.parse(json[1]!)
  const times = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(out.trim())
  const clientCpuS = times ? Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4]) : NaN
  const durationS = r.duration_us / 1e6
  return {
    requests: r.requests,
    bytes: r.bytes,
    durationS,
    rps: r.requests / durationS,
    non2xx: r.status,
    socketErrors: r.connect + r.read + r.write + r.timeout,
    p50Ms: r.p50_us / 1000,
    p99Ms: r.p99_us / 1000,
    maxMs: r.max_us / 1000,
    serverCpuS,
    clientCpuS,
    wallS,
  }
}

/** Lua for wrk: `request()` cycling through `paths`, and `delay()` pacing each connection to one request per `everyMs`. */
export function wrkScript(paths: string[], everyMs?: number): string {
  return [
    `local paths = { ${paths.map((p) => JSON.stringify(p)).join(', ')} }`,
    'local i = 0',
    'request = function() i = i % #paths + 1; return wrk.format("GET", paths[i]) end',
    ...(everyMs ? [`delay = function() return ${everyMs} end`] : []),
  ].join('\n')
}
