import type { ComponentChildren } from 'preact'
import { errorDetails, errorMessage } from './api.ts'
import { Button } from './button.tsx'
import { formatRelative } from './format.ts'
import { Icon, Spinner } from './icons.tsx'
import type { Resource } from './resource.ts'

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

/** The tool's own words behind a translated error, collapsed under "Details". */
export function ErrorDetails({ details }: { details: string }) {
  return (
    <details class="error-details">
      <summary>Details</summary>
      <pre>{details}</pre>
    </details>
  )
}

/** An error block with the server's message (its details collapsed under "Details") and a retry button. */
export function ErrorState({ error, title = 'This could not be loaded', onRetry }: ErrorStateProps) {
  return (
    <div class="state-block state-error" role="alert">
      <span class="state-icon">
        <Icon name="circle-alert" size={26} />
      </span>
      <p class="state-title">{title}</p>
      <p class="state-text">{errorMessage(error)}</p>
      {errorDetails(error) && <ErrorDetails details={errorDetails(error)!} />}
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

export interface CalloutProps {
  tone?: Extract<Tone, 'warning' | 'danger' | 'neutral'>
  title: ComponentChildren
  /** What happened or what to do, under the title. */
  children?: ComponentChildren
  /** A button (or two) beside the text, e.g. "Check again"; it wraps below on a phone. */
  action?: ComponentChildren
}

/**
 * A page-level message that something is off (a feature unavailable, a session ended): a title, a detail and an
 * action. An alert, so a screen reader says it when it appears.
 */
export function Callout({ tone = 'danger', title, children, action }: CalloutProps) {
  return (
    <div class={`callout tone-${tone}`} role="alert">
      <div class="callout-text">
        <strong>{title}</strong>
        {children && <span>{children}</span>}
      </div>
      {action}
    </div>
  )
}

/**
 * Said above data that a refresh could not replace (the resource is `stale`): what failed, how old the data on screen
 * is, and a button to try again. `Async` shows it by itself.
 */
export function StaleNotice({
  resource,
}: {
  resource: Pick<Resource<unknown>, 'error' | 'loadedAt' | 'loading' | 'reload'>
}) {
  const age = resource.loadedAt === undefined ? '' : ` (loaded ${formatRelative(resource.loadedAt)})`
  return (
    <div class="notice stale-notice">
      <Icon name="triangle-alert" size={16} />
      <p role="status">
        Not up to date{age}: {errorMessage(resource.error)}
      </p>
      <Button size="sm" variant="ghost" icon="refresh" busy={resource.loading} onClick={resource.reload}>
        Try again
      </Button>
    </div>
  )
}

export interface AsyncProps<T> {
  resource: Resource<T>
  /** What is loading, for the loading block. */
  label?: string
  /** The error block's title when nothing could be loaded. */
  errorTitle?: string
  /** Shown instead of children when this returns true (e.g. an empty list). */
  isEmpty?: (data: T) => boolean
  empty?: ComponentChildren
  children: (data: T) => ComponentChildren
}

/** Renders a resource's loading, error, empty or loaded state; over data a refresh failed to replace, a notice. */
export function Async<T>({ resource, label, errorTitle, isEmpty, empty, children }: AsyncProps<T>) {
  if (resource.data === undefined) {
    if (resource.error !== undefined)
      return <ErrorState title={errorTitle} error={resource.error} onRetry={resource.reload} />
    return <Loading label={label} />
  }
  return (
    <>
      {resource.stale && <StaleNotice resource={resource} />}
      {isEmpty?.(resource.data) ? empty : children(resource.data)}
    </>
  )
}
