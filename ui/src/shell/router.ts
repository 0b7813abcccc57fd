import { signal } from '@preact/signals'
import { pageTitles } from '../kit/layout.tsx'

/** The current dashboard location. Pages read it through their context; the shell routes on it. */
export const route = signal({ path: location.pathname, search: location.search })

const sync = () => {
  if (route.value.path !== location.pathname || route.value.search !== location.search)
    route.value = { path: location.pathname, search: location.search }
}

export function navigate(to: string, { replace = false }: { replace?: boolean } = {}): void {
  if (`${location.pathname}${location.search}` === to) return
  history[replace ? 'replaceState' : 'pushState'](null, '', to)
  pageTitles.focusNextHeading()
  sync()
}

/** The current path and query, for `?next=` after a sign-in. */
export function here(): string {
  return `${route.value.path}${route.value.search}`
}

/** A `next` target only if it is a path of this dashboard (never another site). */
export function safeNext(search: string): string {
  const next = new URLSearchParams(search).get('next')
  return next?.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/'
}

addEventListener('popstate', () => {
  pageTitles.focusNextHeading()
  sync()
})

// Plain links inside the dashboard (the shell's and every page's) navigate without reloading.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return
  const link = (event.target as Element | null)?.closest?.('a')
  if (!link || link.target || link.hasAttribute('download') || link.origin !== location.origin) return
  // The Plugins page is /plugins; the files of plugins' pages are below it.
  if (/^\/(api|ui)(\/|$)|^\/plugins\//.test(link.pathname)) return
  if (link.hash && link.pathname === location.pathname && link.search === location.search) return // in-page (skip link)
  event.preventDefault()
  navigate(`${link.pathname}${link.search}${link.hash}`)
})
