/**
 * Widgets: definitions and their last output in the plugin's settings (so both survive restarts), runs one at
 * a time per widget (a run asked for while one is going joins it), at most two at once overall, and a schedule
 * per widget at its interval with jitter. GET answers from the stored output only: a slow script never slows it.
 */
import { createHash, randomUUID } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Actor, AuditService, Logger, Role, Settings } from '@hostd/sdk'
import { checkAccount, type AccountCheck } from './account.ts'
import { WidgetErrors } from './errors.ts'
import { privateDir, runScript } from './runner.ts'
import {
  LIMITS,
  type Output,
  type RunnerStatus,
  type StoredWidget,
  type WidgetCreate,
  type WidgetUpdate,
  type WidgetView,
} from './schemas.ts'

export const GLOBAL_CONCURRENCY = 2
/** Scheduled runs land at ±10 % of the interval, and the first after a start within the first 30 s, so widgets never fire together. */
const JITTER = 0.1
const START_SPREAD_MS = 30_000

export interface WidgetsConfig {
  user: string | undefined
  workDir: string
  dataDir: string
}

type Trigger = 'manual' | 'schedule' | 'change'

/** A counting semaphore: at most `size` holders, the rest wait in order. */
class Slots {
  #free: number
  readonly #waiting: (() => void)[] = []
  constructor(size: number) {
    this.#free = size
  }
  async take(): Promise<() => void> {
    if (this.#free > 0) this.#free--
    else await new Promise<void>((resolve) => this.#waiting.push(resolve))
    return () => {
      const next = this.#waiting.shift()
      if (next) next()
      else this.#free++
    }
  }
}

const digest = (script: string) => createHash('sha256').update(script).digest('hex')

export class WidgetService {
  readonly #settings: Settings
  readonly #audit: AuditService
  readonly #log: Logger
  readonly #config: WidgetsConfig
  readonly #slots = new Slots(GLOBAL_CONCURRENCY)
  readonly #running = new Map<string, Promise<Output>>()
  readonly #timers = new Map<string, NodeJS.Timeout>()
  readonly #stopping = new AbortController()
  /** Writes to the widget list, one at a time. */
  #writes: Promise<unknown> = Promise.resolve()
  #account: Promise<AccountCheck> | null = null
  #widgets: StoredWidget[] | null = null
  readonly #outputs = new Map<string, Output | null>()

  constructor(deps: { settings: Settings; audit: AuditService; log: Logger }, config: WidgetsConfig) {
    this.#settings = deps.settings
    this.#audit = deps.audit
    this.#log = deps.log
    this.#config = config
  }

  async start(): Promise<void> {
    const status = await this.runner()
    if (!status.available) this.#log.warn({ reason: status.reason }, 'widgets: scripts will not run')
    const now = Date.now()
    for (const w of await this.#list()) {
      const last = await this.#output(w.id)
      const due = last ? Math.max(0, Date.parse(last.ranAt) + w.refreshSeconds * 1000 - now) : 0
      this.#schedule(w.id, due + Math.random() * Math.min(START_SPREAD_MS, w.refreshSeconds * 1000 * JITTER))
    }
  }

  async stop(): Promise<void> {
    for (const timer of this.#timers.values()) clearTimeout(timer)
    this.#timers.clear()
    this.#stopping.abort()
    await Promise.allSettled([...this.#running.values()])
  }

  /** Checked once per load (and again after a failed check, so fixing the account needs no restart). */
  async #checkAccount(): Promise<AccountCheck> {
    this.#account ??= checkAccount(this.#config.user, this.#config.dataDir, this.#config.workDir)
    const check = await this.#account
    if (!check.ok) this.#account = null
    return check
  }

  async runner(): Promise<RunnerStatus> {
    const check = await this.#checkAccount()
    return check.ok ? { available: true, reason: '' } : { available: false, reason: check.reason }
  }

  // This service is the only writer of its settings, so definitions and outputs are read from the database once
  // and kept in memory; every write goes to both. GET then costs no database read.
  async #list(): Promise<StoredWidget[]> {
    this.#widgets ??= (await this.#settings.get<StoredWidget[]>('widgets')) ?? []
    return this.#widgets
  }
  async #saveList(widgets: StoredWidget[]): Promise<void> {
    await this.#settings.set('widgets', widgets)
    this.#widgets = widgets
  }
  async #output(id: string): Promise<Output | null> {
    if (!this.#outputs.has(id)) this.#outputs.set(id, (await this.#settings.get<Output>(`output:${id}`)) ?? null)
    return this.#outputs.get(id)!
  }
  async #saveOutput(id: string, output: Output | null): Promise<void> {
    if (output) await this.#settings.set(`output:${id}`, output)
    else await this.#settings.delete(`output:${id}`)
    if (output) this.#outputs.set(id, output)
    else this.#outputs.delete(id)
  }
  async #find(id: string): Promise<StoredWidget> {
    const found = (await this.#list()).find((w) => w.id === id)
    if (!found) throw WidgetErrors.notFound(`No widget ${id}`)
    return found
  }
  #write<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(fn, fn)
    this.#writes = next.catch(() => undefined)
    return next
  }

