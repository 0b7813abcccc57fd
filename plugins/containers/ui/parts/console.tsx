/**
 * A console into a running container (admins): a shell started through the engine's exec API, in xterm.js over
 * `/api/containers/exec`. The host terminal's protocol and flow control: input and output as binary frames, resize
 * frames as the box changes, and when xterm falls behind (a flood) the page asks the server to pause (xterm.js's
 * flow-control guide: a write callback every ~100 KB, pause above 5 pending, resume below 2). It opens on demand
 * (xterm loads then, in its own chunk) and says why it ended.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import { Badge, Button, Callout, Spinner, type PageContext } from '@hostd/ui'
import type { ConsoleView } from './console-xterm.ts'

const SHELLS = ['/bin/sh', '/bin/bash', '/bin/ash']
const ACK_EVERY_BYTES = 100_000
const PENDING_HIGH = 5
const PENDING_LOW = 2
const FIT_DEBOUNCE_MS = 80

type Status =
  | { kind: 'idle' }
  | { kind: 'connecting' }
  | { kind: 'open' }
  | { kind: 'ended'; tone: 'neutral' | 'danger'; text: string }

/** Why a console socket closed, in words. */
function ending(code: number, exit: { code: number | null } | null, error: string | null): Status {
  if (exit) {
    const how = exit.code ? `exited with status ${exit.code}` : 'exited'
    return {
      kind: 'ended',
      tone: 'neutral',
      text: `The shell ${how}.${exit.code === 126 || exit.code === 127 ? ' This image may not have that shell: pick another.' : ''}`,
    }
  }
  if (error) return { kind: 'ended', tone: 'danger', text: error }
  if (code === 1000) return { kind: 'ended', tone: 'neutral', text: 'The console was closed.' }
  if (code === 4401 || code === 4403)
    return { kind: 'ended', tone: 'danger', text: 'Your session ended or no longer allows a console.' }
  return {
    kind: 'ended',
    tone: 'danger',
    text: 'The connection to hostd was lost (or it refused the console: consoles are for admins).',
  }
}

export function ExecConsole({
  ctx,
  id,
  name,
  running,
}: {
  ctx: PageContext
  id: string
  name: string
  running: boolean
}) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<ConsoleView | null>(null)
  const socket = useRef<WebSocket | null>(null)
  const [status, setStatus] = useState<Status>({ kind: 'idle' })
  const [shell, setShell] = useState(SHELLS[0]!)

  const disconnect = () => socket.current?.close(1000, 'closed by the user')

  const connect = async () => {
    setStatus({ kind: 'connecting' })
    let v = view.current
    if (!v) {
      try {
        const { createConsole } = await import('./console-xterm.ts')
        if (ctx.signal.aborted || !host.current) return
        v = createConsole(host.current)
        view.current = v
      } catch (err) {
        setStatus({ kind: 'ended', tone: 'danger', text: `The console could not be loaded: ${(err as Error).message}` })
        return
      }
    } else {
      v.term.write('\r\n\x1b[2m─── new shell ───\x1b[0m\r\n')
    }
    const term = v.term
    v.fit()
    const query = new URLSearchParams({ id, shell, cols: String(term.cols), rows: String(term.rows) })
    const ws = ctx.socket(`/api/containers/exec?${query}`, { binary: true })
    ws.binaryType = 'arraybuffer'
    socket.current = ws
    const encoder = new TextEncoder()
    let sinceAck = 0
    let pending = 0
    let paused = false
    let exit: { code: number | null } | null = null
    let error: string | null = null
    const control = (frame: Record<string, unknown>) =>
      ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify(frame))
    const subs = [
      term.onData((data) => ws.readyState === WebSocket.OPEN && ws.send(encoder.encode(data))),
      term.onBinary(
        (data) => ws.readyState === WebSocket.OPEN && ws.send(Uint8Array.from(data, (ch) => ch.charCodeAt(0) & 0xff)),
      ),
      term.onResize(({ cols, rows }) => control({ type: 'resize', cols, rows })),
    ]
    ws.addEventListener('message', (event: MessageEvent<ArrayBuffer | string>) => {
      if (typeof event.data !== 'string') {
        const bytes = new Uint8Array(event.data)
        sinceAck += bytes.length
        if (sinceAck < ACK_EVERY_BYTES) return term.write(bytes)
        sinceAck = 0
        pending++
        term.write(bytes, () => {
          pending--
          if (paused && pending < PENDING_LOW) {
            paused = false
            control({ type: 'resume' })
          }
        })
        if (!paused && pending > PENDING_HIGH) {
          paused = true
          control({ type: 'pause' })
        }
        return
      }
      try {
        const frame = JSON.parse(event.data) as { type: string; code?: number | null; message?: string }
        if (frame.type === 'ready') {
          setStatus({ kind: 'open' })
          term.focus()
        } else if (frame.type === 'exit') exit = { code: frame.code ?? null }
        else if (frame.type === 'result' || frame.type === 'error') error = frame.message ?? 'The console failed'
      } catch {
        // Not one of ours: ignored.
      }
    })
    ws.addEventListener('close', (event) => {
      for (const s of subs) s.dispose()
      if (socket.current !== ws) return
      socket.current = null
      term.write('\x1b[?25l')
      setStatus(ending(event.code, exit, error))
    })
  }

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const observer = new ResizeObserver(() => {
      clearTimeout(timer)
      timer = setTimeout(() => view.current?.fit(), FIT_DEBOUNCE_MS)
    })
    if (host.current) observer.observe(host.current)
    return () => {
      clearTimeout(timer)
      observer.disconnect()
      socket.current?.close(1000, 'page left')
      view.current?.dispose()
    }
  }, [])

  const open = status.kind === 'open'
  const busy = status.kind === 'connecting'
  return (
    <div class="stack ctr-console">
      <div class="ctr-console-bar">
        <label class="ctr-inline-field">
          <span>Shell</span>
          <select
            class="input select"
            value={shell}
            disabled={open || busy}
            onChange={(e) => setShell(e.currentTarget.value)}
          >
            {SHELLS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {open ? (
          <Button icon="x" onClick={disconnect}>
            Close console
          </Button>
        ) : (
          <Button icon="terminal" variant="primary" busy={busy} disabled={!running} onClick={() => void connect()}>
            {status.kind === 'ended' ? 'Open a new console' : 'Open console'}
          </Button>
        )}
        <span role="status" class="ctr-console-status">
          {busy ? (
            <Badge tone="accent">
              <Spinner size={12} /> Connecting…
            </Badge>
          ) : open ? (
            <Badge tone="success">Connected</Badge>
          ) : null}
        </span>
      </div>
      {!running && status.kind !== 'open' && <p class="muted">{name} is not running: start it to open a console.</p>}
      {status.kind === 'ended' && (
        <Callout tone={status.tone === 'danger' ? 'danger' : 'neutral'} title={status.text} />
      )}
      <section
        class={`ctr-console-screen${status.kind === 'idle' ? ' ctr-console-idle' : ''}`}
        aria-label={`Console of ${name}`}
        ref={host}
      />
    </div>
  )
}
