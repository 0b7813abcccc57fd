import type { IncomingMessage, ServerResponse } from 'node:http'
import { HostdError, type AuditActor, type AuditService, type HelperClient, type Logger } from '@hostd/sdk'
import { HostReader, type HostReading } from './adapters/host-reader.ts'
import { ProcessTable, type ProcessSweep } from './adapters/process-table.ts'
import { parseNethogs, type NetTraffic } from './adapters/process-parse.ts'
import { processSample } from './activity.ts'
import { MetricsErrors } from './errors.ts'
import { COARSE_STEP_S, FINE_STEP_S, History, toStored } from './history.ts'
import { prometheusText } from './prometheus.ts'
import type {
  HistoryRange,
  HistoryResponse,
  MetricsSnapshot,
  ProcessSample,
  ProcessSignal,
  ProcessSignalResult,
} from './schemas.ts'
import { signalProcess } from './signal.ts'
import { buildSnapshot, historyPoint } from './snapshot.ts'
import type { HistoryStore } from './store.ts'
import { DEFAULT_STREAM_OPTIONS, StreamHub, type StreamOptions } from './stream.ts'

/** The root helper's action that runs `nethogs -a -t -d 1 -c <seconds>` and answers `{ stdout }`. */
export const NET_TRAFFIC_ACTION = 'net.processTraffic'
/**
 * nethogs' first refresh comes at once and holds no rates (measured: `-c 1` returns in ~0.2 s with nothing), so
 * two refreshes give one real one-second measurement; the parser keeps the last refresh.
 */
const NET_TRACE_SECONDS = 2

export interface MetricsServiceOptions {
  /** Filesystem root to read /proc and /sys under (`/`; recorded trees in tests). */
  root?: string
  /** Background history sampler period (60 s: one point a minute). */
  historyIntervalMs?: number
  stream?: Partial<StreamOptions>
  /** Monotonic milliseconds (`performance.now`); tests step a clock of their own to check the freshness rule. */
  clock?: () => number
}

interface Deps {
  log: Logger
  helper: HelperClient
  store: HistoryStore | null
  /** For ending a process (audited); absent in tests of the samplers alone. */
  audit?: AuditService
}

/** A rate baseline must be at least this old (shorter intervals are noise) and at most this old (stale). */
const MIN_BASELINE_MS = 250
const MAX_BASELINE_MS = 65_000

/**
 * The feature's logic, no HTTP: host readings, the shared stream sampler, the background history sampler,
 * history persistence, Prometheus text, and the per-request process sampler.
 */
export class MetricsService {
  readonly reader: HostReader
  readonly table: ProcessTable
  readonly #procDir: string
  readonly history = new History()
  readonly hub: StreamHub
  readonly #deps: Deps
  readonly #historyIntervalMs: number
  readonly #clock: () => number
  /** A sample at most this old answers GET /api/metrics: the stream's interval. */
  readonly #freshMs: number
  /** The most recent readings from any sampler: baselines for GET /api/metrics. */
  #recent: HostReading[] = []
  #streamPrev: HostReading | null = null
  /** The latest snapshot of the shared sampler: the stream's, or one taken for GET /api/metrics. */
  #latest: { snapshot: MetricsSnapshot; mono: number } | null = null
  /** A snapshot being taken for GET /api/metrics: concurrent callers share it. */
  #taking: Promise<MetricsSnapshot> | null = null
  #historyPrev: HostReading | null = null
  #historyTimer: NodeJS.Timeout | null = null
  #processPrev: ProcessSweep | null = null
  #processQueue: Promise<unknown> = Promise.resolve()
  #flushing: Promise<void> = Promise.resolve()
  /** Other plugins' listeners to the history sampler's snapshots and sections of the Prometheus text (api.ts). */
  readonly #sampleListeners = new Set<(snapshot: MetricsSnapshot) => void>()
  readonly #prometheusSections = new Set<() => string>()

