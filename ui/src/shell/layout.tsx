import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ConfirmHost } from '../kit/dialog.tsx'
import { Icon } from '../kit/icons.tsx'
import { ToastRegion } from '../kit/toast.tsx'
import { ReauthHost } from './reauth-dialog.tsx'
import type { Role, SessionUser } from '../kit/context.ts'
import { dormantPages, pluginEntryPath, pluginPages } from './extensions.ts'
import { ConnectionBanner } from './connection-banner.tsx'
import { watchConnection } from './connection.ts'
import { groupNav } from './nav.ts'
import { route } from './router.ts'
import { api, branding, signOut } from './session.ts'

interface NavItem {
  path: string
  title: string
  icon?: string
  role: Role
  /** A disabled or failed plugin's page: the entry leads to the plugin on the Plugins page, marked with its state. */
  dormant?: string
  /** Its own path (for its place in the groups) when the entry leads elsewhere. */
  page?: string
}

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 }

/** The kernel's own pages; nav.ts puts them and the plugins' pages into groups. */
const KERNEL_TOP: NavItem[] = [{ path: '/', title: 'Overview', icon: 'layout-dashboard', role: 'viewer' }]
const KERNEL_BOTTOM: NavItem[] = [
  { path: '/plugins', title: 'Plugins', icon: 'puzzle', role: 'viewer' },
  { path: '/users', title: 'Users', icon: 'users', role: 'admin' },
  { path: '/audit', title: 'Audit log', icon: 'scroll-text', role: 'admin' },
]

const isCurrent = (path: string, item: string) =>
  item === '/' ? path === '/' : path === item || path.startsWith(`${item}/`)

function UserMenu({ user }: { user: SessionUser }) {
  const [open, setOpen] = useState(false)
  const root = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!open) return
    const outside = (e: Event) => !root.current?.contains(e.target as Node) && setOpen(false)
    const closeOnEscape = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return
      setOpen(false)
      root.current?.querySelector<HTMLElement>('button')?.focus()
    }
    document.addEventListener('pointerdown', outside)
    document.addEventListener('keydown', closeOnEscape)
    return () => {
      document.removeEventListener('pointerdown', outside)
      document.removeEventListener('keydown', closeOnEscape)
    }
  }, [open])
  return (
    <div class="user-menu" ref={root}>
      <button
        type="button"
        class="user-button"
        aria-expanded={open}
        aria-controls="user-menu-panel"
        onClick={() => setOpen(!open)}
      >
        <span class="avatar" aria-hidden="true">
          {user.username.slice(0, 1).toUpperCase()}
        </span>
        <span class="user-name">{user.username}</span>
        <span class="sr-only">, account menu</span>
        <Icon name="chevron-down" size={16} />
      </button>
      {open && (
        <div class="user-panel" id="user-menu-panel">
          <p class="user-panel-who">
            Signed in as <strong>{user.username}</strong>
            <span class="role-tag">{user.role}</span>
          </p>
          <a href="/account" class="menu-item" onClick={() => setOpen(false)}>
            <Icon name="user" /> Your account
          </a>
          <a href="/account/two-factor" class="menu-item" onClick={() => setOpen(false)}>
            <Icon name="shield" /> Two-factor sign-in
          </a>
          <a href="/account/sessions" class="menu-item" onClick={() => setOpen(false)}>
            <Icon name="monitor" /> Sessions
          </a>
          <button type="button" class="menu-item" onClick={() => void signOut()}>
            <Icon name="log-out" /> Sign out
          </button>
        </div>
      )}
    </div>
  )
}

const BADGE_EVERY_MS = 30_000
/** A page that changed what its badge counts sends this window event: the header reads the badges again at once. */
const BADGES_CHANGED = 'hostd:badges-changed'

/**
 * Counts plugins ask the header to show (a page's `badge`: a route of the plugin answering `{ count, label }`), each a
 * link to its page while above 0: read when a page opens, every 30 s and on the window event `hostd:badges-changed`. A badge outside the plugin's own API is
 * ignored; one that fails to answer shows nothing.
 */
