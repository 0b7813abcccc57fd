import { effect } from '@preact/signals'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from '../kit/api.ts'
import type { PageContext, SessionUser } from '../kit/context.ts'
import type { HostdElement } from '../kit/element.tsx'
import { ErrorState, Loading } from '../kit/feedback.tsx'
import { makeContext } from './context.ts'
import { importPage } from './import-retrying.ts'
import type { PluginRef } from './extensions.ts'
import { route } from './router.ts'

export interface PluginElementProps {
  module: string
  element: string
  plugin: PluginRef
  user: SessionUser
  /** The page's path (`/` for a card). */
  base: string
  /** What it is, for messages and the frame's title. */
  title: string
}

/** Which module defined each tag: a tag cannot be defined twice in one document. */
const definedBy = new Map<string, string>()

const timeout = (ms: number, message: string) =>
  new Promise<never>((_, reject) => setTimeout(() => reject(new Error(message)), ms))

/**
 * Mounts a plugin's element: imports its module (by its versioned URL), waits for the tag, creates it with its
 * context and appends it; removing it (navigation, upgrade, sign-out) aborts the context's signal. An isolated
 * plugin's element runs in a sandboxed frame instead, talking to the shell through postMessage.
 */
export function PluginElement({ module, element, plugin, user, base, title }: PluginElementProps) {
  const host = useRef<HTMLDivElement>(null)
  const [state, setState] = useState<{ loading: boolean; error?: unknown }>({ loading: true })
  const [attempt, setAttempt] = useState(0)
  useEffect(() => {
    const lifetime = new AbortController()
    const context = makeContext({
      user,
      base,
      plugin: { id: plugin.id, version: plugin.version },
      signal: lifetime.signal,
    })
    setState({ loading: true })
    const mount = async () => {
      if (plugin.isolate) {
        mountFrame(host.current!, { module, element, title, context })
        return
      }
      const owner = definedBy.get(element)
      if (owner && owner !== module) {
        // An upgraded plugin's element: the old class holds the tag, so load the page afresh.
        location.reload()
        return
      }
      await importPage(() => import(/* @vite-ignore */ module))
      await Promise.race([
        customElements.whenDefined(element),
        timeout(10_000, `${module} did not define <${element}>`),
      ])
      definedBy.set(element, module)
      if (lifetime.signal.aborted) return
      const el = document.createElement(element) as HostdElement
      el.context = context
      host.current!.append(el)
    }
    mount().then(
      () => !lifetime.signal.aborted && setState({ loading: false }),
      (error: unknown) => !lifetime.signal.aborted && setState({ loading: false, error }),
    )
    return () => {
      lifetime.abort()
      host.current?.replaceChildren()
    }
  }, [module, element, plugin.isolate, user.id, attempt])
  return (
    <>
      {state.loading && <Loading label={`Loading ${title}…`} />}
      {state.error !== undefined && (
        <ErrorState
          title={`${title} could not be loaded`}
          error={state.error}
          onRetry={() => setAttempt((a) => a + 1)}
        />
      )}
      <div class="plugin-host" ref={host} />
    </>
  )
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

/** The bridge's rule: an isolated page may call only its own plugin's routes. */
export function bridgeAllows(pluginId: string, path: unknown): path is string {
  if (typeof path !== 'string' || /\.\.|%2e|%2f|%5c|\\|[\s#]/i.test(path)) return false
  const own = `/api/${pluginId}`
  return path === own || path.startsWith(`${own}/`) || path.startsWith(`${own}?`)
}

/** How many sockets one frame may have open through the bridge at once. */
const MAX_BRIDGED_SOCKETS = 16

interface FrameMessage {
  hostd?: number
  type?: string
  id?: number
  socket?: number
  binary?: boolean
  data?: unknown
  code?: number
  reason?: unknown
  method?: string
  path?: unknown
  body?: unknown
  tone?: string
  message?: unknown
  to?: unknown
  height?: unknown
}

function mountFrame(
  container: HTMLElement,
  { module, element, title, context }: { module: string; element: string; title: string; context: PageContext },
) {
  const frame = document.createElement('iframe')
  frame.setAttribute('sandbox', 'allow-scripts allow-forms')
  frame.title = title
  frame.className = 'plugin-frame'
  frame.src = `/ui/frame.html#${encodeURIComponent(JSON.stringify({ module, element }))}`
  const send = (message: Record<string, unknown>) => frame.contentWindow?.postMessage({ hostd: 1, ...message }, '*')
  const pluginId = context.plugin!.id
  const sockets = new Map<number, WebSocket>()
  /** Opens a socket for the frame, only on its own plugin's paths, and relays its events to the frame. */
  const openSocket = (id: number, path: unknown, binary: boolean) => {
    const refuse = (reason: string) => send({ type: 'socket', socket: id, event: 'close', code: 4403, reason })
    if (!bridgeAllows(pluginId, path))
      return refuse(`An isolated page may open only its own plugin's sockets (/api/${pluginId}/...)`)
    if (sockets.size >= MAX_BRIDGED_SOCKETS || sockets.has(id)) return refuse('Too many sockets open from this page')
    const ws = context.socket(path, { binary })
    sockets.set(id, ws)
    ws.onopen = () => send({ type: 'socket', socket: id, event: 'open', protocol: ws.protocol })
    ws.onmessage = (e) => send({ type: 'socket', socket: id, event: 'message', data: e.data })
    ws.onerror = () => send({ type: 'socket', socket: id, event: 'error' })
    ws.onclose = (e) => {
      sockets.delete(id)
      send({ type: 'socket', socket: id, event: 'close', code: e.code, reason: e.reason })
    }
  }
  const onMessage = (event: MessageEvent<FrameMessage>) => {
    if (event.source !== frame.contentWindow || event.data?.hostd !== 1) return
    const m = event.data
    switch (m.type) {
      case 'ready':
        send({ type: 'init', user: context.user, base: context.base, plugin: context.plugin, location: route.value })
        break
      case 'api': {
        const method = String(m.method ?? 'GET').toUpperCase()
        if (!METHODS.has(method) || !bridgeAllows(pluginId, m.path)) {
          send({
            type: 'api',
            id: m.id,
            ok: false,
            error: {
              status: 403,
              code: 'HOSTD_UI_BRIDGE_FORBIDDEN',
              message: `An isolated page may call only its own plugin's routes (/api/${pluginId}/...)`,
            },
          })
          break
        }
        context.api.request(method, m.path as string, m.body).then(
          (value) => send({ type: 'api', id: m.id, ok: true, value }),
          (err: unknown) => {
            const e =
              err instanceof ApiError
                ? err
                : new ApiError(0, 'HOSTD_UI_BRIDGE_FAILED', String((err as Error)?.message ?? err))
            const error = { status: e.status, code: e.code, message: e.message, details: e.details }
            send({ type: 'api', id: m.id, ok: false, error })
          },
        )
        break
      }
      case 'socket-open':
        if (typeof m.socket === 'number') openSocket(m.socket, m.path, m.binary === true)
        break
      case 'socket-send': {
        const ws = typeof m.socket === 'number' ? sockets.get(m.socket) : undefined
        const data = m.data
        const sendable =
          typeof data === 'string' || data instanceof ArrayBuffer || data instanceof Blob || ArrayBuffer.isView(data)
        if (ws?.readyState === WebSocket.OPEN && sendable) ws.send(data)
        break
      }
      case 'socket-close': {
        const ws = typeof m.socket === 'number' ? sockets.get(m.socket) : undefined
        const code = typeof m.code === 'number' && m.code >= 3000 && m.code <= 4999 ? m.code : 1000
        try {
          ws?.close(code, typeof m.reason === 'string' ? m.reason.slice(0, 30) : undefined)
        } catch {
          ws?.close(code)
        }
        break
      }
      case 'toast': {
        const tone = m.tone === 'error' ? 'error' : m.tone === 'success' ? 'success' : 'info'
        context.toast[tone](String(m.message ?? '').slice(0, 500))
        break
      }
      case 'navigate':
        if (typeof m.to === 'string' && m.to.startsWith('/') && !m.to.startsWith('//')) context.navigate(m.to)
        break
      case 'height':
        if (typeof m.height === 'number' && Number.isFinite(m.height))
          frame.style.height = `${Math.min(Math.max(m.height, 80), 20000)}px`
        break
    }
  }
  addEventListener('message', onMessage, { signal: context.signal })
  const stop = effect(() => send({ type: 'location', location: route.value }))
  // The daemon answers again after it was gone: the frame's resources load again too (shell/connection.ts).
  addEventListener('hostd:reconnected', () => send({ type: 'reconnected' }), { signal: context.signal })
  context.signal.addEventListener('abort', stop, { once: true })
  container.append(frame)
}
