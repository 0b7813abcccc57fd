import { useState } from 'preact/hooks'
import { Badge } from '../kit/feedback.tsx'
import { Form, FieldErrors, TextField } from '../kit/form.tsx'
import { Card, KeyValues, PageHeader, Tabs } from '../kit/layout.tsx'
import { toast } from '../kit/toast.tsx'
import { navigate, route } from '../shell/router.ts'
import { api, session } from '../shell/session.ts'
import { TokensCard } from './api-tokens.tsx'
import { SessionsCard } from './sessions.tsx'
import { TwoFactorCard } from './two-factor.tsx'

/** The account page's tabs, each with its own URL (/account, /account/two-factor, ...). */
const TABS = [
  { id: '', label: 'Password' },
  { id: 'two-factor', label: 'Two-factor sign-in' },
  { id: 'tokens', label: 'API tokens' },
  { id: 'sessions', label: 'Sessions' },
]

export default function AccountPage() {
  const s = session.value
  if (s.state !== 'signed-in') return null
  const sub = route.value.path.replace(/^\/account\/?/, '')
  const tab = TABS.some((t) => t.id === sub) ? sub : ''
  return (
    <>
      <PageHeader
        title="Your account"
        description="How you sign in, the tokens your scripts use, and where you are signed in."
      />
      <Tabs
        label="Account settings"
        tabs={TABS}
        selected={tab}
        onSelect={(id) => navigate(id ? `/account/${id}` : '/account')}
      >
        <div class="stack">
          {tab === '' && <PasswordTab username={s.user.username} role={s.user.role} />}
          {tab === 'two-factor' && <TwoFactorCard username={s.user.username} />}
          {tab === 'tokens' && <TokensCard role={s.user.role} />}
          {tab === 'sessions' && <SessionsCard />}
        </div>
      </Tabs>
    </>
  )
}

function PasswordTab({ username, role }: { username: string; role: string }) {
  const [generation, setGeneration] = useState(0)
  return (
    <>
      <Card title="Account">
        <KeyValues
          items={[
            ['User name', username],
            ['Role', <Badge tone="accent">{role}</Badge>],
          ]}
        />
      </Card>
      <Card title="Change password">
        <p class="muted card-intro">Changing your password signs out your other sessions.</p>
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
          <TextField
            name="currentPassword"
            label="Current password"
            type="password"
            required
            autoComplete="current-password"
          />
          <TextField
            name="newPassword"
            label="New password"
            type="password"
            required
            minLength={8}
            autoComplete="new-password"
            hint="At least 8 characters; not a common password, and not containing your user name."
          />
          <TextField
            name="confirm"
            label="Repeat the new password"
            type="password"
            required
            autoComplete="new-password"
          />
        </Form>
      </Card>
    </>
  )
}
