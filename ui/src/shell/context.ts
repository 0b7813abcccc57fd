import { computed } from '@preact/signals'
import { createApi, upload, socketUrl, unreachable } from '../kit/api.ts'
import type { PageContext, Role, SessionUser, SseHandlers, SseOptions } from '../kit/context.ts'
import { confirm } from '../kit/dialog.tsx'
import { toast } from '../kit/toast.tsx'
import { navigate, route } from './router.ts'
import { askForPassword } from './reauth.ts'
import { api as shellApi, sessionEnded } from './session.ts'

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 }
const location = computed(() => route.value)

export interface ContextOptions {
  user: SessionUser
  base: string
  plugin: PageContext['plugin']
  /** The element's lifetime: requests, streams and sockets end with it. */
  signal: AbortSignal
}

/** The context the shell hands a page or card element (see kit/context.ts for the contract). */
export function makeContext({ user, base, plugin, signal }: ContextOptions): PageContext {
  const api = createApi({ signal, onUnauthorized: sessionEnded, onReauth: askForPassword })
  return {
    user,
    can: (role) => RANK[user.role] >= RANK[role],
    api,
    sse: <E extends Record<string, unknown>>(path: string, handlers: SseHandlers<E>, options: SseOptions = {}) => {
      let source: EventSource | null = null
      let retry: ReturnType<typeof setTimeout> | undefined
      const open = () => {
        if (signal.aborted) return
        const es = new EventSource(path)
        source = es
        es.onopen = () => options.onOpen?.()
        // The server's JSON goes to each handler unchecked, as the data its event is declared to carry.
        for (const [name, handler] of Object.entries(handlers as SseHandlers)) {
          es.addEventListener(name, (event) => {
            const e = event as MessageEvent<string>
            let data: unknown = e.data
            try {
              data = JSON.parse(e.data)
            } catch {
              /* not JSON: hand over the text */
            }
            handler(data, e)
          })
        }
        es.onerror = () => {
          options.onError?.()
          unreachable() // the shell probes /health: a stream the daemon ended on purpose leaves it online
          if (es.readyState !== EventSource.CLOSED) return // the browser reconnects by itself
          // Refused (a 401 after the session ended, a 503): ask whether we are still signed in, then retry.
          shellApi.get('/api/auth/me').then(
            () => (retry = setTimeout(open, 3000)),
            () => undefined,
          )
        }
      }
      const close = () => {
        clearTimeout(retry)
        source?.close()
      }
      signal.addEventListener('abort', close, { once: true })
      open()
      return { close }
    },
    socket: (path, options = {}) => {
      const ws = new WebSocket(socketUrl(path))
      if (options.binary) ws.binaryType = 'arraybuffer'
      // Closed without a close frame (the daemon went away): the shell probes and shows the banner.
      ws.addEventListener('close', (e) => e.code === 1006 && !signal.aborted && unreachable())
      signal.addEventListener('abort', () => ws.close(1000, 'page closed'), { once: true })
      return ws
    },
    upload: (path, body, options = {}) =>
      upload(
        path,
        body,
        { ...options, signal: options.signal ? AbortSignal.any([signal, options.signal]) : signal },
        sessionEnded,
      ),
    navigate,
    location,
    base,
    toast,
    confirm,
    signal,
    plugin,
  }
}
