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
