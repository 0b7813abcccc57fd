import { Icon } from '../kit/icons.tsx'
import { Form, TextField } from '../kit/form.tsx'
import { useEffect } from 'preact/hooks'
import { branding, signIn } from '../shell/session.ts'

export default function SignInPage({ expired }: { expired: boolean }) {
  const name = branding.value.serverName
  useEffect(() => {
    document.title = `Sign in · ${name}`
  }, [name])
  return (
    <>
      <h1 class="welcome-title">Sign in</h1>
      {expired && (
        <p class="notice" role="status">
          <Icon name="clock" /> Your session ended. Sign in again to continue where you were.
        </p>
      )}
      <Form submitLabel="Sign in" onSubmit={(v) => signIn(String(v.username), String(v.password))}>
        <TextField name="username" label="User name" required autoComplete="username" autoFocus autoCapitalize="none" spellcheck={false} />
        <TextField name="password" label="Password" type="password" required autoComplete="current-password" />
      </Form>
    </>
  )
}
