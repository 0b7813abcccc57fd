import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { useUniqueId } from './ids.ts'
import { Badge } from './feedback.tsx'
import { ProgressBar } from './feedback.tsx'
import { Button } from './button.tsx'
import { Icon } from './icons.tsx'

// Terminal colour and cursor sequences: a log shows text, not escape codes.
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07/g

export interface LogViewProps {
  /** Accessible name of the log ("Log of nginx"). */
  label: string
  /** Opens the socket to follow (`() => ctx.socket('/api/containers/logs?id=x')`); text and binary frames are shown. */
  open: () => WebSocket
  /** Lines kept on screen (oldest dropped first). */
  maxLines?: number
  /** Turns one message into text (default: the frame as text). */
  decode?: (data: string | ArrayBuffer) => string
  height?: string
}

/**
 * A log that follows a WebSocket: lines are appended to the DOM as they come (no re-render per line), escape
 * codes stripped, capped at `maxLines`. It scrolls with new lines while the reader is at the bottom; "Pause"
 * stops that. The connection state shows as a badge.
 */
export function LogView({ label, open, maxLines = 5000, decode, height = '24rem' }: LogViewProps) {
  const pre = useRef<HTMLPreElement>(null)
  const [state, setState] = useState<'connecting' | 'live' | 'ended' | 'failed'>('connecting')
  const [following, setFollowing] = useState(true)
  const follow = useRef(true)
  follow.current = following
  const openRef = useRef(open)
  openRef.current = open
  useEffect(() => {
    const el = pre.current!
    el.textContent = ''
    let partial = ''
    const decoder = new TextDecoder()
    const ws = openRef.current()
    ws.binaryType = 'arraybuffer'
    const append = (text: string) => {
      const lines = (partial + text.replace(ANSI, '')).split(/\r?\n/)
      partial = lines.pop() ?? ''
      if (lines.length === 0) return
      const fragment = document.createDocumentFragment()
      for (const line of lines) fragment.append(`${line}\n`)
      el.append(fragment)
      while (el.childNodes.length > maxLines) el.firstChild!.remove()
      if (follow.current) el.scrollTop = el.scrollHeight
    }
    ws.onopen = () => setState('live')
    ws.onmessage = (e: MessageEvent<string | ArrayBuffer>) =>
      append(
        decode ? `${decode(e.data)}\n` : typeof e.data === 'string' ? e.data : decoder.decode(e.data, { stream: true }),
      )
    ws.onclose = (e) => {
      if (partial) append('\n')
      setState(e.code === 1000 || e.code === 1005 ? 'ended' : 'failed')
    }
    return () => ws.close()
  }, [maxLines, decode])
  const tone = state === 'live' ? 'success' : state === 'failed' ? 'danger' : 'neutral'
  return (
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
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: it scrolls, so a keyboard must reach it (axe scrollable-region-focusable) */}
      <pre ref={pre} class="log-lines" role="log" aria-label={label} tabIndex={0} style={{ height }} />
    </div>
  )
}

export interface ProgressItem {
  id: string
  label: string
  /** A short status word ("Downloading", "Done"). */
  status?: string
  current?: number
  total?: number
  state?: 'running' | 'done' | 'failed'
}

/** Progress of several parts of one job (image layers, files): one bar each, updated as messages arrive. */
export function ProgressList({ label, items }: { label: string; items: ProgressItem[] }) {
  return (
    <ul class="progress-list" aria-label={label}>
      {items.map((item) => (
        <li key={item.id}>
          <ProgressBar
            label={item.label}
            value={item.state === 'done' ? 1 : item.total ? item.current : undefined}
            max={item.state === 'done' ? 1 : item.total}
            detail={item.status}
            tone={item.state === 'failed' ? 'danger' : item.state === 'done' ? 'success' : 'accent'}
          />
        </li>
      ))}
    </ul>
  )
}

export interface CountdownProps {
  /** When it ends (ms since the epoch). */
  until: number
  /** What ends ("Settings revert"). */
  label: string
  onDone?: () => void
}

/** Seconds left until a deadline (a confirm-or-revert window), as a timer. */
export function Countdown({ until, label, onDone }: CountdownProps) {
  const [now, setNow] = useState(Date.now())
  const done = useRef(onDone)
  done.current = onDone
  useEffect(() => {
    const timer = setInterval(() => {
      const t = Date.now()
      setNow(t)
      if (t >= until) {
        clearInterval(timer)
        done.current?.()
      }
    }, 250)
    return () => clearInterval(timer)
  }, [until])
  const left = Math.max(0, Math.ceil((until - now) / 1000))
  const text = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`
  return (
    <span class="countdown" role="timer" aria-label={`${label} in ${left} seconds`}>
      <Icon name="clock" size={16} /> {label} in <strong class="mono">{text}</strong>
    </span>
  )
}

export interface FileDropProps {
  /** What to drop ("Files to upload"); names the button too. */
  label: string
  onFiles: (files: File[]) => void
  multiple?: boolean
  accept?: string
  disabled?: boolean
  children?: ComponentChildren
}

/**
 * A drop zone with a file-picker button (the keyboard way in). Hand the files to `ctx.upload` and show a
 * ProgressBar per file from its onProgress.
 */
export function FileDrop({ label, onFiles, multiple = true, accept, disabled, children }: FileDropProps) {
  const [over, setOver] = useState(false)
  const input = useRef<HTMLInputElement>(null)
  const id = useUniqueId()
  const take = (list: FileList | null | undefined) => {
    const files = list ? Array.from(list) : []
    if (files.length && !disabled) onFiles(multiple ? files : files.slice(0, 1))
  }
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: only a drop target; the file-picker button inside is the keyboard's way in
    <div
      class={`file-drop${over ? ' over' : ''}${disabled ? ' disabled' : ''}`}
      onDragOver={(e) => {
        e.preventDefault()
        setOver(true)
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault()
        setOver(false)
        take(e.dataTransfer?.files)
      }}
    >
      <Icon name="upload" size={24} />
      <p>{children ?? 'Drop files here, or'}</p>
      <input
        ref={input}
        id={id}
        type="file"
        class="sr-only"
        tabIndex={-1}
        multiple={multiple}
        accept={accept}
        disabled={disabled}
        aria-label={label}
        onChange={(e) => {
          take(e.currentTarget.files)
          e.currentTarget.value = ''
        }}
      />
      <Button icon="folder" disabled={disabled} onClick={() => input.current?.click()}>
        Choose files
      </Button>
    </div>
  )
}
