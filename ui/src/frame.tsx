/**
 * The sandboxed frame an isolated plugin page runs in (served as /ui/frame.html with its own CSP: an opaque
 * origin, no network access). Its context reaches the API only through the shell (postMessage), which lets it
 * call its own plugin's routes; streams, sockets and uploads are not offered here.
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
  | {
      type: 'api'
      id?: number
      ok?: boolean
      value?: unknown
      error?: { status: number; code: string; message: string }
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
    socket: unavailable('socket'),
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
  else if (m.type === 'api' && m.id !== undefined) {
    const waiting = pending.get(m.id)
    pending.delete(m.id)
    if (m.ok) waiting?.resolve(m.value)
    else
      waiting?.reject(
        new ApiError(m.error?.status ?? 0, m.error?.code ?? 'HOSTD_UI_BRIDGE_FAILED', m.error?.message ?? 'Failed'),
      )
  }
})
post({ type: 'ready' })
