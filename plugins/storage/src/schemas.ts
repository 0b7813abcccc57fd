import { Type } from '@hostd/sdk'

// One schema per shape: validation, handler types and the OpenAPI document.
const NoControl = '^[^\\u0000-\\u001f\\u007f]*$'

export const PartitionSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size: Type.Number(),
  fstype: Type.Union([Type.String(), Type.Null()]),
  label: Type.Union([Type.String(), Type.Null()]),
  mountpoints: Type.Array(Type.String()),
})
export const DiskSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  model: Type.Union([Type.String(), Type.Null()]),
  serial: Type.Union([Type.String(), Type.Null()]),
  size: Type.Number(),
  removable: Type.Boolean(),
  readOnly: Type.Boolean(),
  transport: Type.Union([Type.String(), Type.Null()]),
  mountpoints: Type.Array(Type.String()),
  partitions: Type.Array(PartitionSchema),
})
export const VolumeSchema = Type.Object({
  device: Type.String(),
  mountpoint: Type.String(),
  fstype: Type.String(),
  size: Type.Number(),
  used: Type.Number(),
  free: Type.Number(),
})
export const ContainerVolumeSchema = Type.Object({
  name: Type.String(),
  driver: Type.String(),
  mountpoint: Type.String(),
  usedBy: Type.Array(Type.String()),
})
export const RootSchema = Type.Object({ name: Type.String(), path: Type.String() })
export const NetworkShareSchema = Type.Object({
  name: Type.String(),
  server: Type.String(),
  share: Type.String(),
  username: Type.Union([Type.String(), Type.Null()]),
  domain: Type.Union([Type.String(), Type.Null()]),
  readOnly: Type.Boolean(),
  mountpoint: Type.String(),
  mounted: Type.Boolean(),
})
export const OverviewSchema = Type.Object({
  disks: Type.Array(DiskSchema),
  volumes: Type.Array(VolumeSchema),
  /** null when the containers plugin (its `containers.volumes` service) is not active. */
  containerVolumes: Type.Union([Type.Array(ContainerVolumeSchema), Type.Null()]),
  roots: Type.Array(RootSchema),
  shares: Type.Array(NetworkShareSchema),
})

export const SmartParams = Type.Object({ id: Type.String({ pattern: '^[a-z][a-z0-9]{0,31}$' }) })
export const SmartSchema = Type.Object({
  device: Type.String(),
  model: Type.Union([Type.String(), Type.Null()]),
  serial: Type.Union([Type.String(), Type.Null()]),
  health: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('unknown')]),
  temperatureC: Type.Union([Type.Number(), Type.Null()]),
  powerOnHours: Type.Union([Type.Number(), Type.Null()]),
  attributes: Type.Array(
    Type.Object({
      id: Type.Union([Type.Number(), Type.Null()]),
      name: Type.String(),
      value: Type.Union([Type.Number(), Type.Null()]),
      worst: Type.Union([Type.Number(), Type.Null()]),
      threshold: Type.Union([Type.Number(), Type.Null()]),
      raw: Type.String(),
      failing: Type.Boolean(),
    }),
  ),
  raw: Type.Unknown(),
})
export const EjectBody = Type.Object(
  { device: Type.String({ pattern: '^[a-z][a-z0-9]{0,31}$' }) },
  { additionalProperties: false },
)

// Mount: every value that reaches mount's option string is a strict pattern (no comma, '=', newline or leading '-').
const Host = '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'
const RemoteShare = '^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$'
export const MountName = '^[a-z0-9][a-z0-9_-]{0,63}$'
export const MountBody = Type.Object(
  {
    url: Type.Optional(Type.String({ maxLength: 400, description: 'smb://server/share' })),
    server: Type.Optional(Type.String({ pattern: Host, maxLength: 253 })),
    share: Type.Optional(Type.String({ pattern: RemoteShare })),
    name: Type.String({ pattern: MountName, description: 'Mount folder name under the managed mount directory' }),
    username: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$' })),
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: NoControl })),
    domain: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9.-]{0,63}$' })),
    readOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export const HOST_PATTERN = new RegExp(Host)
