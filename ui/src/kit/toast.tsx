import { signal } from '@preact/signals'
import { errorDetails, errorMessage } from './api.ts'
import { ErrorDetails } from './feedback.tsx'
import { Icon } from './icons.tsx'

export interface Toaster {
  success(message: string): void
  info(message: string): void
  /**
   * An error or its message; errors stay longer and are announced assertively. An ApiError's `details` (the tool's
   * own words) are shown collapsed under "Details".
   */
  error(error: unknown): void
}

interface ToastItem {
  id: number
  tone: 'success' | 'info' | 'error'
  message: string
  details?: string
}

const items = signal<ToastItem[]>([])
let nextId = 1

function dismiss(id: number) {
  items.value = items.value.filter((t) => t.id !== id)
}

function show(tone: ToastItem['tone'], message: string, details?: string) {
  const id = nextId++
  items.value = [...items.value.slice(-4), { id, tone, message, details }]
  setTimeout(() => dismiss(id), details ? 20000 : tone === 'error' ? 9000 : 5000)
}

/** The one toaster (the kit is one module shared by every page). */
export const toast: Toaster = {
  success: (message) => show('success', message),
  info: (message) => show('info', message),
  error: (error) => show('error', errorMessage(error), errorDetails(error)),
}

const ICON = { success: 'circle-check', info: 'info', error: 'circle-alert' } as const

/** Where toasts appear; the shell renders it once. Both live regions exist before any toast, so each is announced. */
export function ToastRegion() {
  const list = (tone: 'polite' | 'assertive') =>
    items.value
      .filter((t) => (t.tone === 'error') === (tone === 'assertive'))
      .map((t) => (
        <li key={t.id} class={`toast tone-${t.tone}`}>
          <Icon name={ICON[t.tone]} />
          <div class="toast-message">
            <span>{t.message}</span>
            {t.details && <ErrorDetails details={t.details} />}
          </div>
          <button type="button" class="toast-close" aria-label="Dismiss notification" onClick={() => dismiss(t.id)}>
            <Icon name="x" size={16} />
          </button>
        </li>
      ))
  return (
    <section class="toasts" aria-label="Notifications">
      <ol aria-live="polite">{list('polite')}</ol>
      <ol aria-live="assertive">{list('assertive')}</ol>
    </section>
  )
}
