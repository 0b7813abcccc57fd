/** TypeBox shapes, one per shape: validation, types and the OpenAPI document. */
import { Type, type Static } from '@hostd/sdk'

const Id = Type.String({ pattern: '^[0-9a-f-]{36}$' })
const Name = Type.String({ minLength: 1, maxLength: 100 })
const AbsPath = Type.String({ minLength: 1, maxLength: 4096, pattern: '^/' })
const ContainerName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' })

export const IdParams = Type.Object({ id: Id })
export const SnapshotParams = Type.Object({ id: Id, snapshot: Type.String({ pattern: '^[0-9a-f]{8,64}$' }) })

// ---- repositories ----

export const LocalLocation = Type.Object(
  { kind: Type.Literal('local'), path: AbsPath },
  { additionalProperties: false, description: 'A folder of this host (a USB disk, a mounted share)' },
)
export const SftpLocation = Type.Object(
  {
    kind: Type.Literal('sftp'),
    host: Type.String({ minLength: 1, maxLength: 253, pattern: '^[a-zA-Z0-9.:_-]+$' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 22 })),
    user: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-zA-Z0-9._][a-zA-Z0-9._-]*$' }),
    path: AbsPath,
  },
  { additionalProperties: false, description: "SFTP over SSH, signed in with hostd's key (GET /api/backups/ssh-key)" },
)
export const RestLocation = Type.Object(
  {
    kind: Type.Literal('rest'),
    url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://[^\\s@]+$' }),
    username: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false, description: "restic's REST protocol (rest-server, `rclone serve restic`)" },
)
export const S3Location = Type.Object(
  {
    kind: Type.Literal('s3'),
    endpoint: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://[A-Za-z0-9.:\\[\\]_-]+/?$',
      description:
        'The S3 server: https://s3.amazonaws.com, https://<account>.r2.cloudflarestorage.com, http://nas:9000',
    }),
    bucket: Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]+[a-z0-9]$' }),
    path: Type.Optional(Type.String({ maxLength: 1024, pattern: '^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$' })),
    accessKeyId: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9+/=_.-]+$' }),
    region: Type.Optional(Type.String({ maxLength: 64, pattern: '^[a-z0-9-]+$' })),
  },
  {
    additionalProperties: false,
    description:
      'S3-compatible object storage (restic creates the bucket when missing); the secret key: s3SecretAccessKey',
  },
)
export const LocationSchema = Type.Union([LocalLocation, SftpLocation, RestLocation, S3Location])
export type Location = Static<typeof LocationSchema>

export const RepositoryCreateSchema = Type.Object(
  {
    name: Name,
    location: LocationSchema,
    password: Type.Optional(
      Type.String({
        minLength: 8,
        maxLength: 1024,
        description: 'The repository password; made (32 random bytes) when absent. Needed to open an existing one.',
      }),
    ),
    restPassword: Type.Optional(Type.String({ maxLength: 1024, description: "The REST server's own password" })),
    s3SecretAccessKey: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: "An s3 location's secret key (sealed at rest)" }),
    ),
    mode: Type.Optional(
      Type.Union([Type.Literal('create'), Type.Literal('open')], {
        default: 'create',
        description: 'create: a new repository (refused where one exists); open: an existing one',
      }),
    ),
  },
  { additionalProperties: false },
)
export type RepositoryCreate = Static<typeof RepositoryCreateSchema>

export const RepositorySchema = Type.Object({
  id: Id,
  name: Type.String(),
  location: LocationSchema,
  /** restic's name for it, without credentials. */
  repository: Type.String(),
  createdAt: Type.String(),
  jobs: Type.Integer({ description: 'Jobs that write to it' }),
})
export type RepositoryView = Static<typeof RepositorySchema>

export const RecoveryKitSchema = Type.Object({
  repository: Type.String({
    description: "restic's name for the repository (credentials of the REST server left out)",
  }),
  password: Type.String(),
  text: Type.String({ description: 'The kit as a text file to keep: how to open the repository with restic alone' }),
})

export const RepositoryCreatedSchema = Type.Object({
  repository: RepositorySchema,
  recoveryKit: Type.Union([RecoveryKitSchema, Type.Null()], {
    description: 'Shown this once (a new repository): the password is never answered again',
  }),
})

export const RepositoryListSchema = Type.Object({ items: Type.Array(RepositorySchema) })

export const SshKeySchema = Type.Object({
  publicKey: Type.String({ description: "Add this line to the SFTP account's ~/.ssh/authorized_keys" }),
})

// ---- jobs ----

export const RetentionSchema = Type.Object(
  {
    last: Type.Integer({ minimum: 0, maximum: 1000 }),
    hourly: Type.Integer({ minimum: 0, maximum: 1000 }),
    daily: Type.Integer({ minimum: 0, maximum: 1000 }),
    weekly: Type.Integer({ minimum: 0, maximum: 1000 }),
    monthly: Type.Integer({ minimum: 0, maximum: 1000 }),
  },
  { additionalProperties: false },
)
export type Retention = Static<typeof RetentionSchema>
/** Umbrel's: the latest 10, hourly 24, daily 7, weekly 4, monthly 12. */
export const DEFAULT_RETENTION: Retention = { last: 10, hourly: 24, daily: 7, weekly: 4, monthly: 12 }

