/**
 * Loading a page's data and keeping it fresh: `useResource` for components, `startRefreshing` under it for code that
 * is not a component (the shell's navigation). One place decides when to load again, so every page refreshes alike:
 * after `every` ms counted from the end of the previous load (loads never overlap), not while the tab is hidden (at
 * once when it comes back, if a refresh fell due meanwhile), again on named window events, and nothing after the
 * owner is gone (unmount, or the signal given).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'

export interface RefreshOptions {
  /** Milliseconds from the end of one load to the start of the next while the tab is visible; 0 or none: never. */
  every?: number
  /** Window events that load again at once (`hostd:branding-changed`, or a page's own after a change). */
  on?: string[]
}

export interface Refresher {
  /** Loads now; a load in flight is aborted (the newer one wins). */
  reload(): void
  /** Changes the interval; the next load is `every` after the last one ended (none when 0). */
  setEvery(every: number | undefined): void
}

/**
 * Runs `load` now and then as `options` say until `signal` aborts (which aborts a load in flight too). `load` gets a
 * signal of its own, aborted when a newer load replaces it; it reports its own errors (a rejection is ignored here,
 * and refreshing goes on). It also loads at once when the shell reconnects to the daemon (`hostd:reconnected`).
 */
export function startRefreshing(
  load: (signal: AbortSignal) => Promise<unknown>,
  { every, on = [], signal }: RefreshOptions & { signal: AbortSignal },
): Refresher {
  let interval = every
  let inFlight: AbortController | null = null
  let timer: ReturnType<typeof setTimeout> | undefined
  let finishedAt = 0
  const visible = () => document.visibilityState === 'visible'
  const due = () => Boolean(interval) && Date.now() - finishedAt >= interval!

  const arm = () => {
    clearTimeout(timer)
    if (!interval || inFlight || signal.aborted) return
    // A tick while the tab is hidden does nothing: the visibility listener loads when it comes back.
    timer = setTimeout(() => visible() && run(), Math.max(0, finishedAt + interval - Date.now()))
  }
  const run = () => {
    if (signal.aborted) return
    inFlight?.abort()
    clearTimeout(timer)
    const abort = new AbortController()
    inFlight = abort
    const settle = () => {
      if (inFlight !== abort) return
      inFlight = null
      finishedAt = Date.now()
      arm()
    }
    load(abort.signal).then(settle, settle)
  }

  document.addEventListener('visibilitychange', () => visible() && !inFlight && due() && run(), { signal })
  for (const name of on) addEventListener(name, run, { signal })
  // The shell sends this when the daemon answers again after the connection was lost (shell/connection.ts).
  addEventListener('hostd:reconnected', run, { signal })
  signal.addEventListener(
    'abort',
    () => {
      clearTimeout(timer)
      inFlight?.abort()
    },
    { once: true },
  )
  run()
  return {
    reload: run,
    setEvery(next) {
      if (next === interval) return
      interval = next
      arm()
    },
  }
}

export interface ResourceOptions<T> {
  /**
   * Load again this many ms after the last load ended, while the tab is visible. A function of the current data
   * changes the pace with the state (quicker while a job runs, none once it is done).
   */
  every?: number | ((data: T | undefined) => number | undefined)
  /** Window events that load again at once. */
  on?: string[]
}

export interface Resource<T> {
  /** The last good answer: kept while a newer load runs and when it fails. */
  data: T | undefined
  /** The last load's error, cleared by the next good answer. */
  error: unknown
  loading: boolean
  /** The last load failed but an earlier answer is still shown (`Async` says so above it). */
  stale: boolean
  /** When `data` arrived (ms since the epoch). */
  loadedAt: number | undefined
  /** Loads again now (keeps the current data on screen meanwhile). */
  reload(): void
}

interface State<T> {
  data?: T
  error?: unknown
  loading: boolean
  loadedAt?: number
}

/**
 * Loads data for a component and keeps it fresh:
 *
 *   const users = useResource((signal) => ctx.api.get('/api/users', { signal }), [])
 *   const list = useResource((signal) => ctx.api.get('/api/containers', { signal }), [], { every: 5000 })
 *
 * Loads again when `deps` change (the earlier data stays on screen until the new answer), on `reload()`, and as
 * `options` say (see `startRefreshing`). Unmounting aborts the load in flight.
 */
export function useResource<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: unknown[] = [],
  options: ResourceOptions<T> = {},
): Resource<T> {
  const [state, setState] = useState<State<T>>({ loading: true })
  const loader = useRef(load)
  loader.current = load
  const refresher = useRef<Refresher | null>(null)
  const every = typeof options.every === 'function' ? options.every(state.data) : options.every
  const everyNow = useRef(every)
  everyNow.current = every
  const events = (options.on ?? []).join(' ')

  useEffect(() => {
    const lifetime = new AbortController()
    refresher.current = startRefreshing(
      async (signal) => {
        setState((s) => (s.loading ? s : { ...s, loading: true }))
        try {
          const data = await loader.current(signal)
          if (!signal.aborted) setState({ data, loading: false, loadedAt: Date.now() })
        } catch (error: unknown) {
          if (!signal.aborted) setState((s) => ({ ...s, error, loading: false }))
        }
      },
      { every: everyNow.current, on: events ? events.split(' ') : [], signal: lifetime.signal },
    )
    return () => lifetime.abort()
  }, [...deps, events])
  useEffect(() => refresher.current?.setEvery(every), [every])

  const reload = useCallback(() => refresher.current?.reload(), [])
  return {
    data: state.data,
    error: state.error,
    loading: state.loading,
    stale: state.error !== undefined && state.data !== undefined,
    loadedAt: state.loadedAt,
    reload,
  }
}
