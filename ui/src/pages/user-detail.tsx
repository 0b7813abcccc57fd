import type { User } from '../../../kernel/src/users/schemas.ts'
import { Button } from '../kit/button.tsx'
import type { SessionUser } from '../kit/context.ts'
import { confirm } from '../kit/dialog.tsx'
import { Async, Badge, Empty, ErrorState, Loading } from '../kit/feedback.tsx'
import { useResource } from '../kit/resource.ts'
import { Card, KeyValues, PageHeader } from '../kit/layout.tsx'
import { toast } from '../kit/toast.tsx'
import { api } from '../shell/session.ts'
import { revokeToken, TokenTable, type ApiToken } from './api-tokens.tsx'
import { SessionTable, type SessionInfo } from './sessions.tsx'

/** An admin's view of one user (`/users/<id>`): two-factor and its reset, their sessions, their API tokens. */
export default function UserDetailPage({ id, me }: { id: string; me: SessionUser }) {
  const users = useResource((signal) => api.get<User[]>('/api/users', { signal }), [])
  if (users.error)
    return (
      <>
        <PageHeader title="User" />
        <ErrorState error={users.error} onRetry={users.reload} />
      </>
    )
  if (!users.data)
    return (
      <>
        <PageHeader title="User" />
        <Loading label="Loading the user…" />
      </>
    )
  const user = users.data.find((u) => u.id === id)
  if (!user) {
    return (
      <>
        <PageHeader title="No such user" />
        <Empty
          icon="users"
          title="This user does not exist"
          action={
            <a class="btn btn-primary btn-md" href="/users">
              All users
            </a>
          }
        >
          They may have been removed.
        </Empty>
      </>
    )
  }
  return <UserView user={user} self={user.id === me.id} reload={users.reload} />
}

function UserView({ user, self, reload }: { user: User; self: boolean; reload: () => void }) {
  const sessions = useResource(
    (signal) => api.get<SessionInfo[]>(`/api/users/${user.id}/sessions`, { signal }),
    [user.id],
  )
  const tokens = useResource((signal) => api.get<ApiToken[]>(`/api/users/${user.id}/tokens`, { signal }), [user.id])

  const reset = async () => {
    const ok = await confirm({
      title: `Reset two-factor of ${user.username}?`,
      message:
        'Their authenticator app and recovery codes stop working and they are signed out everywhere. ' +
        'They sign in with their password alone and can set up two-factor again.',
      confirmLabel: 'Reset two-factor',
      danger: true,
      typed: user.username,
    })
    if (!ok) return
    try {
      await api.post(`/api/users/${user.id}/two-factor/reset`)
      toast.success(`Two-factor of ${user.username} was reset; they were signed out`)
      reload()
      sessions.reload()
    } catch (err) {
      toast.error(err)
    }
  }
  const endAll = async () => {
    const ok = await confirm({
      title: `Sign ${user.username} out everywhere?`,
      message:
        'Every session of theirs ends at once, and whatever it has open closes. Their API tokens keep working (revoke them below).',
      confirmLabel: 'End all sessions',
      danger: true,
    })
    if (!ok) return
    try {
      await api.post(`/api/users/${user.id}/sessions/end`)
      toast.success(`${user.username} was signed out everywhere`)
      sessions.reload()
    } catch (err) {
      toast.error(err)
    }
  }

  return (
    <>
      <PageHeader title={user.username} breadcrumbs={[{ label: 'Users', href: '/users' }]} />
      <div class="stack">
        <Card title="Account">
          <KeyValues
            items={[
              [
                'Role',
                <Badge tone={user.role === 'admin' ? 'warning' : user.role === 'operator' ? 'accent' : 'neutral'}>
                  {user.role}
                </Badge>,
              ],
              ['Status', user.disabled ? <Badge tone="danger">Disabled</Badge> : <Badge tone="success">Active</Badge>],
              ['Two-factor sign-in', user.twoFactor ? <Badge tone="success">On</Badge> : <Badge>Off</Badge>],
            ]}
          />
          <div class="toolbar card-footer">
            <span class="muted">
              {self
                ? 'Manage your own two-factor sign-in on '
                : user.twoFactor
                  ? 'Lost their phone and their recovery codes? Reset it, and they can set it up again.'
                  : ''}
              {self && <a href="/account/two-factor">your account page</a>}
            </span>
            {!self && user.twoFactor && (
              <Button variant="danger" icon="rotate-ccw" onClick={() => void reset()}>
                Reset two-factor
              </Button>
            )}
          </div>
        </Card>

        <Card
          title="Sessions"
          actions={
            <Button variant="danger" icon="log-out" disabled={!sessions.data?.length} onClick={() => void endAll()}>
              End all sessions
            </Button>
          }
        >
          <Async
            resource={sessions}
            label="Loading sessions…"
            isEmpty={(list) => list.length === 0}
            empty={<Empty icon="monitor" title="Not signed in anywhere" />}
          >
            {(list) => <SessionTable sessions={list} caption={`Sessions of ${user.username}`} />}
          </Async>
        </Card>

        <Card title="API tokens">
          <Async
            resource={tokens}
            label="Loading tokens…"
            isEmpty={(list) => list.length === 0}
            empty={<Empty icon="key" title="No API tokens" />}
          >
            {(list) => (
              <TokenTable
                tokens={list}
                caption={`API tokens of ${user.username}`}
                onRevoke={(t) => void revokeToken(t, `/api/users/${user.id}/tokens/${t.id}/revoke`, tokens.reload)}
              />
            )}
          </Async>
        </Card>
      </div>
    </>
  )
}
