import { Type, type Static } from '@hostd/sdk'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const SystemInfoSchema = Type.Object({
  hostname: Type.String(),
  os: Type.Object({ name: Type.String(), prettyName: Type.String(), id: Type.String(), version: Type.String() }),
  kernel: Type.Object({ release: Type.String(), version: Type.String() }),
  arch: Type.String(),
  cpu: Type.Object({ model: Type.String(), cores: Type.Integer(), threads: Type.Integer() }),
  memory: Type.Object({ totalBytes: Type.Integer(), availableBytes: Type.Integer() }),
  hardware: Type.Object({ vendor: Nullable(Type.String()), product: Nullable(Type.String()) }),
  machineId: Nullable(Type.String()),
  uptimeSeconds: Type.Integer(),
  bootTime: Type.String({ format: 'date-time' }),
})
export type SystemInfo = Static<typeof SystemInfoSchema>

export const NetworkSummarySchema = Type.Object({
  interfaces: Type.Array(
    Type.Object({
      name: Type.String(),
      mac: Type.String(),
      state: Type.String({ description: 'Link state from /sys/class/net/<if>/operstate: up, down, unknown, ...' }),
      mtu: Type.Integer(),
      speedMbps: Nullable(Type.Integer()),
      addresses: Type.Array(
        Type.Object({
          family: Type.Union([Type.Literal('ipv4'), Type.Literal('ipv6')]),
          address: Type.String(),
          prefix: Type.Integer(),
          netmask: Type.String(),
        }),
      ),
    }),
  ),
  defaultRoute: Nullable(Type.Object({ gateway: Type.String(), interface: Type.String() })),
  dnsServers: Type.Array(Type.String()),
})
export type NetworkSummary = Static<typeof NetworkSummarySchema>

export const SettingsSnapshotSchema = Type.Object({
  hostname: Type.String(),
  timeZone: Nullable(Type.String()),
  ntp: Type.Object({ active: Type.Boolean(), daemon: Nullable(Type.String()) }),
  ssh: Type.Object({
    installed: Type.Boolean(),
    running: Type.Boolean(),
    port: Nullable(Type.Integer()),
    permitRootLogin: Nullable(Type.String()),
    passwordAuthentication: Nullable(Type.String()),
  }),
  firewall: Type.Object({ tool: Nullable(Type.String()), enabled: Nullable(Type.Boolean()) }),
  autoUpdate: Type.Object({ unattendedUpgrades: Type.Boolean() }),
  hostdUpdates: Type.Object({ feedConfigured: Type.Boolean(), checkEveryHours: Type.Number() }),
})
export type SettingsSnapshot = Static<typeof SettingsSnapshotSchema>

export const HostStatusSchema = Type.Object({
  rebootRequired: Type.Boolean({ description: 'An upgrade asked for a reboot (/run/reboot-required exists)' }),
  rebootPackages: Type.Array(Type.String(), { description: 'The packages that asked for it (reboot-required.pkgs)' }),
  updatesWaiting: Nullable(
    Type.Integer({
      description: 'Packages apt would upgrade; null without the packages plugin or when apt is unreadable',
    }),
  ),
  updatesCheckedAt: Nullable(Type.String({ format: 'date-time', description: "When apt's candidates were last read" })),
})
export type HostStatus = Static<typeof HostStatusSchema>

export const PowerResultSchema = Type.Object({
  action: Type.String(),
  dryRun: Type.Boolean({ description: 'The helper runs in dry-run mode: nothing happened' }),
  argv: Type.Optional(Type.Array(Type.String(), { description: 'In dry-run mode: what the helper would have run' })),
})

export const PrivilegedActionSchema = Type.Object({
  key: Type.String(),
  title: Type.String(),
  choices: Type.Array(Type.Union([Type.Literal('on'), Type.Literal('off'), Type.Literal('set')])),
  state: Nullable(
    Type.String({
      description:
        '"on"/"off" for switches, "not-installed" when the program is missing, the current value for settings; null when the host does not tell',
    }),
  ),
  note: Nullable(
    Type.String({ description: 'Why no choice is offered, and what to do (e.g. install the SSH server)' }),
  ),
})
export const PrivilegedListSchema = Type.Object({
  helper: Type.Object({ available: Type.Boolean(), dryRun: Nullable(Type.Boolean()) }),
  actions: Type.Array(PrivilegedActionSchema),
})
export const TimeZoneListSchema = Type.Object({
  zones: Type.Array(Type.String(), { description: 'Every zone name the system knows (as timedatectl list-timezones)' }),
  current: Nullable(Type.String()),
})

export const PrivilegedKeyParams = Type.Object({ key: Type.String({ pattern: '^[a-z][a-z0-9-]{0,31}$' }) })
export const PrivilegedBodySchema = Type.Object(
  {
    choice: Type.Union([Type.Literal('on'), Type.Literal('off'), Type.Literal('set')]),
    value: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  },
  { additionalProperties: false },
)
export const PrivilegedResultSchema = Type.Object({
  key: Type.String(),
  before: Nullable(Type.String()),
  after: Nullable(Type.String()),
  dryRun: Type.Boolean(),
  argv: Type.Optional(Type.Array(Type.String())),
})

export const UpdateStatusSchema = Type.Object({
  currentVersion: Type.String(),
  latestVersion: Nullable(Type.String()),
  updateAvailable: Type.Boolean(),
  notes: Nullable(Type.String()),
  checkedAt: Nullable(Type.String({ format: 'date-time' })),
  error: Nullable(Type.String({ description: 'Why the last check failed' })),
  state: Type.Union([Type.Literal('idle'), Type.Literal('installing'), Type.Literal('restarting')]),
})
export type UpdateStatus = Static<typeof UpdateStatusSchema>
export const UpdateInstallResultSchema = Type.Object({
  installed: Type.String(),
  path: Type.String(),
  restart: PowerResultSchema,
})
