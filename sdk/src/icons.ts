/**
 * The icon names a page (`UiPage.icon`) may use: the UI kit's set (ui/src/kit/icons.tsx draws each, and the type
 * check fails there when one is missing or added). Mostly lucide's names, some shortened (`refresh` is lucide's
 * `refresh-cw`, `trash` its `trash-2`, `terminal` its `square-terminal`, `key` its `key-round`, `memory` its
 * `memory-stick`). A name not listed shows a puzzle piece, and the plugin's load warns, naming the nearest ones.
 * @since 1.3.0
 */
export const ICON_NAMES = [
  'activity',
  'arrow-down',
  'arrow-up',
  'ban',
  'box',
  'check',
  'chevron-down',
  'chevron-up',
  'chevrons-up-down',
  'circle-alert',
  'circle-check',
  'clock',
  'cloud',
  'container',
  'copy',
  'cpu',
  'download',
  'external-link',
  'file',
  'file-text',
  'folder',
  'gauge',
  'globe',
  'hand',
  'hard-drive',
  'image',
  'info',
  'key',
  'layout-dashboard',
  'layout-grid',
  'list',
  'lock',
  'log-in',
  'log-out',
  'memory',
  'menu',
  'monitor',
  'network',
  'package',
  'pencil',
  'play',
  'plus',
  'power',
  'puzzle',
  'refresh',
  'rotate-ccw',
  'scroll-text',
  'search',
  'server',
  'settings',
  'shield',
  'sparkles',
  'square',
  'terminal',
  'store',
  'thermometer',
  'trash',
  'triangle-alert',
  'upload',
  'user',
  'users',
  'wifi',
  'x',
  'zap',
] as const

/**
 * One of {@link ICON_NAMES}. `icon: 'server' satisfies IconName` makes the type check catch a name the kit lacks.
 * @since 1.3.0
 */
export type IconName = (typeof ICON_NAMES)[number]
