/** TypeBox shapes, one per shape: validation, types and the OpenAPI document. */
import { Type, type Static } from '@hostd/sdk'

const NoControl = '^[^\\u0000-\\u001f\\u007f]*$'
const Text = (max: number, min = 1) => Type.String({ minLength: min, maxLength: max, pattern: NoControl })

/** Rule, channel and silence ids: the defaults' slugs (`disk-full`) and generated UUIDs. */
export const IdSchema = Type.String({
  pattern: '^[a-z0-9][a-z0-9-]{0,63}$',
  description: 'A rule, channel or silence id',
})
export const IdParams = Type.Object({ id: IdSchema })

export const Severity = Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('critical')])
export const MetricName = Type.Union(
  [
    Type.Literal('filesystem.usedPercent'),
    Type.Literal('cpu.usage'),
    Type.Literal('memory.usedPercent'),
    Type.Literal('swap.usedPercent'),
    Type.Literal('load.one'),
    Type.Literal('temperature.max'),
  ],
  { description: 'What a metric rule compares (filesystem: one alert per mount point)' },
)
export const CONTAINER_CONDITIONS = ['down', 'unhealthy', 'exitedNonZero', 'restarting'] as const
export const ACCOUNT_CONDITIONS = ['failedSignIns', 'newAdmin', 'twoFactorOff'] as const
export const SYSTEM_CONDITIONS = ['updates', 'rebootRequired'] as const
export const RuleCondition = Type.Union(
  [
    Type.Literal('down'),
    Type.Literal('unhealthy'),
    Type.Literal('exitedNonZero'),
    Type.Literal('restarting'),
    Type.Literal('failedSignIns'),
    Type.Literal('newAdmin'),
    Type.Literal('twoFactorOff'),
    Type.Literal('updates'),
    Type.Literal('rebootRequired'),
    Type.Literal('backupFailed'),
    Type.Literal('backupOverdue'),
  ],
  {
    description:
      'container: down (a container with a restart policy: always, unless-stopped, on-failure after a failure, is not ' +
      'running), unhealthy (its health check fails), exitedNonZero (it exited with a code other than 0), restarting ' +
      '(the engine is restarting it: a restart loop, with forSeconds); account: failedSignIns (threshold failed ' +
      'sign-ins within windowSeconds), newAdmin (a user created as, or changed to, an admin), twoFactorOff (a ' +
      "user's two-factor sign-in turned off); system: updates (more than threshold package updates waiting), " +
      "rebootRequired (/run/reboot-required exists); backup: backupFailed (a backup job's run failed: it clears when a " +
      'run of that job succeeds), backupOverdue (a scheduled backup job has had no successful run for threshold hours, ' +
      'default 24: it clears when one succeeds)',
  },
)
/** Sources whose alerts come from single events (an audit record, a start): shown for clearForSeconds, sent once. */
export const EVENT_SOURCES: ReadonlySet<string> = new Set(['account', 'daemon'])

const Seconds = (max: number) => Type.Integer({ minimum: 0, maximum: max })

