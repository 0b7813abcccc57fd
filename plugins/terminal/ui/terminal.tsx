/**
 * The terminal page (`/terminal`, admins): a login shell on the host in xterm.js over `/api/terminal`. It fits the
 * terminal to the window and tells the shell every new size, sends input as binary frames, writes output as bytes,
 * holds the server back when xterm falls behind, copies and pastes, and says why a terminal ended (the close codes
 * of plugins/terminal/README.md; for a refusal before the upgrade, which a browser sees only as 1006, it reads the
 * plugin's state and reason from GET /api/extensions). xterm.js loads in a chunk of its own, with this page only.
 */
import {
  Async,
  Badge,
  Button,
  Callout,
  Card,
  Checkbox,
  Spinner,
  PageHeader,
  adoptStyles,
  defineElement,
  useResource,
  type PageContext,
  type Tone,
} from '@hostd/ui'
import { useEffect, useRef, useState } from 'preact/hooks'
import { TerminalConnection } from './parts/connection.ts'
import { explainEnding, explainWithPlugin, type Explanation, type PluginEntry } from './parts/protocol.ts'
import pageCss from './terminal.css' with { type: 'text' }
import type { TerminalView } from './parts/xterm.ts'

adoptStyles('terminal-page', pageCss)
/** Started as soon as the page module loads, while the plugin's state is being read. */
const xterm = import('./parts/xterm.ts')

const SCREEN_READER_KEY = 'hostd.terminal.screenReaderMode'
/** The box settles (window drag, sidebar) before the terminal refits and the shell is told the new size. */
const FIT_DEBOUNCE_MS = 80

type Status =
  | { kind: 'starting' }
  | { kind: 'connecting' }
  | { kind: 'open'; account: string; shell: string }
  | { kind: 'closed'; explanation: Explanation }
  | { kind: 'broken'; message: string }

/**
 * `?host=<member>`: the terminal of another member of this host's fleet, its socket carried by the fleet plugin
 * (`/api/hosts/<member>/api/terminal`); this page's code stays this host's own.
 */
function fleetHost(ctx: PageContext): string | null {
  const host = new URLSearchParams(ctx.location.value.search).get('host')
  return host && /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(host) ? host : null
}
const apiBase = (ctx: PageContext) => {
  const host = fleetHost(ctx)
  return host ? `/api/hosts/${host}` : ''
}
const where = (ctx: PageContext) => (fleetHost(ctx) ? `host ${fleetHost(ctx)}` : 'this host')
const pageTitle = (ctx: PageContext) => (fleetHost(ctx) ? `Terminal on ${fleetHost(ctx)}` : 'Terminal')

async function pluginEntry(ctx: PageContext, signal?: AbortSignal): Promise<PluginEntry | null> {
  const list = await ctx.api.get<(PluginEntry & { id: string })[]>(`${apiBase(ctx)}/api/extensions`, { signal })
  return list.find((e) => e.id === 'terminal') ?? null
}

function TerminalPage({ ctx }: { ctx: PageContext }) {
  const plugin = useResource((signal) => pluginEntry(ctx, signal), [fleetHost(ctx)])
  return (
    <Async resource={plugin} label="Checking the terminal…">
      {(entry) =>
        entry?.state === 'unavailable' ? (
          <Unavailable ctx={ctx} reason={entry.reason} busy={plugin.loading} onRetry={plugin.reload} />
        ) : (
          <Console key={fleetHost(ctx) ?? ''} ctx={ctx} onUnavailable={plugin.reload} />
        )
      }
    </Async>
  )
}

