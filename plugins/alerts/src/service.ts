/**
 * The alerts plugin's logic: rules evaluated on what other plugins already produce (the metrics sampler's
 * snapshots, the engine's container events) and on SMART health once an hour, alert states persisted so a restart
 * sends nothing twice, notifications queued per channel and retried with backoff, silences. No HTTP here.
 */
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import {
  createServiceToken,
  Mutex,
  type AuditActor,
  type AuditRecordEvent,
  type AuditService,
  type HelperClient,
  type KernelEvent,
  type KernelEvents,
  type Logger,
  type OptionalServices,
  type SecretSealer,
  type Settings,
} from '@hostd/sdk'
import type { ProvidedServices as ContainerServices, ContainerState } from '../../containers/src/api.ts'
import type { MetricsSnapshot, ProvidedServices as MetricsServices } from '../../metrics/src/api.ts'
import type { ProvidedServices as PackageServices } from '../../packages/src/api.ts'
import type { ProvidedServices as BackupServices } from '../../backups/src/api.ts'
import {
  appriseInstalled,
  deliver,
  DeliveryError,
  type ChannelTarget,
  type Notice,
  type Notification,
} from './channels.ts'
import { Evaluator, newChanges, type Changes, type Instance, type Observation } from './engine.ts'
import { AlertErrors } from './errors.ts'
import { prometheusSection } from './prometheus.ts'
import {
  accountObservation,
  backupObservation,
  backupOverdueObservations,
  daemonObservation,
  failedSignInObservation,
  isFailedSignIn,
  pluginObservations,
  systemObservations,
  type DaemonRun,
  type Failure,
  type SystemState,
} from './host-rules.ts'
import {
  containerObservation,
  DEFAULT_RULES,
  FIRST_DEFAULT_RULES,
  metricObservations,
  smartObservation,
  type DiskHealth,
} from './rules.ts'
import {
  ACCOUNT_CONDITIONS,
  CONTAINER_CONDITIONS,
  EVENT_SOURCES,
  SYSTEM_CONDITIONS,
  type Alert,
  type Channel,
  type ChannelCreate,
  type ChannelUpdate,
  type Delivery,
  type HistoryItem,
  type Rule,
  type RuleCreate,
  type RuleUpdate,
  type Silence,
  type SilenceCreate,
} from './schemas.ts'
import type { AlertStore, DeliveryRow } from './store.ts'
import { listDisks, readSmartHealth } from './smart.ts'

export const metricsSamples = createServiceToken<MetricsServices['metrics.samples']>('metrics.samples')
export const containerStates = createServiceToken<ContainerServices['containers.states']>('containers.states')
export const packageUpdates = createServiceToken<PackageServices['packages.updates']>('packages.updates')
export const backupStatus = createServiceToken<BackupServices['backups.status']>('backups.status')

/** This process: a start of the plugin in the process that wrote the last marker is no daemon restart. */
const PROCESS_RUN = randomUUID()
/** Failed sign-ins remembered for the burst rule, at most (the newest). */
const MAX_FAILURES = 10_000
/** The audit actions the account rules look at (host-rules.ts). */
const ACCOUNT_ACTIONS = new Set([
  'auth.login',
  'user.create',
  'user.role',
  'user.two-factor.disable',
  'user.two-factor.reset',
  'auth.policy',
])

export interface AlertOptions {
  /** First retry of a failed delivery after this long, doubled each time up to `retryMaxMs` (30 s, 1 h). */
  retryBaseMs: number
  retryMaxMs: number
  /** Attempts before a delivery is given up (12: about six hours with the defaults). */
  maxAttempts: number
  /** How often SMART health is read through the root helper (1 h); 0: never. */
  smartIntervalMs: number
  /** How often providers (metrics, containers) loaded or replaced later are looked for (10 s). */
  attachIntervalMs: number
  /** Where the disks are listed for SMART (`/sys/block`; tests name a folder of their own). */
  blockDir?: string
  /** How often the system rules (updates waiting, reboot required) look (15 min); 0: never. */
  systemIntervalMs: number
  /** The file whose presence means a reboot is required (`/run/reboot-required`; tests name their own). */
  rebootFile?: string
  /** The clock of the "no backup for a while" rules (tests move it forward); default Date.now. */
  now?: () => number
}

interface Deps {
  store: AlertStore
  settings: Settings
  audit: AuditService
  log: Logger
  optional: OptionalServices
  helper: HelperClient
  events: KernelEvents
  /** Channel secrets sealed at rest (`tokens.secrets`). */
  secrets: SecretSealer
}

/** A channel as stored: the secret sealed. */
interface StoredChannel extends Omit<Channel, 'secretSet'> {
  sealedSecret: string | null
}
/** A silence as stored. */
type StoredSilence = Omit<Silence, 'active'>

const LIMITS = { rules: 500, channels: 50, silences: 500 }
const MAX_TIMER_MS = 2 ** 31 - 1
/** How long after a start repeats wait for fresh observations: a metrics sample a minute, and some margin. */
const SETTLE_MS = 90_000

export class AlertService {
  readonly #d: Deps
  readonly #o: AlertOptions
  readonly #mutex = new Mutex()
  readonly #evaluator = new Evaluator()
  readonly rules = new Map<string, Rule>()
  readonly #channels = new Map<string, StoredChannel>()
  readonly #silences = new Map<string, StoredSilence>()
  readonly #containers = new Map<string, ContainerState>()
  #snapshot: MetricsSnapshot | null = null
  /** Recent failed sign-ins, oldest first (the burst rule counts those within its window). */
  #failures: Failure[] = []
  #system: SystemState = { updates: null, reboot: null }
  #systemTimer: NodeJS.Timeout | null = null
  #daemonRun: DaemonRun | null = null
  /** Ends the kernel events subscription. */
  readonly #lifetime = new AbortController()
  #events: Promise<void> = Promise.resolve()
  #externalUrl = ''
  /**
   * Until then no repeat goes out: after a start, an alert left firing is repeated only once the sources had a chance
   * to say whether it still holds (the metrics sampler's first minute), never from the stored state alone.
   */
  #settledAt = 0
  #metrics: { service: unknown; unsubscribe: () => void } | null = null
  #watch: { service: unknown; controller: AbortController } | null = null
  #evalTimer: NodeJS.Timeout | null = null
  #deliveryTimer: NodeJS.Timeout | null = null
  #attachTimer: NodeJS.Timeout | null = null
  #smartTimer: NodeJS.Timeout | null = null
  readonly #inFlight = new Set<number>()
  /** Deliveries as this process's attempts left them (a row read from the store may predate an attempt). */
  readonly #attempted = new Map<number, DeliveryRow>()
  #stopped = false
  readonly hostname = hostname()