/** The fields an admin writes; the answer adds `id` and `builtin`. */
const RuleFields = {
  name: Text(120),
  enabled: Type.Boolean(),
  source: Type.Union(
    [
      Type.Literal('metric'),
      Type.Literal('container'),
      Type.Literal('smart'),
      Type.Literal('plugin'),
      Type.Literal('account'),
      Type.Literal('daemon'),
      Type.Literal('system'),
      Type.Literal('backup'),
    ],
    {
      description:
        'metric: the metrics sampler (once a minute); container: the engine events; smart: SMART health; plugin: a ' +
        "plugin failed (the kernel's plugin states); account: sign-in and user events (the kernel's audit records); " +
        'daemon: hostd started again without a clean stop; system: updates waiting, a reboot required; backup: a ' +
        "backup job's run (the backups plugin's audit records)",
    },
  ),
  metric: Type.Optional(MetricName),
  condition: Type.Optional(RuleCondition),
  match: Type.String({
    maxLength: 200,
    pattern: NoControl,
    description: 'Targets it watches: a glob (`*`, `?`) on the mount point, container name or disk; empty: all',
  }),
  threshold: Type.Number({ minimum: -1e9, maximum: 1e9, description: 'metric: fires above this value' }),
  clearThreshold: Type.Number({
    minimum: -1e9,
    maximum: 1e9,
    description: 'metric: a firing alert clears only below this value (hysteresis; at most threshold)',
  }),
  forSeconds: Seconds(86_400),
  clearForSeconds: Seconds(86_400),
  windowSeconds: Type.Optional(
    Type.Integer({
      minimum: 10,
      maximum: 86_400,
      description: 'account failedSignIns: fires when threshold failures fall within this window (default 300)',
    }),
  ),
  severity: Severity,
  repeatIntervalSeconds: Type.Integer({
    minimum: 60,
    maximum: 7 * 86_400,
    description: 'A firing alert is sent again after this long; a flapping alert is sent at most once in it',
  }),
  channels: Type.Array(IdSchema, { maxItems: 20, description: 'Channel ids; empty: every enabled channel' }),
}
export const RuleSchema = Type.Object({ id: IdSchema, builtin: Type.Boolean(), ...RuleFields })
export type Rule = Static<typeof RuleSchema>
export const RuleCreateSchema = Type.Object(
  {
    ...RuleFields,
    enabled: Type.Optional(RuleFields.enabled),
    match: Type.Optional(RuleFields.match),
    threshold: Type.Optional(RuleFields.threshold),
    clearThreshold: Type.Optional(RuleFields.clearThreshold),
    forSeconds: Type.Optional(RuleFields.forSeconds),
    clearForSeconds: Type.Optional(RuleFields.clearForSeconds),
    windowSeconds: RuleFields.windowSeconds,
    severity: Type.Optional(RuleFields.severity),
    repeatIntervalSeconds: Type.Optional(RuleFields.repeatIntervalSeconds),
    channels: Type.Optional(RuleFields.channels),
  },
  { additionalProperties: false },
)
export type RuleCreate = Static<typeof RuleCreateSchema>
export const RuleUpdateSchema = Type.Partial(Type.Object(RuleFields), { additionalProperties: false })
export type RuleUpdate = Static<typeof RuleUpdateSchema>
export const RuleListSchema = Type.Object({ items: Type.Array(RuleSchema) })

export const ChannelType = Type.Union([
  Type.Literal('webhook'),
  Type.Literal('email'),
  Type.Literal('ntfy'),
  Type.Literal('apprise'),
])
export type ChannelKind = Static<typeof ChannelType>
const Url = Type.String({ minLength: 8, maxLength: 2000, pattern: '^https?://[^\\s]+$', description: 'http(s) URL' })
const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@<>]+@[^\\s@<>]+$' })

export const ChannelOptionsSchema = Type.Object(
  {
    url: Type.Optional(Url),
    host: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:\\[\\]-]+$' })),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    security: Type.Optional(
      Type.Union([Type.Literal('tls'), Type.Literal('starttls'), Type.Literal('none')], {
        description: 'email: tls (implicit, port 465), starttls (required upgrade, port 587) or none',
      }),
    ),
    verifyCertificate: Type.Optional(
      Type.Boolean({ description: 'email: refuse a certificate not trusted (default)' }),
    ),
    username: Type.Optional(Text(254)),
    from: Type.Optional(Email),
    to: Type.Optional(Type.Array(Email, { minItems: 1, maxItems: 20 })),
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, description: 'ntfy: 1 (min) to 5 (urgent)' })),
  },
  {
    additionalProperties: false,
    description:
      'webhook: url; email: host, port, security, verifyCertificate, username, from, to; ntfy: url (the topic URL), ' +
      'priority; apprise: none (the Apprise URL is the secret)',
  },
)
export type ChannelOptions = Static<typeof ChannelOptionsSchema>

const Secret = Type.String({
  minLength: 1,
  maxLength: 4000,
  pattern: NoControl,
  description:
    'Write-only, sealed at rest: webhook: the HMAC key; email: the password; ntfy: the access token; apprise: the ' +
    'Apprise URL(s), space-separated',
})

