/**
 * The navigation's groups, order and icons, chosen by the shell: a table of the pages it knows (the kernel's and the
 * built-in plugins', by path), each with its group, place and icon. A page the table does not know (a third-party
 * plugin's) goes into the "Add-ons" group, in name order, with its own icon unless a link above already shows that one
 * (or when the kit lacks it, which would draw the puzzle piece: then the first icon no link uses): no two links
 * share an icon.
 */
import { iconNames, type IconName } from '../kit/icons.tsx'

export interface NavEntry {
  path: string
  title: string
  icon?: string
  /** The page's own path when the link leads elsewhere (a disabled plugin's page leads to the Plugins page). */
  page?: string
}

const known = (e: NavEntry) => KNOWN_PAGES[e.page ?? e.path]

interface Known {
  group: GroupName
  order: number
  icon: IconName
}

const GROUPS = ['', 'Apps', 'Storage', 'System', 'Accounts', 'Settings', 'Add-ons'] as const
export type GroupName = (typeof GROUPS)[number]

/** Known pages by path. Order counts within the group. */
export const KNOWN_PAGES: Record<string, Known> = {
  '/': { group: '', order: 0, icon: 'layout-dashboard' },
  // Every host of a fleet at a glance: beside the overview of this one.
  '/fleet': { group: '', order: 1, icon: 'server' },
  '/catalog': { group: 'Apps', order: 0, icon: 'store' },
  '/containers': { group: 'Apps', order: 1, icon: 'container' },
  '/stacks': { group: 'Apps', order: 2, icon: 'layout-grid' },
  '/skills': { group: 'Apps', order: 3, icon: 'zap' },
  '/storage': { group: 'Storage', order: 0, icon: 'hard-drive' },
  '/backups': { group: 'Storage', order: 1, icon: 'cloud' },
  '/system': { group: 'System', order: 0, icon: 'settings' },
  '/activity': { group: 'System', order: 1, icon: 'activity' },
  '/alerts': { group: 'System', order: 2, icon: 'triangle-alert' },
  '/packages': { group: 'System', order: 3, icon: 'package' },
  '/network': { group: 'System', order: 4, icon: 'network' },
  '/vpn': { group: 'System', order: 5, icon: 'shield' },
  '/terminal': { group: 'System', order: 6, icon: 'terminal' },
  '/desktop': { group: 'System', order: 7, icon: 'monitor' },
  '/users': { group: 'Accounts', order: 0, icon: 'users' },
  '/audit': { group: 'Accounts', order: 1, icon: 'scroll-text' },
  '/plugins': { group: 'Settings', order: 0, icon: 'puzzle' },
  '/branding': { group: 'Settings', order: 1, icon: 'image' },
}

/** Icons a third-party page gets when its own is taken, in this order. */
const SPARE_ICONS: IconName[] = [
  'box',
  'globe',
  'file-text',
  'list',
  'sparkles',
  'gauge',
  'cpu',
  'memory',
  'wifi',
  'server',
]

export interface NavGroup<T extends NavEntry> {
  /** '' for the ungrouped top (Overview). */
  name: GroupName
  items: (T & { icon: string })[]
}

/** The entries in their groups and order, each with the icon it shows. */
export function groupNav<T extends NavEntry>(entries: T[]): NavGroup<T>[] {
  const listed = entries.filter((e) => known(e))
  const others = entries
    .filter((e) => !known(e))
    .sort((a, b) => a.title.localeCompare(b.title, undefined, { sensitivity: 'base' }))
  const used = new Set<string>(Object.values(KNOWN_PAGES).map((k) => k.icon))
  const groups: NavGroup<T>[] = GROUPS.map((name) => ({ name, items: [] }))
  const byName = new Map(groups.map((g) => [g.name, g]))
  for (const e of listed.sort((a, b) => known(a)!.order - known(b)!.order))
    byName.get(known(e)!.group)!.items.push({ ...e, icon: known(e)!.icon })
  for (const e of others) {
    const own = e.icon && (iconNames as readonly string[]).includes(e.icon) ? e.icon : undefined
    let icon = own && !used.has(own) ? own : SPARE_ICONS.find((i) => !used.has(i))
    icon ??= 'puzzle'
    used.add(icon)
    byName.get('Add-ons')!.items.push({ ...e, icon })
  }
  return groups.filter((g) => g.items.length > 0)
}
