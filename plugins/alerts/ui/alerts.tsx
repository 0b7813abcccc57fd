/**
 * The alerts page: what fires now and what fired, the rules, the channels with their delivery state, the silences.
 * Viewers read; operators silence (and see channels and deliveries); admins edit rules and channels and send tests.
 */
import { useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Callout,
  Checkbox,
  DataTable,
  Dialog,
  Empty,
  Form,
  PageHeader,
  Select,
  Tabs,
  TextField,
  adoptStyles,
  defineElement,
  formatDateTime,
  formatRelative,
  useResource,
  type FormValues,
  type PageContext,
} from '@hostd/ui'
import type { Alert, Channel, Delivery, HistoryItem, Rule, Silence } from '../src/schemas.ts'
import css from './alerts.css' with { type: 'text' }

interface List<T> {
  items: T[]
}
type Ctx = { ctx: PageContext }

const METRICS: { value: NonNullable<Rule['metric']>; label: string }[] = [
  { value: 'filesystem.usedPercent', label: 'File system used (%)' },
  { value: 'cpu.usage', label: 'CPU usage (%)' },
  { value: 'memory.usedPercent', label: 'Memory in use (%)' },
  { value: 'swap.usedPercent', label: 'Swap in use (%)' },
  { value: 'load.one', label: '1-minute load' },
  { value: 'temperature.max', label: 'Hottest sensor (°C)' },
]
type Options = { value: NonNullable<Rule['condition']>; label: string }[]
/** The conditions of each source that has them. */
const CONDITIONS: Record<string, Options> = {
  container: [
    { value: 'down', label: 'Down although it has a restart policy' },
    { value: 'unhealthy', label: 'Unhealthy' },
    { value: 'exitedNonZero', label: 'Exited with an error' },
    { value: 'restarting', label: 'Restarting in a loop' },
  ],
  account: [
    { value: 'failedSignIns', label: 'Many failed sign-ins' },
    { value: 'newAdmin', label: 'A new admin account' },
    { value: 'twoFactorOff', label: 'Two-factor sign-in turned off' },
  ],
  system: [
    { value: 'updates', label: 'Package updates waiting' },
    { value: 'rebootRequired', label: 'A reboot required' },
  ],
  backup: [{ value: 'backupFailed', label: 'A backup job failed' }],
}
const SOURCES = [
  { value: 'metric', label: 'A host metric' },
  { value: 'container', label: 'Containers' },
  { value: 'smart', label: 'Disk SMART health' },
  { value: 'plugin', label: 'A plugin failed' },
  { value: 'account', label: 'Accounts and sign-in' },
  { value: 'daemon', label: 'hostd restarted without a clean stop' },
  { value: 'system', label: 'Updates and reboots' },
  { value: 'backup', label: 'Backups' },
]
const CHANNEL_TYPES = [
  { value: 'webhook', label: 'Webhook (Alertmanager format)' },
  { value: 'email', label: 'Email (SMTP)' },
  { value: 'ntfy', label: 'ntfy' },
  { value: 'apprise', label: 'Apprise' },
]
const DURATIONS = [
  { value: '1', label: '1 hour' },
  { value: '4', label: '4 hours' },
  { value: '24', label: '1 day' },
  { value: '168', label: '1 week' },
]

/** The shell's header reads its badges again (the count of firing alerts changed). */
const badgesChanged = () => window.dispatchEvent(new Event('hostd:badges-changed'))

const tone = (a: { severity: string; silenced?: boolean }) =>
  a.silenced ? 'neutral' : a.severity === 'critical' ? 'danger' : a.severity === 'info' ? 'accent' : 'warning'

function describeRule(r: Rule): string {
  if (r.source === 'metric') {
    const label = METRICS.find((m) => m.value === r.metric)?.label ?? r.metric
    return `${label} above ${r.threshold}${r.clearThreshold < r.threshold ? `, clears below ${r.clearThreshold}` : ''}`
  }
  const condition = CONDITIONS[r.source]?.find((c) => c.value === r.condition)?.label ?? r.condition
  if (r.source === 'container') return `Container: ${condition}`
  if (r.source === 'plugin') return 'A plugin failed to load or start'
  if (r.source === 'daemon') return 'hostd started again without a clean stop'
  if (r.condition === 'failedSignIns')
    return `${r.threshold} failed sign-ins within ${Math.round((r.windowSeconds ?? 300) / 60)} min`
  if (r.condition === 'updates') return r.threshold > 0 ? `More than ${r.threshold} updates waiting` : condition!
  if (r.source === 'account' || r.source === 'system' || r.source === 'backup') return condition!
  return 'A disk fails its SMART self-assessment'
}

