/**
 * The sandboxed frame an isolated plugin page runs in (served as /ui/frame.html with its own CSP: an opaque
 * origin, no network access). Its context reaches the API only through the shell (postMessage), which lets it
 * call its own plugin's routes and open its own plugin's sockets; streams and uploads are not offered here.
 */
import { render } from 'preact'
import { signal } from '@preact/signals'
import { ApiError, apiOver, type RequestOptions } from './kit/api.ts'
import type { PageContext, SessionUser } from './kit/context.ts'
import { ConfirmHost, confirm } from './kit/dialog.tsx'
import type { HostdElement } from './kit/element.tsx'
import { toast } from './kit/toast.tsx'

const parent = window.parent
const post = (message: Record<string, unknown>) => parent.postMessage({ hostd: 1, ...message }, '*')
const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>()
let nextId = 1

const request = <T,>(method: string, path: string, body?: unknown, _options?: RequestOptions): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const id = nextId++
    pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
    post({ type: 'api', id, method, path, body })
  })

const api = apiOver(request)

// The kit's toasts show in the shell, above the frame.
toast.success = (message) => post({ type: 'toast', tone: 'success', message })
toast.info = (message) => post({ type: 'toast', tone: 'info', message })
toast.error = (error) =>
  post({ type: 'toast', tone: 'error', message: error instanceof Error ? error.message : String(error) })

/**
 * A WebSocket to one of the plugin's own socket paths, opened by the shell on the frame's behalf: the same events and
 * methods a page uses of a WebSocket (open, message, close, error, `on…` handlers, send, close, readyState).
 */
class BridgedSocket extends EventTarget {
  static readonly CONNECTING = 0
  static readonly OPEN = 1
  static readonly CLOSING = 2
  static readonly CLOSED = 3
  readonly url: string
  readyState = 0
  binaryType: 'blob' | 'arraybuffer'
  protocol = ''
  onopen: ((event: Event) => void) | null = null
  onmessage: ((event: MessageEvent) => void) | null = null
  onclose: ((event: CloseEvent) => void) | null = null
  onerror: ((event: Event) => void) | null = null
  readonly #id: number

  constructor(id: number, path: string, binary: boolean) {
    super()
    this.#id = id
    this.url = path
    this.binaryType = binary ? 'arraybuffer' : 'blob'
  }

  send(data: string | ArrayBuffer | Blob | ArrayBufferView): void {
    if (this.readyState !== 1) throw new DOMException('The socket is not open', 'InvalidStateError')
    post({ type: 'socket-send', socket: this.#id, data })
  }

  close(code?: number, reason?: string): void {
    if (this.readyState >= 2) return
    this.readyState = 2
    post({ type: 'socket-close', socket: this.#id, code, reason })
  }

  /** An event the shell relayed from the real socket. */
  relay(m: { event?: string; data?: unknown; code?: number; reason?: string; protocol?: string }): void {
    let event: Event
    if (m.event === 'open') {
      this.readyState = 1
      this.protocol = m.protocol ?? ''
      event = new Event('open')
    } else if (m.event === 'message') event = new MessageEvent('message', { data: m.data })
    else if (m.event === 'close') {
      this.readyState = 3
      sockets.delete(this.#id)
      event = new CloseEvent('close', { code: m.code ?? 1006, reason: m.reason ?? '', wasClean: m.code !== 1006 })
    } else event = new Event('error')
    this.dispatchEvent(event)
    const handler = this[`on${event.type}` as 'onopen'] as ((event: Event) => void) | null
    handler?.call(this, event)
  }
}
const sockets = new Map<number, BridgedSocket>()
let nextSocket = 1

const location = signal({ path: '/', search: '' })
const unavailable = (what: string) => () => {
  throw new Error(`${what} is not available to an isolated page`)
}

/** What the shell sends the frame: the page's context once, then route changes and API answers. */
type RouteLocation = { path: string; search: string }
type Init = { type: 'init'; user: SessionUser; base: string; plugin: PageContext['plugin']; location: RouteLocation }
type ShellMessage =
  | Init
  | { type: 'location'; location?: RouteLocation }
  | { type: 'reconnected' }
  | {
      type: 'socket'
      socket?: number
      event?: string
      data?: unknown
      code?: number
      reason?: string
      protocol?: string
    }
  | {
      type: 'api'
      id?: number
      ok?: boolean
      value?: unknown
      error?: { status: number; code: string; message: string; details?: string }
    }

async function start(init: Init) {
  const { module, element } = JSON.parse(decodeURIComponent(window.location.hash.slice(1))) as {
    module: string
    element: string
  }
  location.value = init.location
  const rank = { viewer: 0, operator: 1, admin: 2 }
  const context: PageContext = {
    user: init.user,
    can: (role) => rank[init.user.role] >= rank[role],
    api,
    sse: unavailable('sse'),
    socket: (path, options = {}) => {
      const id = nextSocket++
      const socket = new BridgedSocket(id, path, options.binary === true)
      sockets.set(id, socket)
      post({ type: 'socket-open', socket: id, path, binary: options.binary === true })
      return socket as unknown as WebSocket
    },
    upload: unavailable('upload'),
    navigate: (to) => post({ type: 'navigate', to }),
    location,
    base: init.base,
    toast,
    confirm,
    signal: new AbortController().signal,
    plugin: init.plugin,
  }
  render(<ConfirmHost />, document.body.appendChild(document.createElement('div')))
  await import(/* @vite-ignore */ module)
  await customElements.whenDefined(element)
  const el = document.createElement(element) as HostdElement
  el.context = context
  document.getElementById('frame')!.append(el)
  new ResizeObserver(() => post({ type: 'height', height: document.documentElement.scrollHeight })).observe(
    document.body,
  )
}

addEventListener('message', (event: MessageEvent) => {
  if (event.source !== parent || event.data?.hostd !== 1) return
  const m = event.data as ShellMessage
  if (m.type === 'init')
    void start(m).catch((err: Error) => {
      document.getElementById('frame')!.textContent = `This page could not be loaded: ${err.message}`
    })
  else if (m.type === 'location' && m.location) location.value = m.location
  else if (m.type === 'reconnected') dispatchEvent(new Event('hostd:reconnected'))
  else if (m.type === 'socket' && m.socket !== undefined) sockets.get(m.socket)?.relay(m)
  else if (m.type === 'api' && m.id !== undefined) {
    const waiting = pending.get(m.id)
    pending.delete(m.id)
    if (m.ok) waiting?.resolve(m.value)
    else
      waiting?.reject(
        new ApiError(
          m.error?.status ?? 0,
          m.error?.code ?? 'HOSTD_UI_BRIDGE_FAILED',
          m.error?.message ?? 'Failed',
          typeof m.error?.details === 'string' ? m.error.details : undefined,
        ),
      )
  }
})
post({ type: 'ready' })