  constructor(deps: Deps, options: AlertOptions) {
    this.#d = deps
    this.#o = options
  }

  // ---- lifetime -------------------------------------------------------------------------------------------------

  async start(): Promise<void> {
    await this.#d.store.init()
    this.#settledAt = Date.now() + SETTLE_MS
    // Each default rule is made once: at the first start, or at the first start of the version that adds it.
    const made =
      (await this.#d.settings.get<string[]>('defaultRules')) ??
      ((await this.#d.settings.get<boolean>('defaultRulesMade')) ? FIRST_DEFAULT_RULES : [])
    const fresh = DEFAULT_RULES.filter((rule) => !made.includes(rule.id))
    for (const rule of fresh) await this.#d.store.put('rules', rule.id, rule)
    if (fresh.length) await this.#d.settings.set('defaultRules', [...made, ...fresh.map((rule) => rule.id)])
    for (const rule of await this.#d.store.all<Rule>('rules')) this.rules.set(rule.id, rule)
    for (const c of await this.#d.store.all<StoredChannel>('channels')) this.#channels.set(c.id, c)
    for (const s of await this.#d.store.all<StoredSilence>('silences')) this.#silences.set(s.id, s)
    this.#evaluator.load(await this.#d.store.all<Instance>('states'))
    this.#externalUrl =
      (await this.#d.settings.get<string>('externalUrl')) ??
      `https://${this.hostname}:${process.env.HOSTD_PORT || 4443}`
    this.#attach()
    this.#d.events.on((e) => this.#onKernelEvent(e), this.#lifetime.signal)
    this.#attachTimer = setInterval(() => this.#attach(), this.#o.attachIntervalMs)
    this.#attachTimer.unref()
    if (this.#o.smartIntervalMs > 0) {
      // The first reading a minute after start (or sooner with a short interval), then at each interval.
      this.#smartTimer = setTimeout(() => void this.#smartCheck(), Math.min(60_000, this.#o.smartIntervalMs))
      this.#smartTimer.unref()
    }
    if (this.#o.systemIntervalMs > 0) {
      this.#systemTimer = setTimeout(() => void this.#systemCheck(), Math.min(60_000, this.#o.systemIntervalMs))
      this.#systemTimer.unref()
    }
    await this.#mutex.run(async () => {
      const changes = newChanges()
      this.#observePlugins(changes)
      await this.#daemonStarted(changes)
      await this.#apply(changes)
    })
    this.#scheduleDeliveries()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#lifetime.abort()
    for (const t of [this.#evalTimer, this.#deliveryTimer, this.#smartTimer, this.#systemTimer]) if (t) clearTimeout(t)
    if (this.#attachTimer) clearInterval(this.#attachTimer)
    this.#metrics?.unsubscribe()
    this.#watch?.controller.abort()
    this.#metrics = null
    this.#watch = null
    // Let evaluations already queued finish writing their states; then say this process stopped cleanly.
    await this.#mutex.run(async () => undefined)
    if (this.#daemonRun) await this.#d.settings.set('daemonRun', { ...this.#daemonRun, cleanStop: true })
  }

  /** Subscribes to the providers present now; one replaced (upgraded) or loaded later is picked up here. */
  #attach(): void {
    if (this.#stopped) return
    const metrics = this.#d.optional.get(metricsSamples)
    if (metrics !== this.#metrics?.service) {
      this.#metrics?.unsubscribe()
      this.#metrics = null
      if (metrics) {
        const off = metrics.subscribe((s) => void this.#mutex.run(() => this.#onSnapshot(s)))
        const offSection = metrics.addPrometheusSection(() => this.prometheus())
        this.#metrics = {
          service: metrics,
          unsubscribe: () => {
            off()
            offSection()
          },
        }
      }
    }
    const states = this.#d.optional.get(containerStates)
    if (states !== this.#watch?.service) {
      this.#watch?.controller.abort()
      this.#watch = null
      if (states) {
        const controller = new AbortController()
        this.#watch = { service: states, controller }
        states.watch(
          (e) => void this.#onContainerEvent(states, e.id, e.action),
          controller.signal,
          () => void this.#reloadContainers(states),
        )
      }
    }
  }

  // ---- sources ----------------------------------------------------------------------------------------------------

  async #onSnapshot(s: MetricsSnapshot): Promise<void> {
    this.#snapshot = s
    const changes = newChanges()
    const now = Date.now()
    for (const rule of this.rules.values())
      if (rule.enabled && rule.source === 'metric')
        this.#evaluator.observe(rule, metricObservations(rule, s), now, true, changes)
    await this.#apply(changes)
  }

  async #reloadContainers(states: ContainerServices['containers.states']): Promise<void> {
    const list = await states.list().catch(() => null)
    if (!list) return
    await this.#mutex.run(async () => {
      this.#containers.clear()
      for (const c of list) this.#containers.set(c.id, c)
      const changes = newChanges()
      for (const rule of this.rules.values()) this.#observeContainers(rule, changes)
      await this.#apply(changes)
    })
  }

  #observeContainers(rule: Rule, changes: Changes): void {
    if (!rule.enabled || rule.source !== 'container') return
    const observations = [...this.#containers.values()].flatMap((c) => containerObservation(rule, c) ?? [])
    this.#evaluator.observe(rule, observations, Date.now(), true, changes)
  }

  static readonly #ACTIONS = /^(start|die|stop|kill|pause|unpause|restart|destroy|rename|update|oom|health_status)/

  /** Events are handled one after the other, so a container's states are read in the order its events came. */
  #onContainerEvent(states: ContainerServices['containers.states'], id: string, action: string): Promise<void> {
    if (!AlertService.#ACTIONS.test(action)) return Promise.resolve()
    const handle = async () => {
      const state = action === 'destroy' ? null : await states.get(id).catch(() => null)
      await this.#mutex.run(async () => {
        if (state) this.#containers.set(id, state)
        else this.#containers.delete(id)
        const changes = newChanges()
        for (const rule of this.rules.values()) this.#observeContainers(rule, changes)
        await this.#apply(changes)
      })
    }
    this.#events = this.#events.then(handle, handle).catch((err) => this.#d.log.warn({ err }, 'container event failed'))
    return this.#events
  }

  async #smartCheck(): Promise<void> {
    this.#smartTimer = null
    try {
      const rules = [...this.rules.values()].filter((r) => r.enabled && r.source === 'smart')
      if (rules.length && (await this.#d.helper.available())) {
        const disks: DiskHealth[] = []
        for (const disk of await listDisks(this.#o.blockDir)) {
          const health = await readSmartHealth(this.#d.helper, disk)
          if (health) disks.push(health)
        }
        await this.#mutex.run(async () => {
          const changes = newChanges()
          for (const rule of rules)
            this.#evaluator.observe(
              rule,
              disks.flatMap((d) => smartObservation(rule, d) ?? []),
              Date.now(),
              true,
              changes,
            )
          await this.#apply(changes)
        })
      }
    } catch (err) {
      this.#d.log.warn({ err }, 'SMART health check failed')
    }
    if (!this.#stopped) {
      this.#smartTimer = setTimeout(() => void this.#smartCheck(), this.#o.smartIntervalMs)
      this.#smartTimer.unref()
    }
  }

  /** The kernel's events: plugin states for the plugin rules, audit records for the account and backup rules. */
  #onKernelEvent(e: KernelEvent): void {
    if (this.#stopped) return
    if (e.type === 'plugin.state') {
      void this.#mutex.run(async () => {
        const changes = newChanges()
        this.#observePlugins(changes)
        await this.#apply(changes)
      })
      return
    }
    if (e.action === 'backups.run') {
      const backupRules = [...this.rules.values()].filter((r) => r.enabled && r.source === 'backup')
      if (backupRules.length)
        void this.#mutex.run(async () => {
          const changes = newChanges()
          for (const rule of backupRules) {
            const seen = backupObservation(rule, e)
            if (seen) this.#evaluator.observe(rule, [seen], Date.now(), false, changes)
          }
          await this.#apply(changes)
        })
      // A success resolves a "no backup for a while" alert now, not at the next check.
      if (e.result !== 'failure' && backupRules.some((r) => r.condition === 'backupOverdue')) void this.checkSystem()
      return
    }
    // Most records concern no account rule: they cost this test and nothing more.
    if (!ACCOUNT_ACTIONS.has(e.action)) return
    const rules = [...this.rules.values()].filter((r) => r.enabled && r.source === 'account')
    if (!rules.length) return
    const failure = isFailedSignIn(e) && rules.some((r) => r.condition === 'failedSignIns')
    if (failure) {
      this.#failures.push({ at: Date.now(), ip: e.ip, username: e.target })
      if (this.#failures.length > MAX_FAILURES) this.#failures.splice(0, this.#failures.length - MAX_FAILURES)
    }
    void this.#mutex.run(() => this.#onAudit(e, rules, failure))
  }

  async #onAudit(e: AuditRecordEvent, rules: Rule[], failure: boolean): Promise<void> {
    const changes = newChanges()
    const now = Date.now()
    for (const rule of rules) {
      const hit =
        rule.condition === 'failedSignIns'
          ? failure
            ? failedSignInObservation(rule, this.#failures, now)
            : null
          : accountObservation(rule, e)
      if (hit) this.#observeEvent(rule, hit, now, changes)
    }
    // Failures older than the longest window are forgotten.
    const longest = Math.max(300, ...rules.map((r) => r.windowSeconds ?? 300)) * 1000
    const keepFrom = this.#failures.findIndex((f) => f.at > now - longest)
    this.#failures = keepFrom < 0 ? [] : this.#failures.slice(keepFrom)
    await this.#apply(changes)
  }

  /**
   * A single event's alert (account, daemon): it fires now and clears at once, so it resolves clearForSeconds later
   * (the same again meanwhile, a burst going on, keeps it firing).
   */
  #observeEvent(rule: Rule, hit: Observation, now: number, changes: Changes): void {
    this.#evaluator.observe(rule, [hit], now, false, changes)
    this.#evaluator.observe(rule, [{ ...hit, fire: false, clear: true }], now, false, changes)
  }

  #observePlugins(changes: Changes): void {
    const plugins = this.#d.events.plugins()
    const now = Date.now()
    for (const rule of this.rules.values())
      if (rule.enabled && rule.source === 'plugin')
        this.#evaluator.observe(rule, pluginObservations(rule, plugins), now, true, changes)
  }

  /**
   * Records this start, and fires the daemon rules when the last process did not stop cleanly (its marker, written at
   * each start, was never marked clean by a stop). A start in the same process (the plugin upgraded) is no restart.
   */
  async #daemonStarted(changes: Changes): Promise<void> {
    const previous = await this.#d.settings.get<DaemonRun>('daemonRun')
    const bootId = await readFile('/proc/sys/kernel/random/boot_id', 'utf8').then(
      (text) => text.trim(),
      () => null,
    )
    this.#daemonRun = { run: PROCESS_RUN, startedAt: new Date().toISOString(), bootId, cleanStop: false }
    await this.#d.settings.set('daemonRun', this.#daemonRun)
    if (!previous || previous.cleanStop || previous.run === PROCESS_RUN) return
    const now = Date.now()
    for (const rule of this.rules.values())
      if (rule.enabled && rule.source === 'daemon')
        this.#observeEvent(rule, daemonObservation(previous, this.#daemonRun), now, changes)
  }

  /** Updates waiting (the packages plugin, when loaded) and a reboot required (the file's presence). */
  async #systemCheck(): Promise<void> {
    this.#systemTimer = null
    try {
      const rules = [...this.rules.values()].filter((r) => r.enabled && r.source === 'system')
      await this.#backupOverdue()
      if (rules.length) {
        const wants = (condition: Rule['condition']) => rules.some((r) => r.condition === condition)
        const state: SystemState = {
          updates: wants('updates') ? await this.#readUpdates() : null,
          reboot: wants('rebootRequired') ? await this.#readReboot() : null,
        }
        await this.#mutex.run(async () => {
          this.#system = state
          const changes = newChanges()
          for (const rule of rules)
            this.#evaluator.observe(rule, systemObservations(rule, state), Date.now(), true, changes)
          await this.#apply(changes)
        })
      }
    } catch (err) {
      this.#d.log.warn({ err }, 'system check failed')
    }
    if (!this.#stopped && this.#o.systemIntervalMs > 0) {
      this.#systemTimer = setTimeout(() => void this.#systemCheck(), this.#o.systemIntervalMs)
      this.#systemTimer.unref()
    }
  }

  /** Scheduled backup jobs without a success for too long (the backups plugin's `backups.status`, when loaded). */
  async #backupOverdue(): Promise<void> {
    const rules = [...this.rules.values()].filter(
      (r) => r.enabled && r.source === 'backup' && r.condition === 'backupOverdue',
    )
    const status = rules.length ? this.#d.optional.get(backupStatus) : undefined
    if (!status) return
    const jobs = await status.jobs()
    const now = (this.#o.now ?? Date.now)()
    await this.#mutex.run(async () => {
      const changes = newChanges()
      for (const rule of rules)
        this.#evaluator.observe(rule, backupOverdueObservations(rule, jobs, now), Date.now(), true, changes)
      await this.#apply(changes)
    })
  }

  /** Runs the system rules and the backup overdue rules now (a test, a rule just enabled, a backup succeeded). */
  checkSystem(): Promise<void> {
    if (this.#systemTimer) clearTimeout(this.#systemTimer)
    return this.#systemCheck()
  }

  async #readUpdates(): Promise<SystemState['updates']> {
    const packages = this.#d.optional.get(packageUpdates)
    if (!packages) return null
    const { count, names } = await packages.upgradable()
    return { count, names }
  }

  async #readReboot(): Promise<SystemState['reboot']> {
    const file = this.#o.rebootFile ?? '/run/reboot-required'
    try {
      await readFile(file)
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? { required: false, packages: [] } : null
    }
    const list = await readFile(`${file}.pkgs`, 'utf8').catch(() => '')
    return { required: true, packages: [...new Set(list.split('\n').filter(Boolean))] }
  }

  // ---- transitions, notifications ---------------------------------------------------------------------------------

  /** Persists what changed, writes history, sends what is due, and sets the timer for the next hold or repeat. */
  async #apply(changes: Changes): Promise<void> {
    const now = Date.now()
    for (const t of changes.transitions) {
      const i = t.instance
      const rule = this.rules.get(i.ruleId)
      if (!rule) continue
      if (t.type === 'firing') {
        i.historyId = await this.#d.store.addHistory({
          ruleId: rule.id,
          ruleName: rule.name,
          target: i.target,
          severity: rule.severity,
          summary: i.summary,
          value: i.value,
          startsAt: new Date(i.firingSince ?? now).toISOString(),
          endsAt: null,
        })
      } else {
        if (i.historyId !== null) await this.#d.store.endHistory(i.historyId, new Date(now).toISOString())
        i.historyId = null
        if (i.notified) await this.#notify(rule, i, 'resolved', now)
        i.notified = false
        changes.changed.add(i)
      }
    }
    // Firing alerts that are due: never sent in this episode, or sent a repeat interval ago; not silenced.
    for (const i of this.#evaluator.instances.values()) {
      if (i.state !== 'firing') continue
      const rule = this.rules.get(i.ruleId)
      if (!rule || this.#silenced(i, now)) continue
      // A single event's alert is sent once (every new event is a new episode); a state's again at each repeat.
      if (EVENT_SOURCES.has(rule.source) && i.notified) continue
      if (
        !EVENT_SOURCES.has(rule.source) &&
        i.lastNotifiedAt !== null &&
        now - i.lastNotifiedAt < rule.repeatIntervalSeconds * 1000
      )
        continue
      if (i.lastNotifiedAt !== null && now < this.#settledAt) continue
      await this.#notify(rule, i, 'firing', now)
      i.notified = true
      i.lastNotifiedAt = now
      changes.changed.add(i)
    }
    // Inactive pairs are remembered for a repeat interval after their last notification (flapping damping).
    for (const i of this.#evaluator.instances.values()) {
      if (i.state !== 'inactive') continue
      const rule = this.rules.get(i.ruleId)
      const until = (i.lastNotifiedAt ?? i.changedAt) + (rule?.repeatIntervalSeconds ?? 0) * 1000
      if (i.lastNotifiedAt === null || until <= now) {
        this.#evaluator.instances.delete(i.key)
        changes.changed.add(i)
      }
    }
    for (const i of changes.changed) {
      if (this.#evaluator.instances.get(i.key) === i) await this.#d.store.put('states', i.key.replace('\u0000', '/'), i)
      else await this.#d.store.delete('states', i.key.replace('\u0000', '/'))
    }
    this.#scheduleEvaluation(now)
  }

  #silenced(i: Instance, now: number): boolean {
    for (const s of this.#silences.values()) {
      if (Date.parse(s.endsAt) <= now) continue
      if ((s.ruleId === null || s.ruleId === i.ruleId) && (s.target === null || s.target === i.target)) return true
    }
    return false
  }

  #scheduleEvaluation(now: number): void {
    if (this.#evalTimer) clearTimeout(this.#evalTimer)
    this.#evalTimer = null
    if (this.#stopped) return
    let next = this.#evaluator.nextDue(this.rules)
    const consider = (t: number) => (next = next === null ? t : Math.min(next, t))
    for (const i of this.#evaluator.instances.values()) {
      const rule = this.rules.get(i.ruleId)
      if (!rule) continue
      const repeatAt = (i.lastNotifiedAt ?? now) + rule.repeatIntervalSeconds * 1000
      if (i.state === 'firing') consider(Math.max(repeatAt, this.#settledAt))
      else consider(repeatAt) // forgetting an inactive pair
    }
    for (const s of this.#silences.values()) if (Date.parse(s.endsAt) > now) consider(Date.parse(s.endsAt))
    if (next === null) return
    this.#evalTimer = setTimeout(
      () => {
        this.#evalTimer = null
        void this.#mutex.run(async () => {
          const changes = newChanges()
          this.#evaluator.tick(this.rules, Date.now(), changes)
          await this.#apply(changes)
        })
      },
      Math.min(MAX_TIMER_MS, Math.max(50, next - now)),
    )
    this.#evalTimer.unref()
  }

  #notice(rule: Rule, i: Instance, status: 'firing' | 'resolved', now: number): Notice {
    return {
      status,
      ruleId: rule.id,
      ruleName: rule.name,
      target: i.target,
      severity: rule.severity,
      summary: i.summary,
      value: i.value,
      labels: i.labels,
      startsAt: new Date(i.firingSince ?? now).toISOString(),
      endsAt: status === 'resolved' ? new Date(now).toISOString() : null,
    }
  }

  async #notify(rule: Rule, i: Instance, status: 'firing' | 'resolved', now: number): Promise<void> {
    const notification: Notification = {
      status,
      alerts: [this.#notice(rule, i, status, now)],
      externalUrl: this.#externalUrl,
      hostname: this.hostname,
    }
    for (const channel of this.#channels.values()) {
      if (!channel.enabled) continue
      if (rule.channels.length && !rule.channels.includes(channel.id)) continue
      if (status === 'resolved' && !channel.sendResolved) continue
      const id = await this.#d.store.addDelivery({
        channelId: channel.id,
        kind: status,
        summary: `${status === 'firing' ? '' : 'Resolved: '}${i.summary}`,
        payload: JSON.stringify(notification),
        status: 'pending',
        attempts: 0,
        lastError: null,
        nextAttemptAt: new Date(now).toISOString(),
        createdAt: new Date(now).toISOString(),
        sentAt: null,
      })
      this.#scheduleDeliveries(0)
      void id
    }
  }

  // ---- deliveries ---------------------------------------------------------------------------------------------------

  /** Runs the deliveries that are due now and sets a timer for the next one. */
  #scheduleDeliveries(delayMs?: number): void {
    if (this.#stopped) return
    if (delayMs !== undefined) {
      if (this.#deliveryTimer) clearTimeout(this.#deliveryTimer)
      this.#deliveryTimer = setTimeout(() => void this.#runDeliveries(), delayMs)
      this.#deliveryTimer.unref()
      return
    }
    void this.#runDeliveries()
  }

  async #runDeliveries(): Promise<void> {
    this.#deliveryTimer = null
    if (this.#stopped) return
    const pending = await this.#d.store.pendingDeliveries()
    const now = Date.now()
    let next: number | null = null
    for (const stored of pending) {
      if (this.#inFlight.has(stored.id)) continue
      // A row read before an attempt of this process finished is older than what the attempt left.
      const known = this.#attempted.get(stored.id)
      if (known && (known.status !== 'pending' || known.attempts > stored.attempts)) {
        if (known.status === 'pending' && known.nextAttemptAt)
          next = Math.min(next ?? Infinity, Date.parse(known.nextAttemptAt))
        continue
      }
      const row = stored
      const at = row.nextAttemptAt ? Date.parse(row.nextAttemptAt) : now
      if (at <= now) void this.#attempt(row)
      else next = next === null ? at : Math.min(next, at)
    }
    if (next !== null && !this.#stopped) {
      if (this.#deliveryTimer) clearTimeout(this.#deliveryTimer)
      this.#deliveryTimer = setTimeout(
        () => void this.#runDeliveries(),
        Math.min(MAX_TIMER_MS, Math.max(10, next - now)),
      )
      this.#deliveryTimer.unref()
    }
  }

  async #attempt(row: DeliveryRow): Promise<void> {
    this.#inFlight.add(row.id)
    try {
      const channel = this.#channels.get(row.channelId)
      row.attempts += 1
      if (!channel) {
        row.status = 'failed'
        row.lastError = 'The channel was removed'
        row.nextAttemptAt = null
        await this.#d.store.updateDelivery(row)
        this.#remember(row)
        return
      }
      try {
        await deliver(await this.#target(channel), JSON.parse(row.payload) as Notification)
        row.status = 'sent'
        row.sentAt = new Date().toISOString()
        row.lastError = null
        row.nextAttemptAt = null
        channel.status = { ...channel.status, lastSuccessAt: row.sentAt }
      } catch (err) {
        const reason = err instanceof DeliveryError ? err.message : `Delivery failed: ${(err as Error).message}`
        row.lastError = reason
        if (row.attempts >= this.#o.maxAttempts) {
          row.status = 'failed'
          row.nextAttemptAt = null
        } else {
          const wait = Math.min(this.#o.retryMaxMs, this.#o.retryBaseMs * 2 ** (row.attempts - 1))
          row.nextAttemptAt = new Date(Date.now() + wait).toISOString()
        }
        channel.status = { ...channel.status, lastError: reason, lastErrorAt: new Date().toISOString() }
        this.#d.log.warn({ channel: channel.id, attempts: row.attempts, reason }, 'alert delivery failed')
      }
      await this.#d.store.updateDelivery(row)
      this.#remember(row)
      if (this.#channels.get(channel.id) === channel) await this.#d.store.put('channels', channel.id, channel)
    } finally {
      this.#inFlight.delete(row.id)
    }
    if (row.status === 'pending') this.#scheduleDeliveries(Math.max(10, Date.parse(row.nextAttemptAt!) - Date.now()))
  }

  #remember(row: DeliveryRow): void {
    this.#attempted.set(row.id, { ...row })
    if (this.#attempted.size > 1000)
      for (const [id, r] of this.#attempted)
        if (r.status !== 'pending' && !this.#inFlight.has(id)) this.#attempted.delete(id)
  }

  async #target(c: StoredChannel): Promise<ChannelTarget> {
    let secret: string | null = null
    if (c.sealedSecret) {
      secret = await this.#d.secrets.open(c.sealedSecret)
      if (secret === null)
        throw new DeliveryError('The channel secret cannot be read (the data folder key changed): set it again')
    }
    return { id: c.id, name: c.name, type: c.type, options: c.options, secret }
  }

  // ---- reads --------------------------------------------------------------------------------------------------------

  alerts(): { items: Alert[]; firing: number } {
    const now = Date.now()
    const items: Alert[] = []
    for (const i of this.#evaluator.instances.values()) {
      if (i.state === 'inactive') continue
      const rule = this.rules.get(i.ruleId)
      if (!rule) continue
      items.push({
        ruleId: rule.id,
        ruleName: rule.name,
        target: i.target,
        state: i.state,
        severity: rule.severity,
        summary: i.summary,
        value: i.value,
        since: new Date((i.state === 'firing' ? i.firingSince : i.pendingSince) ?? now).toISOString(),
        silenced: this.#silenced(i, now),
        labels: i.labels,
      })
    }
    items.sort((a, b) => Number(b.state === 'firing') - Number(a.state === 'firing') || b.since.localeCompare(a.since))
    return { items, firing: items.filter((a) => a.state === 'firing' && !a.silenced).length }
  }

  async history(limit: number): Promise<HistoryItem[]> {
    return this.#d.store.history(limit)
  }

  async deliveries(limit: number, channelId?: string): Promise<Delivery[]> {
    const rows = await this.#d.store.deliveries(limit, channelId)
    return rows.map(({ payload: _payload, ...row }) => row)
  }

  /** Alert states as Prometheus series (see prometheus.ts). */
  prometheus(): string {
    return prometheusSection(this.alerts().items, this.hostname)
  }

  // ---- rules --------------------------------------------------------------------------------------------------------

  listRules(): Rule[] {
    return [...this.rules.values()]
  }

  #rule(id: string): Rule {
    const rule = this.rules.get(id)
    if (!rule) throw AlertErrors.ruleNotFound(`No rule ${id}`)
    return rule
  }

  #checkRule(rule: Rule): void {
    if (rule.source === 'metric' && !rule.metric) throw AlertErrors.ruleInvalid('A metric rule needs `metric`')
    const conditions: Record<string, readonly string[]> = {
      container: CONTAINER_CONDITIONS,
      account: ACCOUNT_CONDITIONS,
      system: SYSTEM_CONDITIONS,
      backup: ['backupFailed', 'backupOverdue'],
    }
    const allowed = conditions[rule.source]
    if (allowed && !allowed.includes(rule.condition ?? ''))
      throw AlertErrors.ruleInvalid(`A ${rule.source} rule needs \`condition\`, one of ${allowed.join(', ')}`)
    if (rule.source !== 'metric') delete rule.metric
    if (!allowed) delete rule.condition
    if (rule.condition === 'backupOverdue' && !(rule.threshold > 0)) rule.threshold = 24
    if (rule.condition !== 'failedSignIns') delete rule.windowSeconds
    else {
      // A burst's alert resolves once a whole window passes without one.
      rule.windowSeconds ??= 300
      rule.clearForSeconds = rule.windowSeconds
    }
    // A single event's alert fires at once and shows at least a minute (it resolves clearForSeconds after the event).
    if (EVENT_SOURCES.has(rule.source)) {
      rule.forSeconds = 0
      rule.clearForSeconds = Math.max(60, rule.clearForSeconds)
    }
    if (rule.clearThreshold > rule.threshold)
      throw AlertErrors.ruleInvalid('clearThreshold must be at most threshold (a firing alert clears below it)')
    for (const id of rule.channels) if (!this.#channels.has(id)) throw AlertErrors.channelNotFound(`No channel ${id}`)
  }

  createRule(body: RuleCreate, actor: AuditActor): Promise<Rule> {
    return this.#mutex.run(async () => {
      if (this.rules.size >= LIMITS.rules) throw AlertErrors.tooMany(`At most ${LIMITS.rules} rules`)
      const threshold = body.threshold ?? 0
      const rule: Rule = {
        id: randomUUID(),
        builtin: false,
        name: body.name,
        enabled: body.enabled ?? true,
        source: body.source,
        metric: body.metric,
        condition: body.condition,
        match: body.match ?? '',
        threshold,
        clearThreshold: body.clearThreshold ?? threshold,
        forSeconds: body.forSeconds ?? 0,
        clearForSeconds:
          body.clearForSeconds ??
          (body.condition === 'failedSignIns'
            ? (body.windowSeconds ?? 300)
            : EVENT_SOURCES.has(body.source)
              ? 86_400
              : 0),
        windowSeconds: body.windowSeconds,
        severity: body.severity ?? 'warning',
        repeatIntervalSeconds: body.repeatIntervalSeconds ?? 4 * 3600,
        channels: body.channels ?? [],
      }
      this.#checkRule(rule)
      await this.#d.store.put('rules', rule.id, rule)
      this.rules.set(rule.id, rule)
      await this.#d.audit.record({ action: 'alerts.rule.create', target: rule.id, detail: { name: rule.name } }, actor)
      await this.#reevaluate(rule)
      return rule
    })
  }

  updateRule(id: string, body: RuleUpdate, actor: AuditActor): Promise<Rule> {
    return this.#mutex.run(async () => {
      const old = this.#rule(id)
      const rule: Rule = { ...old, ...body }
      if (body.threshold !== undefined && body.clearThreshold === undefined && rule.clearThreshold > rule.threshold)
        rule.clearThreshold = rule.threshold
      this.#checkRule(rule)
      await this.#d.store.put('rules', id, rule)
      this.rules.set(id, rule)
      await this.#d.audit.record(
        { action: 'alerts.rule.update', target: id, detail: { fields: Object.keys(body) } },
        actor,
      )
      const watchesOther =
        old.source !== rule.source ||
        old.metric !== rule.metric ||
        old.condition !== rule.condition ||
        old.match !== rule.match
      if (!rule.enabled || watchesOther) await this.#dropInstances(id)
      await this.#reevaluate(rule)
      return rule
    })
  }

  deleteRule(id: string, actor: AuditActor): Promise<void> {
    return this.#mutex.run(async () => {
      this.#rule(id)
      await this.#dropInstances(id)
      this.rules.delete(id)
      await this.#d.store.delete('rules', id)
      await this.#d.audit.record({ action: 'alerts.rule.delete', target: id }, actor)
      this.#scheduleEvaluation(Date.now())
    })
  }

  /** Forgets a rule's alerts (no notification: the rule changed, not the host); their history rows end now. */
  async #dropInstances(ruleId: string): Promise<void> {
    const now = new Date().toISOString()
    const instances = this.#evaluator.forRule(ruleId)
    this.#evaluator.drop(ruleId)
    for (const i of instances) {
      if (i.historyId !== null) await this.#d.store.endHistory(i.historyId, now)
      await this.#d.store.delete('states', i.key.replace('\u0000', '/'))
    }
  }

  /** A new or changed rule is evaluated at once on the latest data (the last snapshot, the known containers). */
  async #reevaluate(rule: Rule): Promise<void> {
    const changes = newChanges()
    if (rule.enabled && rule.source === 'metric' && this.#snapshot)
      this.#evaluator.observe(rule, metricObservations(rule, this.#snapshot), Date.now(), true, changes)
    this.#observeContainers(rule, changes)
    if (rule.enabled && rule.source === 'plugin')
      this.#evaluator.observe(rule, pluginObservations(rule, this.#d.events.plugins()), Date.now(), true, changes)
    if (rule.enabled && rule.source === 'system') {
      this.#evaluator.observe(rule, systemObservations(rule, this.#system), Date.now(), true, changes)
      // What it reads may not have been read yet (a rule just enabled): looked at now, after this change.
      if (!this.#stopped) void this.checkSystem()
    }
    if (rule.enabled && rule.condition === 'backupOverdue' && !this.#stopped) void this.checkSystem()
    await this.#apply(changes)
  }

  // ---- channels -----------------------------------------------------------------------------------------------------

  #view(c: StoredChannel): Channel {
    const { sealedSecret, ...rest } = c
    return { ...rest, secretSet: sealedSecret !== null }
  }

  listChannels(): Channel[] {
    return [...this.#channels.values()].map((c) => this.#view(c))
  }

  #channel(id: string): StoredChannel {
    const c = this.#channels.get(id)
    if (!c) throw AlertErrors.channelNotFound(`No channel ${id}`)
    return c
  }

  async #checkChannel(c: StoredChannel): Promise<void> {
    const o = c.options
    const need = (ok: unknown, what: string) => {
      if (!ok) throw AlertErrors.channelInvalid(`A ${c.type} channel needs ${what}`)
    }
    if (c.type === 'webhook' || c.type === 'ntfy') need(o.url, '`options.url`')
    if (c.type === 'email') {
      need(o.host, '`options.host`')
      need(o.from, '`options.from`')
      need(o.to?.length, '`options.to`')
      if (o.username) need(c.sealedSecret, 'a password (`secret`) with a user name')
    }
    if (c.type === 'apprise') {
      need(c.sealedSecret, 'its Apprise URL(s) as `secret`')
      if (!(await appriseInstalled())) throw AlertErrors.appriseMissing()
    }
  }

  createChannel(body: ChannelCreate, actor: AuditActor): Promise<Channel> {
    return this.#mutex.run(async () => {
      if (this.#channels.size >= LIMITS.channels) throw AlertErrors.tooMany(`At most ${LIMITS.channels} channels`)
      const c: StoredChannel = {
        id: randomUUID(),
        name: body.name,
        type: body.type,
        enabled: body.enabled ?? true,
        options: body.options,
        sealedSecret: body.secret ? await this.#d.secrets.seal(body.secret) : null,
        sendResolved: body.sendResolved ?? true,
        status: { lastSuccessAt: null, lastError: null, lastErrorAt: null, retrying: 0, nextAttemptAt: null },
      }
      await this.#checkChannel(c)
      await this.#d.store.put('channels', c.id, c)
      this.#channels.set(c.id, c)
      await this.#d.audit.record(
        { action: 'alerts.channel.create', target: c.id, detail: { name: c.name, type: c.type } },
        actor,
      )
      return this.#view(c)
    })
  }

  updateChannel(id: string, body: ChannelUpdate, actor: AuditActor): Promise<Channel> {
    return this.#mutex.run(async () => {
      const old = this.#channel(id)
      const c: StoredChannel = {
        ...old,
        name: body.name ?? old.name,
        enabled: body.enabled ?? old.enabled,
        options: body.options ?? old.options,
        sendResolved: body.sendResolved ?? old.sendResolved,
        sealedSecret:
          body.secret === undefined
            ? old.sealedSecret
            : body.secret === null
              ? null
              : await this.#d.secrets.seal(body.secret),
      }
      await this.#checkChannel(c)
      await this.#d.store.put('channels', id, c)
      this.#channels.set(id, c)
      // Secrets are never recorded; which fields changed is.
      await this.#d.audit.record(
        { action: 'alerts.channel.update', target: id, detail: { fields: Object.keys(body) } },
        actor,
      )
      return this.#view(c)
    })
  }

  deleteChannel(id: string, actor: AuditActor): Promise<void> {
    return this.#mutex.run(async () => {
      this.#channel(id)
      for (const rule of this.rules.values())
        if (rule.channels.includes(id)) {
          rule.channels = rule.channels.filter((c) => c !== id)
          await this.#d.store.put('rules', rule.id, rule)
        }
      this.#channels.delete(id)
      await this.#d.store.delete('channels', id)
      await this.#d.store.dropChannelDeliveries(id)
      await this.#d.audit.record({ action: 'alerts.channel.delete', target: id }, actor)
    })
  }

  /** Sends a test message now (no queue, no retry) and says whether it arrived, and why not in words. */
  async testChannel(id: string, actor: AuditActor): Promise<{ ok: boolean; error: string | null }> {
    const c = this.#channel(id)
    const now = new Date().toISOString()
    const notification: Notification = {
      status: 'firing',
      test: true,
      externalUrl: this.#externalUrl,
      hostname: this.hostname,
      alerts: [
        {
          status: 'firing',
          ruleId: 'test',
          ruleName: 'Test message',
          target: c.name,
          severity: 'warning',
          summary: `A test of the channel ${c.name} from hostd on ${this.hostname}`,
          value: null,
          labels: {},
          startsAt: now,
          endsAt: null,
        },
      ],
    }
    let error: string | null = null
    try {
      await deliver(await this.#target(c), notification)
    } catch (err) {
      error = err instanceof DeliveryError ? err.message : `Delivery failed: ${(err as Error).message}`
    }
    await this.#d.audit.record(
      {
        action: 'alerts.channel.test',
        target: id,
        result: error ? 'failure' : 'success',
        detail: error ? { error } : {},
      },
      actor,
    )
    return { ok: error === null, error }
  }

  /** Channel views with their retry queue counted. */
  async channelsWithStatus(): Promise<Channel[]> {
    const pending = await this.#d.store.pendingDeliveries()
    return this.listChannels().map((c) => {
      const mine = pending.filter((p) => p.channelId === c.id)
      const next =
        mine
          .map((p) => p.nextAttemptAt)
          .filter((t): t is string => t !== null)
          .sort()[0] ?? null
      return { ...c, status: { ...c.status, retrying: mine.filter((p) => p.attempts > 0).length, nextAttemptAt: next } }
    })
  }

  // ---- silences -----------------------------------------------------------------------------------------------------

  listSilences(): Silence[] {
    const now = Date.now()
    return [...this.#silences.values()]
      .map((s) => ({ ...s, active: Date.parse(s.endsAt) > now }))
      .sort((a, b) => Number(b.active) - Number(a.active) || b.createdAt.localeCompare(a.createdAt))
  }

  createSilence(body: SilenceCreate, who: string, actor: AuditActor): Promise<Silence> {
    return this.#mutex.run(async () => {
      if (!body.ruleId && !body.target) throw AlertErrors.silenceInvalid('A silence needs a rule, a target or both')
      if (body.ruleId) this.#rule(body.ruleId)
      const endsAt = Date.parse(body.endsAt)
      if (!Number.isFinite(endsAt) || endsAt <= Date.now())
        throw AlertErrors.silenceInvalid('endsAt must be in the future')
      // Ended silences are forgotten a day after they end; at most LIMITS.silences kept.
      for (const s of this.#silences.values())
        if (Date.parse(s.endsAt) < Date.now() - 86_400_000) {
          this.#silences.delete(s.id)
          await this.#d.store.delete('silences', s.id)
        }
      if (this.#silences.size >= LIMITS.silences) throw AlertErrors.tooMany(`At most ${LIMITS.silences} silences`)
      const s: StoredSilence = {
        id: randomUUID(),
        ruleId: body.ruleId ?? null,
        target: body.target ?? null,
        endsAt: new Date(endsAt).toISOString(),
        comment: body.comment ?? '',
        createdBy: who,
        createdAt: new Date().toISOString(),
      }
      await this.#d.store.put('silences', s.id, s)
      this.#silences.set(s.id, s)
      await this.#d.audit.record(
        {
          action: 'alerts.silence.create',
          target: s.id,
          detail: { ruleId: s.ruleId, target: s.target, endsAt: s.endsAt },
        },
        actor,
      )
      this.#scheduleEvaluation(Date.now())
      return { ...s, active: true }
    })
  }

  expireSilence(id: string, actor: AuditActor): Promise<Silence> {
    return this.#mutex.run(async () => {
      const s = this.#silences.get(id)
      if (!s) throw AlertErrors.silenceNotFound(`No silence ${id}`)
      const now = new Date().toISOString()
      if (s.endsAt > now) s.endsAt = now
      await this.#d.store.put('silences', id, s)
      await this.#d.audit.record({ action: 'alerts.silence.expire', target: id }, actor)
      // Alerts it held back go out now.
      await this.#apply(newChanges())
      return { ...s, active: false }
    })
  }

  // ---- settings -----------------------------------------------------------------------------------------------------

  settings(): { externalUrl: string } {
    return { externalUrl: this.#externalUrl }
  }

  async setSettings(body: { externalUrl: string }, actor: AuditActor): Promise<{ externalUrl: string }> {
    this.#externalUrl = body.externalUrl
    await this.#d.settings.set('externalUrl', body.externalUrl)
    await this.#d.audit.record({ action: 'alerts.settings.update', detail: { externalUrl: body.externalUrl } }, actor)
    return this.settings()
  }
}