function Firing({ ctx }: Ctx) {
  const alerts = useResource(
    (signal) => ctx.api.get<{ items: Alert[]; firing: number }>('/api/alerts', { signal }),
    [],
    {
      every: 10_000,
    },
  )
  const [silencing, setSilencing] = useState<Alert | null>(null)
  return (
    <>
      <Async
        resource={alerts}
        label="Reading alerts…"
        isEmpty={(d) => d.items.length === 0}
        empty={
          <Empty title="Nothing is firing" icon="circle-check">
            Alerts appear here while a rule's condition holds.
          </Empty>
        }
      >
        {(data) => (
          <DataTable
            caption="Alerts now"
            hideCaption
            rows={data.items}
            rowKey={(a) => `${a.ruleId}/${a.target}`}
            columns={[
              {
                key: 'severity',
                label: 'Severity',
                render: (a) => <Badge tone={tone(a)}>{a.silenced ? 'silenced' : a.severity}</Badge>,
              },
              { key: 'summary', label: 'Alert' },
              { key: 'state', label: 'State', render: (a) => (a.state === 'firing' ? 'Firing' : 'Pending') },
              {
                key: 'since',
                label: 'Since',
                render: (a) => <span title={formatDateTime(a.since)}>{formatRelative(a.since)}</span>,
              },
              ...(ctx.can('operator')
                ? [
                    {
                      key: 'actions',
                      label: 'Actions',
                      render: (a: Alert) => (
                        <Button
                          size="sm"
                          variant="secondary"
                          onClick={() => setSilencing(a)}
                          aria-label={`Silence ${a.summary}`}
                        >
                          Silence
                        </Button>
                      ),
                    },
                  ]
                : []),
            ]}
          />
        )}
      </Async>
      {silencing && (
        <SilenceDialog
          ctx={ctx}
          alert={silencing}
          onClose={(done) => {
            setSilencing(null)
            if (done) alerts.reload()
          }}
        />
      )}
    </>
  )
}

function SilenceDialog({ ctx, alert, onClose }: Ctx & { alert: Alert; onClose: (done: boolean) => void }) {
  return (
    <Dialog open title={`Silence: ${alert.ruleName}`} onClose={() => onClose(false)}>
      <Form
        submitLabel="Silence"
        actions={
          <Button variant="ghost" onClick={() => onClose(false)}>
            Cancel
          </Button>
        }
        onSubmit={async (v) => {
          const hours = Number(v.hours)
          await ctx.api.post('/api/alerts/silences', {
            ruleId: alert.ruleId,
            ...(v.scope === 'target' ? { target: alert.target } : {}),
            endsAt: new Date(Date.now() + hours * 3600_000).toISOString(),
            comment: String(v.comment ?? ''),
          })
          ctx.toast.success('Silenced')
          badgesChanged()
          onClose(true)
        }}
      >
        <Select
          name="scope"
          label="What to silence"
          options={[
            { value: 'target', label: `This rule on ${alert.target}` },
            { value: 'rule', label: 'This rule on every target' },
          ]}
        />
        <Select name="hours" label="For" options={DURATIONS} defaultValue="4" />
        <TextField name="comment" label="Comment" hint="Why, for the others (optional)" maxLength={500} />
      </Form>
    </Dialog>
  )
}

function History({ ctx }: Ctx) {
  const history = useResource(
    (signal) => ctx.api.get<List<HistoryItem>>('/api/alerts/history?limit=200', { signal }),
    [],
    {
      every: 30_000,
    },
  )
  return (
    <Async
      resource={history}
      label="Reading the history…"
      isEmpty={(d) => d.items.length === 0}
      empty={<Empty title="No alert has fired yet" icon="clock" />}
    >
      {(data) => (
        <DataTable
          caption="Alert history"
          hideCaption
          rows={data.items}
          rowKey={(h) => h.id}
          columns={[
            { key: 'severity', label: 'Severity', render: (h) => <Badge tone={tone(h)}>{h.severity}</Badge> },
            { key: 'summary', label: 'Alert' },
            { key: 'startsAt', label: 'Started', render: (h) => formatDateTime(h.startsAt) },
            {
              key: 'endsAt',
              label: 'Ended',
              render: (h) => (h.endsAt ? formatDateTime(h.endsAt) : <Badge tone="danger">firing</Badge>),
            },
          ]}
        />
      )}
    </Async>
  )
}

