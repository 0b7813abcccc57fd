/**
 * One sandboxed process of a plugin, as the kernel watches it: the channel, the heartbeat, the last lines it wrote to
 * stderr, and why it ended (exit code or signal, an uncaught error with its file:line, out of memory, a missed
 * deadline or heartbeat, a protocol violation).
 */
import type { ChildProcess } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import type { Duplex, Readable } from 'node:stream'
import type { Logger } from 'pino'
import type { ChildMessage, ErrorInfo, KernelCallMethod, KernelMessage } from '../../../sdk/src/isolated/protocol.ts'
import { CallError, Channel, seconds } from './channel.ts'
import { spawnSandboxed, type SandboxBase, type SandboxOptions } from './sandbox.ts'
import { MISSED_HEARTBEATS } from './settings.ts'

/** Lines of stderr kept for the reason a process ended. */
const STDERR_TAIL = 12
const MAX_LINE = 2000
/** The most a log line's fields may hold (JSON). */
const MAX_LOG_DATA = 8192
/** Log lines a plugin may write per second (its logger and its stdout/stderr together), and the burst above it. */
const LOG_RATE = 50
const LOG_BURST = 200
/**
 * How long a sandbox may take to start (bwrap, Node, the runner) before it is killed as hung. Apart from the plugin's
 * own deadlines, which start once it is up: a slow or busy machine must not fail a plugin for the sandbox's start.
 */
export const BOOT_DEADLINE_MS = 30_000

export interface ProcessEnd {
  code: number | null
  signal: string | null
  /** Why it ended, in a sentence, with the error's origin (file:line inside the plugin's folder) when there is one. */
  reason: string
  origin: string | null
  /** The kernel ended it (a deadline, a heartbeat, a protocol violation, a stop) rather than the plugin. */
  killed: boolean
}

export interface ProcessOptions extends SandboxOptions {
  id: string
  log: Logger
  onMessage(message: Exclude<ChildMessage, { t: 'result' | 'pong' | 'log' | 'fatal' }>): void
}

/** A token bucket: `take()` is false while the plugin writes faster than LOG_RATE lines a second. */
class LogBudget {
  #tokens = LOG_BURST
  #at = Date.now()
  dropped = 0

  take(): boolean {
    const now = Date.now()
    this.#tokens = Math.min(LOG_BURST, this.#tokens + ((now - this.#at) / 1000) * LOG_RATE)
    this.#at = now
    if (this.#tokens < 1) {
      this.dropped++
      return false
    }
    this.#tokens--
    return true
  }
}

export class PluginProcess {
  readonly pid: number | null
  readonly ended: Promise<ProcessEnd>
  /** Resolves once the runner answers its first ping (it is up and reads the channel); rejects if it ends first. */
  readonly booted: Promise<void>
  readonly #child: ChildProcess
  readonly #channel: Channel
  readonly #log: Logger
  readonly #heapMb: number
  readonly #stderr: string[] = []
  readonly #budget = new LogBudget()
  #fatal: ErrorInfo | null = null
  #killedFor: string | null = null
  #exited = false
  #heartbeat: NodeJS.Timeout | null = null
  #dropReport: NodeJS.Timeout | null = null
  /** The sandbox's first process (its PID namespace's init), as bwrap reported it. */
  #inner: number | null = null