const JobFields = {
  name: Name,
  repositoryId: Id,
  containers: Type.Array(ContainerName, {
    maxItems: 100,
    description: 'Containers whose volumes and bind folders are backed up, with their definitions',
  }),
  stopContainers: Type.Boolean({
    description: 'Stop them for a consistent copy (started again afterwards, whatever happens)',
  }),
  folders: Type.Array(AbsPath, {
    maxItems: 100,
    description: "Host folders an admin picked (hostd's own state is always in)",
  }),
  intervalMinutes: Type.Union([Type.Integer({ minimum: 5, maximum: 60 * 24 * 31 }), Type.Null()], {
    description: 'Runs every so many minutes; null: only when asked',
  }),
  retention: RetentionSchema,
  checkEveryDays: Type.Union([Type.Integer({ minimum: 1, maximum: 365 }), Type.Null()], {
    description: '`restic check --read-data-subset` this often; null: never',
  }),
}

export const JobCreateSchema = Type.Object(
  {
    name: JobFields.name,
    repositoryId: JobFields.repositoryId,
    containers: Type.Optional(JobFields.containers),
    stopContainers: Type.Optional(JobFields.stopContainers),
    folders: Type.Optional(JobFields.folders),
    intervalMinutes: Type.Optional(JobFields.intervalMinutes),
    retention: Type.Optional(JobFields.retention),
    checkEveryDays: Type.Optional(JobFields.checkEveryDays),
  },
  { additionalProperties: false },
)
export type JobCreate = Static<typeof JobCreateSchema>

export const JobUpdateSchema = Type.Partial(Type.Omit(JobCreateSchema, ['repositoryId']), {
  additionalProperties: false,
})
export type JobUpdate = Static<typeof JobUpdateSchema>

export const ErrorInfoSchema = Type.Object({ code: Type.String(), message: Type.String() })

export const RunResultSchema = Type.Object({
  status: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  startedAt: Type.String(),
  finishedAt: Type.String(),
  snapshotId: Type.Union([Type.String(), Type.Null()]),
  filesNew: Type.Integer(),
  filesChanged: Type.Integer(),
  bytesAdded: Type.Number(),
  bytesProcessed: Type.Number(),
  durationSeconds: Type.Number(),
  resticSeconds: Type.Optional(
    Type.Number({ description: "restic backup's own time (its summary's total_duration); the rest is hostd's part" }),
  ),
  error: Type.Union([ErrorInfoSchema, Type.Null()]),
  /** What else happened: retention, check, containers stopped and started again, a stale lock removed. */
  notes: Type.Array(Type.String()),
})
export type RunResult = Static<typeof RunResultSchema>

export const ProgressSchema = Type.Object({
  jobId: Id,
  phase: Type.String({ description: 'prepare, stop, backup, start, forget, check, done' }),
  percent: Type.Number({ description: '0..1' }),
  filesDone: Type.Integer(),
  totalFiles: Type.Integer(),
  bytesDone: Type.Number(),
  totalBytes: Type.Number(),
  currentFile: Type.String(),
})
export type Progress = Static<typeof ProgressSchema>

export const JobSchema = Type.Object({
  id: Id,
  ...JobFields,
  createdAt: Type.String(),
  running: Type.Boolean(),
  progress: Type.Union([ProgressSchema, Type.Null()]),
  lastResult: Type.Union([RunResultSchema, Type.Null()]),
  nextRun: Type.Union([Type.String(), Type.Null()], { description: 'ISO time; null without a schedule' }),
  lastCheck: Type.Union([Type.String(), Type.Null()]),
})
export type JobView = Static<typeof JobSchema>
export const JobListSchema = Type.Object({ items: Type.Array(JobSchema) })

export const RunQuery = Type.Object({
  wait: Type.Optional(Type.Boolean({ description: 'Answer once the run ended, with its result (or its error)' })),
})

// ---- snapshots and restore ----

export const SnapshotSchema = Type.Object({
  id: Type.String(),
  shortId: Type.String(),
  time: Type.String(),
  hostname: Type.String(),
  paths: Type.Array(Type.String()),
  tags: Type.Array(Type.String()),
  jobId: Type.Union([Type.String(), Type.Null()]),
  containers: Type.Array(Type.String(), { description: 'Containers whose definition and data it holds' }),
})
export type Snapshot = Static<typeof SnapshotSchema>
export const SnapshotListSchema = Type.Object({ items: Type.Array(SnapshotSchema) })

export const FilesQuery = Type.Object({ path: Type.Optional(AbsPath) })
export const FileEntrySchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: Type.String({ description: 'file, dir, symlink...' }),
  size: Type.Number(),
  mtime: Type.String(),
})
export const FileListSchema = Type.Object({ path: Type.String(), items: Type.Array(FileEntrySchema) })

export const RestoreSchema = Type.Object(
  {
    paths: Type.Array(AbsPath, { minItems: 1, maxItems: 100, description: 'Files or folders of the snapshot' }),
    target: Type.Union(
      [
        Type.Literal('original'),
        Type.Object(
          {
            root: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$' }),
            path: Type.Optional(Type.String({ maxLength: 4096 })),
          },
          { additionalProperties: false },
        ),
      ],
      {
        description:
          'original: back to their place; else a folder under one of the file roots (HOSTD_FILE_ROOTS, as the ' +
          'storage plugin), where each lands under its original absolute path',
      },
    ),
  },
  { additionalProperties: false },
)
export type RestoreBody = Static<typeof RestoreSchema>

export const RestoreResultSchema = Type.Object({
  restored: Type.Array(Type.String()),
  target: Type.String(),
})

export const RestoreContainerSchema = Type.Object({ name: ContainerName }, { additionalProperties: false })
export const RestoreContainerResultSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  volumes: Type.Array(Type.String()),
  binds: Type.Array(Type.String()),
  started: Type.Boolean(),
})

export const ContainerChoiceSchema = Type.Object({
  items: Type.Array(Type.Object({ name: Type.String(), image: Type.String(), state: Type.String() })),
  available: Type.Boolean({ description: 'false when the containers plugin is not running' }),
})