const num = (v: string | boolean | undefined, fallback: number) => (v === undefined || v === '' ? fallback : Number(v))

function RuleDialog({
  ctx,
  rule,
  channels,
  onClose,
}: Ctx & { rule: Rule | null; channels: Channel[]; onClose: (done: boolean) => void }) {
  const [source, setSource] = useState<string>(rule?.source ?? 'metric')
  const [condition, setCondition] = useState<string>(rule?.condition ?? '')
  const conditions = CONDITIONS[source]
  const chosen = conditions?.some((c) => c.value === condition) ? condition : (conditions?.[0]?.value ?? '')
  const counted = (source === 'system' && chosen === 'updates') || chosen === 'failedSignIns'
  return (
    <Dialog open size="lg" title={rule ? `Edit rule: ${rule.name}` : 'New rule'} onClose={() => onClose(false)}>
      <Form
        submitLabel={rule ? 'Save' : 'Add rule'}
        actions={
          <Button variant="ghost" onClick={() => onClose(false)}>
            Cancel
          </Button>
        }
        onSubmit={async (v: FormValues) => {
          const threshold = num(v.threshold, 0)
          const body = {
            name: String(v.name),
            enabled: v.enabled === true,
            source,
            ...(source === 'metric' ? { metric: v.metric } : {}),
            ...(conditions ? { condition: chosen } : {}),
            ...(chosen === 'failedSignIns' ? { windowSeconds: Math.round(num(v.windowMinutes, 5) * 60) } : {}),
            match: String(v.match ?? ''),
            threshold,
            clearThreshold: num(v.clearThreshold, threshold),
            forSeconds: num(v.forSeconds, 0),
            severity: v.severity,
            repeatIntervalSeconds: Math.round(num(v.repeatHours, 4) * 3600),
            channels: v.channel ? [String(v.channel)] : [],
          }
          if (rule) await ctx.api.put(`/api/alerts/rules/${rule.id}`, body)
          else await ctx.api.post('/api/alerts/rules', body)
          ctx.toast.success(rule ? 'Rule saved' : 'Rule added')
          onClose(true)
        }}
      >
        <TextField name="name" label="Name" required maxLength={120} defaultValue={rule?.name} />
        <Select
          name="source"
          label="Watches"
          options={SOURCES}
          defaultValue={source}
          onChange={(e) => setSource((e.target as HTMLSelectElement).value)}
        />
        {source === 'metric' && <Select name="metric" label="Metric" options={METRICS} defaultValue={rule?.metric} />}
        {conditions && (
          <Select
            name="condition"
            label="Condition"
            options={conditions}
            defaultValue={chosen}
            onChange={(e) => setCondition((e.target as HTMLSelectElement).value)}
          />
        )}
        {counted && (
          <div class="alerts-row">
            <TextField
              name="threshold"
              label={chosen === 'updates' ? 'Fires above (updates)' : 'Fires at (failures)'}
              type="number"
              min={0}
              required
              defaultValue={String(rule?.threshold ?? (chosen === 'updates' ? 0 : 10))}
            />
            {chosen === 'failedSignIns' && (
              <TextField
                name="windowMinutes"
                label="Within (minutes)"
                type="number"
                min={1}
                max={1440}
                step="any"
                defaultValue={String((rule?.windowSeconds ?? 300) / 60)}
              />
            )}
          </div>
        )}
        <TextField
          name="match"
          label="Only these targets"
          hint="A mount point, container, disk, plugin id or user name; * and ? match anything. Empty: all."
          maxLength={200}
          defaultValue={rule?.match}
        />
        {source === 'metric' && (
          <div class="alerts-row">
            <TextField
              name="threshold"
              label="Fires above"
              type="number"
              step="any"
              required
              defaultValue={String(rule?.threshold ?? 90)}
            />
            <TextField
              name="clearThreshold"
              label="Clears below"
              type="number"
              step="any"
              hint="At most the threshold"
              defaultValue={String(rule?.clearThreshold ?? 85)}
            />
          </div>
        )}
        {/* A single event's alert (accounts, a restart) fires at once and is sent once: no hold, no repeat. */}
        {source !== 'account' && source !== 'daemon' && (
          <div class="alerts-row">
            <TextField
              name="forSeconds"
              label="Holds for (seconds)"
              type="number"
              min={0}
              max={86400}
              defaultValue={String(rule?.forSeconds ?? 0)}
            />
            <TextField
              name="repeatHours"
              label="Repeat every (hours)"
              type="number"
              min={0.02}
              max={168}
              step="any"
              hint="A flapping alert is sent at most once in this time"
              defaultValue={String((rule?.repeatIntervalSeconds ?? 14400) / 3600)}
            />
          </div>
        )}
        <Select
          name="severity"
          label="Severity"
          options={[
            { value: 'info', label: 'Information' },
            { value: 'warning', label: 'Warning' },
            { value: 'critical', label: 'Critical' },
          ]}
          defaultValue={rule?.severity ?? 'warning'}
        />
        <Select
          name="channel"
          label="Send to"
          options={[{ value: '', label: 'Every channel' }, ...channels.map((c) => ({ value: c.id, label: c.name }))]}
          defaultValue={rule?.channels[0] ?? ''}
        />
        <Checkbox name="enabled" label="Enabled" defaultChecked={rule?.enabled ?? true} />
      </Form>
    </Dialog>
  )
}

