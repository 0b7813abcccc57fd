import { Button } from '../kit/button.tsx'
import { Dialog } from '../kit/dialog.tsx'
import { Form, TextField } from '../kit/form.tsx'
import { asking } from './reauth.ts'
import { api } from './session.ts'

/** The password asked for again (reauth.ts); the shell renders it once. */
export function ReauthHost() {
  const current = asking.value
  const finish = (ok: boolean) => {
    asking.value = null
    current?.resolve(ok)
  }
  return (
    <Dialog open={current !== null} title="Confirm your password" size="sm" onClose={() => finish(false)}>
      {current && (
        <Form
          submitLabel="Confirm"
          errorFields={{ HOSTD_USERS_WRONG_PASSWORD: 'password' }}
          actions={<Button onClick={() => finish(false)}>Cancel</Button>}
          onSubmit={async (v) => {
            await api.post('/api/auth/reauth', { password: String(v.password) })
            finish(true)
          }}
        >
          <p class="muted">
            This change needs your password, since you signed in a while ago. You will not be asked again for a few
            minutes.
          </p>
          <TextField
            name="password"
            label="Password"
            type="password"
            required
            autoFocus
            autoComplete="current-password"
          />
        </Form>
      )}
    </Dialog>
  )
}
