/**
 * Whether the daemon answers. A request that cannot reach it (the shell's or a page's fetch, a page's socket closing
 * abnormally, an event stream failing) marks the connection lost: the shell shows a banner ("Disconnected:
 * reconnecting in N s", Reconnect now) and probes `/health` with backoff (after 1, 2, 3, 5, then every 10 s). Once it
 * answers, the window event `hostd:reconnected` tells every resource (kit/resource.ts) and lazily loaded page to load
 * again, so the page comes back by itself. While connected, a light probe every 20 s (tab visible) notices a daemon
 * that went away under a page that does not refresh.
 */
import { signal } from '@preact/signals'

export type Connection = { state: 'online' } | { state: 'offline'; attempt: number; retryAt: number; probing: boolean }

export const connection = signal<Connection>({ state: 'online' })

/** Sent on the window when the daemon answers again after it was lost. */
export const RECONNECTED = 'hostd:reconnected'
/** Sent on the window by any request that could not reach the daemon (kit/api.ts, the page context's sockets). */
export const UNREACHABLE = 'hostd:unreachable'

const BACKOFF_S = [1, 2, 3, 5, 10]
const PROBE_EVERY_MS = 20_000

let timer: ReturnType<typeof setTimeout> | undefined

async function reachable(): Promise<boolean> {
  try {
    const res = await fetch('/health', { cache: 'no-store', signal: AbortSignal.timeout(5000) })
    return res.ok
  } catch {
    return false
  }
}

function schedule(attempt: number): void {
  clearTimeout(timer)
  const wait = BACKOFF_S[Math.min(attempt, BACKOFF_S.length - 1)]! * 1000
  connection.value = { state: 'offline', attempt, retryAt: Date.now() + wait, probing: false }
  timer = setTimeout(() => void probe(), wait)
}

/** Probes now; back online on an answer, else the next attempt is scheduled. */
async function probe(): Promise<void> {
  const now = connection.value
  if (now.state !== 'offline' || now.probing) return
  clearTimeout(timer)
  connection.value = { ...now, probing: true }
  if (await reachable()) {
    connection.value = { state: 'online' }
    dispatchEvent(new Event(RECONNECTED))
    watch()
  } else schedule(now.attempt + 1)
}

/** The daemon is known not to answer: show the banner and start probing (a no-op while already offline). */
export function lost(): void {
  if (connection.value.state === 'offline') return
  schedule(0)
}

let checking = false

/** A request failed to reach the daemon: probe once, and if that fails too, it is lost. */
function suspect(): void {
  if (connection.value.state === 'offline' || checking) return
  checking = true
  void reachable().then((ok) => {
    checking = false
    if (!ok) lost()
  })
}

/** "Reconnect now". */
export function reconnectNow(): void {
  void probe()
}

/** While online: a probe every 20 s with the tab visible; a failure counts as a loss. */
function watch(): void {
  clearTimeout(timer)
  timer = setTimeout(async () => {
    if (connection.value.state !== 'online') return
    if (document.visibilityState === 'visible' && !(await reachable())) lost()
    else watch()
  }, PROBE_EVERY_MS)
}

let started = false

/** Starts listening (once, by the signed-in shell). */
export function watchConnection(): void {
  if (started) return
  started = true
  addEventListener(UNREACHABLE, suspect)
  addEventListener('offline', lost)
  addEventListener('online', reconnectNow)
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && connection.value.state === 'offline') reconnectNow()
  })
  watch()
}
