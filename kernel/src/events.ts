/**
 * The kernel's events for built-in plugins (`tokens.events`, `hostd.events`): plugin state changes, which the plugin
 * registry reports, and audit records, which the audit service reports. Listeners are called after the change, one
 * event at a time, never inside the registry's or the audit's own work: a slow or throwing listener delays nothing and
 * breaks nothing there. Never granted to a third-party plugin (permissions.ts leaves it out).
 */
import type { AuditRecordEvent, KernelEvent, KernelEvents, PluginStateEvent } from '@hostd/sdk'
import type { Logger } from 'pino'

type Listener = (event: KernelEvent) => void
/** A plugin's state as the registry reports it. */
export type PluginStateNow = Omit<PluginStateEvent, 'type' | 'time'>

export class KernelEventHub implements KernelEvents {
  readonly #listeners = new Set<Listener>()
  readonly #plugins = new Map<string, PluginStateEvent>()
  readonly #log: Logger

  constructor(log: Logger) {
    this.#log = log
  }

  on(listener: Listener, signal?: AbortSignal): () => void {
    if (signal?.aborted) return () => undefined
    // Each subscription is its own entry, so the same function subscribed twice is called twice and unsubscribed once.
    const entry: Listener = (event) => listener(event)
    const off = () => {
      this.#listeners.delete(entry)
      signal?.removeEventListener('abort', off)
    }
    this.#listeners.add(entry)
    signal?.addEventListener('abort', off, { once: true })
    return off
  }

  plugins(): PluginStateEvent[] {
    return [...this.#plugins.values()]
  }

  /**
   * The registry's plugins now, by record key (a folder, or `inline:<id>`): each whose state, reason or version changed
   * since the last report is announced, and each no longer there is announced `removed`. The registry calls it after
   * every change, so the comparison is the one place a change is noticed, wherever in the registry it was made.
   */
  reportPlugins(current: ReadonlyMap<string, PluginStateNow>): void {
    const time = new Date().toISOString()
    for (const [key, now] of current) {
      const before = this.#plugins.get(key)
      if (before && before.state === now.state && before.reason === now.reason && before.version === now.version)
        continue
      const event: PluginStateEvent = { type: 'plugin.state', ...now, time }
      this.#plugins.set(key, event)
      this.#emit(event)
    }
    for (const [key, before] of this.#plugins) {
      if (current.has(key)) continue
      this.#plugins.delete(key)
      this.#emit({ ...before, state: 'removed', reason: null, time })
    }
  }

  /** An audit record was written or counted again (the audit service). Only the detail's plain values go out. */
  audit(event: Omit<AuditRecordEvent, 'type' | 'time' | 'detail'>, detail: Record<string, unknown> | null): void {
    if (this.#listeners.size === 0) return
    const plain: AuditRecordEvent['detail'] = {}
    for (const [key, value] of Object.entries(detail ?? {}))
      if (value === null || typeof value === 'number' || typeof value === 'boolean') plain[key] = value
      else if (typeof value === 'string') plain[key] = value.slice(0, 500)
    this.#emit({ type: 'audit', ...event, detail: plain, time: new Date().toISOString() })
  }

  #emit(event: KernelEvent): void {
    if (this.#listeners.size === 0) return
    const listeners = [...this.#listeners]
    queueMicrotask(() => {
      for (const listener of listeners) {
        if (!this.#listeners.has(listener)) continue
        try {
          listener(event)
        } catch (err) {
          this.#log.warn({ err, event: event.type }, 'a kernel event listener threw')
        }
      }
    })
  }
}