export const REMOTE_SHARE_PATTERN = new RegExp(RemoteShare)
export const MountAnswer = Type.Object({ share: NetworkShareSchema })
export const NameBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 80 }) },
  { additionalProperties: false },
)

const ShareName = '^[A-Za-z0-9][A-Za-z0-9 _.-]{0,79}$'
export const ExportSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  readOnly: Type.Boolean(),
  guestAccess: Type.Boolean(),
  comment: Type.Optional(Type.String()),
})
export const ExportBody = Type.Object(
  {
    name: Type.String({ pattern: ShareName }),
    path: Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: NoControl,
      description: 'Absolute path of a folder inside a file root',
    }),
    readOnly: Type.Optional(Type.Boolean({ default: true })),
    guestAccess: Type.Optional(Type.Boolean({ default: false })),
    comment: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9 _.,:/@+-]{0,119}$' })),
  },
  { additionalProperties: false },
)
export const ExportList = Type.Object({ exports: Type.Array(ExportSchema) })

const RootName = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$' })
const RelPath = Type.String({ maxLength: 4096, default: '' })
export const FsQuery = Type.Object({ root: RootName, path: RelPath })
export const ListQuery = Type.Object({
  root: RootName,
  path: RelPath,
  offset: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 0,
      description: 'Entries to skip (directories first, then by name)',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10_000, default: 10_000, description: 'Entries in this page' }),
  ),
})
export const EntrySchema = Type.Object({
  name: Type.String(),
  type: Type.Union([Type.Literal('file'), Type.Literal('directory'), Type.Literal('symlink'), Type.Literal('other')]),
  size: Type.Number(),
  mode: Type.String(),
  modified: Type.String(),
  linkTarget: Type.Union([Type.String(), Type.Null()]),
})
export const ListSchema = Type.Object({
  root: Type.String(),
  path: Type.String(),
  entries: Type.Array(EntrySchema),
  /** Entries in the folder, all pages. */
  total: Type.Integer(),
  offset: Type.Integer(),
  /** More entries follow this page (ask again with offset + entries.length). */
  truncated: Type.Boolean(),
})
export const PreviewSchema = Type.Object({
  root: Type.String(),
  path: Type.String(),
  size: Type.Number(),
  modified: Type.String(),
  truncated: Type.Boolean(),
  cap: Type.Number(),
  content: Type.String(),
})
export const UploadQuery = Type.Object({
  root: RootName,
  path: RelPath,
  name: Type.String({ minLength: 1, maxLength: 255 }),
  overwrite: Type.Optional(Type.Union([Type.Literal('0'), Type.Literal('1')])),
})
export const UploadAnswer = Type.Object({
  root: Type.String(),
  path: Type.String(),
  name: Type.String(),
  size: Type.Number(),
  replaced: Type.Boolean(),
})

/** A new name (no control characters); an existing entry's name may hold anything but `/` and NUL. */
const NewName = Type.String({ minLength: 1, maxLength: 255, pattern: NoControl })
const EntryName = Type.String({ minLength: 1, maxLength: 255 })
export const MkdirBody = Type.Object({ root: RootName, path: RelPath, name: NewName }, { additionalProperties: false })
export const RenameBody = Type.Object(
  { root: RootName, path: RelPath, name: EntryName, to: NewName },
  { additionalProperties: false },
)
export const TransferBody = Type.Object(
  {
    root: RootName,
    path: RelPath,
    names: Type.Array(EntryName, { minItems: 1, maxItems: 10_000 }),
    toRoot: Type.Optional(RootName),
    toPath: RelPath,
  },
  { additionalProperties: false },
)
export const DeleteBody = Type.Object(
  { root: RootName, path: RelPath, names: Type.Array(EntryName, { minItems: 1, maxItems: 10_000 }) },
  { additionalProperties: false },
)
export const DoneAnswer = Type.Object({
  root: Type.String(),
  path: Type.String(),
  done: Type.Array(Type.Object({ name: Type.String(), as: Type.String() })),
  skipped: Type.Integer(),
})
export const MkdirAnswer = Type.Object({ root: Type.String(), path: Type.String(), name: Type.String() })
