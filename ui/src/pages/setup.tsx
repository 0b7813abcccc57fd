import { Form, FieldErrors, TextField } from '../kit/form.tsx'
import { completeSetup } from '../shell/session.ts'

const PASSWORD_HINT = 'At least 8 characters; not a common password, and not containing the user name.'

export default function SetupPage() {
  return (
    <>
      <h1 class="welcome-title">Create the first administrator</h1>
      <p class="welcome-text">
        This server has no users yet. The account you create now can manage everything, including the other users.
      </p>
      <Form
        submitLabel="Create administrator"
        errorFields={{ HOSTD_USERS_WEAK_PASSWORD: 'password', HOSTD_USERS_USERNAME_TAKEN: 'username' }}
        onSubmit={async (v) => {
          if (v.password !== v.confirm) throw new FieldErrors({ confirm: 'The two passwords differ' })
          await completeSetup(String(v.username), String(v.password))
        }}
      >
        <TextField
          name="username"
          label="User name"
          required
          maxLength={64}
          pattern="[A-Za-z0-9][A-Za-z0-9._@\-]*"
          autoComplete="username"
          autoFocus
          defaultValue="admin"
          hint="Letters, digits and . _ @ -"
        />
        <TextField
          name="password"
          label="Password"
          type="password"
          required
          minLength={8}
          autoComplete="new-password"
          hint={PASSWORD_HINT}
        />
        <TextField name="confirm" label="Repeat the password" type="password" required autoComplete="new-password" />
      </Form>
    </>
  )
}
