import { useState } from 'preact/hooks'
import { Badge } from '../kit/feedback.tsx'
import { Form, FieldErrors, TextField } from '../kit/form.tsx'
import { Card, KeyValues, PageHeader } from '../kit/layout.tsx'
import { toast } from '../kit/toast.tsx'
import { api, session } from '../shell/session.ts'

export default function AccountPage() {
  const [generation, setGeneration] = useState(0)
  const s = session.value
  if (s.state !== 'signed-in') return null
  return (
    <>
      <PageHeader title="Your account" description="Your sign-in details. Changing your password signs out your other sessions." />
      <div class="stack">
        <Card title="Account">
          <KeyValues items={[['User name', s.user.username], ['Role', <Badge tone="accent">{s.user.role}</Badge>]]} />
        </Card>
        <Card title="Change password">
          <Form
            key={generation}
            submitLabel="Change password"
            errorFields={{ HOSTD_USERS_WRONG_PASSWORD: 'currentPassword', HOSTD_USERS_WEAK_PASSWORD: 'newPassword' }}
            onSubmit={async (v) => {
              if (v.newPassword !== v.confirm) throw new FieldErrors({ confirm: 'The two new passwords differ' })
              await api.post('/api/me/password', { currentPassword: v.currentPassword, newPassword: v.newPassword })
              toast.success('Password changed. Your other sessions were signed out.')
              setGeneration((g) => g + 1)
            }}
          >
            <TextField name="currentPassword" label="Current password" type="password" required autoComplete="current-password" />
            <TextField name="newPassword" label="New password" type="password" required minLength={8} autoComplete="new-password" hint="At least 8 characters; not a common password, and not containing your user name." />
            <TextField name="confirm" label="Repeat the new password" type="password" required autoComplete="new-password" />
          </Form>
        </Card>
      </div>
    </>
  )
}
