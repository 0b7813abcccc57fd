import type { Static } from '@sinclair/typebox'
import { useState } from 'preact/hooks'
import type { ApiTokenSchema } from '../../../kernel/src/auth/schemas.ts'
import { Button, IconButton } from '../kit/button.tsx'
import type { Role } from '../kit/context.ts'
import { CopyButton } from '../kit/copy.tsx'
import { confirm, Dialog } from '../kit/dialog.tsx'
import { Async, Badge, Empty } from '../kit/feedback.tsx'
import { useResource } from '../kit/resource.ts'
import { FieldErrors, Form, Select, TextArea, TextField } from '../kit/form.tsx'
import { formatDateTime, formatRelative } from '../kit/format.ts'
import { Icon } from '../kit/icons.tsx'
import { Card } from '../kit/layout.tsx'
import { DataTable } from '../kit/table.tsx'
import { toast } from '../kit/toast.tsx'
import { api } from '../shell/session.ts'

/** A token as `GET /api/me/tokens` lists it (the kernel's schema, as a type only). */
export type ApiToken = Static<typeof ApiTokenSchema>

const ROLES: Role[] = ['viewer', 'operator', 'admin']
const ROLE_LABEL: Record<Role, string> = {
  viewer: 'Viewer: reads, changes nothing',
  operator: 'Operator: also runs containers, images and files',
  admin: 'Admin: everything your account can do',
}
const ROLE_TONE = { viewer: 'neutral', operator: 'accent', admin: 'warning' } as const
const EXPIRY = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: 'One year' },
  { value: 'never', label: 'Never (revoke it yourself)' },
]
const PREFIX = /^\/api(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9._~@:+-]+)*\/?$/

const expired = (t: ApiToken) => t.expiresAt !== null && Date.parse(t.expiresAt) <= Date.now()

/** Tokens as a table; `onRevoke` adds a revoke button per row. */
export function TokenTable({
  tokens,
  caption,
  onRevoke,
}: {
  tokens: ApiToken[]
  caption: string
  onRevoke?: (t: ApiToken) => void
}) {
  return (
    <DataTable
      caption={caption}
      hideCaption
      rows={tokens}
      rowKey={(t) => t.id}
      columns={[
        { key: 'name', label: 'Name', sortable: true, render: (t) => <span class="cell-strong">{t.name}</span> },
        {
          key: 'role',
          label: 'Role',
          sortValue: (t) => ROLES.indexOf(t.role),
          render: (t) => <Badge tone={ROLE_TONE[t.role]}>{t.role}</Badge>,
        },
        {
          key: 'prefixes',
          label: 'May call',
          secondary: true,
          render: (t) =>
            t.prefixes ? (
              <span class="mono detail">{t.prefixes.join(', ')}</span>
            ) : (
              <span class="muted">every path its role allows</span>
            ),
        },
        {
          key: 'lastUsedAt',
          label: 'Last used',
          sortable: true,
          render: (t) =>
            t.lastUsedAt ? (
              <time dateTime={t.lastUsedAt} title={formatDateTime(t.lastUsedAt)}>
                {formatRelative(t.lastUsedAt)}
              </time>
            ) : (
              <span class="muted">never</span>
            ),
        },
        {
          key: 'expiresAt',
          label: 'Expires',
          sortable: true,
          render: (t) =>
            expired(t) ? (
              <Badge tone="danger">Expired</Badge>
            ) : t.expiresAt ? (
              <time dateTime={t.expiresAt} title={formatDateTime(t.expiresAt)}>
                {formatRelative(t.expiresAt)}
              </time>
            ) : (
              <span class="muted">never</span>
            ),
        },
        {
          key: 'createdAt',
          label: 'Created',
          sortable: true,
          secondary: true,
          render: (t) => (
            <time dateTime={t.createdAt} title={formatDateTime(t.createdAt)}>
              {formatRelative(t.createdAt)}
            </time>
          ),
        },
        ...(onRevoke
          ? [
              {
                key: 'actions',
                label: 'Actions',
                align: 'end' as const,
                render: (t: ApiToken) => (
                  <IconButton icon="trash" label={`Revoke token ${t.name}`} onClick={() => onRevoke(t)} />
                ),
              },
            ]
          : []),
      ]}
    />
  )
}

/** Asks, then revokes a token through `path`; `done` reloads the list. */
export async function revokeToken(t: ApiToken, path: string, done: () => void): Promise<void> {
  const ok = await confirm({
    title: `Revoke "${t.name}"?`,
    message: 'Scripts using it stop working at once, and whatever it has open closes.',
    confirmLabel: 'Revoke token',
    danger: true,
  })
  if (!ok) return
  try {
    await api.post(path)
    toast.success(`"${t.name}" was revoked`)
    done()
  } catch (err) {
    toast.error(err)
  }
}