  constructor(base: SandboxBase, options: ProcessOptions) {
    this.#log = options.log
    this.#heapMb = options.heapMb
    this.#child = spawnSandboxed(base, options)
    this.pid = this.#child.pid ?? null
    let up: () => void = () => undefined
    const booted = new Promise<void>((resolve) => {
      up = resolve
    })
    this.#channel = new Channel(this.#child.stdio[3] as Duplex, {
      message: (message) => {
        up()
        if (message.t === 'log') this.#logLine(message.level, message.msg, message.data)
        else if (message.t === 'fatal') this.#fatal = message.error
        else if (message.t === 'pong') this.#pongs = message.n
        else options.onMessage(message)
      },
      violation: (reason) => this.kill(`it broke the channel's protocol: ${reason}`),
    })
    this.#lines(this.#child.stderr!, (line) => {
      this.#stderr.push(line)
      if (this.#stderr.length > STDERR_TAIL) this.#stderr.shift()
      this.#logLine('warn', line, { stream: 'stderr' })
    })
    this.#lines(this.#child.stdout!, (line) => this.#logLine('info', line, { stream: 'stdout' }))
    let info = ''
    const infoStream = this.#child.stdio[4] as Readable
    infoStream.setEncoding('utf8')
    infoStream.on('data', (chunk: string) => {
      info += chunk
      const pid = /"child-pid":\s*(\d+)/.exec(info)?.[1]
      if (pid) this.#inner = Number(pid)
    })
    infoStream.on('error', () => undefined)
    this.ended = new Promise((resolve) => {
      this.#child.once('error', (err) => {
        this.#killedFor ??= `it could not be started: ${err.message}`
      })
      this.#child.once('close', (code, signal) => {
        this.#exited = true
        this.#stopHeartbeat()
        const end = this.#end(code, signal)
        this.#channel.close(end.reason)
        // bwrap is gone; what ran inside goes with it (--die-with-parent), a moment later: wait for that too.
        void this.#innerGone().then(() => resolve(end))
      })
    })
    this.booted = this.#boot(booted)
    this.booted.catch(() => undefined) // awaited by whoever calls into it; its end is reported through `ended`
  }

  async #boot(answered: Promise<void>): Promise<void> {
    this.send({ t: 'ping', n: 0 })
    const timer = setTimeout(
      () => this.kill(`its sandbox did not start within ${seconds(BOOT_DEADLINE_MS)}`),
      BOOT_DEADLINE_MS,
    )
    timer.unref()
    const outcome = await Promise.race([answered.then(() => null), this.ended])
    clearTimeout(timer)
    if (outcome) throw new CallError('gone', outcome.reason)
  }

  get alive(): boolean {
    return !this.#exited
  }

  send(message: KernelMessage): void {
    this.#channel.send(message)
  }

  call(method: KernelCallMethod, args: unknown[], timeoutMs: number): Promise<unknown> {
    return this.#channel.call(method, args, timeoutMs)
  }

  /**
   * Ends the process at once: SIGKILL to bwrap and to the sandbox's first process (the init of its PID namespace:
   * every process inside ends with it). `--die-with-parent` does the same should the kernel die first.
   */
  kill(reason: string): void {
    if (this.#exited) return
    this.#killedFor ??= reason
    if (this.#inner !== null) {
      try {
        process.kill(this.#inner, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    this.#child.kill('SIGKILL')
  }

  /** Resolves once the sandbox's first process has ended (at most a second after bwrap, then given up). */
  async #innerGone(): Promise<void> {
    const pid = this.#inner
    if (pid === null) return
    const until = Date.now() + 1000
    while (Date.now() < until) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
      // Gone, a zombie waiting to be reaped, or its pid already reused by a process of another parent.
      if (stat === null || / [ZX] /.test(stat.slice(stat.lastIndexOf(')')))) return
      await new Promise((r) => setTimeout(r, 5))
    }
  }

  #pongs = 0

  /** Pings every `everyMs`; after MISSED_HEARTBEATS pings without an answer the process is hung and is killed. */
  startHeartbeat(everyMs: number): void {
    if (this.#heartbeat || this.#exited) return
    let sent = this.#pongs
    this.#heartbeat = setInterval(() => {
      if (sent - this.#pongs >= MISSED_HEARTBEATS) {
        this.kill(
          `it stopped answering (no heartbeat for ${seconds(everyMs * MISSED_HEARTBEATS)}): a busy loop or a hang`,
        )
        return
      }
      this.send({ t: 'ping', n: ++sent })
    }, everyMs)
    this.#heartbeat.unref()
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = null
    if (this.#dropReport) clearTimeout(this.#dropReport)
  }

  /** Forwards one line of the plugin's to the daemon's log, prefixed with its id by the logger, within the budget. */
  #logLine(level: 'debug' | 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>): void {
    if (!this.#budget.take()) {
      this.#dropReport ??= setTimeout(() => {
        this.#dropReport = null
        this.#log.warn(`${this.#budget.dropped} log lines dropped: the plugin wrote more than ${LOG_RATE} a second`)
        this.#budget.dropped = 0
      }, 1000).unref()
      return
    }
    // The plugin's fields, but never the ones that say which line this is (level, time, plugin), nor a flood.
    const { level: _ignored, msg: _msg, time: _time, pid: _pid, plugin: _plugin, ...fields } = data ?? {}
    const size = Object.keys(fields).length === 0 ? 0 : JSON.stringify(fields).length
    this.#log[level](size > MAX_LOG_DATA ? { truncated: `${size} bytes of fields left out` } : fields, msg)
  }

  #lines(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
    let partial = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n')
      partial = parts.pop()!.slice(0, MAX_LINE)
      for (const line of parts) if (line.trim()) each(line.slice(0, MAX_LINE))
    })
    stream.on('end', () => partial.trim() && each(partial))
  }

  #end(code: number | null, signal: string | null): ProcessEnd {
    const origin = this.#fatal?.origin ?? null
    const at = origin ? ` at ${origin}` : ''
    const status = signal ? `signal ${signal}` : `exit code ${code}`
    const oom = this.#stderr.some((line) => /heap out of memory|Reached heap limit/.test(line))
    let reason: string
    if (this.#killedFor) reason = `it was stopped: ${this.#killedFor}`
    else if (oom) reason = `out of memory: it went past its heap cap of ${this.#heapMb} MiB (${status})`
    else if (this.#fatal) reason = `it crashed: ${this.#fatal.message}${at} (${status})`
    else {
      const last = this.#stderr.at(-1)
      reason = `its process ended (${status})${last ? `: ${last.trim()}` : ''}`
    }
    return { code, signal, reason, origin, killed: this.#killedFor !== null }
  }
}
