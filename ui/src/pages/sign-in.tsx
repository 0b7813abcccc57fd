import { useEffect, useState } from 'preact/hooks'
import { ApiError } from '../kit/api.ts'
import { Button } from '../kit/button.tsx'
import { Icon } from '../kit/icons.tsx'
import { Form, TextField } from '../kit/form.tsx'
import { branding, signIn, verifySignIn } from '../shell/session.ts'

/** Sign-in: the password, then, for a user with two-factor, a code of their authenticator app or a recovery code. */
export default function SignInPage({ expired }: { expired: boolean }) {
  const [challenge, setChallenge] = useState<string | null>(null)
  const [restart, setRestart] = useState<string | null>(null)
  const name = branding.value.serverName
  useEffect(() => {
    document.title = `Sign in · ${name}`
  }, [name])
  if (challenge) {
    return (
      <SecondStep
        challenge={challenge}
        onRestart={(why) => {
          setRestart(why)
          setChallenge(null)
        }}
      />
    )
  }
  return (
    <>
      <h1 class="welcome-title">Sign in</h1>
      {expired && !restart && (
        <p class="notice" role="status">
          <Icon name="clock" /> Your session ended. Sign in again to continue where you were.
        </p>
      )}
      {restart && (
        <p class="notice" role="status">
          <Icon name="clock" /> {restart}
        </p>
      )}
      <Form
        submitLabel="Sign in"
        onSubmit={async (v) => {
          setChallenge(await signIn(String(v.username), String(v.password)))
        }}
      >
        <TextField
          name="username"
          label="User name"
          required
          autoComplete="username"
          autoFocus
          autoCapitalize="none"
          spellcheck={false}
        />
        <TextField name="password" label="Password" type="password" required autoComplete="current-password" />
      </Form>
    </>
  )
}

function SecondStep({ challenge, onRestart }: { challenge: string; onRestart: (why: string) => void }) {
  const [recovery, setRecovery] = useState(false)
  return (
    <>
      <h1 class="welcome-title">Two-factor sign-in</h1>
      <p class="welcome-text">
        {recovery
          ? 'Enter one of the recovery codes you saved when you turned on two-factor sign-in. Each code works once.'
          : 'Open your authenticator app and enter the 6-digit code it shows for this server.'}
      </p>
      <Form
        key={recovery ? 'recovery' : 'code'}
        submitLabel="Verify"
        errorFields={{ HOSTD_AUTH_BAD_CODE: 'code' }}
        onSubmit={async (v) => {
          try {
            await verifySignIn(challenge, String(v.code))
          } catch (err) {
            if (err instanceof ApiError && err.code === 'HOSTD_AUTH_CHALLENGE_EXPIRED')
              return onRestart('That sign-in took too long. Enter your password again.')
            throw err
          }
        }}
        actions={
          <Button variant="ghost" onClick={() => onRestart('Sign-in cancelled. Enter your password again.')}>
            Back
          </Button>
        }
      >
        {recovery ? (
          <TextField
            key="recovery"
            name="code"
            label="Recovery code"
            required
            autoFocus
            autoComplete="off"
            autoCapitalize="none"
            spellcheck={false}
            placeholder="xxxxx-xxxxx"
            maxLength={64}
          />
        ) : (
          <TextField
            key="totp"
            name="code"
            label="Authentication code"
            required
            autoFocus
            autoComplete="one-time-code"
            inputMode="numeric"
            pattern="[0-9 ]{6,7}"
            maxLength={7}
            placeholder="123 456"
            hint="Six digits; a new one every 30 seconds."
          />
        )}
      </Form>
      <button type="button" class="link-button" onClick={() => setRecovery(!recovery)}>
        {recovery ? 'Use a code from your authenticator app' : 'Lost your phone? Use a recovery code'}
      </button>
    </>
  )
}
