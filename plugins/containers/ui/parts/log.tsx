/**
 * A container's log, followed live over `/api/containers/logs`, with what people reach for: a search that shows
 * only the matching lines, the engine's timestamps on or off, and a download of the last 10,000 lines (the REST
 * route, as a file). Lines are kept in memory (at most MAX_LINES) and drawn at most once per frame, so a busy log
 * does not re-render per line.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { Badge, Button, type PageContext } from '@hostd/ui'

const MAX_LINES = 5000
const TAILS = [100, 500, 1000, 5000]
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07/g

/** One message of the logs socket as text (`null` for messages that carry no log). */
function logText(data: string | ArrayBuffer): string | null {
  const text = typeof data === 'string' ? data : new TextDecoder().decode(data)
  try {
    const m = JSON.parse(text) as { type: string; data?: string; reason?: string; ok?: boolean; message?: string }
    if (m.type === 'log') return String(m.data ?? '')
    if (m.type === 'end') return `— ${m.reason ?? 'the log ended'} —\n`
    if (m.type === 'result' && m.ok === false) return `— ${m.message ?? 'the log could not be read'} —\n`
    return null
  } catch {
    return text
  }
}

export function ContainerLog({
  ctx,
  id,
  name,
  restartedAt,
}: {
  ctx: PageContext
  id: string
  name: string
  /** When the container last started: the log is opened again then (it ends when the container stops). */
  restartedAt: string
}) {
  const [tail, setTail] = useState(TAILS[0]!)
  const [timestamps, setTimestamps] = useState(false)
  const [query, setQuery] = useState('')
  const [state, setState] = useState<'connecting' | 'live' | 'ended' | 'failed'>('connecting')
  const [following, setFollowing] = useState(true)
  const [, setVersion] = useState(0)
  const lines = useRef<string[]>([])
  const pre = useRef<HTMLPreElement>(null)
  const follow = useRef(true)
  follow.current = following

  useEffect(() => {
    lines.current = []
    setVersion((v) => v + 1)
    setState('connecting')
    let partial = ''
    let frame = 0
    const draw = () => {
      frame = 0
      setVersion((v) => v + 1)
    }
    const params = new URLSearchParams({ id, tail: String(tail), ...(timestamps ? { timestamps: 'true' } : {}) })
    const ws = ctx.socket(`/api/containers/logs?${params}`, { binary: true })
    ws.binaryType = 'arraybuffer'
    ws.onopen = () => setState('live')
    ws.onmessage = (e: MessageEvent<string | ArrayBuffer>) => {
      const text = logText(e.data)
      if (text === null) return
      const parts = (partial + text.replace(ANSI, '')).split(/\r?\n/)
      partial = parts.pop() ?? ''
      if (parts.length === 0) return
      lines.current.push(...parts)
      if (lines.current.length > MAX_LINES) lines.current.splice(0, lines.current.length - MAX_LINES)
      frame ||= requestAnimationFrame(draw)
    }
    ws.onclose = (e) => {
      if (partial) lines.current.push(partial)
      cancelAnimationFrame(frame)
      draw()
      setState(e.code === 1000 || e.code === 1005 ? 'ended' : 'failed')
    }
    return () => {
      cancelAnimationFrame(frame)
      ws.close()
    }
  }, [id, tail, timestamps, restartedAt])

  const needle = query.trim().toLowerCase()
  const shown = needle ? lines.current.filter((l) => l.toLowerCase().includes(needle)) : lines.current
  useEffect(() => {
    if (follow.current && pre.current) pre.current.scrollTop = pre.current.scrollHeight
  })
  const download = `/api/containers/${encodeURIComponent(id)}/logs?tail=10000${timestamps ? '&timestamps=true' : ''}`
  const tone = state === 'live' ? 'success' : state === 'failed' ? 'danger' : 'neutral'
  return (
    <div class="stack ctr-log">
      <div class="ctr-log-bar">
        <input
          type="search"
          class="input ctr-log-search"
          aria-label={`Search the log of ${name}`}
          placeholder="Show only lines containing…"
          value={query}
          onInput={(e) => setQuery(e.currentTarget.value)}
        />
        <label class="ctr-inline-field">
          <span>Earlier lines</span>
          <select class="input select" value={String(tail)} onChange={(e) => setTail(Number(e.currentTarget.value))}>
            {TAILS.map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <label class="ctr-check ctr-log-toggle">
          <input
            type="checkbox"
            class="checkbox"
            checked={timestamps}
            onChange={(e) => setTimestamps(e.currentTarget.checked)}
          />
          <span>Timestamps</span>
        </label>
        <a class="btn btn-secondary btn-sm" href={download} download={`${name}.log`}>
          Download
        </a>
      </div>
      <div class="log-view">
        <div class="log-toolbar">
          <Badge tone={tone}>
            {state === 'live'
              ? 'Live'
              : state === 'connecting'
                ? 'Connecting…'
                : state === 'ended'
                  ? 'Ended'
                  : 'Disconnected'}
          </Badge>
          <span class="muted" aria-live="polite">
            {needle ? `${shown.length} of ${lines.current.length} lines match` : `${lines.current.length} lines`}
          </span>
          <Button
            size="sm"
            variant="ghost"
            icon={following ? 'square' : 'play'}
            aria-pressed={!following}
            onClick={() => setFollowing(!following)}
          >
            {following ? 'Pause scrolling' : 'Follow'}
          </Button>
        </div>
        <pre
          ref={pre}
          class="log-lines"
          role="log"
          aria-label={`Log of ${name}`}
          // biome-ignore lint/a11y/noNoninteractiveTabindex: it scrolls, so a keyboard must reach it (axe scrollable-region-focusable)
          tabIndex={0}
          style={{ height: '24rem' }}
        >
          {shown.length ? `${shown.join('\n')}\n` : ''}
        </pre>
      </div>
    </div>
  )
}