  /** The answer for `role`: the script only for admins, the key absent otherwise. */
  async view(w: StoredWidget, role: Role): Promise<WidgetView> {
    const out: WidgetView = {
      id: w.id,
      title: w.title,
      type: w.type,
      refreshSeconds: w.refreshSeconds,
      timeoutSeconds: w.timeoutSeconds,
      layout: w.layout,
      output: await this.#output(w.id),
      running: this.#running.has(w.id),
    }
    if (role === 'admin') out.script = w.script
    return out
  }

  async list(role: Role): Promise<{ items: WidgetView[]; runner: RunnerStatus }> {
    const widgets = await this.#list()
    return { items: await Promise.all(widgets.map((w) => this.view(w, role))), runner: await this.runner() }
  }

  async create(body: WidgetCreate, actor: Actor): Promise<WidgetView> {
    const widget = await this.#write(async () => {
      const widgets = await this.#list()
      if (widgets.length >= LIMITS.widgets) throw WidgetErrors.tooMany(`At most ${LIMITS.widgets} widgets`)
      const w: StoredWidget = {
        id: randomUUID(),
        title: body.title,
        type: body.type,
        script: body.script,
        refreshSeconds: body.refreshSeconds ?? LIMITS.refreshSeconds.default,
        timeoutSeconds: body.timeoutSeconds ?? LIMITS.timeoutSeconds.default,
        layout: body.layout ?? null,
      }
      await this.#saveList([...widgets, w])
      return w
    })
    await this.#audit.record({ action: 'widget.create', target: widget.id, detail: this.#auditDetail(widget) }, actor)
    this.#schedule(widget.id, Math.random() * 1000)
    return this.view(widget, 'admin')
  }

  async update(id: string, body: WidgetUpdate, actor: Actor): Promise<WidgetView> {
    const { before, after } = await this.#write(async () => {
      const widgets = await this.#list()
      const index = widgets.findIndex((w) => w.id === id)
      if (index < 0) throw WidgetErrors.notFound(`No widget ${id}`)
      const before = widgets[index]!
      const after: StoredWidget = {
        ...before,
        ...body,
        layout: body.layout === undefined ? before.layout : body.layout,
      }
      await this.#saveList(widgets.map((w, i) => (i === index ? after : w)))
      return { before, after }
    })
    const changed = (Object.keys(body) as (keyof WidgetUpdate)[]).filter(
      (k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]),
    )
    await this.#audit.record(
      { action: 'widget.update', target: id, detail: { changed, ...this.#auditDetail(after) } },
      actor,
    )
    // A new script or timing shows its output soon rather than at the old interval.
    if (changed.some((k) => k === 'script' || k === 'refreshSeconds' || k === 'timeoutSeconds'))
      this.#schedule(id, Math.random() * 1000)
    return this.view(after, 'admin')
  }

  async remove(id: string, actor: Actor): Promise<void> {
    const removed = await this.#write(async () => {
      const widgets = await this.#list()
      const found = widgets.find((w) => w.id === id)
      if (!found) throw WidgetErrors.notFound(`No widget ${id}`)
      await this.#saveList(widgets.filter((w) => w.id !== id))
      await this.#saveOutput(id, null)
      return found
    })
    clearTimeout(this.#timers.get(id))
    this.#timers.delete(id)
    await rm(join(this.#config.workDir, id), { recursive: true, force: true }).catch(() => undefined)
    await this.#audit.record({ action: 'widget.delete', target: id, detail: { title: removed.title } }, actor)
  }

  /** Runs it now (joining a run in progress) and answers the widget with the fresh output. */
  async runNow(id: string, role: Role, actor: Actor): Promise<WidgetView> {
    await this.#find(id)
    const status = await this.runner()
    if (!status.available) throw WidgetErrors.runnerUnavailable(status.reason)
    await this.#run(id, 'manual', actor)
    return this.view(await this.#find(id), role)
  }

  /** Single flight: a widget already running is joined, not started twice. */
  #run(id: string, trigger: Trigger, actor?: Actor): Promise<Output> {
    const current = this.#running.get(id)
    if (current) return current
    const run = this.#execute(id, trigger, actor).finally(() => {
      this.#running.delete(id)
    })
    this.#running.set(id, run)
    return run
  }

  async #execute(id: string, trigger: Trigger, actor?: Actor): Promise<Output> {
    const release = await this.#slots.take()
    let output: Output
    let widget: StoredWidget | undefined
    try {
      widget = (await this.#list()).find((w) => w.id === id)
      if (!widget) throw WidgetErrors.notFound(`No widget ${id}`)
      const check = await this.#checkAccount()
      if (!check.ok) throw WidgetErrors.runnerUnavailable(check.reason)
      const cwd = await privateDir(this.#config.workDir, id, check.account)
      output = await runScript({
        script: widget.script,
        timeoutSeconds: widget.timeoutSeconds,
        cwd,
        account: check.account,
        signal: this.#stopping.signal,
      })
    } finally {
      release()
    }
    const previous = await this.#output(id)
    // A widget deleted while it ran keeps no output.
    if (!(await this.#list()).some((w) => w.id === id)) return output
    await this.#saveOutput(id, output)
    const failed = (o: Output | null) => Boolean(o && (o.exitCode !== 0 || o.timedOut || o.truncated || o.error))
    // Manual runs are always audited; scheduled ones when they fail or recover, so a 10 s widget does not flood the log.
    if (trigger === 'manual' || failed(output) || failed(previous)) {
      await this.#audit.record(
        {
          action: 'widget.run',
          target: id,
          result: failed(output) ? 'failure' : 'success',
          detail: {
            trigger,
            exitCode: output.exitCode,
            outputBytes: Buffer.byteLength(output.stdout) + Buffer.byteLength(output.stderr),
            durationMs: output.durationMs,
            timedOut: output.timedOut,
            truncated: output.truncated,
            error: output.error,
          },
        },
        actor,
      )
    }
    if (!this.#stopping.signal.aborted)
      this.#schedule(id, widget.refreshSeconds * 1000 * (1 - JITTER + Math.random() * 2 * JITTER))
    return output
  }

  #schedule(id: string, delayMs: number): void {
    if (this.#stopping.signal.aborted) return
    clearTimeout(this.#timers.get(id))
    const timer = setTimeout(() => {
      this.#timers.delete(id)
      void this.#scheduled(id)
    }, delayMs)
    timer.unref()
    this.#timers.set(id, timer)
  }

  async #scheduled(id: string): Promise<void> {
    const widget = (await this.#list()).find((w) => w.id === id)
    if (!widget) return
    const status = await this.runner()
    if (!status.available) {
      // Look again at the next interval: an admin may configure the account meanwhile.
      this.#schedule(id, widget.refreshSeconds * 1000)
      return
    }
    await this.#run(id, 'schedule').catch((err: unknown) =>
      this.#log.warn({ err, id }, 'widgets: scheduled run failed'),
    )
  }

  #auditDetail(w: StoredWidget): Record<string, unknown> {
    // The script's size and hash, never its text (it may hold a token); never any output.
    return {
      title: w.title,
      type: w.type,
      refreshSeconds: w.refreshSeconds,
      timeoutSeconds: w.timeoutSeconds,
      scriptBytes: Buffer.byteLength(w.script),
      scriptSha256: digest(w.script),
    }
  }
}
