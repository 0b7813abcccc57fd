/** Admin Privileges: whether the root helper runs (and in dry run), and the allowlisted actions with their state. */
import { useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  DataTable,
  Dialog,
  Form,
  PrivilegesMissing,
  TextField,
  type FormValues,
  type PageContext,
  type Resource,
} from '@hostd/ui'
import { dryRunText, type Privileged, type PrivilegedAction, type PrivilegedResult } from './model.ts'

/** What a value should look like, for the set dialog's hint (the server checks, and says so at the field). */
const VALUE_HINTS: Record<string, string> = {
  hostname: 'Letters, digits and hyphens; dots between labels (server.example.lan)',
  timezone: 'A zone name such as Europe/Paris, America/New_York or UTC',
}

export function PrivilegesCard({
  ctx,
  privileged,
  onChanged,
}: {
  ctx: PageContext
  privileged: Resource<Privileged>
  onChanged: () => void
}) {
  const [setting, setSetting] = useState<PrivilegedAction | null>(null)
  const data = privileged.data
  const available = data?.helper.available === true
  const admin = ctx.can('admin')

  const apply = async (action: PrivilegedAction, choice: 'on' | 'off' | 'set', value?: string) => {
    const result = await ctx.api.post<PrivilegedResult>(
      `/api/system/privileged/${encodeURIComponent(action.key)}`,
      value === undefined ? { choice } : { choice, value },
    )
    if (result.dryRun) ctx.toast.info(dryRunText(result.argv))
    else ctx.toast.success(`${action.title}: ${result.after ?? 'changed'}`)
    onChanged()
  }
  const toggle = async (action: PrivilegedAction, choice: 'on' | 'off') => {
    const ok = await ctx.confirm({
      title: `Turn ${choice} ${action.title}?`,
      message:
        choice === 'off' && action.key === 'ssh'
          ? 'Sessions open over SSH end, and nobody can sign in over SSH until it is turned on again.'
          : undefined,
      confirmLabel: `Turn ${choice}`,
      danger: choice === 'off',
    })
    if (!ok) return
    try {
      await apply(action, choice)
    } catch (err) {
      ctx.toast.error(err)
      onChanged()
    }
  }

  return (
    <Card
      title="Admin Privileges"
      class="system-privileges"
      actions={
        data &&
        (available ? (
          <span class="system-badges">
            <Badge tone="success">Root helper running</Badge>
            {data.helper.dryRun && <Badge tone="warning">Dry run: nothing is changed</Badge>}
          </span>
        ) : (
          <Badge tone="danger">Root helper not running</Badge>
        ))
      }
    >
      <Async resource={privileged} label="Asking the root helper…">
        {(data) => (
          <div class="system-stack">
            <p class="muted">
              Changes to the host go through hostd's root helper, which runs only these allowlisted actions and logs
              each one.
            </p>
            {!available && (
              <PrivilegesMissing affected="these actions, power and updates" onRetry={privileged.reload} />
            )}
            <DataTable
              caption="Privileged actions"
              hideCaption
              rows={data.actions}
              rowKey={(a) => a.key}
              columns={[
                { key: 'title', label: 'Setting', render: (a) => <span class="cell-strong">{a.title}</span> },
                { key: 'state', label: 'Now', render: (a) => stateOf(a) },
                ...(admin
                  ? [
                      {
                        key: 'change',
                        label: 'Change',
                        align: 'end' as const,
                        render: (a: PrivilegedAction) => (
                          <div class="row-actions">
                            {a.choices.includes('on') && a.state !== 'on' && (
                              <Button
                                size="sm"
                                disabled={!available}
                                aria-label={`Turn on ${a.title}`}
                                onClick={() => void toggle(a, 'on')}
                              >
                                Turn on
                              </Button>
                            )}
                            {a.choices.includes('off') && a.state !== 'off' && (
                              <Button
                                size="sm"
                                disabled={!available}
                                aria-label={`Turn off ${a.title}`}
                                onClick={() => void toggle(a, 'off')}
                              >
                                Turn off
                              </Button>
                            )}
                            {a.choices.includes('set') && (
                              <Button
                                size="sm"
                                icon="pencil"
                                disabled={!available}
                                aria-label={`Change ${a.title}`}
                                onClick={() => setSetting(a)}
                              >
                                Change
                              </Button>
                            )}
                          </div>
                        ),
                      },
                    ]
                  : []),
              ]}
            />
          </div>
        )}
      </Async>
      {setting && (
        <Dialog open title={`Change the ${setting.title.toLowerCase()}`} onClose={() => setSetting(null)}>
          <Form
            submitLabel="Apply"
            actions={<Button onClick={() => setSetting(null)}>Cancel</Button>}
            errorFields={{ HOSTD_REQUEST_INVALID: 'value', HOSTD_HELPER_INVALID_ARGUMENT: 'value' }}
            onSubmit={async (v: FormValues) => {
              await apply(setting, 'set', String(v.value).trim())
              setSetting(null)
            }}
          >
            <TextField
              name="value"
              label={setting.title}
              required
              maxLength={253}
              autoComplete="off"
              defaultValue={setting.state ?? ''}
              hint={VALUE_HINTS[setting.key]}
            />
          </Form>
        </Dialog>
      )}
    </Card>
  )
}

function stateOf(a: PrivilegedAction) {
  if (a.state === null) return <span class="muted">unknown</span>
  if (a.state === 'on') return <Badge tone="success">On</Badge>
  if (a.state === 'off') return <Badge>Off</Badge>
  return <span class="mono">{a.state}</span>
}