function Rules({ ctx }: Ctx) {
  const rules = useResource((signal) => ctx.api.get<List<Rule>>('/api/alerts/rules', { signal }), [])
  const channels = useResource(
    (signal) =>
      ctx.can('operator')
        ? ctx.api.get<List<Channel>>('/api/alerts/channels', { signal })
        : Promise.resolve({ items: [] }),
    [],
  )
  const [editing, setEditing] = useState<Rule | 'new' | null>(null)
  const admin = ctx.can('admin')
  return (
    <>
      {admin && (
        <div class="alerts-actions">
          <Button icon="plus" onClick={() => setEditing('new')}>
            Add rule
          </Button>
        </div>
      )}
      <Async
        resource={rules}
        label="Reading rules…"
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="No rules" icon="list" />}
      >
        {(data) => (
          <DataTable
            caption="Rules"
            hideCaption
            rows={data.items}
            rowKey={(r) => r.id}
            columns={[
              { key: 'name', label: 'Rule' },
              { key: 'what', label: 'Condition', render: (r) => describeRule(r) },
              { key: 'forSeconds', label: 'Holds', render: (r) => (r.forSeconds ? `${r.forSeconds} s` : 'at once') },
              { key: 'severity', label: 'Severity', render: (r) => <Badge tone={tone(r)}>{r.severity}</Badge> },
              { key: 'enabled', label: 'State', render: (r) => (r.enabled ? 'On' : 'Off') },
              ...(admin
                ? [
                    {
                      key: 'actions',
                      label: 'Actions',
                      render: (r: Rule) => (
                        <span class="alerts-buttons">
                          <Button
                            size="sm"
                            variant="secondary"
                            aria-label={`Edit ${r.name}`}
                            onClick={() => setEditing(r)}
                          >
                            Edit
                          </Button>
                          <Button
                            size="sm"
                            variant="ghost"
                            aria-label={`Delete ${r.name}`}
                            onClick={async () => {
                              if (
                                !(await ctx.confirm({
                                  title: `Delete the rule ${r.name}?`,
                                  confirmLabel: 'Delete',
                                  danger: true,
                                }))
                              )
                                return
                              try {
                                await ctx.api.delete(`/api/alerts/rules/${r.id}`)
                                rules.reload()
                              } catch (err) {
                                ctx.toast.error(err)
                              }
                            }}
                          >
                            Delete
                          </Button>
                        </span>
                      ),
                    },
                  ]
                : []),
            ]}
          />
        )}
      </Async>
      {editing && (
        <RuleDialog
          ctx={ctx}
          rule={editing === 'new' ? null : editing}
          channels={channels.data?.items ?? []}
          onClose={(done) => {
            setEditing(null)
            if (done) rules.reload()
          }}
        />
      )}
    </>
  )
}

