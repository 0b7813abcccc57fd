/**
 * The desktop page (`/desktop`, admins): the host's own screen in noVNC, through the daemon's bridge
 * (`/api/desktop`) to the one VNC server of HOSTD_DESKTOP_VNC. It asks GET /api/system/desktop first: no VNC server
 * shows the reason and how to turn sharing on (and noVNC is never loaded); otherwise it connects, scaled to the
 * window, with view-only, Ctrl-Alt-Del, the clipboard both ways, a password prompt when the server asks, and the
 * reason when the connection ends (plugins/desktop/README.md's close codes).
 */
import {
  Async,
  Badge,
  Button,
  Callout,
  Card,
  Checkbox,
  Dialog,
  Form,
  Icon,
  PageHeader,
  Spinner,
  TextArea,
  TextField,
  adoptStyles,
  defineElement,
  socketUrl,
  useResource,
  useUniqueId,
  type FormValues,
  type PageContext,
  type Tone,
} from '@hostd/ui'
import { useEffect, useRef, useState } from 'preact/hooks'
import type { DesktopStatus } from '../src/schemas.ts'
import pageCss from './desktop.css' with { type: 'text' }
import { explainEnding, explainWithStatus, type Explanation } from './parts/ending.ts'
import type { Viewer } from './parts/viewer.ts'

adoptStyles('desktop-page', pageCss)

const VIEW_ONLY_KEY = 'hostd.desktop.viewOnly'
const SCALE_KEY = 'hostd.desktop.scale'

const getStatus = (ctx: PageContext, signal?: AbortSignal) =>
  ctx.api.get<DesktopStatus>('/api/system/desktop', { signal })

/** The bridge's URL: the status's connectUrl when it names this page's host (the socket's Origin rule), else ours. */
function bridgeUrl(status: DesktopStatus): string {
  try {
    if (new URL(status.connectUrl).host === location.host) return status.connectUrl
  } catch {
    /* not a URL: use ours */
  }
  return socketUrl(status.websocketPath)
}

function DesktopPage({ ctx }: { ctx: PageContext }) {
  const status = useResource((signal) => getStatus(ctx, signal), [])
  return (
    <Async resource={status} label="Looking for screen sharing…">
      {(s) =>
        s.available ? (
          <RemoteScreen ctx={ctx} status={s} onUnavailable={status.reload} />
        ) : (
          <SharingOff status={s} busy={status.loading} onRetry={status.reload} />
        )
      }
    </Async>
  )
}

/** No VNC server answers: why, and how to turn screen sharing on (the README's recipe). */
function SharingOff({ status, busy, onRetry }: { status: DesktopStatus; busy: boolean; onRetry: () => void }) {
  return (
    <div class="stack">
      <PageHeader title="Desktop" description="The host's own screen in the browser, through hostd." />
      <Callout
        tone="danger"
        title="Screen sharing is off"
        action={
          <Button variant="secondary" icon="refresh" busy={busy} onClick={onRetry}>
            Check again
          </Button>
        }
      >
        {status.reason ?? `No VNC server answers on ${status.target}.`}
      </Callout>
      <Card title="How to turn on screen sharing">
        <div class="prose">
          <p>
            hostd does not start a VNC server: it connects to the one on <code>{status.target}</code> (set by{' '}
            <code>HOSTD_DESKTOP_VNC</code>) and brings its screen here. Keep that server on loopback, so the only way in
            is through hostd's sign-in, roles and audit log.
          </p>
          <h3>An X display (any X11 desktop, or a headless Xvfb)</h3>
          <p>Install x11vnc and run it as the user who owns the display:</p>
          <pre>x11vnc -display :0 -localhost -rfbport 5900 -forever -shared -nopw</pre>
          <ul>
            <li>
              <code>-localhost</code> listens on 127.0.0.1 only; <code>-forever</code> keeps it up after a viewer
              leaves; <code>-shared</code> lets hostd check it while you watch.
            </li>
            <li>
              A display manager's screen may need <code>-auth guess</code>. Start it from the session's autostart or a
              systemd user unit to keep it running.
            </li>
            <li>
              On a host with several local users, give it a password (<code>x11vnc -storepasswd</code>, then{' '}
              <code>-rfbauth ~/.vnc/passwd</code>): this page will ask for it.
            </li>
          </ul>
          <h3>A desktop's own screen sharing</h3>
          <p>
            GNOME Remote Desktop (VNC), KDE's krfb or TigerVNC's <code>x0vncserver -localhost -rfbport 5900</code>:
            point <code>HOSTD_DESKTOP_VNC</code> at its port and restrict it to loopback in its own settings.
          </p>
        </div>
      </Card>
    </div>
  )
}

