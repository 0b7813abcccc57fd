/**
 * Admin Privileges: whether the root helper runs (and in dry run), and the allowlisted actions with their state.
 * An action that cannot work here (SSH not installed) says why instead of offering buttons; the time zone is
 * picked from the zones the system knows (searchable), not typed.
 */
import { useMemo, useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  DataTable,
  Dialog,
  Form,
  PrivilegesMissing,
  Select,
  TextField,
  useResource,
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
                {
                  key: 'state',
                  label: 'Now',
                  render: (a) => (
                    <span class="system-state">
                      {stateOf(a)}
                      {a.note && <span class="muted system-note">{a.note}</span>}
                    </span>
                  ),
                },
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
          {setting.key === 'timezone' ? (
            <TimeZoneForm
              ctx={ctx}
              current={setting.state}
              onCancel={() => setSetting(null)}
              onApply={async (zone) => {
                await apply(setting, 'set', zone)
                setSetting(null)
              }}
            />
          ) : (
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
          )}
        </Dialog>
      )}
    </Card>
  )
}

/** Every word of the search in the zone's name ("new york" finds America/New_York). */
function zoneMatches(search: string): (zone: string) => boolean {
  const words = search
    .toLowerCase()
    .split(/[\s/_]+/)
    .filter(Boolean)
  return (zone) => {
    const name = zone.toLowerCase().replaceAll('_', ' ')
    return words.every((w) => name.includes(w))
  }
}

/** At most this many zones in the list at once: a search narrows the ~600 down. */
const ZONES_SHOWN = 400

/** The time zone: a search over the zones the system knows, and a list of the matches to pick from. */
function TimeZoneForm({
  ctx,
  current,
  onCancel,
  onApply,
}: {
  ctx: PageContext
  current: string | null
  onCancel: () => void
  onApply: (zone: string) => Promise<void>
}) {
  const zones = useResource(
    (signal) => ctx.api.get<{ zones: string[]; current: string | null }>('/api/system/timezones', { signal }),
    [],
  )
  const [search, setSearch] = useState('')
  const [picked, setPicked] = useState(current ?? '')
  const matches = useMemo(() => {
    return (zones.data?.zones ?? []).filter(zoneMatches(search))
  }, [zones.data, search])
  const shown = matches.slice(0, ZONES_SHOWN)
  // The list always holds the picked zone, so the select shows what Apply sends.
  const options = picked && !shown.includes(picked) ? [picked, ...shown] : shown
  return (
    <Async resource={zones} label="Reading the time zones…">
      {() => (
        <Form
          submitLabel="Apply"
          actions={<Button onClick={onCancel}>Cancel</Button>}
          errorFields={{ HOSTD_REQUEST_INVALID: 'zone', HOSTD_HELPER_INVALID_ARGUMENT: 'zone' }}
          onSubmit={async (v: FormValues) => {
            await onApply(String(v.zone))
          }}
        >
          <TextField
            name="search"
            label="Search time zones"
            type="search"
            autoComplete="off"
            hint="A city or region: Paris, New York, Tokyo"
            value={search}
            onInput={(e) => {
              const text = e.currentTarget.value
              setSearch(text)
              const first = (zones.data?.zones ?? []).find(zoneMatches(text))
              if (text && first) setPicked(first)
            }}
          />
          <Select
            name="zone"
            label="Time zone"
            required
            value={picked}
            onChange={(e) => setPicked(e.currentTarget.value)}
            hint={
              matches.length === 0
                ? `No zone matches "${search}"`
                : matches.length > ZONES_SHOWN
                  ? `${matches.length} zones; the first ${ZONES_SHOWN} listed: search to narrow down`
                  : `${matches.length} ${matches.length === 1 ? 'zone' : 'zones'}`
            }
            options={options.map((z) => ({ value: z, label: z.replaceAll('_', ' ') }))}
          />
        </Form>
      )}
    </Async>
  )
}

function stateOf(a: PrivilegedAction) {
  if (a.state === null) return <span class="muted">unknown</span>
  if (a.state === 'not-installed') return <Badge tone="neutral">Not installed</Badge>
  if (a.state === 'on') return <Badge tone="success">On</Badge>
  if (a.state === 'off') return <Badge>Off</Badge>
  return <span class="mono">{a.state}</span>
}
