import {
  Activity,
  ArrowDown,
  ArrowUp,
  Ban,
  Box,
  Check,
  ChevronDown,
  ChevronsUpDown,
  ChevronUp,
  CircleAlert,
  CircleCheck,
  Clock,
  Cloud,
  Container,
  Copy,
  Cpu,
  Download,
  ExternalLink,
  File,
  FileText,
  Folder,
  Gauge,
  Globe,
  Hand,
  HardDrive,
  Image,
  Info,
  KeyRound,
  LayoutDashboard,
  LayoutGrid,
  List,
  Lock,
  LogIn,
  LogOut,
  MemoryStick,
  Menu,
  Monitor,
  Network,
  Package,
  Pencil,
  Play,
  Plus,
  Power,
  Puzzle,
  RefreshCw,
  RotateCcw,
  ScrollText,
  Search,
  Server,
  Settings,
  Shield,
  Sparkles,
  Square,
  SquareTerminal,
  Store,
  Thermometer,
  Trash2,
  TriangleAlert,
  Upload,
  User,
  Users,
  Wifi,
  X,
  Zap,
  type IconNode,
} from 'lucide'
import type { IconName } from '../../../sdk/src/icons.ts'

export type { IconName }

/**
 * The icon names pages and nav entries may use. The names are the sdk's `ICON_NAMES` (sdk/src/icons.ts), the one list:
 * this record must draw exactly those (the type check fails on a missing or an extra one). Unknown names show `puzzle`.
 */
const ICONS: Record<IconName, IconNode> = {
  activity: Activity,
  'arrow-down': ArrowDown,
  'arrow-up': ArrowUp,
  ban: Ban,
  box: Box,
  check: Check,
  'chevron-down': ChevronDown,
  'chevron-up': ChevronUp,
  'chevrons-up-down': ChevronsUpDown,
  'circle-alert': CircleAlert,
  'circle-check': CircleCheck,
  clock: Clock,
  cloud: Cloud,
  container: Container,
  copy: Copy,
  cpu: Cpu,
  download: Download,
  'external-link': ExternalLink,
  file: File,
  'file-text': FileText,
  folder: Folder,
  gauge: Gauge,
  globe: Globe,
  hand: Hand,
  'hard-drive': HardDrive,
  image: Image,
  info: Info,
  key: KeyRound,
  'layout-dashboard': LayoutDashboard,
  'layout-grid': LayoutGrid,
  list: List,
  lock: Lock,
  'log-in': LogIn,
  'log-out': LogOut,
  memory: MemoryStick,
  menu: Menu,
  monitor: Monitor,
  network: Network,
  package: Package,
  pencil: Pencil,
  play: Play,
  plus: Plus,
  power: Power,
  puzzle: Puzzle,
  refresh: RefreshCw,
  'rotate-ccw': RotateCcw,
  'scroll-text': ScrollText,
  search: Search,
  server: Server,
  settings: Settings,
  shield: Shield,
  sparkles: Sparkles,
  square: Square,
  terminal: SquareTerminal,
  store: Store,
  thermometer: Thermometer,
  trash: Trash2,
  'triangle-alert': TriangleAlert,
  upload: Upload,
  user: User,
  users: Users,
  wifi: Wifi,
  x: X,
  zap: Zap,
}

export const iconNames: string[] = Object.keys(ICONS)

export interface IconProps {
  name: string
  size?: number
  /** Give a label only when the icon alone carries meaning; otherwise it is hidden from assistive technology. */
  label?: string
  class?: string
}

/** A 24-unit stroke icon in the current text colour. */
export function Icon({ name, size = 18, label, class: cls }: IconProps) {
  const node = ICONS[name as IconName] ?? ICONS.puzzle
  return (
    <svg
      class={`icon${cls ? ` ${cls}` : ''}`}
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      role={label ? 'img' : undefined}
      aria-label={label}
      aria-hidden={label ? undefined : 'true'}
      focusable={label ? undefined : 'false'}
    >
      {node.map(([tag, attrs]) => {
        const Tag = tag as 'path'
        return <Tag {...(attrs as Record<string, string>)} />
      })}
    </svg>
  )
}

/** The busy glyph (a CSS spinner), sized and placed like an icon: in a busy button, a loading block, a badge. */
export function Spinner({ size = 18 }: { size?: number }) {
  return <span class="spinner" style={{ width: `${size}px`, height: `${size}px` }} aria-hidden="true" />
}