export const ChannelStatusSchema = Type.Object({
  lastSuccessAt: Type.Union([Type.String(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()], { description: 'Why the last delivery failed, in words' }),
  lastErrorAt: Type.Union([Type.String(), Type.Null()]),
  retrying: Type.Integer({ description: 'Deliveries waiting for their next attempt' }),
  nextAttemptAt: Type.Union([Type.String(), Type.Null()]),
})
export const ChannelSchema = Type.Object({
  id: IdSchema,
  name: Type.String(),
  type: ChannelType,
  enabled: Type.Boolean(),
  options: ChannelOptionsSchema,
  secretSet: Type.Boolean({ description: 'A secret is stored (it is never answered)' }),
  sendResolved: Type.Boolean(),
  status: ChannelStatusSchema,
})
export type Channel = Static<typeof ChannelSchema>
export const ChannelCreateSchema = Type.Object(
  {
    name: Text(120),
    type: ChannelType,
    enabled: Type.Optional(Type.Boolean()),
    options: ChannelOptionsSchema,
    secret: Type.Optional(Secret),
    sendResolved: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type ChannelCreate = Static<typeof ChannelCreateSchema>
export const ChannelUpdateSchema = Type.Object(
  {
    name: Type.Optional(Text(120)),
    enabled: Type.Optional(Type.Boolean()),
    options: Type.Optional(ChannelOptionsSchema),
    secret: Type.Optional(Type.Union([Secret, Type.Null()], { description: 'null removes it' })),
    sendResolved: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type ChannelUpdate = Static<typeof ChannelUpdateSchema>
export const ChannelListSchema = Type.Object({ items: Type.Array(ChannelSchema) })
export const TestResultSchema = Type.Object({
  ok: Type.Boolean(),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why it could not be delivered, in words' }),
})

export const AlertSchema = Type.Object({
  ruleId: IdSchema,
  ruleName: Type.String(),
  target: Type.String({ description: 'What it is about: a mount point, a container name, a disk; `host` otherwise' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('firing')]),
  severity: Severity,
  summary: Type.String(),
  value: Type.Union([Type.Number(), Type.Null()]),
  since: Type.String({ description: 'When the condition began (pending) or the alert fired (firing)' }),
  silenced: Type.Boolean(),
  labels: Type.Record(Type.String(), Type.String()),
})
export type Alert = Static<typeof AlertSchema>
export const AlertListSchema = Type.Object({
  items: Type.Array(AlertSchema),
  firing: Type.Integer({ description: 'Firing alerts that are not silenced: the header count' }),
})

export const BadgeSchema = Type.Object({ count: Type.Integer(), label: Type.String() })

export const HistoryItemSchema = Type.Object({
  id: Type.Integer(),
  ruleId: Type.String(),
  ruleName: Type.String(),
  target: Type.String(),
  severity: Severity,
  summary: Type.String(),
  value: Type.Union([Type.Number(), Type.Null()]),
  startsAt: Type.String(),
  endsAt: Type.Union([Type.String(), Type.Null()], { description: 'null while it fires' }),
})
export type HistoryItem = Static<typeof HistoryItemSchema>
export const HistoryQuerySchema = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) })
export const HistoryListSchema = Type.Object({ items: Type.Array(HistoryItemSchema) })

export const SilenceSchema = Type.Object({
  id: IdSchema,
  ruleId: Type.Union([IdSchema, Type.Null()]),
  target: Type.Union([Type.String(), Type.Null()]),
  endsAt: Type.String(),
  comment: Type.String(),
  createdBy: Type.String(),
  createdAt: Type.String(),
  active: Type.Boolean(),
})
export type Silence = Static<typeof SilenceSchema>
export const SilenceCreateSchema = Type.Object(
  {
    ruleId: Type.Optional(IdSchema),
    target: Type.Optional(Text(300)),
    endsAt: Type.String({ format: 'date-time', maxLength: 40, description: 'When it ends (ISO time, in the future)' }),
    comment: Type.Optional(Text(500, 0)),
  },
  { additionalProperties: false, description: 'A rule, a target, or both (then only that rule on that target)' },
)
export type SilenceCreate = Static<typeof SilenceCreateSchema>
export const SilenceListSchema = Type.Object({ items: Type.Array(SilenceSchema) })

export const DeliverySchema = Type.Object({
  id: Type.Integer(),
  channelId: Type.String(),
  kind: Type.Union([Type.Literal('firing'), Type.Literal('resolved'), Type.Literal('test')]),
  summary: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('sent'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  lastError: Type.Union([Type.String(), Type.Null()]),
  nextAttemptAt: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  sentAt: Type.Union([Type.String(), Type.Null()]),
})
export type Delivery = Static<typeof DeliverySchema>
export const DeliveryListSchema = Type.Object({ items: Type.Array(DeliverySchema) })

export const SettingsSchema = Type.Object({
  externalUrl: Type.String({ description: "hostd's address as people reach it: the link in every notification" }),
})
export const SettingsUpdateSchema = Type.Object(
  { externalUrl: Type.String({ minLength: 8, maxLength: 500, pattern: '^https?://[^\\s]+$' }) },
  { additionalProperties: false },
)
export const PrometheusSchema = Type.String({ description: 'Prometheus text exposition (0.0.4)' })
