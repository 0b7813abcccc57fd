/**
 * TypeBox shapes, one per shape. `CatalogFileSchema` and `CatalogEntrySchema` are the catalog format authors
 * write (catalog.schema.json is the same schema as JSON Schema, checked by a test); the rest are API shapes.
 */
import { Type, type Static } from '@hostd/sdk'

export const CATALOG_FORMAT = 'hostd-catalog/1'

const Text = (max: number, extra: object = {}) => Type.String({ maxLength: max, ...extra })
export const AppId = Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'lowercase letters, digits, -' })
export const FieldKey = Type.String({ pattern: '^[a-zA-Z][a-zA-Z0-9_]{0,31}$' })
export const FieldValue = Type.Union([Type.String({ maxLength: 4096 }), Type.Number(), Type.Boolean()])

export const FieldTypeSchema = Type.Union(
  ['text', 'number', 'password', 'select', 'port', 'path', 'boolean'].map((t) => Type.Literal(t)),
  {
    description:
      'text and password: a string (pattern applies); number; select: one of options; port: 1..65535; ' +
      'path: an absolute host path (becomes a host bind, so the install needs admin); boolean',
  },
)

export const FieldSchema = Type.Object(
  {
    key: FieldKey,
    label: Text(120, { minLength: 1 }),
    type: FieldTypeSchema,
    default: Type.Optional(FieldValue),
    required: Type.Optional(Type.Boolean()),
    options: Type.Optional(
      Type.Array(Type.Object({ value: Text(256), label: Type.Optional(Text(120)) }, { additionalProperties: false }), {
        minItems: 1,
        maxItems: 100,
      }),
    ),
    pattern: Type.Optional(
      Text(256, { description: 'a regular expression the whole value must match (text, password)' }),
    ),
    min: Type.Optional(Type.Number()),
    max: Type.Optional(Type.Number()),
    description: Type.Optional(Text(500)),
  },
  { additionalProperties: false },
)
export type Field = Static<typeof FieldSchema>

const Str = (max = 4096) => Type.String({ maxLength: max })
const Words = Type.Union([Str(16384), Type.Array(Str(), { maxItems: 256 })])
/** The RunSpec part of an entry: the containers plugin's RunSpec fields a single-container app needs. */
export const CatalogRunSpecSchema = Type.Object(
  {
    image: Type.String({
      minLength: 1,
      maxLength: 512,
      pattern: '^[^\\s]+$',
      description: 'a pinned reference: a tag other than latest, or a digest',
    }),
    name: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$' })),
    command: Type.Optional(Words),
    entrypoint: Type.Optional(Words),
    ports: Type.Optional(Type.Array(Str(128), { maxItems: 64 })),
    env: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Str(32768))),
    volumes: Type.Optional(Type.Array(Str(), { maxItems: 64 })),
    restartPolicy: Type.Optional(Type.String({ pattern: '^(no|always|unless-stopped|on-failure(:[0-9]+)?)$' })),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024 })),
    memory: Type.Optional(Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?[bkmgBKMG]?$' })),
    workdir: Type.Optional(Str()),
    user: Type.Optional(Str(256)),
    capAdd: Type.Optional(Type.Array(Str(64), { maxItems: 64 })),
  },
  { additionalProperties: false },
)

export const CatalogEntrySchema = Type.Object(
  {
    id: AppId,
    version: Type.String({
      maxLength: 64,
      description: 'semver of the entry; a newer one marks installs as updatable',
    }),
    title: Text(120, { minLength: 1 }),
    tagline: Type.Optional(Text(200)),
    description: Type.Optional(Text(4000)),
    categories: Type.Array(Text(40, { minLength: 1 }), { minItems: 1, maxItems: 8 }),
    icon: Type.Optional(Text(2048, { description: 'an https: URL' })),
    gallery: Type.Optional(Type.Array(Text(2048), { maxItems: 10 })),
    website: Type.Optional(Text(2048)),
    developer: Type.Optional(Text(120)),
    architectures: Type.Optional(Type.Array(Text(32), { maxItems: 10 })),
    port: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 65535, description: "the container port of the app's web UI" }),
    ),
    path: Type.Optional(Text(256, { description: 'path of the web UI, e.g. /admin' })),
    note: Type.Optional(Text(2000)),
    defaultCredentials: Type.Optional(
      Type.Object({ username: Text(120), password: Text(120) }, { additionalProperties: false }),
    ),
    fields: Type.Optional(Type.Array(FieldSchema, { maxItems: 32 })),
    runSpec: Type.Optional(CatalogRunSpecSchema),
    compose: Type.Optional(
      Text(262144, {
        description:
          'instead of runSpec: a compose file, for an app of several containers installed as one stack (the stacks ' +
          "plugin); each field's value is written to the stack's .env under the field's key, for the file to use",
      }),
    ),
  },
  { additionalProperties: false },
)
export type CatalogEntry = Static<typeof CatalogEntrySchema>

/** A catalog file. Entries are checked one by one: a bad one is reported and skipped, the rest load. */
export const CatalogFileSchema = Type.Object(
  {
    format: Type.Literal(CATALOG_FORMAT),
    name: Type.Optional(Text(120)),
    apps: Type.Array(CatalogEntrySchema, { maxItems: 500 }),
  },
  {
    additionalProperties: false,
    title: 'hostd app catalog',
    description: 'A hostd app catalog file (format hostd-catalog/1). See plugins/catalog/README.md.',
  },
)

