import type { User } from '../../../kernel/src/users/schemas.ts'
import { useState } from 'preact/hooks'
import { Button, IconButton } from '../kit/button.tsx'
import type { SessionUser } from '../kit/context.ts'
import { confirm, Dialog } from '../kit/dialog.tsx'
import { Async, Badge, Empty } from '../kit/feedback.tsx'
import { useResource } from '../kit/resource.ts'
import { Form, FieldErrors, Select, TextField } from '../kit/form.tsx'
import { Card, PageHeader } from '../kit/layout.tsx'
import { DataTable } from '../kit/table.tsx'
import { toast } from '../kit/toast.tsx'
import { api } from '../shell/session.ts'

const POLICY_OPTIONS = [
  { value: 'nobody', label: 'Nobody: each user decides' },
  { value: 'admins', label: 'Admins' },
  { value: 'everyone', label: 'Everyone' },
]

const ROLE_OPTIONS = [
  { value: 'viewer', label: 'Viewer: sees everything, changes nothing' },
  { value: 'operator', label: 'Operator: also runs containers, images and files' },
  { value: 'admin', label: 'Admin: also users, system and network settings' },
]
const ROLE_TONE = { viewer: 'neutral', operator: 'accent', admin: 'warning' } as const
const PASSWORD_HINT = 'At least 8 characters; not a common password, and not containing the user name.'
const NAME_PATTERN = '[A-Za-z0-9][A-Za-z0-9._@\\-]*'

type Editing = { kind: 'create' } | { kind: 'edit'; user: User } | { kind: 'password'; user: User } | null

export default function UsersPage({ user: me }: { user: SessionUser }) {
  const users = useResource((signal) => api.get<User[]>('/api/users', { signal }), [])
  const [editing, setEditing] = useState<Editing>(null)
  const close = () => setEditing(null)
  const done = (message: string) => {
    toast.success(message)
    close()
    users.reload()
  }

  const toggleDisabled = async (u: User) => {
    const disable = !u.disabled
    const ok = await confirm(
      disable
        ? {
            title: `Disable ${u.username}?`,
            message: 'They are signed out at once and cannot sign in until enabled again.',
            confirmLabel: 'Disable user',
            danger: true,
          }
        : {
            title: `Enable ${u.username}?`,
            message: 'They can sign in again with their password.',
            confirmLabel: 'Enable user',
          },
    )
    if (!ok) return
    try {
      await api.post(`/api/users/${u.id}/disabled`, { disabled: disable })
      toast.success(`${u.username} is ${disable ? 'disabled' : 'enabled'}`)
      users.reload()
    } catch (err) {
      toast.error(err)
    }
  }

  const remove = async (u: User) => {
    const ok = await confirm({
      title: `Remove ${u.username}?`,
      message: 'The account and its sessions are deleted. Its audit entries stay.',
      confirmLabel: 'Remove user',
      danger: true,
      typed: u.username,
    })
    if (!ok) return
    try {
      await api.post(`/api/users/${u.id}/remove`)
      toast.success(`${u.username} was removed`)
      users.reload()
    } catch (err) {
      toast.error(err)
    }
  }

  return (
    <>
      <PageHeader
        title="Users"
        description="Who may sign in, and what each role may do. Every change is written to the audit log."
        actions={
          <Button variant="primary" icon="plus" onClick={() => setEditing({ kind: 'create' })}>
            Add user
          </Button>
        }
      />
      <Async
        resource={users}
        label="Loading users…"
        isEmpty={(list) => list.length === 0}
        empty={<Empty icon="users" title="No users" />}
      >
        {(list) => (
          <DataTable
            caption="Users"
            hideCaption
            rows={list}
            rowKey={(u) => u.id}
            initialSort={{ key: 'username', direction: 'ascending' }}
            columns={[
              {
                key: 'username',
                label: 'User name',
                sortable: true,
                render: (u) => (
                  <span class="cell-strong">
                    <a href={`/users/${u.id}`}>{u.username}</a>
                    {u.id === me.id && <Badge>you</Badge>}
                  </span>
                ),
              },
              {
                key: 'role',
                label: 'Role',
                sortValue: (u) => ['viewer', 'operator', 'admin'].indexOf(u.role),
                render: (u) => <Badge tone={ROLE_TONE[u.role]}>{u.role}</Badge>,
              },
              {
                key: 'disabled',
                label: 'Status',
                sortable: true,
                render: (u) =>
                  u.disabled ? <Badge tone="danger">Disabled</Badge> : <Badge tone="success">Active</Badge>,
              },
              {
                key: 'twoFactor',
                label: 'Two-factor',
                sortable: true,
                secondary: true,
                render: (u) => (u.twoFactor ? <Badge tone="success">On</Badge> : <Badge>Off</Badge>),
              },
              {
                key: 'actions',
                label: 'Actions',
                align: 'end',
                render: (u) => {
                  const self = u.id === me.id
                  return (
                    <div class="row-actions">
                      <IconButton
                        icon="pencil"
                        label={`Edit ${u.username}`}
                        onClick={() => setEditing({ kind: 'edit', user: u })}
                      />
                      <IconButton
                        icon="key"
                        label={`Reset password of ${u.username}`}
                        onClick={() => setEditing({ kind: 'password', user: u })}
                      />
                      <IconButton
                        icon={u.disabled ? 'circle-check' : 'ban'}
                        label={`${u.disabled ? 'Enable' : 'Disable'} ${u.username}`}
                        disabled={self}
                        onClick={() => void toggleDisabled(u)}
                      />
                      <IconButton
                        icon="trash"
                        label={`Remove ${u.username}`}
                        disabled={self}
                        onClick={() => void remove(u)}
                      />
                    </div>
                  )
                },
              },
            ]}
          />
        )}
      </Async>
      <PolicyCard users={users.data} />

      <Dialog open={editing?.kind === 'create'} title="Add a user" onClose={close}>
        <Form
          submitLabel="Add user"
          actions={<Button onClick={close}>Cancel</Button>}
          errorFields={{ HOSTD_USERS_USERNAME_TAKEN: 'username', HOSTD_USERS_WEAK_PASSWORD: 'password' }}
          onSubmit={async (v) => {
            await api.post('/api/users', { username: v.username, password: v.password, role: v.role })
            done(`${String(v.username)} can now sign in`)
          }}
        >
          <TextField
            name="username"
            label="User name"
            required
            maxLength={64}
            pattern={NAME_PATTERN}
            autoComplete="off"
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
          <Select name="role" label="Role" options={ROLE_OPTIONS} defaultValue="viewer" />
        </Form>
      </Dialog>

      {editing?.kind === 'edit' && (
        <Dialog open title={`Edit ${editing.user.username}`} onClose={close}>
          <Form
            submitLabel="Save changes"
            actions={<Button onClick={close}>Cancel</Button>}
            errorFields={{ HOSTD_USERS_USERNAME_TAKEN: 'username', HOSTD_USERS_LAST_ADMIN: 'role' }}
            onSubmit={async (v) => {
              const u = editing.user
              if (v.username !== u.username) await api.post(`/api/users/${u.id}/username`, { username: v.username })
              if (v.role !== u.role) await api.post(`/api/users/${u.id}/role`, { role: v.role })
              done(`${String(v.username)} was saved`)
            }}
          >
            <TextField
              name="username"
              label="User name"
              required
              maxLength={64}
              pattern={NAME_PATTERN}
              autoComplete="off"
              defaultValue={editing.user.username}
            />
            <Select name="role" label="Role" options={ROLE_OPTIONS} defaultValue={editing.user.role} />
          </Form>
        </Dialog>
      )}

      {editing?.kind === 'password' && (
        <Dialog open title={`Reset the password of ${editing.user.username}`} onClose={close}>
          <Form
            submitLabel="Set password"
            actions={<Button onClick={close}>Cancel</Button>}
            errorFields={{ HOSTD_USERS_WEAK_PASSWORD: 'password' }}
            onSubmit={async (v) => {
              if (v.password !== v.confirm) throw new FieldErrors({ confirm: 'The two passwords differ' })
              await api.post(`/api/users/${editing.user.id}/password`, { password: v.password })
              done(`New password set; ${editing.user.username} was signed out everywhere`)
            }}
          >
            <p class="dialog-text">They are signed out of every session and sign in again with the new password.</p>
            <TextField
              name="password"
              label="New password"
              type="password"
              required
              minLength={8}
              autoComplete="new-password"
              hint={PASSWORD_HINT}
            />
            <TextField
              name="confirm"
              label="Repeat the new password"
              type="password"
              required
              autoComplete="new-password"
            />
          </Form>
        </Dialog>
      )}
    </>
  )
}

