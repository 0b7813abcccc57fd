/** One TypeBox schema per shape: route validation, the handlers' types and the OpenAPI document. */
import { Type } from '@hostd/sdk'

export const StackNameSchema = Type.String({
  pattern: '^[a-z0-9][a-z0-9_-]{0,62}$',
  description: "A compose project name: the stack's folder name",
})
const ServiceName = Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$' })
const ComposeText = Type.String({ maxLength: 1024 * 1024, description: 'The compose file, as written' })
const EnvText = Type.String({ maxLength: 256 * 1024, description: "The stack's .env, as written" })
const Profiles = Type.Array(Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$' }), { maxItems: 32 })

export const NameParams = Type.Object({ name: StackNameSchema })
export const ServiceParams = Type.Object({
  name: StackNameSchema,
  service: ServiceName,
  action: Type.Union([Type.Literal('start'), Type.Literal('stop'), Type.Literal('restart')]),
})

export const CreateBody = Type.Object(
  { name: StackNameSchema, compose: ComposeText, env: Type.Optional(EnvText) },
  { additionalProperties: false },
)
export const SaveBody = Type.Object(
  { compose: Type.Optional(ComposeText), env: Type.Optional(EnvText) },
  { additionalProperties: false, minProperties: 1 },
)
export const ValidateBody = Type.Object(
  { name: StackNameSchema, compose: ComposeText, env: Type.Optional(EnvText), profiles: Type.Optional(Profiles) },
  { additionalProperties: false },
)
export const DeployBody = Type.Object(
  {
    profiles: Type.Optional(Profiles),
  },
  { additionalProperties: false },
)
export const DownBody = Type.Object(
  { volumes: Type.Optional(Type.Boolean({ description: "Also remove the stack's named volumes (kept by default)" })) },
  { additionalProperties: false },
)
export const AdoptBody = Type.Object({ project: StackNameSchema }, { additionalProperties: false })

export const IssueSchema = Type.Object({
  kind: Type.Union(['yaml', 'schema', 'interpolation', 'unsupported', 'reference', 'env'].map((k) => Type.Literal(k))),
  path: Type.String(),
  line: Type.Optional(Type.Integer()),
  message: Type.String(),
})
export const ValidationSchema = Type.Object({
  ok: Type.Boolean(),
  issues: Type.Array(IssueSchema),
  warnings: Type.Array(IssueSchema),
})

export const ServiceStateSchema = Type.Object({
  name: Type.String(),
  container: Type.Union([Type.String(), Type.Null()]),
  image: Type.String(),
  state: Type.String({ description: 'The container state (running, exited, created...), or absent' }),
  health: Type.Union([Type.String(), Type.Null()]),
})
const StackState = Type.Union(['running', 'partial', 'stopped', 'down'].map((s) => Type.Literal(s)))

export const StackSummarySchema = Type.Object({
  name: Type.String(),
  state: StackState,
  services: Type.Array(ServiceStateSchema),
  adopted: Type.Boolean({ description: "A compose CLI project adopted in place (its folder is the project's own)" }),
  operation: Type.Union([Type.String(), Type.Null()], { description: 'The operation running now, if any' }),
  issues: Type.Integer({ description: 'Problems in its compose file (0 when it is valid)' }),
})
export const StackListSchema = Type.Object({
  stacks: Type.Array(StackSummarySchema),
  adoptable: Type.Array(
    Type.Object({
      project: Type.String(),
      workingDir: Type.String(),
      configFiles: Type.Array(Type.String()),
      services: Type.Array(ServiceStateSchema),
    }),
    { description: 'Compose projects on the engine that have no stack here (made by the compose CLI)' },
  ),
})

export const StackDetailSchema = Type.Object({
  name: Type.String(),
  composeFile: Type.String(),
  compose: Type.String(),
  env: Type.Union([Type.String(), Type.Null()], { description: "The .env's text; null for viewers" }),
  envKeys: Type.Array(Type.String()),
  adopted: Type.Boolean(),
  state: StackState,
  services: Type.Array(ServiceStateSchema),
  validation: ValidationSchema,
  operation: Type.Union([Type.String(), Type.Null()]),
  progress: Type.Array(Type.Unknown(), { description: "The last operation's events, as the socket sent them" }),
})

export const DeployResultSchema = Type.Object({
  name: Type.String(),
  services: Type.Array(
    Type.Object({
      service: Type.String(),
      action: Type.Union(['created', 'recreated', 'started', 'unchanged'].map((a) => Type.Literal(a))),
      container: Type.String(),
    }),
  ),
  warnings: Type.Array(IssueSchema),
})

export const LifecycleResultSchema = Type.Object({
  name: Type.String(),
  services: Type.Array(Type.Object({ service: Type.String(), before: Type.String(), after: Type.String() })),
})

export const DownResultSchema = Type.Object({
  name: Type.String(),
  containers: Type.Array(Type.String()),
  networks: Type.Array(Type.String()),
  volumes: Type.Array(Type.String(), { description: 'Volumes removed (only when asked)' }),
  keptVolumes: Type.Array(Type.String()),
})

export const LogsQuery = Type.Object({
  name: StackNameSchema,
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000, default: 100 })),
})