// ---- API shapes ----

export const SkippedSchema = Type.Object({
  file: Type.Optional(Type.String({ description: 'the file in a directory source' })),
  index: Type.Optional(Type.Integer({ description: "position in the file's apps array" })),
  id: Type.Optional(Type.String()),
  reason: Type.String(),
})
export type Skipped = Static<typeof SkippedSchema>

export const SourceKind = Type.Union([Type.Literal('builtin'), Type.Literal('directory'), Type.Literal('url')])
export const SourceStatusSchema = Type.Object({
  id: Type.String(),
  kind: SourceKind,
  location: Type.String(),
  name: Type.String(),
  ok: Type.Boolean({ description: 'false when the source itself could not be read (error says why)' }),
  error: Type.Union([Type.String(), Type.Null()]),
  loadedAt: Type.Union([Type.String(), Type.Null()]),
  apps: Type.Integer({ description: 'entries loaded' }),
  skipped: Type.Array(SkippedSchema),
})
export type SourceStatus = Static<typeof SourceStatusSchema>

export const InstallSchema = Type.Object({
  containerId: Type.String(),
  name: Type.String(),
  state: Type.String(),
  version: Type.String({ description: 'the catalog version it was installed from' }),
  versionUpdate: Type.Boolean({ description: 'the catalog has a newer version of the app' }),
  imageUpdate: Type.Boolean({ description: 'the registry has a newer image for its reference (containers plugin)' }),
  updateAvailable: Type.Boolean({ description: 'versionUpdate or imageUpdate' }),
  stack: Type.Optional(Type.String({ description: 'for an app that is a stack: the stack it runs as' })),
  web: Type.Union(
    [
      Type.Object({
        port: Type.Integer({ description: "the host port published for the entry's web port" }),
        scheme: Type.Union([Type.Literal('http'), Type.Literal('https')]),
        path: Type.String({ description: "the entry's path, default /" }),
      }),
      Type.Null(),
    ],
    {
      description:
        "where its web interface answers, the browser's own host name in front: the host port the engine publishes for " +
        "the entry's `port` (tcp); null when the entry declares no web port or it is not published now (the app is stopped)",
    },
  ),
})

export const CatalogAppSchema = Type.Object({
  id: Type.String(),
  source: Type.String(),
  version: Type.String(),
  title: Type.String(),
  tagline: Type.String(),
  description: Type.String(),
  categories: Type.Array(Type.String()),
  icon: Type.Union([Type.String(), Type.Null()]),
  gallery: Type.Array(Type.String()),
  website: Type.Union([Type.String(), Type.Null()]),
  developer: Type.Union([Type.String(), Type.Null()]),
  architectures: Type.Array(Type.String()),
  port: Type.Union([Type.Integer(), Type.Null()]),
  path: Type.Union([Type.String(), Type.Null()]),
  note: Type.Union([Type.String(), Type.Null()]),
  defaultCredentials: Type.Union([Type.Object({ username: Type.String(), password: Type.String() }), Type.Null()]),
  image: Type.String({ description: "the runSpec's image; empty for an app that is a stack" }),
  kind: Type.Union([Type.Literal('container'), Type.Literal('stack')]),
  fields: Type.Array(FieldSchema),
  needsAdmin: Type.Boolean({
    description:
      "a hint: the app mounts host paths or adds capabilities (the containers plugin's role rules decide at install)",
  }),
  installed: Type.Boolean(),
  updateAvailable: Type.Boolean(),
  installs: Type.Array(InstallSchema),
})
export type CatalogApp = Static<typeof CatalogAppSchema>

export const CatalogListSchema = Type.Object({
  apps: Type.Array(CatalogAppSchema),
  categories: Type.Array(Type.String()),
  sources: Type.Array(SourceStatusSchema),
  engine: Type.Object({ available: Type.Boolean(), message: Type.String() }),
})

export const InstallRequestSchema = Type.Object(
  {
    appId: AppId,
    source: Type.Optional(Type.String({ maxLength: 64 })),
    values: Type.Optional(Type.Record(FieldKey, FieldValue)),
    name: Type.Optional(
      Type.String({
        pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$',
        description: "container name; default the entry's runSpec.name, else the app id",
      }),
    ),
  },
  { additionalProperties: false },
)
export type InstallRequest = Static<typeof InstallRequestSchema>

export const InstallResultSchema = Type.Object({
  containerId: Type.String({ description: 'empty for an app that is a stack' }),
  stack: Type.Optional(Type.String({ description: 'the stack an app that is a stack was installed as' })),
  name: Type.String(),
  appId: Type.String(),
  source: Type.String(),
  version: Type.String(),
})

export const UninstallRequestSchema = Type.Object(
  {
    container: Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }),
    removeVolumes: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const UninstallResultSchema = Type.Object({
  containerId: Type.String(),
  name: Type.String(),
  appId: Type.String(),
  removedVolumes: Type.Array(Type.String()),
  keptVolumes: Type.Array(Type.Object({ name: Type.String(), reason: Type.String() })),
})

export const SourceAddSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('directory'), Type.Literal('url')]),
    location: Type.String({ minLength: 1, maxLength: 2048 }),
    id: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,31}$' })),
  },
  { additionalProperties: false },
)

export const SourceParams = Type.Object({ id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,31}$' }) })
