import type uPlot from 'uplot'
import { useEffect, useRef } from 'preact/hooks'

/**
 * A fixed-size ring buffer of time-stamped samples for a chart: pushing a sample is O(1) and allocates nothing.
 * Each value is written twice (at i and i + capacity), so the samples in time order are always one contiguous
 * window of the buffer and `data()` hands uPlot views of it, not copies.
 */
export class TimeSeries {
  readonly capacity: number
  readonly #times: Float64Array
  readonly #values: Float64Array[]
  #start = 0
  #length = 0
  readonly #listeners = new Set<() => void>()

  /** `seriesCount` values per sample; times are in seconds since the epoch. */
  constructor(capacity: number, seriesCount: number) {
    this.capacity = capacity
    this.#times = new Float64Array(capacity * 2)
    this.#values = Array.from({ length: seriesCount }, () => new Float64Array(capacity * 2))
  }

  get length(): number {
    return this.#length
  }

  /** Appends one sample (oldest dropped when full) and tells the charts. Missing values count as 0. */
  push(timeSeconds: number, values: (number | null | undefined)[]): void {
    this.#write(timeSeconds, values)
    this.#notify()
  }

  /** Replaces everything (a history load), keeping the last `capacity` samples. */
  replace(samples: [number, ...(number | null | undefined)[]][]): void {
    this.#start = 0
    this.#length = 0
    for (const [t, ...values] of samples.slice(-this.capacity)) this.#write(t, values)
    this.#notify()
  }

  /** The newest value of one series, or null when empty. */
  latest(series: number): number | null {
    if (this.#length === 0) return null
    return this.#values[series]![this.#start + this.#length - 1]!
  }

  /** uPlot's data: [times, ...series], views in time order. */
  data(): uPlot.AlignedData {
    const end = this.#start + this.#length
    return [
      this.#times.subarray(this.#start, end),
      ...this.#values.map((v) => v.subarray(this.#start, end)),
    ] as unknown as uPlot.AlignedData
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #write(t: number, values: (number | null | undefined)[]): void {
    const cap = this.capacity
    const at = (this.#start + this.#length) % cap
    this.#times[at] = this.#times[at + cap] = t
    this.#values.forEach((buffer, i) => {
      const v = values[i]
      buffer[at] = buffer[at + cap] = typeof v === 'number' && Number.isFinite(v) ? v : 0
    })
    if (this.#length < cap) this.#length++
    else this.#start = (this.#start + 1) % cap
  }

  #notify(): void {
    for (const listener of this.#listeners) listener()
  }
}

export interface ChartSeries {
  label: string
  /** 1-5: the theme's chart colours (`--chart-1`...). */
  color?: number
}

export interface TimeChartProps {
  /** What the chart shows; its accessible name ("CPU usage"). */
  label: string
  series: ChartSeries[]
  data: TimeSeries
  /** Formats values on the axis and in the legend. */
  format?: (value: number) => string
  /** Fixed value range, e.g. [0, 100] for percentages (default: from the data, starting at 0). */
  range?: [number, number]
  height?: number
}

const defaultFormat = (v: number) => v.toFixed(1)

function themeColor(el: Element, name: string, fallback: string): string {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback
}

/**
 * A live time chart on uPlot (loaded on first use, not with the shell). New samples redraw the canvas through
 * uPlot's setData: nothing re-renders. The legend shows each series' latest value as text, and `data-points` on
 * the chart (role img, named by `label`) says how many samples it holds.
 */
export function TimeChart({ label, series, data, format = defaultFormat, range, height = 150 }: TimeChartProps) {
  const plotRef = useRef<HTMLDivElement>(null)
  const legendRef = useRef<HTMLSpanElement>(null)
  // Read at draw time, so inline props do not rebuild the chart on every render.
  const props = useRef({ series, format, range })
  props.current = { series, format, range }
  useEffect(() => {
    const host = plotRef.current!
    const { series, format, range } = props.current
    let plot: uPlot | null = null
    let disposed = false
    const updateText = () => {
      host.dataset.points = String(data.length)
      if (legendRef.current) {
        legendRef.current.textContent = series
          .map((s, i) => {
            const v = data.latest(i)
            return `${s.label} ${v === null ? '–' : format(v)}`
          })
          .join(' · ')
      }
    }
    const create = async () => {
      const { default: UPlot } = await import('uplot')
      if (disposed) return
      plot?.destroy()
      const text = themeColor(host, '--text-muted', '#667')
      const grid = themeColor(host, '--border-subtle', '#ddd')
      const axis = {
        stroke: text,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        font: '11px system-ui, sans-serif',
      }
      plot = new UPlot(
        {
          width: Math.max(200, host.clientWidth),
          height,
          legend: { show: false },
          cursor: { drag: { x: false, y: false } },
          scales: {
            x: { time: true },
            y: { range: range ? () => range : (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
          },
          axes: [axis, { ...axis, size: 78, values: (_u, values) => values.map((v) => format(v)) }],
          series: [
            {},
            ...series.map((s) => {
              const color = themeColor(host, `--chart-${s.color ?? 1}`, '#4f46e5')
              return {
                label: s.label,
                stroke: color,
                width: 1.75,
                fill: /^#[0-9a-f]{6}$/i.test(color) ? `${color}1f` : undefined,
                points: { show: false },
              }
            }),
          ],
        },
        data.data(),
        host,
      )
    }
    void create()
    updateText()
    const unsubscribe = data.subscribe(() => {
      plot?.setData(data.data())
      updateText()
    })
    const resize = new ResizeObserver(() => plot?.setSize({ width: Math.max(200, host.clientWidth), height }))
    resize.observe(host)
    const scheme = matchMedia('(prefers-color-scheme: dark)')
    const recolor = () => void create()
    scheme.addEventListener('change', recolor)
    return () => {
      disposed = true
      unsubscribe()
      resize.disconnect()
      scheme.removeEventListener('change', recolor)
      plot?.destroy()
    }
  }, [data, height])
  return (
    <figure class="chart">
      <figcaption>
        <span class="chart-title">{label}</span>
        <span class="chart-legend" ref={legendRef} />
      </figcaption>
      <div
        class="chart-plot"
        ref={plotRef}
        role="img"
        aria-label={`${label} chart`}
        style={{ minHeight: `${height}px` }}
      />
    </figure>
  )
}
