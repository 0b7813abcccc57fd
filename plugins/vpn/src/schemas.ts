import { Type, type Static } from '@hostd/sdk'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])
const Addresses = Type.Array(Type.String(), { description: 'Tailscale IPv4 and IPv6 addresses' })

export const SelfSchema = Type.Object({
  id: Type.String({ description: 'Stable node id' }),
  name: Type.String({ description: 'Machine name: the first label of dnsName, or hostName' }),
  hostName: Type.String({ description: "The name the machine reports (the hostname setting, else the OS's)" }),
  dnsName: Type.String({ description: 'MagicDNS name, without the final dot; empty when none' }),
  os: Type.String(),
  addresses: Addresses,
  online: Type.Boolean(),
})

export const PeerSchema = Type.Object({
  ...SelfSchema.properties,
  lastSeen: Nullable(
    Type.String({ format: 'date-time', description: 'Last seen by the control server; null when online or unknown' }),
  ),
  exitNode: Type.Boolean({ description: 'This node is the current exit node' }),
  exitNodeOption: Type.Boolean({ description: 'This node offers to be an exit node (can be picked in settings)' }),
  active: Type.Boolean({ description: 'Traffic went to or from it recently' }),
  rxBytes: Type.Integer(),
  txBytes: Type.Integer(),
  relay: Type.String({ description: 'DERP region used to reach it; empty when direct or unknown' }),
})

export const PrefsSchema = Type.Object({
  acceptRoutes: Type.Boolean({ description: 'Use subnet routes other nodes advertise (Prefs.RouteAll)' }),
  acceptDns: Type.Boolean({ description: "Use the tailnet's DNS settings (Prefs.CorpDNS)" }),
  ssh: Type.Boolean({ description: 'Run the Tailscale SSH server (Prefs.RunSSH)' }),
  shieldsUp: Type.Boolean({ description: 'Refuse incoming connections (Prefs.ShieldsUp)' }),
  exitNodeId: Type.String({ description: 'Stable id of the chosen exit node; empty when none' }),
  hostname: Type.String({ description: "Name to report instead of the OS's; empty: the OS's" }),
  wantRunning: Type.Boolean({ description: 'Connected (or wanting to be)' }),
  loggedOut: Type.Boolean(),
})

export const VpnStatusSchema = Type.Object({
  installed: Type.Boolean({ description: "tailscaled's socket exists" }),
  running: Type.Boolean({ description: 'tailscaled answered' }),
  message: Nullable(Type.String({ description: 'What is missing when not installed or not running' })),
  version: Nullable(Type.String()),
  backendState: Nullable(
    Type.String({ description: 'NoState, NeedsLogin, NeedsMachineAuth, Stopped, Starting, Running, InUseOtherUser' }),
  ),
  loggedIn: Type.Boolean(),
  loginPending: Type.Boolean({ description: 'A login was started and waits for someone to open its URL' }),
  authUrl: Nullable(Type.String({ description: 'The pending login URL; admins only (null for other roles)' })),
  self: Nullable(SelfSchema),
  tailnet: Nullable(
    Type.Object({ name: Type.String(), magicDnsSuffix: Type.String(), magicDnsEnabled: Type.Boolean() }),
  ),
  peers: Type.Array(PeerSchema, { description: 'Sorted by name' }),
  exitNode: Nullable(
    Type.Object({ id: Type.String(), name: Type.String(), online: Type.Boolean(), addresses: Addresses }),
  ),
  remoteAccess: Type.Object({
    ssh: Type.Boolean({ description: 'Tailscale SSH server on' }),
    serve: Nullable(
      Type.Object(
        {
          enabled: Type.Boolean({ description: 'tailscale serve shares something' }),
          funnel: Type.Boolean({ description: 'Something is shared to the internet (Funnel)' }),
          tcpPorts: Type.Array(Type.Integer()),
          web: Type.Array(Type.String({ description: 'host:port of each served web site' })),
        },
        { description: "tailscale serve's configuration; null when tailscaled has none to give" },
      ),
    ),
  }),
  prefs: Nullable(PrefsSchema),
  health: Type.Array(Type.String(), { description: "tailscaled's health warnings" }),
})
export type VpnStatus = Static<typeof VpnStatusSchema>

/** A DNS label (RFC 1123): letters, digits, inner hyphens, at most 63 characters. */
export const DNS_LABEL = '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$'

export const SettingsBodySchema = Type.Object(
  {
    acceptRoutes: Type.Optional(Type.Boolean()),
    acceptDns: Type.Optional(Type.Boolean()),
    ssh: Type.Optional(Type.Boolean()),
    shieldsUp: Type.Optional(Type.Boolean()),
    exitNodeId: Type.Optional(
      Type.String({
        maxLength: 64,
        pattern: '^([A-Za-z0-9][A-Za-z0-9_.-]*)?$',
        description: 'A peer offering to be an exit node (exitNodeOption); "" for none',
      }),
    ),
    hostname: Type.Optional(
      Type.String({ maxLength: 63, pattern: `(${DNS_LABEL})|^$`, description: 'A DNS label; "" for the OS hostname' }),
    ),
  },
  { additionalProperties: false, minProperties: 1, description: 'Only the fields sent change' },
)
export type SettingsBody = Static<typeof SettingsBodySchema>

export const ConnectBodySchema = Type.Object({ up: Type.Boolean() }, { additionalProperties: false })

export const LoginResultSchema = Type.Object({
  authUrl: Nullable(
    Type.String({ description: 'Open this to log in; null when already logged in (see backendState)' }),
  ),
  backendState: Type.String(),
})
