import type { HistoryPoint, HistoryRange, HistoryResponse } from './schemas.ts'

/** A history point as kept in memory and in the database: the time as epoch milliseconds. */
export type StoredPoint = Omit<HistoryPoint, 't'> & { ms: number }

export const FINE_STEP_S = 2
export const COARSE_STEP_S = 60
export const FINE_CAPACITY = 1800 // one hour at two seconds
export const COARSE_CAPACITY = 10_080 // seven days at one minute
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** The 7-day range is served as 10-minute averages of the minute points (1,008 points instead of 10,080). */
const WEEK_BUCKET_S = 600

/** A fixed-capacity ring: pushing past capacity drops the oldest entry, so memory is bounded by construction. */
export class Ring<T> {
  readonly capacity: number
  readonly #items: (T | undefined)[]
  #head = 0
  #size = 0

  constructor(capacity: number) {
    this.capacity = capacity
    this.#items = new Array(capacity)
  }

  get size(): number {
    return this.#size
  }

  push(item: T): void {
    this.#items[(this.#head + this.#size) % this.capacity] = item
    if (this.#size < this.capacity) this.#size++
    else this.#head = (this.#head + 1) % this.capacity
  }

  /** Oldest first. */
  toArray(): T[] {
    const out: T[] = []
    for (let i = 0; i < this.#size; i++) out.push(this.#items[(this.#head + i) % this.capacity]!)
    return out
  }

  last(): T | undefined {
    return this.#size ? this.#items[(this.#head + this.#size - 1) % this.capacity] : undefined
  }
}

export function toStored(p: HistoryPoint): StoredPoint {
  const { t, ...rest } = p
  return { ...rest, ms: Date.parse(t) }
}

function toPoint(p: StoredPoint, stepSeconds: number): HistoryPoint & { stepSeconds: number } {
  const { ms, ...rest } = p
  return { t: new Date(ms).toISOString(), ...rest, stepSeconds }
}

const NUMERIC_KEYS = [
  'cpu',
  'iowait',
  'load1',
  'memUsedBytes',
  'memTotalBytes',
  'swapUsedBytes',
  'diskReadBytesPerSec',
  'diskWriteBytesPerSec',
  'netRxBytesPerSec',
  'netTxBytesPerSec',
] as const

/** Averages points into buckets of `bucketS` seconds, stamped with the bucket's end; max for temperature. */
export function downsample(points: StoredPoint[], bucketS: number): StoredPoint[] {
  const bucketMs = bucketS * 1000
  const out: StoredPoint[] = []
  let group: StoredPoint[] = []
  let key = NaN
  const flush = () => {
    if (group.length === 0) return
    const avg = {} as Record<(typeof NUMERIC_KEYS)[number], number>
    for (const k of NUMERIC_KEYS) avg[k] = Math.round((group.reduce((a, p) => a + p[k], 0) / group.length) * 100) / 100
    const temps = group.map((p) => p.maxTempCelsius).filter((v): v is number => v !== null)
    out.push({ ...avg, maxTempCelsius: temps.length ? Math.max(...temps) : null, ms: (key + 1) * bucketMs })
    group = []
  }
  for (const p of points) {
    const k = Math.floor((p.ms - 1) / bucketMs) // (start, end] buckets, like the minute points themselves
    if (k !== key) {
      flush()
      key = k
    }
    group.push(p)
  }
  flush()
  return out
}

/**
 * Host history at two resolutions:
 *  - fine: the stream's own samples (every 2 s, only while someone listens), the last hour;
 *  - coarse: one point a minute from the background history sampler (rates averaged over the minute), 7 days.
 * New points also wait in `pending` until the store persists them.
 */
export class History {
  readonly fine = new Ring<StoredPoint>(FINE_CAPACITY)
  readonly coarse = new Ring<StoredPoint>(COARSE_CAPACITY)
  #pending: { step: number; point: StoredPoint }[] = []

  add(step: typeof FINE_STEP_S | typeof COARSE_STEP_S, point: StoredPoint): void {
    const ring = step === FINE_STEP_S ? this.fine : this.coarse
    const last = ring.last()
    if (last && point.ms <= last.ms) return // the clock went back or a duplicate: keep the ring ordered
    ring.push(point)
    this.#pending.push({ step, point })
    // Persisting failed for a long time: keep at most one ring's worth of unsaved points.
    if (this.#pending.length > FINE_CAPACITY + COARSE_CAPACITY) this.#pending.shift()
  }

  /** Loads persisted points (oldest first) without marking them pending. */
  load(step: number, points: StoredPoint[]): void {
    const ring = step === FINE_STEP_S ? this.fine : this.coarse
    for (const p of points) ring.push(p)
  }

  takePending(): { step: number; point: StoredPoint }[] {
    const out = this.#pending
    this.#pending = []
    return out
  }

  /** Puts points back after a failed save (they are retried on the next flush). */
  restorePending(items: { step: number; point: StoredPoint }[]): void {
    this.#pending = [...items, ...this.#pending].slice(-(FINE_CAPACITY + COARSE_CAPACITY))
  }

  query(range: HistoryRange, now = Date.now()): HistoryResponse {
    if (range === '24h') {
      const points = this.coarse
        .toArray()
        .filter((p) => p.ms > now - DAY_MS)
        .map((p) => toPoint(p, COARSE_STEP_S))
      return { range, stepSeconds: COARSE_STEP_S, points }
    }
    if (range === '7d') {
      const week = this.coarse.toArray().filter((p) => p.ms > now - 7 * DAY_MS)
      return {
        range,
        stepSeconds: WEEK_BUCKET_S,
        points: downsample(week, WEEK_BUCKET_S).map((p) => toPoint(p, WEEK_BUCKET_S)),
      }
    }
    // 1h: two-second points where someone was streaming, minute points for the minutes nobody was.
    const fine = this.fine.toArray().filter((p) => p.ms > now - HOUR_MS)
    const coarse = this.coarse.toArray().filter((p) => p.ms > now - HOUR_MS)
    let i = 0
    const gaps = coarse.filter((c) => {
      // A minute point covers (ms - 60 s, ms]: drop it when any fine point lies in that window.
      while (i < fine.length && fine[i]!.ms <= c.ms - COARSE_STEP_S * 1000) i++
      return !(i < fine.length && fine[i]!.ms <= c.ms)
    })
    const points = [...fine.map((p) => toPoint(p, FINE_STEP_S)), ...gaps.map((p) => toPoint(p, COARSE_STEP_S))]
    points.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : 0))
    return { range, stepSeconds: FINE_STEP_S, points }
  }
}
