import { useEffect } from 'preact/hooks'
import { Loading, ErrorState } from '../kit/feedback.tsx'
import { dormantPages, extensions, pluginEntryPath, pluginPages } from './extensions.ts'
import { lazyPage } from './lazy.tsx'
import { PluginElement } from './mount.tsx'
import { Shell, Welcome } from './layout.tsx'
import { here, navigate, route, safeNext } from './router.ts'
import { boot, session } from './session.ts'
import { useState } from 'preact/hooks'
import { NotFound, Forbidden, PluginNotRunning } from '../pages/not-found.tsx'

const Setup = lazyPage(() => import('../pages/setup.tsx'), 'setup')
const SignIn = lazyPage(() => import('../pages/sign-in.tsx'), 'sign-in')
const Overview = lazyPage(() => import('../pages/overview.tsx'), 'the overview')
const Users = lazyPage(() => import('../pages/users.tsx'), 'users')
const Audit = lazyPage(() => import('../pages/audit.tsx'), 'the audit log')
const Account = lazyPage(() => import('../pages/account.tsx'), 'your account')
const UserDetail = lazyPage(() => import('../pages/user-detail.tsx'), 'the user')
const Enroll = lazyPage(() => import('../pages/enroll.tsx'), 'two-factor setup')
const Gallery = lazyPage(() => import('../pages/gallery.tsx'), 'the kit gallery')
const Plugins = lazyPage(() => import('../pages/plugins.tsx'), 'plugins')

/** Where a session the two-factor policy holds is sent: nothing else answers it until it enrolls. */
const ENROLL_PATH = '/account/two-factor'

/** Where the current session state says the browser must be, or null when the current path is fine. */
function redirect(): string | null {
  const s = session.value
  const { path, search } = route.value
  if (s.state === 'setup') return path === '/setup' ? null : '/setup'
  if (s.state === 'signed-out')
    return path === '/sign-in'
      ? null
      : path === '/setup' || path === '/'
        ? '/sign-in'
        : `/sign-in?next=${encodeURIComponent(here())}`
  if (s.state === 'signed-in' && (path === '/sign-in' || path === '/setup')) return safeNext(search)
  if (s.state === 'enroll' && path !== ENROLL_PATH)
    return `${ENROLL_PATH}?next=${encodeURIComponent(path === '/sign-in' ? safeNext(search) : here())}`
  return null
}

export function App() {
  const [bootError, setBootError] = useState<unknown>(undefined)
  useEffect(() => {
    boot().catch(setBootError)
  }, [])
  const target = redirect()
  useEffect(() => {
    if (target) navigate(target, { replace: true })
  }, [target])

  const s = session.value
  if (bootError !== undefined) {
    return (
      <Welcome>
        <ErrorState title="The server did not answer" error={bootError} onRetry={() => location.reload()} />
      </Welcome>
    )
  }
  if (s.state === 'loading' || target) return <Loading label="Loading hostd…" />
  if (s.state === 'setup')
    return (
      <Welcome>
        <Setup />
      </Welcome>
    )
  if (s.state === 'signed-out')
    return (
      <Welcome>
        <SignIn expired={s.expired} />
      </Welcome>
    )
  if (s.state === 'enroll')
    return (
      <Welcome wide>
        <Enroll />
      </Welcome>
    )

  const path = route.value.path
  const admin = s.user.role === 'admin'
  const page = pluginPages.value.find((p) => path === p.path || path.startsWith(`${p.path}/`))
  const dormant = page ? undefined : dormantPages.value.find((p) => path === p.path || path.startsWith(`${p.path}/`))
  const content =
    path === '/' ? (
      <Overview user={s.user} />
    ) : path === '/account' || path.startsWith('/account/') ? (
      <Account />
    ) : path === '/users' ? (
      admin ? (
        <Users user={s.user} />
      ) : (
        <Forbidden requiredRole="admin" />
      )
    ) : path.startsWith('/users/') ? (
      admin ? (
        <UserDetail me={s.user} id={path.slice('/users/'.length)} />
      ) : (
        <Forbidden requiredRole="admin" />
      )
    ) : path === '/audit' ? (
      admin ? (
        <Audit />
      ) : (
        <Forbidden requiredRole="admin" />
      )
    ) : page ? (
      <PluginElement
        key={`${page.module}#${page.element}`}
        module={page.module}
        element={page.element}
        plugin={page.plugin}
        user={s.user}
        base={page.path}
        title={page.title}
      />
    ) : path === '/plugins' ? (
      <Plugins user={s.user} />
    ) : dormant ? (
      <PluginNotRunning title={dormant.title} state={dormant.state} to={pluginEntryPath(dormant.plugin)} />
    ) : path === '/gallery' ? (
      // Not reserved from plugins (a plugin page at /gallery comes first) and not in the navigation: a page for
      // authors of pages, which any signed-in user may open.
      <Gallery />
    ) : extensions.value === null ? (
      <Loading label="Loading…" />
    ) : (
      <NotFound />
    )
  return <Shell user={s.user}>{content}</Shell>
}