/** Your API tokens: create one (its secret shown once), see when each was last used, revoke. */
export function TokensCard({ role }: { role: Role }) {
  const tokens = useResource((signal) => api.get<ApiToken[]>('/api/me/tokens', { signal }), [])
  const [creating, setCreating] = useState(false)
  const [made, setMade] = useState<(ApiToken & { secret: string }) | null>(null)
  const close = () => {
    setCreating(false)
    setMade(null)
    tokens.reload()
  }
  const roles = ROLES.slice(0, ROLES.indexOf(role) + 1)
  return (
    <Card
      title="API tokens"
      actions={
        <Button variant="primary" icon="plus" onClick={() => setCreating(true)}>
          New token
        </Button>
      }
    >
      <p class="muted card-intro">
        For scripts and tools: send <code>Authorization: Bearer &lt;token&gt;</code>. A token does at most what its role
        allows and never more than you can; it cannot change passwords, two-factor, sessions, tokens or users, or open a
        terminal or the desktop.
      </p>
      <Async
        resource={tokens}
        label="Loading your tokens…"
        isEmpty={(list) => list.length === 0}
        empty={
          <Empty
            icon="key"
            title="No API tokens"
            action={
              <Button icon="plus" onClick={() => setCreating(true)}>
                New token
              </Button>
            }
          >
            Create one for each script, so you can revoke one without touching the others.
          </Empty>
        }
      >
        {(list) => (
          <TokenTable
            tokens={list}
            caption="Your API tokens"
            onRevoke={(t) => void revokeToken(t, `/api/me/tokens/${t.id}/revoke`, tokens.reload)}
          />
        )}
      </Async>

      <Dialog open={creating} title={made ? 'Your new token' : 'New API token'} onClose={close} size="lg">
        {creating &&
          (made ? (
            <div class="stack">
              <p class="notice" role="status">
                <Icon name="triangle-alert" /> Copy the token now: it is shown only once. Lost it? Revoke it and make a
                new one.
              </p>
              <div class="secret-row">
                <label class="sr-only" for="new-token-secret">
                  Token
                </label>
                <input
                  id="new-token-secret"
                  class="input mono"
                  readOnly
                  value={made.secret}
                  onFocus={(e) => e.currentTarget.select()}
                />
                <CopyButton text={made.secret} label="Copy token" variant="primary" />
              </div>
              <p class="muted">Try it:</p>
              <pre class="code-sample">{`curl -H "Authorization: Bearer ${made.secret}" ${location.origin}/api/auth/me`}</pre>
              <div class="form-actions">
                <Button variant="primary" onClick={close}>
                  Done
                </Button>
              </div>
            </div>
          ) : (
            <Form
              submitLabel="Create token"
              actions={<Button onClick={close}>Cancel</Button>}
              errorFields={{ HOSTD_TOKENS_NAME_TAKEN: 'name', HOSTD_TOKENS_ROLE_TOO_HIGH: 'role' }}
              onSubmit={async (v) => {
                const prefixes = String(v.prefixes)
                  .split(/[\s,]+/)
                  .filter(Boolean)
                const bad = prefixes.find((p) => !PREFIX.test(p))
                if (bad) throw new FieldErrors({ prefixes: `"${bad}" is not a path under /api (like /api/containers)` })
                setMade(
                  await api.post<ApiToken & { secret: string }>('/api/me/tokens', {
                    name: String(v.name).trim(),
                    role: v.role,
                    ...(v.expiry === 'never' ? {} : { expiresInDays: Number(v.expiry) }),
                    ...(prefixes.length ? { prefixes } : {}),
                  }),
                )
              }}
            >
              <TextField
                name="name"
                label="Name"
                required
                maxLength={64}
                autoFocus
                autoComplete="off"
                hint="What uses it, e.g. “backup script on nas”."
              />
              <Select
                name="role"
                label="Role"
                options={roles.map((r) => ({ value: r, label: ROLE_LABEL[r] }))}
                defaultValue="viewer"
              />
              <Select name="expiry" label="Expires after" options={EXPIRY} defaultValue="30" />
              <TextArea
                name="prefixes"
                label="Only these paths (optional)"
                rows={3}
                placeholder={'/api/containers\n/api/metrics'}
                hint="One API path prefix per line; leave empty for every path its role allows."
                spellcheck={false}
              />
            </Form>
          ))}
      </Dialog>
    </Card>
  )
}
