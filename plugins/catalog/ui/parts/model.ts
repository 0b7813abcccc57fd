/** The catalog page's data: the API's shapes (types only, from the plugin's schemas) and what the views derive from them. */
import type { CatalogApp, Field, SourceStatus } from '../../src/schemas.ts'

export type { CatalogApp, Field, SourceStatus }
export type Install = CatalogApp['installs'][number]

export interface Catalog {
  apps: CatalogApp[]
  categories: string[]
  sources: SourceStatus[]
  engine: { available: boolean; message: string }
}

/** The page's own path for an app (its source and id name it: the same id may be in several sources). */
export const appPath = (base: string, app: Pick<CatalogApp, 'source' | 'id'>) =>
  `${base}/apps/${encodeURIComponent(app.source)}/${encodeURIComponent(app.id)}`

/** The containers page of an installed container. */
export const containerPath = (containerId: string) => `/containers/${containerId}`

/** Why an app needs an admin, in words, or null when an operator may install it. */
export function adminReason(app: CatalogApp): string | null {
  if (!app.needsAdmin) return null
  const folders = app.fields.filter((f) => f.type === 'path').map((f) => f.label)
  return folders.length
    ? `mounts a folder of this server (${folders.join(', ')})`
    : 'reaches the host (a folder of this server or extra capabilities)'
}

/** Every install of every app, each with its app, for the installed view. */
export function installsOf(apps: CatalogApp[]): { app: CatalogApp; install: Install }[] {
  return apps.flatMap((app) => app.installs.map((install) => ({ app, install })))
}

/** Engine state words to a badge tone. */
export function stateTone(state: string): 'success' | 'warning' | 'danger' | 'neutral' {
  if (state === 'running') return 'success'
  if (state === 'restarting' || state === 'paused' || state === 'created') return 'warning'
  if (state === 'dead') return 'danger'
  return 'neutral'
}

/** A stable hue per app id, for its monogram (the page's CSP loads images from this server only). */
export function hueOf(id: string): number {
  let h = 0
  for (const c of id) h = (h * 31 + c.charCodeAt(0)) % 360
  return h
}

/**
 * A source's name for people: the name its catalog file gives, else the folder's last part or the URL's host (the id,
 * such as `dir-bd884d3d`, is the API's handle, never shown as a name).
 */
export function sourceName(sources: SourceStatus[], id: string): string {
  const s = sources.find((x) => x.id === id)
  if (!s) return id === 'builtin' ? 'Built-in catalog' : 'a removed source'
  if (s.name) return s.name
  if (s.kind === 'builtin') return 'Built-in catalog'
  if (s.kind === 'url') {
    try {
      return new URL(s.location).host
    } catch {
      return s.location
    }
  }
  return s.location.replace(/\/+$/, '').split('/').pop() || s.location
}

/**
 * An install's web address: its published port on the host the browser reached this page by (the address that works
 * from where the user is), or null when the app has no web interface or it is not published (stopped).
 */
export function webUrl(install: Install, hostname = location.hostname): string | null {
  const w = install.web
  if (!w) return null
  return `${w.scheme}://${hostname}:${w.port}${w.path}`
}

/** Whether an install is up (every container of a stack running). */
export const isRunning = (install: Install) => install.state === 'running'