const SECRET_LABEL: Record<string, string> = {
  webhook: 'Signing secret (HMAC-SHA256)',
  email: 'Password',
  ntfy: 'Access token',
  apprise: 'Apprise URL(s)',
}

function ChannelDialog({ ctx, channel, onClose }: Ctx & { channel: Channel | null; onClose: (done: boolean) => void }) {
  const [type, setType] = useState<string>(channel?.type ?? 'webhook')
  const o = channel?.options ?? {}
  return (
    <Dialog
      open
      size="lg"
      title={channel ? `Edit channel: ${channel.name}` : 'New channel'}
      onClose={() => onClose(false)}
    >
      <Form
        submitLabel={channel ? 'Save' : 'Add channel'}
        actions={
          <Button variant="ghost" onClick={() => onClose(false)}>
            Cancel
          </Button>
        }
        onSubmit={async (v: FormValues) => {
          const options: Record<string, unknown> = {}
          if (type === 'webhook' || type === 'ntfy') options.url = v.url
          if (type === 'ntfy' && v.priority) options.priority = Number(v.priority)
          if (type === 'email') {
            Object.assign(options, {
              host: v.host,
              port: v.port ? Number(v.port) : undefined,
              security: v.security,
              verifyCertificate: v.verifyCertificate === true,
              from: v.from,
              to: String(v.to)
                .split(/[,\s]+/)
                .filter(Boolean),
            })
            if (v.username) options.username = v.username
          }
          const body: Record<string, unknown> = {
            name: v.name,
            enabled: v.enabled === true,
            sendResolved: v.sendResolved === true,
            options,
          }
          if (v.secret) body.secret = v.secret
          if (channel) await ctx.api.put(`/api/alerts/channels/${channel.id}`, body)
          else await ctx.api.post('/api/alerts/channels', { ...body, type })
          ctx.toast.success(channel ? 'Channel saved' : 'Channel added')
          onClose(true)
        }}
      >
        <TextField name="name" label="Name" required maxLength={120} defaultValue={channel?.name} />
        {!channel && (
          <Select
            name="type"
            label="Type"
            options={CHANNEL_TYPES}
            defaultValue={type}
            onChange={(e) => setType((e.target as HTMLSelectElement).value)}
          />
        )}
        {(type === 'webhook' || type === 'ntfy') && (
          <TextField
            name="url"
            label={type === 'ntfy' ? 'Topic URL' : 'URL'}
            type="url"
            required
            placeholder={type === 'ntfy' ? 'https://ntfy.sh/my-topic' : 'https://example.com/hook'}
            defaultValue={o.url}
          />
        )}
        {type === 'ntfy' && (
          <TextField
            name="priority"
            label="Priority (1-5)"
            type="number"
            min={1}
            max={5}
            defaultValue={o.priority ? String(o.priority) : ''}
          />
        )}
        {type === 'email' && (
          <>
            <div class="alerts-row">
              <TextField name="host" label="Mail server" required defaultValue={o.host} />
              <TextField
                name="port"
                label="Port"
                type="number"
                min={1}
                max={65535}
                defaultValue={o.port ? String(o.port) : ''}
              />
            </div>
            <Select
              name="security"
              label="Security"
              options={[
                { value: 'starttls', label: 'STARTTLS (port 587)' },
                { value: 'tls', label: 'TLS (port 465)' },
                { value: 'none', label: 'None (trusted network only)' },
              ]}
              defaultValue={o.security ?? 'starttls'}
            />
            <Checkbox
              name="verifyCertificate"
              label="Verify the server's certificate"
              defaultChecked={o.verifyCertificate !== false}
            />
            <TextField name="username" label="User name" hint="Empty: no sign-in" defaultValue={o.username} />
            <TextField name="from" label="From" type="email" required defaultValue={o.from} />
            <TextField
              name="to"
              label="To"
              hint="Addresses, separated by commas"
              required
              defaultValue={o.to?.join(', ')}
            />
          </>
        )}
        <TextField
          name="secret"
          label={SECRET_LABEL[type] ?? 'Secret'}
          type="password"
          autocomplete="off"
          required={type === 'apprise' && !channel?.secretSet}
          hint={
            channel?.secretSet
              ? 'Stored (never shown). Type a new one to replace it.'
              : type === 'apprise'
                ? 'e.g. tgram://bot/chat'
                : 'Optional'
          }
        />
        <Checkbox
          name="sendResolved"
          label="Also send when an alert resolves"
          defaultChecked={channel?.sendResolved ?? true}
        />
        <Checkbox name="enabled" label="Enabled" defaultChecked={channel?.enabled ?? true} />
      </Form>
    </Dialog>
  )
}

