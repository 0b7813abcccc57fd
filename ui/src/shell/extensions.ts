import { computed, effect, signal } from '@preact/signals'
import type { Role } from '../kit/context.ts'
import { ApiError } from '../kit/api.ts'
import { startRefreshing, type Refresher } from '../kit/resource.ts'
import { api, refreshSession, session } from './session.ts'

export interface PluginRef {
  id: string
  version: string
  isolate: boolean
}

export interface PluginPage {
  path: string
  title: string
  icon?: string
  role: Role
  module: string
  element: string
  /** A route of the plugin whose `{ count, label }` the header shows (layout.tsx, HeaderBadges). */
  badge?: string
  plugin: PluginRef
}

export interface PluginCard {
  title: string
  module: string
  element: string
  role: Role
  size: 'small' | 'medium' | 'large'
  order: number
  plugin: PluginRef
}

interface Extension {
  id: string
  version: string | null
  state: string
  ui: { pages: Omit<PluginPage, 'plugin'>[]; cards: Omit<PluginCard, 'plugin'>[]; isolate: boolean } | null
  dormantPages?: { path: string; title: string; icon?: string }[]
}

/** A page of a disabled or failed plugin: its navigation entry leads to the plugin's entry on the Plugins page. */
export interface DormantPage {
  path: string
  title: string
  icon?: string
  plugin: string
  state: string
}

/** GET /api/extensions as last read; null until the first answer. */
export const extensions = signal<Extension[] | null>(null)

/** Pages of active plugins the user may see (the server filtered them by role), for the nav and the router. */
export const pluginPages = computed<PluginPage[]>(() =>
  (extensions.value ?? []).flatMap((e) =>
    e.ui && e.version
      ? e.ui.pages.map((p) => ({ ...p, plugin: { id: e.id, version: e.version!, isolate: e.ui!.isolate } }))
      : [],
  ),
)

/** Pages of disabled and failed plugins (the server filtered them by role). */
export const dormantPages = computed<DormantPage[]>(() =>
  (extensions.value ?? []).flatMap((e) => (e.dormantPages ?? []).map((p) => ({ ...p, plugin: e.id, state: e.state }))),
)

/** Where a plugin's entry on the Plugins page is. */
export const pluginEntryPath = (id: string): string => `/plugins#${id}`

/** Overview cards, by order then plugin id. */
export const pluginCards = computed<PluginCard[]>(() =>
  (extensions.value ?? [])
    .flatMap((e) =>
      e.ui && e.version
        ? e.ui.cards.map((c) => ({ ...c, plugin: { id: e.id, version: e.version!, isolate: e.ui!.isolate } }))
        : [],
    )
    .sort((a, b) => a.order - b.order || a.plugin.id.localeCompare(b.plugin.id)),
)

/**
 * Polling, not a stream: a stream per tab would hold one of the browser's six HTTP/1.1 connections to this host
 * (shared by every tab) for good. Every 4 s while the tab is visible, at once when it becomes visible again after
 * that long (the kit's `startRefreshing`); the signal changes only when the answer does.
 */
const POLL_MS = 4000
/**
 * In development mode (HOSTD_DEV=1: a third-party plugin's module URLs carry `?rev=`, the revision of its files) every
 * second, so a page or card whose files an author edits comes back with the change at once: its module URL changes,
 * and the page, keyed by it, mounts again (its sandboxed frame loads anew; the shell itself is not reloaded).
 */
const DEV_POLL_MS = 1000
const devMode = (list: Extension[]) =>
  list.some((e) => [...(e.ui?.pages ?? []), ...(e.ui?.cards ?? [])].some((m) => m.module.includes('?rev=')))
/** A window event the Plugins page sends after a change, so the navigation follows at once. */
export const EXTENSIONS_CHANGED = 'hostd:extensions-changed'
let last = ''

async function refresh(signal: AbortSignal): Promise<void> {
  if (session.value.state !== 'signed-in') return
  try {
    const list = await api.get<Extension[]>('/api/extensions', { signal })
    const text = JSON.stringify(list)
    if (text !== last) {
      last = text
      extensions.value = list
      refresher?.setEvery(devMode(list) ? DEV_POLL_MS : POLL_MS)
    }
  } catch (err) {
    // The admin's policy now requires two-factor of this user: to enrollment.
    if (err instanceof ApiError && err.code === 'HOSTD_AUTH_TWO_FACTOR_ENROLLMENT_REQUIRED')
      return void refreshSession().catch(() => undefined)
    if (signal.aborted) return
    // A 401 ends the session (api). Anything else: show the kernel's pages meanwhile, try again at the next tick.
    extensions.value ??= []
  }
}

/** Ends the polling of the session that started it (sign-out). */
let polling: AbortController | null = null
let refresher: Refresher | null = null
effect(() => {
  const signedIn = session.value.state === 'signed-in'
  if (signedIn && !polling) {
    polling = new AbortController()
    refresher = startRefreshing(refresh, { every: POLL_MS, on: [EXTENSIONS_CHANGED], signal: polling.signal })
  } else if (!signedIn && polling) {
    polling.abort()
    polling = null
    refresher = null
    last = ''
    extensions.value = null
  }
})