  constructor(deps: Deps, options: MetricsServiceOptions = {}) {
    this.#deps = deps
    this.#clock = options.clock ?? (() => performance.now())
    this.reader = new HostReader(options.root, this.#clock)
    this.table = new ProcessTable(options.root)
    this.#procDir = `${(options.root ?? '/').replace(/\/$/, '')}/proc`
    this.#historyIntervalMs = options.historyIntervalMs ?? COARSE_STEP_S * 1000
    const streamOptions = { ...DEFAULT_STREAM_OPTIONS, ...options.stream }
    this.#freshMs = streamOptions.intervalMs
    this.hub = new StreamHub(
      {
        begin: async () => {
          this.#streamPrev = await this.#read()
        },
        sample: async () => {
          const now = await this.#read()
          const snapshot = buildSnapshot(now, this.#streamPrev)
          this.#streamPrev = now
          this.#offer(snapshot, now.mono)
          this.history.add(FINE_STEP_S, toStored(historyPoint(snapshot)))
          return { at: now.at, data: snapshot }
        },
        end: () => {
          this.#streamPrev = null
        },
      },
      streamOptions,
    )
  }

  async start(): Promise<void> {
    if (this.#deps.store) {
      await this.#deps.store.init()
      const kept = await this.#deps.store.load()
      this.history.load(FINE_STEP_S, kept.fine)
      this.history.load(COARSE_STEP_S, kept.coarse)
    }
    this.#historyPrev = await this.#read()
    this.#historyTimer = setInterval(() => void this.#historyTick(), this.#historyIntervalMs)
    this.#historyTimer.unref()
  }

  async stop(): Promise<void> {
    this.hub.close()
    if (this.#historyTimer) clearInterval(this.#historyTimer)
    this.#historyTimer = null
    await this.flush()
  }

  /** Saves points not yet persisted (every history tick, and on stop). */
  flush(): Promise<void> {
    const store = this.#deps.store
    if (!store) return Promise.resolve()
    this.#flushing = this.#flushing.then(async () => {
      const items = this.history.takePending()
      if (items.length === 0) return
      try {
        await store.save(items)
      } catch (err) {
        this.history.restorePending(items)
        this.#deps.log.warn({ err }, 'metrics history could not be saved; retrying at the next tick')
      }
    })
    return this.#flushing
  }

  async #read(): Promise<HostReading> {
    const r = await this.reader.read()
    this.#recent = [...this.#recent.slice(-2), r]
    return r
  }

  async #historyTick(): Promise<void> {
    try {
      const now = await this.#read()
      if (this.#historyPrev) {
        const snapshot = buildSnapshot(now, this.#historyPrev)
        this.history.add(COARSE_STEP_S, toStored(historyPoint(snapshot)))
        for (const listener of this.#sampleListeners) {
          try {
            listener(snapshot)
          } catch (err) {
            this.#deps.log.warn({ err }, 'a metrics sample listener failed')
          }
        }
      }
      this.#historyPrev = now
      await this.flush()
    } catch (err) {
      this.#deps.log.warn({ err }, 'metrics history sample failed')
    }
  }

