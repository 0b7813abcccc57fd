import { Type, type Static } from '@hostd/sdk'

const IPV4 = '^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$'

/** The interface document's Network service. */
export const NetworkServiceSchema = Type.Object({
  name: Type.String({ description: 'NetworkManager connection name' }),
  hardwarePort: Type.String({ description: 'Kind of port: Ethernet, Wi-Fi, Bridge, VLAN, ...' }),
  device: Type.String({ description: 'Interface the connection is bound to or active on; empty when none' }),
  enabled: Type.Boolean({ description: 'The connection is active' }),
  dhcp: Type.Boolean(),
  ipv4: Type.String({ description: 'Current (or configured, when inactive) IPv4 address; empty when none' }),
  subnetMask: Type.String(),
  router: Type.String(),
  dnsServers: Type.Array(Type.String()),
})
export type NetworkService = Static<typeof NetworkServiceSchema>

/** A pending confirm-or-revert: confirm before `expiresAt` or NetworkManager restores the previous settings. */
export const PendingConfirmSchema = Type.Union([
  Type.Object({ service: Type.String(), expiresAt: Type.String({ format: 'date-time' }), confirmPath: Type.String() }),
  Type.Null(),
])
export type PendingConfirm = Static<typeof PendingConfirmSchema>

/** Same rule the helper applies to a connection name: no leading '-', no control or shell characters. */
export const ServiceParamsSchema = Type.Object({
  service: Type.String({
    pattern: '^[A-Za-z0-9_][A-Za-z0-9 _.@:+-]{0,63}$',
    description: 'Connection name, URL-encoded',
  }),
})

export const DnsBodySchema = Type.Object(
  {
    servers: Type.Array(Type.String({ pattern: IPV4 }), {
      maxItems: 3,
      description: 'IPv4 DNS servers; empty: use the ones DHCP gives',
    }),
  },
  { additionalProperties: false },
)

export const Ipv4BodySchema = Type.Object(
  {
    dhcp: Type.Boolean(),
    ipv4: Type.Optional(Type.String({ pattern: IPV4 })),
    subnetMask: Type.Optional(Type.String({ pattern: IPV4 })),
    router: Type.Optional(Type.String({ pattern: IPV4 })),
  },
  { additionalProperties: false, description: 'dhcp true; or dhcp false with ipv4 and subnetMask (router optional)' },
)
export type Ipv4Body = Static<typeof Ipv4BodySchema>

export const EnabledBodySchema = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false })

export const ServiceListSchema = Type.Array(NetworkServiceSchema)
export const ServiceChangeSchema = Type.Object({ service: NetworkServiceSchema, confirm: PendingConfirmSchema })
export const ServicesChangeSchema = Type.Object({ services: ServiceListSchema, confirm: PendingConfirmSchema })
export const PendingAnswerSchema = Type.Object({ confirm: PendingConfirmSchema })