/** Who must use two-factor sign-in: users it covers who have none are sent to set it up at their next request. */
function PolicyCard({ users }: { users: User[] | undefined }) {
  const policy = useResource((signal) => api.get<{ requireTwoFactor: string }>('/api/auth/policy', { signal }), [])
  const [generation, setGeneration] = useState(0)
  const missing = (requirement: string) =>
    (users ?? []).filter(
      (u) =>
        !u.disabled && !u.twoFactor && (requirement === 'everyone' || (requirement === 'admins' && u.role === 'admin')),
    ).length
  return (
    <Card title="Two-factor policy" class="section-gap">
      <Async resource={policy} label="Loading the policy…">
        {(p) => (
          <Form
            key={`${generation}-${p.requireTwoFactor}`}
            label="Two-factor policy"
            submitLabel="Save policy"
            errorFields={{ HOSTD_AUTH_POLICY_LOCKOUT: 'requireTwoFactor' }}
            onSubmit={async (v) => {
              await api.put('/api/auth/policy', { requireTwoFactor: v.requireTwoFactor })
              const left = missing(String(v.requireTwoFactor))
              toast.success(
                left
                  ? `Saved. ${left} user${left === 1 ? '' : 's'} must set up two-factor before doing anything else.`
                  : 'Saved.',
              )
              setGeneration((g) => g + 1)
              policy.reload()
            }}
          >
            <Select
              name="requireTwoFactor"
              label="Require two-factor sign-in for"
              options={POLICY_OPTIONS}
              defaultValue={p.requireTwoFactor}
              hint="A user it covers who has not set up two-factor can do nothing but set it up (or sign out) until they do. Turn it on for yourself first."
            />
          </Form>
        )}
      </Async>
    </Card>
  )
}
