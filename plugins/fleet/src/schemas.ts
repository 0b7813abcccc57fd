import { Type } from '@hostd/sdk'

const Role = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')])
export const HostName = Type.String({ pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$', maxLength: 63 })

const Used = Type.Object({ used: Type.Number(), total: Type.Number() })
export const InventorySchema = Type.Object({
  cpu: Type.Union([Type.Number(), Type.Null()], { description: 'Busy share of all CPUs, 0..1' }),
  memory: Used,
  disk: Type.Union([Used, Type.Null()]),
  alerts: Type.Union([Type.Integer(), Type.Null()], { description: 'Firing alerts; null without the alerts plugin' }),
  updates: Type.Union([Type.Integer(), Type.Null()], { description: 'Updates waiting; null without packages' }),
})

export const HostSchema = Type.Object({
  host: Type.String(),
  self: Type.Boolean({ description: 'This host' }),
  up: Type.Boolean({ description: 'Its presence was written within the last 13 s and it has not stopped' }),
  lastSeen: Type.String({ format: 'date-time' }),
  version: Type.String(),
  inventory: Type.Union([InventorySchema, Type.Null()]),
})
export const HostListSchema = Type.Object({
  self: Type.Union([Type.String(), Type.Null()]),
  hosts: Type.Array(HostSchema),
})

export const HostParams = Type.Object({ host: HostName, '*': Type.String() })

export const FleetStatusSchema = Type.Object({
  joined: Type.Boolean(),
  host: Type.Union([Type.String(), Type.Null()]),
  servers: Type.Array(Type.String()),
  publicKey: Type.Union([Type.String(), Type.Null()]),
  members: Type.Integer(),
  embedded: Type.Boolean({ description: "This host runs the fleet's nats-server (HOSTD_FLEET_EMBEDDED=1)" }),
})

export const JoinCodeCreateSchema = Type.Object(
  {
    host: HostName,
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The new host's NATS user" })),
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    expiresInSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 7 * 86_400 })),
  },
  { additionalProperties: false },
)
export const JoinCodeSchema = Type.Object({
  code: Type.String({ description: 'Shown once: it carries the credentials; good once, until it expires' }),
  host: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
})
export const JoinSchema = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 8192 }) },
  { additionalProperties: false },
)

export const RolesSchema = Type.Object(
  {
    rules: Type.Array(
      Type.Object(
        {
          who: Type.String({
            pattern: '^([^@\\s]{1,200}|\\*)@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$',
            description: '`user@host` or `*@host`',
          }),
          role: Role,
        },
        { additionalProperties: false },
      ),
      { maxItems: 1000 },
    ),
  },
  { additionalProperties: false },
)
