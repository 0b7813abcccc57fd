import { useEffect } from 'preact/hooks'
import { Button } from '../kit/button.tsx'
import { toast } from '../kit/toast.tsx'
import { pageTitles } from '../kit/layout.tsx'
import { navigate, route, safeNext } from '../shell/router.ts'
import { refreshSession, session, signOut } from '../shell/session.ts'
import { EnrollTwoFactor } from './two-factor.tsx'

/**
 * For a user the admin's policy requires two-factor of, who has none yet: the session can do nothing else, so this
 * is all the dashboard shows until it is done (then on to where they were going).
 */
export default function EnrollPage() {
  const s = session.value
  useEffect(() => {
    document.title = 'Set up two-factor sign-in'
    pageTitles.focusNextHeading()
  }, [])
  if (s.state !== 'enroll') return null
  return (
    <>
      <h1 class="welcome-title">Set up two-factor sign-in</h1>
      <p class="welcome-text">
        Your administrator requires two-factor sign-in for <strong>{s.user.username}</strong>: besides your password,
        signing in will need a code from an app on your phone. It takes a minute.
      </p>
      <EnrollTwoFactor
        username={s.user.username}
        onDone={() => {
          const next = safeNext(route.value.search)
          void refreshSession().then(
            () => {
              toast.success('Two-factor sign-in is on')
              navigate(next, { replace: true })
            },
            (err) => toast.error(err),
          )
        }}
      />
      <Button variant="ghost" icon="log-out" onClick={() => void signOut()}>
        Sign out instead
      </Button>
    </>
  )
}
