import { statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { ICON_NAMES, roleSatisfies, type Role, type UiCard, type UiManifest, type UiPage } from '@hostd/sdk'

/** What `GET /api/extensions` tells the shell about one plugin's UI, filtered by the caller's role. */
export interface UiInfo {
  /** The ES module URLs are versioned: `/plugins/<id>/<version>/<file>`. */
  pages: (Omit<UiPage, 'role'> & { role: Role })[]
  cards: (Omit<UiCard, 'role' | 'size' | 'order'> & { role: Role; size: 'small' | 'medium' | 'large'; order: number })[]
  isolate: boolean
}

interface UiOwner {
  id: string
  dir: string | null
  builtin: boolean
  definition: { version: string; ui?: UiManifest } | null
}

const TYPESCRIPT = /\.tsx?$/

/**
 * The URL of a module named in the manifest (`ui/cards.tsx` -> `/plugins/metrics/1.0.0/cards.js`). With a revision
 * (development mode), `?rev=<revision>`: a page whose files changed gets a new URL, and the shell imports it again.
 */
export function moduleUrl(id: string, version: string, module: string, revision: string | null = null): string {
  const url = `/plugins/${id}/${version}/${module.slice('ui/'.length).replace(TYPESCRIPT, '.js')}`
  return revision ? `${url}?rev=${encodeURIComponent(revision)}` : url
}

/**
 * The folder a plugin's UI files are served from: a built-in plugin's compiled `ui/` (the build writes it to
 * `<ui dist>/plugins/<folder>`), or a third-party plugin's own `ui/` folder, served as it is.
 */
export function uiRoot(owner: UiOwner, uiDist: string | null): string | null {
  if (owner.builtin) return uiDist ? join(uiDist, 'plugins', owner.dir ? basename(owner.dir) : owner.id) : null
  return owner.dir ? join(owner.dir, 'ui') : null
}

/**
 * Why a plugin's UI cannot be served, or null. Only built-in plugins are compiled: others ship JavaScript, and each
 * module their manifest names must be a file in their folder (else the page would load as active and fail in the
 * browser). A built-in plugin's modules are checked by the UI build, which compiles them.
 */
export function uiProblem(owner: UiOwner): string | null {
  const ui = owner.definition?.ui
  if (!ui || owner.builtin) return null
  const entries = [
    ...(ui.pages ?? []).map((e) => ({ ...e, kind: 'page' })),
    ...(ui.cards ?? []).map((e) => ({ ...e, kind: 'card' })),
  ]
  const ts = entries.find((e) => TYPESCRIPT.test(e.module))
  if (ts)
    return `its UI module ${ts.module} is TypeScript; only built-in plugins are compiled, so ship JavaScript (.js or .mjs)`
  const dir = owner.dir
  const missing = dir ? entries.find((e) => !statSync(join(dir, e.module), { throwIfNoEntry: false })?.isFile()) : null
  return missing
    ? `its UI ${missing.kind} "${missing.title}" names the module ${missing.module}, which is not a file in the plugin's folder`
    : null
}

/**
 * Which plugins have a UI: an active one, and an unavailable or restarting one (a condition or a dependency not met,
 * an isolated plugin's process being restarted), whose pages stay so they can say why and what to do (from
 * `GET /api/extensions`: `state`, `reason`). Disabled and failed plugins have none.
 */
export const showsUi = (state: string): boolean =>
  state === 'active' || state === 'unavailable' || state === 'restarting'

/**
 * An unavailable plugin's overview cards are left out: the overview is no place for a feature that is off. `revision`
 * (development mode only) is added to each module URL.
 */
export function uiInfo(owner: UiOwner, state: string, role: Role, revision: string | null = null): UiInfo | null {
  const def = owner.definition
  if (!def?.ui || !showsUi(state)) return null
  const url = (module: string) => moduleUrl(owner.id, def.version, module, revision)
  const pages = (def.ui.pages ?? [])
    .map((p) => ({ ...p, role: p.role ?? 'viewer', module: url(p.module) }))
    .filter((p) => roleSatisfies(role, p.role))
  const cards = (state === 'active' ? (def.ui.cards ?? []) : [])
    .map((c) => ({
      ...c,
      role: c.role ?? 'viewer',
      size: c.size ?? 'medium',
      order: c.order ?? 100,
      module: url(c.module),
    }))
    .filter((c) => roleSatisfies(role, c.role))
  // A third-party plugin's pages always run isolated, whatever its manifest says: they must not reach the session.
  return { pages, cards, isolate: def.ui.isolate === true || !owner.builtin }
}

const KNOWN_ICONS: ReadonlySet<string> = new Set(ICON_NAMES)

/** Edit distance (insertions, deletions, substitutions) between two short names. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    row = next
  }
  return row[b.length]!
}

/**
 * The kit's icon names nearest to `name`, best first: one that starts the other (`refresh-cw` and `refresh`) or shares
 * its first word, then by edit distance. Up to three.
 */
export function nearestIcons(name: string): string[] {
  const lower = name.toLowerCase()
  const word = lower.split('-')[0]!
  const score = (known: string) =>
    distance(lower, known) -
    (lower.startsWith(known) || known.startsWith(lower) ? 10 : 0) -
    (known.split('-')[0] === word ? 3 : 0)
  return [...ICON_NAMES]
    .map((known) => ({ known, score: score(known) }))
    .sort((a, b) => a.score - b.score || a.known.localeCompare(b.known))
    .slice(0, 3)
    .map((e) => e.known)
}

/** A warning for each page whose icon the kit does not have (it would show a puzzle piece), naming the nearest ones. */
export function iconWarnings(owner: Pick<UiOwner, 'definition'>): string[] {
  return (owner.definition?.ui?.pages ?? [])
    .filter((page) => page.icon !== undefined && !KNOWN_ICONS.has(page.icon))
    .map(
      (page) =>
        `page ${page.path} names the icon "${page.icon}", which the UI kit does not have: it shows a puzzle piece. ` +
        `The nearest are ${nearestIcons(page.icon!).join(', ')} (docs/PLUGINS.md, "Icons", lists them all)`,
    )
}