function HeaderBadges({ path }: { path: string }) {
  const pages = pluginPages.value.filter(
    (p) => p.badge && (p.badge === `/api/${p.plugin.id}` || p.badge.startsWith(`/api/${p.plugin.id}/`)),
  )
  const [counts, setCounts] = useState<Record<string, { count: number; label: string }>>({})
  const key = pages.map((p) => p.badge).join(' ')
  useEffect(() => {
    if (!key) return
    const controller = new AbortController()
    const read = () =>
      Promise.all(
        pages.map(async (p) => {
          const answer = await api.get<{ count: number; label: string }>(p.badge!, { signal: controller.signal })
          return [p.badge!, answer] as const
        }),
      ).then(
        (entries) => setCounts(Object.fromEntries(entries)),
        () => undefined,
      )
    void read()
    const timer = setInterval(() => void read(), BADGE_EVERY_MS)
    const now = () => void read()
    window.addEventListener(BADGES_CHANGED, now)
    return () => {
      controller.abort()
      clearInterval(timer)
      window.removeEventListener(BADGES_CHANGED, now)
    }
  }, [key, path])
  const shown = pages.filter((p) => (counts[p.badge!]?.count ?? 0) > 0)
  if (shown.length === 0) return null
  return (
    <div class="header-badges">
      {shown.map((p) => (
        <a key={p.badge} href={p.path} class="header-badge" aria-label={counts[p.badge!]!.label}>
          <Icon name={p.icon ?? 'puzzle'} size={16} />
          <span aria-hidden="true">{counts[p.badge!]!.count}</span>
        </a>
      ))}
    </div>
  )
}

/** The signed-in frame: header with the server name and user menu, the nav, and the page. */
export function Shell({ user, children }: { user: SessionUser; children: ComponentChildren }) {
  const [navOpen, setNavOpen] = useState(false)
  const path = route.value.path
  useEffect(watchConnection, [])
  useEffect(() => setNavOpen(false), [path])
  const allowed = (item: NavItem) => RANK[user.role] >= RANK[item.role]
  const dormant: NavItem[] = dormantPages.value.map((p) => ({
    path: pluginEntryPath(p.plugin),
    page: p.path,
    title: p.title,
    icon: p.icon,
    role: 'viewer',
    dormant: p.state,
  }))
  const items: NavItem[] = [...KERNEL_TOP, ...pluginPages.value, ...dormant, ...KERNEL_BOTTOM].filter(allowed)
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <button
          type="button"
          class="nav-toggle btn btn-ghost btn-icon"
          aria-expanded={navOpen}
          aria-controls="main-nav"
          aria-label="Main menu"
          onClick={() => setNavOpen(!navOpen)}
        >
          <Icon name={navOpen ? 'x' : 'menu'} />
        </button>
        <a href="/" class="brand">
          <span class="brand-mark" aria-hidden="true">
            <Icon name="server" size={16} />
          </span>
          <span class="brand-name">{branding.value.serverName}</span>
        </a>
        <HeaderBadges path={path} />
        <UserMenu user={user} />
      </header>
      <div class="shell-body">
        <nav id="main-nav" class={`sidebar${navOpen ? ' open' : ''}`} aria-label="Main">
          <div class="nav-groups">
            {groupNav(items).map((group) => (
              <div key={group.name} class="nav-group">
                {group.name && (
                  <h2 class="nav-group-title" id={`nav-group-${group.name}`}>
                    {group.name}
                  </h2>
                )}
                <ul aria-labelledby={group.name ? `nav-group-${group.name}` : undefined}>
                  {group.items.map((item) => (
                    <li key={`${item.path} ${item.title}`}>
                      <a
                        href={item.path}
                        class={`nav-link${item.dormant ? ' nav-dormant' : ''}`}
                        aria-current={!item.dormant && isCurrent(path, item.path) ? 'page' : undefined}
                      >
                        <Icon name={item.icon} />
                        <span>{item.title}</span>
                        {item.dormant && <span class="nav-state">{item.dormant === 'failed' ? 'failed' : 'off'}</span>}
                      </a>
                    </li>
                  ))}
                </ul>
              </div>
            ))}
          </div>
        </nav>
        <main id="main" tabIndex={-1}>
          <ConnectionBanner />
          {children}
        </main>
      </div>
      <ToastRegion />
      <ConfirmHost />
      <ReauthHost />
    </div>
  )
}

/** The frame of the signed-out pages (setup, sign-in, two-factor setup): a centred panel with the branding; `wide` for a QR code. */
export function Welcome({ children, wide = false }: { children: ComponentChildren; wide?: boolean }) {
  const b = branding.value
  return (
    <div class="welcome" style={b.background ? { backgroundImage: `url("${encodeURI(b.background)}")` } : undefined}>
      <main class={`welcome-panel${wide ? ' welcome-wide' : ''}`} id="main">
        <div class="welcome-brand">
          <span class="brand-mark" aria-hidden="true">
            <Icon name="server" size={18} />
          </span>
          <span>{b.serverName}</span>
        </div>
        {b.headline && <p class="welcome-headline">{b.headline}</p>}
        {b.description && <p class="welcome-description">{b.description}</p>}
        {children}
      </main>
      <ToastRegion />
    </div>
  )
}