/** The plugin's condition is not met: say why and what an admin sets. */
function Unavailable({
  ctx,
  reason,
  busy,
  onRetry,
}: {
  ctx: PageContext
  reason?: string
  busy: boolean
  onRetry: () => void
}) {
  return (
    <div class="stack">
      <PageHeader title={pageTitle(ctx)} description={`A login shell on ${where(ctx)}, in the browser.`} />
      <Callout
        tone="danger"
        title="The terminal is unavailable"
        action={
          <Button variant="secondary" icon="refresh" busy={busy} onClick={onRetry}>
            Check again
          </Button>
        }
      >
        {reason ?? 'A condition of the terminal plugin is not met.'}
      </Callout>
      <Card title="How to turn it on">
        <div class="prose">
          <p>
            The shell runs as one unix account, named in hostd's environment. On a daemon running as root it must be
            set:
          </p>
          <pre>HOSTD_TERMINAL_USER=alice</pre>
          <ul>
            <li>
              Prefer an ordinary account with sudo rights: sudo then asks for that account's password and logs each
              command.
            </li>
            <li>
              <code>HOSTD_TERMINAL_USER=root</code> gives every admin of hostd a root shell, with no further password.
            </li>
            <li>
              Restart hostd after changing its environment. An account that is missing or has no login shell is picked
              up without a restart: fix it, then check again.
            </li>
          </ul>
        </div>
      </Card>
    </div>
  )
}

function statusBadge(status: Status): { tone: Tone; text: string } {
  switch (status.kind) {
    case 'open':
      return { tone: 'success', text: 'Connected' }
    case 'closed':
      return { tone: status.explanation.tone === 'danger' ? 'danger' : 'neutral', text: 'Closed' }
    case 'broken':
      return { tone: 'danger', text: 'Failed' }
    default:
      return { tone: 'accent', text: 'Connecting…' }
  }
}

