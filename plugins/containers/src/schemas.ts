/** TypeBox shapes, one per shape: validation, serialization, types and the OpenAPI document. */
import { Type, type Static } from '@hostd/sdk'
import { ImageReferenceSchema } from './image-reference.ts'

export const EngineStatusSchema = Type.Object({
  available: Type.Boolean(),
  installed: Type.Boolean(),
  version: Type.String(),
  latestVersion: Type.String(),
  message: Type.String(),
})

export const PortMappingSchema = Type.Object({
  hostAddress: Type.String(),
  hostPort: Type.Integer(),
  containerPort: Type.Integer(),
  proto: Type.String(),
})

export const ContainerSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  image: Type.String(),
  state: Type.String(),
  cpus: Type.Number(),
  memoryInBytes: Type.Integer(),
  command: Type.String(),
  ipv4: Type.String(),
  os: Type.String(),
  architecture: Type.String(),
  createdAt: Type.String(),
  ports: Type.Array(PortMappingSchema),
  mountedVolumes: Type.Array(Type.String()),
  imageDigest: Type.String(),
  updateAvailable: Type.Boolean(),
  autoStart: Type.Boolean(),
  networkMode: Type.String(),
  restartPolicy: Type.String(),
  health: Type.String(),
  stackProject: Type.String(),
  stackService: Type.String(),
  stackWorkingDir: Type.String(),
  /** An icon was set for it (GET /api/icons/container/{name} answers it): the list asks for no icon that is not there. */
  hasIcon: Type.Boolean(),
})
export type Container = Static<typeof ContainerSchema>

export const ContainerListSchema = Type.Object({ engine: EngineStatusSchema, items: Type.Array(ContainerSchema) })

export const StatsEntrySchema = Type.Object({
  id: Type.String(),
  cpuUsageUsec: Type.Integer(),
  memoryUsageBytes: Type.Integer(),
  memoryLimitBytes: Type.Integer(),
  blockReadBytes: Type.Integer(),
  blockWriteBytes: Type.Integer(),
  networkRxBytes: Type.Integer(),
  networkTxBytes: Type.Integer(),
  numProcesses: Type.Integer(),
})
export type StatsEntry = Static<typeof StatsEntrySchema>

export const RemoveBodySchema = Type.Object(
  {
    /** Stop it first when it runs (else a running container is 409). */
    force: Type.Optional(Type.Boolean()),
    /** Also remove its anonymous volumes (the engine's `v`, as `docker rm -v`); default false: kept. */
    anonymousVolumes: Type.Optional(Type.Boolean()),
    /** Named volumes it mounts to remove after it (each must be one of its mounts); default none: kept. */
    volumes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }), {
        maxItems: 100,
        uniqueItems: true,
      }),
    ),
  },
  { additionalProperties: false },
)
export type RemoveBody = Static<typeof RemoveBodySchema>
export const RemoveResultSchema = Type.Object({
  id: Type.String(),
  state: Type.String(),
  converged: Type.Boolean(),
  /** Volumes removed with it (anonymous ones the engine removed, and the named ones asked for). */
  removedVolumes: Type.Array(Type.String()),
  /** Named volumes asked for but kept, with why (another container uses it...). */
  keptVolumes: Type.Array(Type.Object({ name: Type.String(), reason: Type.String() })),
})

export const IdParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }),
})
export const NameParams = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }),
})
export const StopQuery = Type.Object({ timeout: Type.Optional(Type.Integer({ minimum: 0, maximum: 600 })) })
export const KillQuery = Type.Object({ signal: Type.Optional(Type.String({ pattern: '^(SIG)?[A-Z0-9]{2,10}$' })) })
export const LogsQuery = Type.Object({
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, default: 200 })),
  timestamps: Type.Optional(Type.Boolean()),
})
export const AutostartBody = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false })
export const CreatedSchema = Type.Object({ id: Type.String() })

export const ImageSchema = Type.Object({
  id: Type.String(),
  repoTags: Type.Array(Type.String()),
  repoDigests: Type.Array(Type.String()),
  size: Type.Integer(),
  createdAt: Type.String(),
  containers: Type.Integer(),
})
export const ImageListSchema = Type.Object({ engine: EngineStatusSchema, items: Type.Array(ImageSchema) })
export const ImageRefBody = Type.Object({ reference: ImageReferenceSchema }, { additionalProperties: false })
export const ImageDeleteBody = Type.Object(
  {
    reference: ImageReferenceSchema,
    force: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export const PullResultSchema = Type.Object({ reference: Type.String(), id: Type.String(), digest: Type.String() })
export const ImageDeleteResultSchema = Type.Object({
  deleted: Type.Array(Type.String()),
  untagged: Type.Array(Type.String()),
})

export const NetworkSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  driver: Type.String(),
  scope: Type.String(),
  subnet: Type.String(),
  gateway: Type.String(),
  internal: Type.Boolean(),
  containers: Type.Integer(),
})
export const NetworkListSchema = Type.Object({ engine: EngineStatusSchema, items: Type.Array(NetworkSchema) })
export const NetworkCreateBody = Type.Object(
  {
    name: Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$' }),
    driver: Type.Optional(Type.String({ pattern: '^[a-z0-9_.-]{1,32}$' })),
    subnet: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F:.]+/[0-9]{1,3}$' })),
  },
  { additionalProperties: false },
)
export const NetworkCreatedSchema = Type.Object({ id: Type.String(), name: Type.String() })

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 256 }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
})
export const SearchResultSchema = Type.Object({
  query: Type.String(),
  results: Type.Array(
    Type.Object({
      name: Type.String(),
      description: Type.String(),
      stars: Type.Integer(),
      official: Type.Boolean(),
      automated: Type.Boolean(),
    }),
  ),
})

export const IconBody = Type.Object(
  {
    /** The image, base64-encoded (PNG, JPEG or SVG; the type is read from the bytes). */
    data: Type.String({ minLength: 1, maxLength: 700_000 }),
  },
  { additionalProperties: false },
)