const waiting = (n: number, at: string) =>
  `${n === 1 ? 'One message waits' : `${n} messages wait`} for the next attempt, ${formatRelative(at)}.`

function Channels({ ctx }: Ctx) {
  const channels = useResource((signal) => ctx.api.get<List<Channel>>('/api/alerts/channels', { signal }), [], {
    every: 15_000,
  })
  const deliveries = useResource(
    (signal) => ctx.api.get<List<Delivery>>('/api/alerts/deliveries?limit=20', { signal }),
    [],
    {
      every: 15_000,
    },
  )
  const [editing, setEditing] = useState<Channel | 'new' | null>(null)
  const admin = ctx.can('admin')
  const test = async (c: Channel) => {
    try {
      const result = await ctx.api.post<{ ok: boolean; error: string | null }>(`/api/alerts/channels/${c.id}/test`)
      if (result.ok) ctx.toast.success(`Test sent through ${c.name}`)
      else ctx.toast.error(new Error(`${c.name}: ${result.error}`))
      channels.reload()
    } catch (err) {
      ctx.toast.error(err)
    }
  }
  return (
    <>
      {admin && (
        <div class="alerts-actions">
          <Button icon="plus" onClick={() => setEditing('new')}>
            Add channel
          </Button>
        </div>
      )}
      <Async
        resource={channels}
        label="Reading channels…"
        isEmpty={(d) => d.items.length === 0}
        empty={
          <Empty title="No channel yet" icon="zap">
            Alerts show here but reach no one until a channel (email, webhook, ntfy, Apprise) is added.
          </Empty>
        }
      >
        {(data) => (
          <ul class="alerts-channels">
            {data.items.map((c) => (
              <li key={c.id} class="alerts-channel">
                <div class="alerts-channel-head">
                  <strong>{c.name}</strong> <Badge tone="neutral">{c.type}</Badge>
                  {!c.enabled && <Badge tone="neutral">off</Badge>}
                  <span class="detail">
                    {c.options.url ??
                      (c.options.host ? `${c.options.host}${c.options.port ? `:${c.options.port}` : ''}` : '')}
                  </span>
                </div>
                {c.status.lastError && (!c.status.lastSuccessAt || c.status.lastErrorAt! > c.status.lastSuccessAt) && (
                  <Callout tone="warning" title={`Last delivery failed ${formatRelative(c.status.lastErrorAt!)}`}>
                    {c.status.lastError}.
                    {c.status.retrying > 0 &&
                      c.status.nextAttemptAt &&
                      ` ${waiting(c.status.retrying, c.status.nextAttemptAt)}`}
                  </Callout>
                )}
                {c.status.lastSuccessAt && (
                  <p class="detail">Last delivered {formatRelative(c.status.lastSuccessAt)}</p>
                )}
                {admin && (
                  <span class="alerts-buttons">
                    <Button
                      size="sm"
                      variant="secondary"
                      aria-label={`Send a test through ${c.name}`}
                      onClick={() => void test(c)}
                    >
                      Send a test
                    </Button>
                    <Button size="sm" variant="secondary" aria-label={`Edit ${c.name}`} onClick={() => setEditing(c)}>
                      Edit
                    </Button>
                    <Button
                      size="sm"
                      variant="ghost"
                      aria-label={`Delete ${c.name}`}
                      onClick={async () => {
                        if (
                          !(await ctx.confirm({
                            title: `Delete the channel ${c.name}?`,
                            confirmLabel: 'Delete',
                            danger: true,
                          }))
                        )
                          return
                        try {
                          await ctx.api.delete(`/api/alerts/channels/${c.id}`)
                          channels.reload()
                        } catch (err) {
                          ctx.toast.error(err)
                        }
                      }}
                    >
                      Delete
                    </Button>
                  </span>
                )}
              </li>
            ))}
          </ul>
        )}
      </Async>
      <h2 class="alerts-subhead">Recent deliveries</h2>
      <Async
        resource={deliveries}
        label="Reading deliveries…"
        isEmpty={(d) => d.items.length === 0}
        empty={<p class="detail">Nothing sent yet.</p>}
      >
        {(data) => (
          <DataTable
            caption="Recent deliveries"
            hideCaption
            rows={data.items}
            rowKey={(d) => d.id}
            columns={[
              { key: 'createdAt', label: 'When', render: (d) => formatDateTime(d.createdAt) },
              {
                key: 'channel',
                label: 'Channel',
                render: (d) => channels.data?.items.find((c) => c.id === d.channelId)?.name ?? 'removed',
              },
              { key: 'summary', label: 'Message' },
              {
                key: 'status',
                label: 'Status',
                render: (d) => (
                  <span>
                    <Badge tone={d.status === 'sent' ? 'success' : d.status === 'failed' ? 'danger' : 'warning'}>
                      {d.status}
                    </Badge>{' '}
                    {d.lastError && d.status !== 'sent' && <span class="detail">{d.lastError}</span>}
                  </span>
                ),
              },
              { key: 'attempts', label: 'Attempts', align: 'end' },
            ]}
          />
        )}
      </Async>
      {editing && (
        <ChannelDialog
          ctx={ctx}
          channel={editing === 'new' ? null : editing}
          onClose={(done) => {
            setEditing(null)
            if (done) channels.reload()
          }}
        />
      )}
    </>
  )
}