type Phase =
  | { kind: 'loading' }
  | { kind: 'connecting' }
  | { kind: 'credentials'; types: string[] }
  | { kind: 'connected' }
  | { kind: 'closed'; explanation: Explanation }
  | { kind: 'broken'; message: string }

function badgeOf(phase: Phase): { tone: Tone; text: string } {
  switch (phase.kind) {
    case 'connected':
      return { tone: 'success', text: 'Connected' }
    case 'credentials':
      return { tone: 'warning', text: 'Password needed' }
    case 'closed':
      return { tone: phase.explanation.tone === 'danger' ? 'danger' : 'neutral', text: 'Disconnected' }
    case 'broken':
      return { tone: 'danger', text: 'Failed' }
    default:
      return { tone: 'accent', text: 'Connecting…' }
  }
}

const stored = (key: string, fallback: boolean) => {
  const value = localStorage.getItem(key)
  return value === null ? fallback : value === '1'
}

function RemoteScreen({
  ctx,
  status,
  onUnavailable,
}: {
  ctx: PageContext
  status: DesktopStatus
  onUnavailable: () => void
}) {
  const target = useRef<HTMLDivElement>(null)
  const screen = useRef<HTMLElement>(null)
  const viewer = useRef<Viewer | null>(null)
  const [phase, setPhase] = useState<Phase>({ kind: 'loading' })
  const [name, setName] = useState(status.name)
  const [viewOnly, setViewOnly] = useState(() => stored(VIEW_ONLY_KEY, false))
  const [scale, setScale] = useState(() => stored(SCALE_KEY, true))
  const [clipboardOpen, setClipboardOpen] = useState(false)
  const [clipboard, setClipboard] = useState('')
  const settings = useRef({ viewOnly, scale })
  settings.current = { viewOnly, scale }
  const clipboardId = useUniqueId()
  const hintId = useUniqueId()

  const connect = async () => {
    viewer.current?.disconnect()
    viewer.current = null
    setPhase({ kind: 'connecting' })
    let openViewer: typeof import('./parts/viewer.ts').openViewer
    try {
      ;({ openViewer } = await import('./parts/viewer.ts'))
    } catch (err) {
      setPhase({ kind: 'broken', message: `The remote desktop viewer could not be loaded: ${(err as Error).message}` })
      return
    }
    if (ctx.signal.aborted || !target.current) return
    const v: Viewer = openViewer(target.current, bridgeUrl(status), settings.current, {
      // Not focused on connect: noVNC takes every key, Tab too, so a keyboard user would be caught in the screen.
      onConnect: () => setPhase({ kind: 'connected' }),
      onCredentials: (types) => setPhase({ kind: 'credentials', types }),
      onName: setName,
      onClipboard: setClipboard,
      onEnd: async (end) => {
        if (viewer.current !== v || ctx.signal.aborted) return
        let explanation = explainEnding(end)
        if (explanation === 'check-status') {
          const now = await getStatus(ctx).catch(() => null)
          if (viewer.current !== v || ctx.signal.aborted) return
          explanation = explainWithStatus(end, now)
          if (now && !now.available) onUnavailable() // the page turns to the reason and how to turn sharing on
        }
        setPhase({ kind: 'closed', explanation })
      },
    })
    viewer.current = v
  }

  useEffect(() => {
    void connect()
    return () => {
      const v = viewer.current
      viewer.current = null
      v?.disconnect()
    }
  }, [])

  const toggleViewOnly = (on: boolean) => {
    setViewOnly(on)
    localStorage.setItem(VIEW_ONLY_KEY, on ? '1' : '0')
    viewer.current?.setViewOnly(on)
  }
  const toggleScale = (on: boolean) => {
    setScale(on)
    localStorage.setItem(SCALE_KEY, on ? '1' : '0')
    viewer.current?.setScale(on)
  }
  const sendCredentials = (values: FormValues) => {
    viewer.current?.sendCredentials({
      password: String(values.password ?? ''),
      ...(values.username ? { username: String(values.username) } : {}),
    })
    setPhase({ kind: 'connecting' })
  }
  const sendClipboard = () => {
    viewer.current?.sendClipboard(clipboard)
    ctx.toast.success('Sent to the remote clipboard: paste it on the remote screen')
  }

  const connected = phase.kind === 'connected'
  const busy = phase.kind === 'loading' || phase.kind === 'connecting'
  const badge = badgeOf(phase)
  const ended = phase.kind === 'closed' ? phase.explanation : null
  const size = status.display ? `${status.display.width} × ${status.display.height}` : null
  return (
    <div class="desktop-page">
      <PageHeader
        title="Desktop"
        description={
          <>
            The host's screen
            {name ? (
              <>
                , <strong>{name}</strong>
              </>
            ) : null}
            , from the VNC server on {status.target}, through hostd.
          </>
        }
        actions={
          connected || phase.kind === 'credentials' ? (
            <Button variant="secondary" icon="x" onClick={() => viewer.current?.disconnect()}>
              Disconnect
            </Button>
          ) : (
            <Button
              variant="primary"
              icon="refresh"
              busy={busy}
              disabled={ended !== null && !ended.canReconnect}
              onClick={() => void connect()}
            >
              Reconnect
            </Button>
          )
        }
      />
      <div class="toolbar desktop-toolbar">
        <div class="desktop-status" role="status">
          <Badge tone={badge.tone}>
            {busy ? (
              <>
                <Spinner size={12} /> {badge.text}
              </>
            ) : (
              badge.text
            )}
          </Badge>
          {size && <span class="toolbar-status">{size}</span>}
          {status.authRequired && <span class="toolbar-status">password protected</span>}
        </div>
        <div class="desktop-tools">
          <Checkbox
            name="viewOnly"
            label="View only"
            switch
            checked={viewOnly}
            onChange={(e: Event) => toggleViewOnly((e.currentTarget as HTMLInputElement).checked)}
          />
          <Checkbox
            name="scale"
            label="Scale to window"
            switch
            checked={scale}
            onChange={(e: Event) => toggleScale((e.currentTarget as HTMLInputElement).checked)}
          />
          <Button
            size="sm"
            variant="secondary"
            icon="key"
            disabled={!connected || viewOnly}
            onClick={() => viewer.current?.sendCtrlAltDel()}
          >
            Ctrl-Alt-Del
          </Button>
          <Button
            size="sm"
            variant="secondary"
            icon="copy"
            aria-expanded={clipboardOpen}
            aria-controls={clipboardId}
            onClick={() => setClipboardOpen(!clipboardOpen)}
          >
            Clipboard
          </Button>
          <Button
            size="sm"
            variant="secondary"
            icon="monitor"
            disabled={!connected}
            onClick={() => void screen.current?.requestFullscreen()}
          >
            Full screen
          </Button>
        </div>
      </div>
      {clipboardOpen && (
        <div class="card desktop-clipboard" id={clipboardId}>
          <TextArea
            name="clipboard"
            label="Remote clipboard"
            hint="Text copied on the remote screen shows here. Edit it and send it, then paste on the remote screen."
            rows={3}
            value={clipboard}
            onInput={(e: Event) => setClipboard((e.currentTarget as HTMLTextAreaElement).value)}
          />
          <div class="form-actions">
            <Button size="sm" variant="primary" disabled={!connected || viewOnly} onClick={sendClipboard}>
              Send to the remote clipboard
            </Button>
          </div>
        </div>
      )}
      {ended && (
        <Callout tone={ended.tone} title={ended.title}>
          {ended.detail}
        </Callout>
      )}
      {phase.kind === 'broken' && <Callout tone="danger" title={phase.message} />}
      <section class="desktop-screen" aria-label="Remote screen" aria-describedby={hintId} ref={screen}>
        <p id={hintId} class="sr-only">
          {viewOnly
            ? 'View only: the remote screen takes no input.'
            : 'Click the remote screen to control it with the mouse and keyboard.'}
        </p>
        <div ref={target} style={{ position: 'absolute', inset: 0 }} />
        {busy && (
          <div class="state-block" role="status">
            <Spinner size={22} />
            <p>Connecting to the screen…</p>
          </div>
        )}
        {(ended || phase.kind === 'broken') && (
          <div class="state-block desktop-idle">
            <Icon name="monitor" size={28} />
            <p>Not connected</p>
          </div>
        )}
      </section>
      <Dialog
        open={phase.kind === 'credentials'}
        title="The VNC server asks for a password"
        onClose={() => viewer.current?.disconnect()}
      >
        {phase.kind === 'credentials' && (
          <Form
            onSubmit={sendCredentials}
            submitLabel="Connect"
            actions={
              <Button variant="secondary" onClick={() => viewer.current?.disconnect()}>
                Cancel
              </Button>
            }
          >
            {phase.types.includes('username') && (
              <TextField name="username" label="User name" autoComplete="username" required />
            )}
            <TextField name="password" label="VNC password" type="password" autoComplete="current-password" required />
          </Form>
        )}
      </Dialog>
    </div>
  )
}

defineElement('desktop-page', ({ ctx }) => <DesktopPage ctx={ctx} />)