  /**
   * One snapshot: the shared sampler's latest when it is at most one stream interval (2 s) old, whoever took it
   * (the stream, or an earlier call); otherwise one fresh reading with rates against the most recent earlier
   * reading of any sampler (the background history sampler keeps one at most a minute old), or, when there is
   * none, two readings half a second apart. Callers that arrive while a snapshot is being taken share it.
   */
  snapshot(): Promise<MetricsSnapshot> {
    const latest = this.#latest
    if (latest && this.#clock() - latest.mono <= this.#freshMs) return Promise.resolve(latest.snapshot)
    this.#taking ??= this.#takeSnapshot().finally(() => (this.#taking = null))
    return this.#taking
  }

  async #takeSnapshot(): Promise<MetricsSnapshot> {
    const earlier = [...this.#recent]
    let now = await this.#read()
    let base =
      earlier.findLast((r) => now.mono - r.mono >= MIN_BASELINE_MS && now.mono - r.mono <= MAX_BASELINE_MS) ?? null
    if (!base) {
      base = now
      await new Promise((r) => setTimeout(r, 500))
      now = await this.#read()
    }
    const snapshot = buildSnapshot(now, base)
    this.#offer(snapshot, now.mono)
    return snapshot
  }

  /** A sampler's new snapshot becomes the latest unless a newer one is there already. */
  #offer(snapshot: MetricsSnapshot, mono: number): void {
    if (!this.#latest || mono >= this.#latest.mono) this.#latest = { snapshot, mono }
  }

  async prometheus(): Promise<string> {
    const text = prometheusText(await this.#read())
    const sections = [...this.#prometheusSections].map((section) => {
      try {
        return section()
      } catch (err) {
        this.#deps.log.warn({ err }, 'a Prometheus section failed')
        return ''
      }
    })
    return [text, ...sections.filter((s) => s !== '')].join('')
  }

  /** `subscribe` of the metrics.samples service (api.ts). */
  subscribe(listener: (snapshot: MetricsSnapshot) => void): () => void {
    this.#sampleListeners.add(listener)
    return () => this.#sampleListeners.delete(listener)
  }

  /** `addPrometheusSection` of the metrics.samples service (api.ts). */
  addPrometheusSection(section: () => string): () => void {
    this.#prometheusSections.add(section)
    return () => this.#prometheusSections.delete(section)
  }

  queryHistory(range: HistoryRange): HistoryResponse {
    return this.history.query(range)
  }

  stream(req: IncomingMessage, res: ServerResponse, limit: number | null): void {
    this.hub.attach(req, res, { limit })
  }

  /**
   * One sweep of the process table per call, rates against the previous call. Calls run one at a time so
   * "the previous call" is well defined. With `network`, a short nethogs trace through the root helper first;
   * without the helper that option alone answers 423, before anything is sampled.
   */
  processes(network: boolean): Promise<ProcessSample> {
    const run = async () => {
      let traffic: Map<number, NetTraffic> | null = null
      if (network) traffic = await this.#networkTraffic()
      const sweep = await this.table.sweep()
      const sample = processSample(sweep, this.#processPrev, traffic)
      this.#processPrev = sweep
      return sample
    }
    const result = this.#processQueue.then(run, run)
    this.#processQueue = result.catch(() => undefined)
    return result
  }

  /** Ends one process through the root helper (see signal.ts); audited. */
  signal(pid: number, signal: ProcessSignal, actor: AuditActor): Promise<ProcessSignalResult> {
    if (!this.#deps.audit) throw new Error('ending a process needs the audit service')
    const { helper, audit } = this.#deps
    return signalProcess({ helper, audit, proc: this.#procDir, selfPid: process.pid }, pid, signal, actor)
  }

  async #networkTraffic(): Promise<Map<number, NetTraffic>> {
    const helper = this.#deps.helper
    if (!(await helper.available())) throw MetricsErrors.networkNeedsHelper()
    let answer: { stdout?: unknown }
    try {
      answer = await helper.call<{ stdout?: unknown }>(NET_TRAFFIC_ACTION, { seconds: NET_TRACE_SECONDS })
    } catch (err) {
      if (err instanceof HostdError && err.statusCode === 423) throw MetricsErrors.networkNeedsHelper()
      this.#deps.log.warn({ err }, 'per-process network trace failed')
      throw MetricsErrors.networkFailed(`The per-process network measurement failed: ${(err as Error).message}`)
    }
    if (typeof answer?.stdout !== 'string')
      throw MetricsErrors.networkFailed('The root helper answered net.processTraffic without stdout')
    return parseNethogs(answer.stdout)
  }
}