function Silences({ ctx }: Ctx) {
  const silences = useResource((signal) => ctx.api.get<List<Silence>>('/api/alerts/silences', { signal }), [], {
    every: 30_000,
  })
  return (
    <Async
      resource={silences}
      label="Reading silences…"
      isEmpty={(d) => d.items.length === 0}
      empty={
        <Empty title="No silences" icon="ban">
          {ctx.can('operator') ? 'Silence an alert from the "Firing now" tab.' : 'Operators can silence alerts.'}
        </Empty>
      }
    >
      {(data) => (
        <DataTable
          caption="Silences"
          hideCaption
          rows={data.items}
          rowKey={(s) => s.id}
          columns={[
            {
              key: 'scope',
              label: 'Silences',
              render: (s) =>
                [s.ruleId && `rule ${s.ruleId}`, s.target && `target ${s.target}`].filter(Boolean).join(', '),
            },
            { key: 'endsAt', label: 'Until', render: (s) => formatDateTime(s.endsAt) },
            { key: 'createdBy', label: 'By' },
            { key: 'comment', label: 'Comment' },
            {
              key: 'active',
              label: 'State',
              render: (s) =>
                s.active && ctx.can('operator') ? (
                  <Button
                    size="sm"
                    variant="secondary"
                    aria-label={`End the silence by ${s.createdBy}`}
                    onClick={async () => {
                      try {
                        await ctx.api.post(`/api/alerts/silences/${s.id}/expire`)
                        badgesChanged()
                        silences.reload()
                      } catch (err) {
                        ctx.toast.error(err)
                      }
                    }}
                  >
                    End now
                  </Button>
                ) : s.active ? (
                  'Active'
                ) : (
                  'Ended'
                ),
            },
          ]}
        />
      )}
    </Async>
  )
}

function Page({ ctx }: Ctx) {
  const tabs = [
    { id: 'firing', label: 'Firing now' },
    { id: 'history', label: 'History' },
    { id: 'rules', label: 'Rules' },
    ...(ctx.can('operator') ? [{ id: 'channels', label: 'Channels' }] : []),
    { id: 'silences', label: 'Silences' },
  ]
  const [tab, setTab] = useState('firing')
  return (
    <>
      <PageHeader title="Alerts" description="Rules over what hostd watches, who is told, and what is silenced." />
      <Tabs label="Alerts" tabs={tabs} selected={tab} onSelect={setTab}>
        {tab === 'firing' && <Firing ctx={ctx} />}
        {tab === 'history' && <History ctx={ctx} />}
        {tab === 'rules' && <Rules ctx={ctx} />}
        {tab === 'channels' && <Channels ctx={ctx} />}
        {tab === 'silences' && <Silences ctx={ctx} />}
      </Tabs>
    </>
  )
}

adoptStyles('alerts', css)
defineElement('alerts-page', ({ ctx }) => <Page ctx={ctx} />)
