import type { ComponentChildren } from 'preact'
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { errorMessage } from './api.ts'
import { Button } from './button.tsx'
import { Icon, Spinner } from './icons.tsx'

/** A loading block: announced politely to screen readers. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="state-block" role="status">
      <Spinner size={22} />
      <p>{label}</p>
    </div>
  )
}

export interface EmptyProps {
  title: string
  icon?: string
  children?: ComponentChildren
  /** A call to action (usually a Button). */
  action?: ComponentChildren
}

export function Empty({ title, icon = 'layout-grid', children, action }: EmptyProps) {
  return (
    <div class="state-block state-empty">
      <span class="state-icon">
        <Icon name={icon} size={26} />
      </span>
      <p class="state-title">{title}</p>
      {children && <div class="state-text">{children}</div>}
      {action}
    </div>
  )
}

export interface ErrorStateProps {
  error: unknown
  title?: string
  onRetry?: () => void
}

/** An error block with the server's message and a retry button. */
export function ErrorState({ error, title = 'This could not be loaded', onRetry }: ErrorStateProps) {
  return (
    <div class="state-block state-error" role="alert">
      <span class="state-icon">
        <Icon name="circle-alert" size={26} />
      </span>
      <p class="state-title">{title}</p>
      <p class="state-text">{errorMessage(error)}</p>
      {onRetry && (
        <Button variant="secondary" icon="refresh" onClick={onRetry}>
          Try again
        </Button>
      )}
    </div>
  )
}

export interface ProgressBarProps {
  /** Accessible name: what is progressing. */
  label: string
  value?: number
  max?: number
  /** Text beside the bar (defaults to the percentage). */
  detail?: string
  tone?: 'accent' | 'success' | 'warning' | 'danger'
}

/** A progress bar; without `value` it is indeterminate. */
export function ProgressBar({ label, value, max = 100, detail, tone = 'accent' }: ProgressBarProps) {
  const known = typeof value === 'number' && max > 0
  const pct = known ? Math.max(0, Math.min(100, (value / max) * 100)) : 0
  return (
    <div class="progress">
      <div class="progress-head">
        <span class="progress-label">{label}</span>
        <span class="progress-detail">{detail ?? (known ? `${Math.round(pct)} %` : '')}</span>
      </div>
      <div
        class={`progress-track tone-${tone}${known ? '' : ' indeterminate'}`}
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={known ? max : undefined}
        aria-valuenow={known ? value : undefined}
        aria-valuetext={detail}
      >
        <div class="progress-fill" style={{ width: known ? `${pct}%` : undefined }} />
      </div>
    </div>
  )
}

export type Tone = 'neutral' | 'accent' | 'success' | 'warning' | 'danger'

export function Badge({ tone = 'neutral', children }: { tone?: Tone; children: ComponentChildren }) {
  return <span class={`badge tone-${tone}`}>{children}</span>
}

export interface Resource<T> {
  data: T | undefined
  error: unknown
  loading: boolean
  /** Loads again (keeps the current data on screen meanwhile). */
  reload(): void
}

/**
 * Loads data for a component: `const users = useResource((signal) => ctx.api.get('/api/users', { signal }), [])`.
 * A newer load wins over an older one; unmounting aborts the load.
 */
export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[] = []): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true })
  const [tick, setTick] = useState(0)
  const loader = useRef(load)
  loader.current = load
  useEffect(() => {
    const abort = new AbortController()
    setState((s) => ({ ...s, loading: true }))
    loader.current(abort.signal).then(
      (data) => !abort.signal.aborted && setState({ data, loading: false }),
      (error: unknown) => !abort.signal.aborted && setState((s) => ({ data: s.data, error, loading: false })),
    )
    return () => abort.abort()
  }, [...deps, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { data: state.data, error: state.error, loading: state.loading, reload }
}

export interface AsyncProps<T> {
  resource: Resource<T>
  /** What is loading, for the loading block. */
  label?: string
  /** Shown instead of children when this returns true (e.g. an empty list). */
  isEmpty?: (data: T) => boolean
  empty?: ComponentChildren
  children: (data: T) => ComponentChildren
}

/** Renders a resource's loading, error, empty or loaded state. */
export function Async<T>({ resource, label, isEmpty, empty, children }: AsyncProps<T>) {
  if (resource.data === undefined) {
    if (resource.error !== undefined) return <ErrorState error={resource.error} onRetry={resource.reload} />
    return <Loading label={label} />
  }
  if (isEmpty?.(resource.data)) return <>{empty}</>
  return <>{children(resource.data)}</>
}