function Console({ ctx, onUnavailable }: { ctx: PageContext; onUnavailable: () => void }) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<TerminalView | null>(null)
  const connection = useRef<TerminalConnection | null>(null)
  const [status, setStatus] = useState<Status>({ kind: 'starting' })
  const [size, setSize] = useState<{ cols: number; rows: number } | null>(null)
  const [hasSelection, setHasSelection] = useState(false)
  const [screenReader, setScreenReader] = useState(() => localStorage.getItem(SCREEN_READER_KEY) === '1')
  const statusRef = useRef(status)
  statusRef.current = status

  const connect = () => {
    const v = view.current
    if (!v || ctx.signal.aborted) return
    if (connection.current) v.term.write('\x1b[?25h\r\n\x1b[2m─── new shell ───\x1b[0m\r\n')
    v.fit()
    setStatus({ kind: 'connecting' })
    const socket = ctx.socket(`${apiBase(ctx)}/api/terminal?cols=${v.term.cols}&rows=${v.term.rows}`, { binary: true })
    const c: TerminalConnection = new TerminalConnection(socket, v.term, {
      onReady: (frame) => {
        setStatus({ kind: 'open', account: frame.account, shell: frame.shell })
        // The window may have changed size while the shell started.
        if (frame.cols !== v.term.cols || frame.rows !== v.term.rows) c.resize(v.term.cols, v.term.rows)
        v.term.focus()
      },
      onEnd: async (end) => {
        if (connection.current !== c || ctx.signal.aborted) return
        let explanation = explainEnding(end)
        if (explanation === 'ask-plugin') {
          const entry = await pluginEntry(ctx).catch(() => ({ state: 'active' }) as PluginEntry)
          if (ctx.signal.aborted || connection.current !== c) return
          explanation = explainWithPlugin(end, entry)
          if (entry?.state === 'unavailable') onUnavailable() // the page turns to the reason and how to fix it
        }
        v.term.write('\x1b[?25l') // no cursor blinking in a terminal that takes no input
        setStatus({ kind: 'closed', explanation })
      },
    })
    connection.current = c
  }

  useEffect(() => {
    let observer: ResizeObserver | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    xterm.then(
      ({ createTerminal }) => {
        if (ctx.signal.aborted || !host.current) return
        const v = createTerminal(host.current, { screenReaderMode: screenReader })
        view.current = v
        const { term } = v
        term.onData((data) => {
          const c = connection.current
          if (c?.open) c.input(data)
          else if (data === '\r' && statusRef.current.kind === 'closed' && statusRef.current.explanation.canReconnect)
            connect()
        })
        term.onBinary((data) => connection.current?.input(Uint8Array.from(data, (ch) => ch.charCodeAt(0) & 0xff)))
        term.onResize(({ cols, rows }) => {
          setSize({ cols, rows })
          connection.current?.resize(cols, rows)
        })
        term.onSelectionChange(() => setHasSelection(term.hasSelection()))
        observer = new ResizeObserver(() => {
          clearTimeout(timer)
          timer = setTimeout(() => v.fit(), FIT_DEBOUNCE_MS)
        })
        observer.observe(host.current)
        v.fit()
        setSize({ cols: term.cols, rows: term.rows })
        connect()
      },
      (err: unknown) =>
        setStatus({ kind: 'broken', message: `The terminal could not be loaded: ${(err as Error).message}` }),
    )
    return () => {
      clearTimeout(timer)
      observer?.disconnect()
      connection.current?.close()
      view.current?.dispose()
    }
  }, [])

  const setReader = (on: boolean) => {
    setScreenReader(on)
    localStorage.setItem(SCREEN_READER_KEY, on ? '1' : '0')
    if (view.current) view.current.term.options.screenReaderMode = on
  }
  const copy = async () => {
    try {
      if (await view.current?.copySelection()) ctx.toast.success('Copied the selection')
    } catch {
      ctx.toast.error('The browser did not allow writing to the clipboard: use Ctrl+Shift+C or the context menu.')
    }
  }
  const paste = async () => {
    let text: string
    try {
      text = await navigator.clipboard.readText()
    } catch {
      ctx.toast.error('The browser did not allow reading the clipboard: use Ctrl+Shift+V instead.')
      return
    }
    view.current?.term.paste(text) // bracketed when the shell asks for it; sent whole, in 1 MiB frames
    view.current?.term.focus()
  }

  const open = status.kind === 'open'
  const badge = statusBadge(status)
  const ended = status.kind === 'closed' ? status.explanation : null
  return (
    <div class="terminal-page">
      <PageHeader
        title={pageTitle(ctx)}
        description={
          open ? (
            <>
              A login shell on {where(ctx)} as <strong>{status.account}</strong> ({status.shell}).
            </>
          ) : (
            `A login shell on ${where(ctx)}, in the browser.`
          )
        }
        actions={
          open ? (
            <Button variant="secondary" icon="x" onClick={() => connection.current?.close()}>
              Disconnect
            </Button>
          ) : (
            <Button
              variant="primary"
              icon="refresh"
              disabled={!view.current || status.kind === 'connecting' || (ended !== null && !ended.canReconnect)}
              onClick={connect}
            >
              Reconnect
            </Button>
          )
        }
      />
      <div class="toolbar terminal-toolbar">
        <div class="terminal-status" role="status">
          <Badge tone={badge.tone}>
            {status.kind === 'connecting' || status.kind === 'starting' ? (
              <>
                <Spinner size={12} /> {badge.text}
              </>
            ) : (
              badge.text
            )}
          </Badge>
          {size && (
            <span class="toolbar-status">
              {size.cols} × {size.rows}
            </span>
          )}
          <span class="toolbar-status terminal-keys">Ctrl+Shift+C copies, Ctrl+Shift+V pastes</span>
        </div>
        <div class="terminal-tools">
          <Button size="sm" variant="ghost" icon="copy" disabled={!hasSelection} onClick={copy}>
            Copy
          </Button>
          <Button size="sm" variant="ghost" icon="file-text" disabled={!open} onClick={paste}>
            Paste
          </Button>
          <Checkbox
            name="screenReaderMode"
            label="Screen reader mode"
            switch
            checked={screenReader}
            onChange={(e: Event) => setReader((e.currentTarget as HTMLInputElement).checked)}
          />
        </div>
      </div>
      {ended && (
        <Callout tone={ended.tone} title={ended.title}>
          {ended.detail}
        </Callout>
      )}
      {status.kind === 'broken' && <Callout tone="danger" title={status.message} />}
      <section class="terminal-screen" aria-label="Terminal" ref={host} />
    </div>
  )
}

defineElement('terminal-page', ({ ctx }) => <TerminalPage ctx={ctx} />)
