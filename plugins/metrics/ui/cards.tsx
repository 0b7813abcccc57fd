/**
 * The metrics plugin's overview card: live CPU, memory, load, network and disk charts. The 1 h range starts from
 * the history and then follows the 2 s event stream; 24 h and 7 d show the history, refreshed every minute.
 * Each chart holds a TimeSeries ring buffer; a new sample redraws the canvases, nothing re-renders.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import {
  defineElement,
  ErrorState,
  formatBytes,
  formatRate,
  Tabs,
  TimeChart,
  TimeSeries,
  type PageContext,
} from '@hostd/ui'
import type { HistoryPoint, MetricsSnapshot } from '../src/schemas.ts'
// The stream's samples become chart points exactly as the server turns them into history points.
import { historyPoint } from '../src/snapshot.ts'

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
    series: [{ label: 'used', color: 2 }],
    values: (p: Point) => [p.memUsedBytes],
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
  const [error, setError] = useState<unknown>(undefined)
  const [attempt, setAttempt] = useState(0)
  const [status, setStatus] = useState('Loading…')
  const capacity = RANGES.find((r) => r.id === range)!.capacity
  const series = useMemo(() => CHARTS.map((c) => new TimeSeries(capacity, c.series.length)), [range])
  const lastTime = useRef(0)

  useEffect(() => {
    const abort = new AbortController()
    const push = (p: Point) => {
      const t = Date.parse(p.t) / 1000
      if (t <= lastTime.current) return
      lastTime.current = t
      CHARTS.forEach((c, i) => series[i]!.push(t, c.values(p)))
    }
    const load = async () => {
      const history = await ctx.api.get<{ points: Point[] }>(`/api/metrics/history?range=${range}`, {
        signal: abort.signal,
      })
      CHARTS.forEach((c, i) => series[i]!.replace(history.points.map((p) => [Date.parse(p.t) / 1000, ...c.values(p)])))
      lastTime.current = history.points.length ? Date.parse(history.points.at(-1)!.t) / 1000 : 0
      setError(undefined)
    }
    setStatus('Loading…')
    let stream: { close(): void } | null = null
    let refresh: ReturnType<typeof setInterval> | undefined
    load().then(
      () => {
        if (abort.signal.aborted) return
        if (range === '1h') {
          stream = ctx.sse(
            '/api/metrics/stream',
            {
              metrics: (s: MetricsSnapshot) => {
                push(historyPoint(s))
                setStatus(`Live · ${new Date(s.sampledAt).toLocaleTimeString()}`)
              },
            },
            { onError: () => setStatus('Reconnecting…') },
          )
        } else {
          setStatus('History, refreshed every minute')
          refresh = setInterval(() => void load().catch(() => undefined), 60_000)
        }
      },
      (err: unknown) => !abort.signal.aborted && setError(err),
    )
    return () => {
      abort.abort()
      stream?.close()
      clearInterval(refresh)
    }
  }, [series, attempt])

  if (error !== undefined)
    return <ErrorState title="Metrics could not be loaded" error={error} onRetry={() => setAttempt((a) => a + 1)} />
  return (
    <div>
      <div class="toolbar">
        <Tabs label="Time range" tabs={RANGES} selected={range} onSelect={setRange} />
        <span class="toolbar-status">{status}</span>
      </div>
      <div class="chart-grid">
        {CHARTS.map((c, i) => (
          <TimeChart
            key={`${c.key}-${range}`}
            label={c.label}
            series={c.series}
            data={series[i]!}
            format={c.format}
            range={c.range}
          />
        ))}
      </div>
    </div>
  )
}

defineElement('metrics-live', ({ ctx }) => <LiveCharts ctx={ctx} />)
