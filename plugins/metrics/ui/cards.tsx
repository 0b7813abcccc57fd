/**
 * The metrics plugin's overview cards. "Memory": used of total and swap, now. "Server load": live CPU, memory,
 * load, network and disk charts, each with a colour key. The 1 h range starts from the history and then follows the
 * 2 s event stream; 24 h and 7 d show the history, refreshed every minute. Each chart holds a TimeSeries ring
 * buffer; a new sample redraws the canvases, nothing re-renders.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import {
  adoptStyles,
  Async,
  defineElement,
  ErrorState,
  errorMessage,
  formatBytes,
  formatRate,
  ProgressBar,
  Tabs,
  TimeChart,
  TimeSeries,
  useResource,
  type PageContext,
} from '@hostd/ui'
import type { HistoryPoint, MetricsSnapshot } from '../src/schemas.ts'
// The stream's samples become chart points exactly as the server turns them into history points.
import { historyPoint } from '../src/snapshot.ts'
import css from './cards.css' with { type: 'text' }

adoptStyles('metrics-cards', css)

type Point = HistoryPoint

const RANGES = [
  { id: '1h', label: '1 hour (live)', capacity: 1800 },
  { id: '24h', label: '24 hours', capacity: 1440 },
  { id: '7d', label: '7 days', capacity: 1008 },
]

const CHARTS = [
  {
    key: 'cpu',
    label: 'CPU usage',
    series: [
      { label: 'used', color: 1 },
      { label: 'iowait', color: 3 },
    ],
    values: (p: Point) => [p.cpu, p.iowait],
    format: (v: number) => `${v.toFixed(0)} %`,
    range: [0, 100] as [number, number],
  },
  {
    key: 'memory',
    label: 'Memory used',
    series: [
      { label: 'used', color: 2 },
      { label: 'swap used', color: 4 },
    ],
    values: (p: Point) => [p.memUsedBytes, p.swapUsedBytes],
    format: (v: number) => formatBytes(v),
  },
  {
    key: 'load',
    label: 'Load average (1 min)',
    series: [{ label: 'load', color: 5 }],
    values: (p: Point) => [p.load1],
    format: (v: number) => v.toFixed(2),
  },
  {
    key: 'network',
    label: 'Network',
    series: [
      { label: 'in', color: 2 },
      { label: 'out', color: 4 },
    ],
    values: (p: Point) => [p.netRxBytesPerSec, p.netTxBytesPerSec],
    format: (v: number) => formatRate(v),
  },
  {
    key: 'disk',
    label: 'Disk',
    series: [
      { label: 'read', color: 5 },
      { label: 'write', color: 3 },
    ],
    values: (p: Point) => [p.diskReadBytesPerSec, p.diskWriteBytesPerSec],
    format: (v: number) => formatRate(v),
  },
]

function LiveCharts({ ctx }: { ctx: PageContext }) {
  const [range, setRange] = useState('1h')
  const [live, setLive] = useState('')
  const [memTotal, setMemTotal] = useState(0)
  const capacity = RANGES.find((r) => r.id === range)!.capacity
  const series = useMemo(() => CHARTS.map((c) => new TimeSeries(capacity, c.series.length)), [range])
  const lastTime = useRef(0)

  // The range's history fills the charts; 24 h and 7 d load it again every minute, 1 h follows the stream instead.
  const history = useResource(
    async (signal) => {
      const answer = await ctx.api.get<{ points: Point[] }>(`/api/metrics/history?range=${range}`, { signal })
      CHARTS.forEach((c, i) => series[i]!.replace(answer.points.map((p) => [Date.parse(p.t) / 1000, ...c.values(p)])))
      lastTime.current = answer.points.length ? Date.parse(answer.points.at(-1)!.t) / 1000 : 0
      if (answer.points.length) setMemTotal(answer.points.at(-1)!.memTotalBytes)
      // Which charts it filled: the stream starts only once these are the charts on screen.
      return series
    },
    [series],
    { every: range === '1h' ? undefined : 60_000 },
  )
  const loaded = history.data === series

  useEffect(() => {
    if (!loaded || range !== '1h') return
    setLive('')
    const stream = ctx.sse(
      '/api/metrics/stream',
      {
        metrics: (s: MetricsSnapshot) => {
          const p = historyPoint(s)
          const t = Date.parse(p.t) / 1000
          if (t <= lastTime.current) return
          lastTime.current = t
          CHARTS.forEach((c, i) => series[i]!.push(t, c.values(p)))
          setMemTotal(s.memory.totalBytes) // a fresh daemon has no history to read it from
          setLive(`Live · ${new Date(s.sampledAt).toLocaleTimeString()}`)
        },
      },
      { onError: () => setLive('Reconnecting…') },
    )
    return () => stream.close()
  }, [loaded, series])

  if (!loaded && history.error !== undefined)
    return <ErrorState title="Metrics could not be loaded" error={history.error} onRetry={history.reload} />
  const status = !loaded
    ? 'Loading…'
    : range === '1h'
      ? live || 'Loading…'
      : history.stale
        ? `History of ${new Date(history.loadedAt!).toLocaleTimeString()}: the refresh failed (${errorMessage(history.error)})`
        : 'History, refreshed every minute'
  return (
    <div>
      <div class="toolbar">
        <Tabs label="Time range" tabs={RANGES} selected={range} onSelect={setRange} />
        <span class="toolbar-status">{status}</span>
      </div>
      <div class="chart-grid">
        {CHARTS.map((c, i) => (
          // The memory chart is drawn again once the total is known: its scale runs from 0 to the total.
          <div key={`${c.key}-${range}-${c.key === 'memory' ? memTotal : 0}`} class="metrics-chart">
            <TimeChart
              label={c.label}
              series={c.series}
              data={series[i]!}
              format={c.format}
              range={c.key === 'memory' && memTotal ? [0, memTotal] : c.range}
            />
            <ul class="metrics-key" aria-label={`${c.label}: key`}>
              {c.series.map((s) => (
                <li key={s.label}>
                  <span class="metrics-swatch" style={{ background: `var(--chart-${s.color})` }} aria-hidden="true" />
                  {s.label}
                </li>
              ))}
              {c.key === 'memory' && memTotal > 0 && <li>of {formatBytes(memTotal)} in all</li>}
            </ul>
          </div>
        ))}
      </div>
    </div>
  )
}

const percentOf = (used: number, total: number) => (total > 0 ? Math.round((used / total) * 100) : 0)
const toneOf = (pct: number) => (pct >= 90 ? 'danger' : pct >= 75 ? 'warning' : 'accent')

/** Memory and swap now: used of total, as `free` counts them (buffers and page cache are not "used"). */
function MemoryNow({ ctx }: { ctx: PageContext }) {
  const now = useResource((signal) => ctx.api.get<MetricsSnapshot>('/api/metrics', { signal }), [], { every: 10_000 })
  return (
    <Async resource={now} label="Reading memory…">
      {({ memory: m }) => {
        const memPct = percentOf(m.usedBytes, m.totalBytes)
        const swapPct = percentOf(m.swapUsedBytes, m.swapTotalBytes)
        return (
          <div class="metrics-memory">
            <ProgressBar
              label="RAM"
              value={m.usedBytes}
              max={m.totalBytes}
              tone={toneOf(memPct)}
              detail={`${formatBytes(m.usedBytes)} of ${formatBytes(m.totalBytes)} (${memPct} %)`}
            />
            {m.swapTotalBytes > 0 ? (
              <ProgressBar
                label="Swap"
                value={m.swapUsedBytes}
                max={m.swapTotalBytes}
                tone={toneOf(swapPct)}
                detail={`${formatBytes(m.swapUsedBytes)} of ${formatBytes(m.swapTotalBytes)} (${swapPct} %)`}
              />
            ) : (
              <p class="muted">No swap space.</p>
            )}
            <p class="muted">{formatBytes(m.availableBytes)} available for programs (free memory plus cache).</p>
          </div>
        )
      }}
    </Async>
  )
}

defineElement('metrics-live', ({ ctx }) => <LiveCharts ctx={ctx} />)
defineElement('metrics-memory', ({ ctx }) => <MemoryNow ctx={ctx} />)
